/**
 * What the properties over "a status with or without the binding's A2A error" share (read-not-found,
 * operation-unsupported): a byte-exact node:http server answering one scripted status and body, the real transports of
 * each HTTP binding, and the gRPC property (status × details shape × reason × call) against a grpc-js server.
 */
import fc from 'fast-check';
import { afterAll, beforeAll } from 'vitest';
import { createTransport } from '../../src/client.ts';
import { GrpcTransport } from '../../src/grpc/transport.ts';
import { type ScriptedStatus, type StatusDetailsShape, startStatusServer } from './grpc-status-server.ts';
import { type RawServer, requestIdOf, startRawServer } from './raw-server.ts';

/** The HTTP bindings and versions a property runs over. */
export type HttpBinding = 'JSONRPC' | 'JSONRPC 0.3' | 'HTTP+JSON 1.0' | 'HTTP+JSON 0.3';
export const HTTP_BINDINGS: HttpBinding[] = ['JSONRPC', 'JSONRPC 0.3', 'HTTP+JSON 1.0', 'HTTP+JSON 0.3'];

/** An ErrorInfo detail as the bindings carry it (ProtoJSON `Any`). */
export const errorInfo = (reason: string, domain = 'a2a-protocol.org') => ({ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason, domain });

/** HTTP statuses that may refuse on HTTP+JSON (spec §11.6): 4xx but 401/403 (credentials), 408, 409, 429. */
export const refusingHttpStatus = (status: number) => status >= 400 && status < 500 && ![401, 403, 408, 409, 429].includes(status);

/**
 * HTTP statuses under which a JSON-RPC code (an envelope, a 0.3 `{code}` body) may be a refusal, on every binding: a 2xx
 * or a refusing 4xx; never a 5xx, 408/409/429 or a 3xx (edges35: a gateway's 502 with -32602 proves nothing).
 */
export const statusMayCarryCode = (status: number) => (status >= 200 && status < 300) || refusingHttpStatus(status);

/** gRPC statuses that may refuse (`GRPC_REFUSING_STATUSES`): INVALID_ARGUMENT, NOT_FOUND, PERMISSION_DENIED, FAILED_PRECONDITION, OUT_OF_RANGE, UNIMPLEMENTED, UNAUTHENTICATED. */
export const GRPC_MAY_REFUSE = new Set([3, 5, 7, 9, 11, 12, 16]);

/** Body shapes: what an agent, a framework or a proxy may put under a status. */
export type Shape = 'JSON-RPC envelope' | '0.3 {code} body' | 'google.rpc.Status with ErrorInfo' | 'google.rpc.Status without ErrorInfo' | 'HTML page' | 'JSON message' | 'problem+json' | 'empty';
export const SHAPES: Shape[] = ['JSON-RPC envelope', '0.3 {code} body', 'google.rpc.Status with ErrorInfo', 'google.rpc.Status without ErrorInfo', 'HTML page', 'JSON message', 'problem+json', 'empty'];

/** The words a body of the property's kind says: the `google.rpc.Status` status name, a page's title, a message. */
export interface BodyWords {
  statusName: string;
  title: string;
  message: string;
}

/** The body of `shape` under `status`, with `reason` in its ErrorInfo and `code` as its JSON-RPC (or 0.3) code. */
export function bodyOf(shape: Shape, status: number, reason: string, code: number, words: BodyWords): { body: string; contentType: string } {
  const json = (value: unknown) => ({ body: JSON.stringify(value), contentType: 'application/json' });
  switch (shape) {
    case 'JSON-RPC envelope': return json({ jsonrpc: '2.0', id: '__ID__', error: { code, message: 'no', data: [errorInfo(reason)] } });
    case '0.3 {code} body': return json({ code, message: 'no' });
    case 'google.rpc.Status with ErrorInfo': return { ...json({ error: { code: status, status: words.statusName, message: 'no', details: [errorInfo(reason)] } }), contentType: 'application/a2a+json' };
    case 'google.rpc.Status without ErrorInfo': return json({ error: { code: status, status: words.statusName, message: words.title } });
    case 'HTML page': return { body: `<html><body><h1>${status} ${words.title}</h1></body></html>`, contentType: 'text/html' };
    case 'JSON message': return json({ message: words.message });
    case 'problem+json': return { body: JSON.stringify({ type: 'about:blank', title: words.title, status, detail: words.message }), contentType: 'application/problem+json' };
    case 'empty': return { body: '', contentType: 'text/plain' };
  }
}

/** One HTTP answer: status, body, content type. A `"__ID__"` in the body becomes the request's JSON-RPC id. */
export interface HttpAnswer {
  status: number;
  body: string;
  contentType: string;
}

/**
 * Registers (beforeAll/afterAll) a server answering every request with the current answer (`set` changes it), and
 * returns a transport of a binding to it.
 */
export function useAnswerServer(): { set(answer: HttpAnswer): void; transport(binding: HttpBinding): ReturnType<typeof createTransport> } {
  let answer: HttpAnswer = { status: 200, body: '{}', contentType: 'application/json' };
  let server: RawServer;
  beforeAll(async () => {
    server = await startRawServer((request, response) => {
      const body = answer.body.replaceAll('"__ID__"', JSON.stringify(requestIdOf(request)));
      response.writeHead(answer.status, { 'content-type': answer.contentType, 'content-length': Buffer.byteLength(body) });
      response.end(body);
    });
  });
  afterAll(() => server.close());
  return {
    set: (next) => void (answer = next),
    transport: (binding) => createTransport({ url: server.url, protocolBinding: binding.startsWith('JSONRPC') ? 'JSONRPC' : 'HTTP+JSON', protocolVersion: binding.endsWith('0.3') ? '0.3' : '1.0' }),
  };
}

/** One run of the gRPC property: the status, its details shape, the reason, the call, and the reason the trailer carried. */
export interface GrpcCase<C extends string> {
  code: number;
  details: StatusDetailsShape;
  reason: string;
  call: C;
  /** The ErrorInfo reason the answer carried (undefined: none, or undecodable). */
  carried: string | undefined;
  what: string;
}

/**
 * The gRPC property: status 1..16 × details shape × reason (`reasons` or any short string) × `calls`, each answered by
 * a grpc-js server serving `calls` (unary); `check` gets the error the transport threw for the call.
 */
export async function grpcStatusProperty<C extends string>(options: {
  calls: readonly C[];
  reasons: readonly string[];
  callError: (grpc: GrpcTransport, call: C) => Promise<unknown>;
  check: (error: unknown, run: GrpcCase<C>) => void;
  examples: [number, StatusDetailsShape, string, C][];
}): Promise<void> {
  let current: ScriptedStatus = { code: 2, shape: 'bare', reason: '', domain: 'a2a-protocol.org' };
  const server = await startStatusServer(options.calls, () => current);
  const grpc = new GrpcTransport({ url: server.url, protocolBinding: 'GRPC', protocolVersion: '1.0' }, { requestTimeoutMs: 5_000 });
  try {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 16 }),
        fc.constantFrom<StatusDetailsShape>('bare', 'Status without details', 'ErrorInfo', 'another detail, then ErrorInfo', 'undecodable details'),
        fc.oneof(fc.constantFrom(...options.reasons), fc.string({ maxLength: 16 })),
        fc.constantFrom(...options.calls),
        async (code, details, reason, call) => {
          current = { code, shape: details, reason, domain: 'a2a-protocol.org' };
          const carried = (details === 'ErrorInfo' || details === 'another detail, then ErrorInfo') && reason !== '' ? reason : undefined;
          options.check(await options.callError(grpc, call), { code, details, reason, call, carried, what: `gRPC ${call} ${code} ${details} reason ${JSON.stringify(reason)}` });
        },
      ),
      { numRuns: 200, examples: options.examples },
    );
  } finally {
    grpc.close();
    server.close();
  }
}
