/**
 * Property (edges35, two kinds of "a refusal named where the binding does not speak one").
 *
 * 1. A 5xx (or 408/409/429, or a 3xx) whose body carries a refusal's code. An agent booked, then a server on the way
 *    (a gateway's 502, a load balancer's 503, the agent's own server throwing after the work) answered with a body
 *    naming a refusal: a JSON-RPC envelope `{"error":{"code":-32602}}` (our request id, or null), a 0.3 HTTP+JSON
 *    `{"code":-32602}` body, a `google.rpc.Status` with the ErrorInfo INVALID_PARAMS. Before, the JSON-RPC code was read
 *    as the agent's refusal on any status: effect none, the step re-delegated to a second agent, booked twice. Spec:
 *    HTTP+JSON's code IS the HTTP status (§11.6), and its refusals are 4xx (§5.4); JSON-RPC sets no status (§9.5) and
 *    the SDKs answer a refusal on 200 (an internal error on 500). Now, on every HTTP binding, a refusal is read only
 *    from a 2xx or a 4xx that may refuse; any other status proves delivery and nothing about the work (effect maybe:
 *    the search by our messageId decides), and a read's TaskNotFound or "unsupported" on it is no proof either.
 * 2. An ErrorInfo of another domain. Spec §10.6, §11.6: an A2A ErrorInfo has `domain` "a2a-protocol.org". Before, a
 *    reason was read whatever its domain: a 404 `google.rpc.Status` whose ErrorInfo said TASK_NOT_FOUND in the domain
 *    of some other API (a gateway's, a cloud's) proved the task gone (toward LOST, re-delegated), and INVALID_PARAMS
 *    of another domain on a 400 proved a SendMessage created nothing. Now only the A2A domain's reason names an A2A
 *    error; another domain's is kept for the logs as `domain/REASON`.
 *
 * Through the real transports (JSON-RPC and HTTP+JSON, 1.0 and 0.3) against a byte-exact node:http server, and over
 * gRPC for the domain.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { A2AError, operationUnsupportedProven, sendEffectOf, taskNotFoundProven } from '../src/errors.ts';
import { callError, withGrpcTransport } from './helpers/grpc-calls.ts';
import { type ScriptedStatus, startStatusServer } from './helpers/grpc-status-server.ts';
import { type HttpBinding, HTTP_BINDINGS, errorInfo as a2aErrorInfo, useAnswerServer } from './helpers/status-property.ts';

const message = { messageId: 'm-ours', contextId: 'c-ours', role: 'ROLE_USER' as const, parts: [{ text: 'book' }] };

const server = useAnswerServer();
type Binding = HttpBinding;
const BINDINGS = HTTP_BINDINGS;
const transport = (binding: Binding) => server.transport(binding);
const settle = (promise: Promise<unknown>): Promise<unknown> => promise.then((value) => ({ value }), (error: unknown) => error);
/** Sets the answer of the next calls. */
const answerWith = (next: { status: number; body: string; contentType: string }) => server.set(next);

/** An ErrorInfo of `domain`, or with no domain at all when undefined. */
const errorInfo = (reason: string, domain?: string) => {
  if (domain !== undefined) return a2aErrorInfo(reason, domain);
  const { domain: _none, ...withoutDomain } = a2aErrorInfo(reason);
  return withoutDomain;
};

/** Refusals of the spec's table, each as its JSON-RPC code and ErrorInfo reason. */
const REFUSALS: [reason: string, code: number][] = [
  ['INVALID_PARAMS', -32602],
  ['INVALID_REQUEST', -32600],
  ['METHOD_NOT_FOUND', -32601],
  ['PARSE_ERROR', -32700],
  ['TASK_NOT_FOUND', -32001],
  ['UNSUPPORTED_OPERATION', -32004],
  ['CONTENT_TYPE_NOT_SUPPORTED', -32005],
  ['VERSION_NOT_SUPPORTED', -32009],
];

/** Every body a server may put a refusal's code in, whatever binding was asked. */
const REFUSAL_BODIES: Record<string, (status: number, refusal: [string, number]) => string> = {
  'JSON-RPC envelope, our id': (_status, [reason, code]) => JSON.stringify({ jsonrpc: '2.0', id: '__ID__', error: { code, message: 'refused', data: [errorInfo(reason, 'a2a-protocol.org')] } }),
  'JSON-RPC envelope, null id': (_status, [, code]) => JSON.stringify({ jsonrpc: '2.0', id: null, error: { code, message: 'refused' } }),
  '0.3 {code} body': (_status, [, code]) => JSON.stringify({ code, message: 'refused' }),
  '{error:{code}} with the JSON-RPC code': (_status, [, code]) => JSON.stringify({ error: { code, message: 'refused' } }),
  'google.rpc.Status with the A2A ErrorInfo': (status, [reason]) => JSON.stringify({ error: { code: status, status: 'INTERNAL', message: 'refused', details: [errorInfo(reason, 'a2a-protocol.org')] } }),
};

/** Statuses that report trouble that may follow the work, or answer nothing: never a refusal's carrier. */
const notRefusingStatusArb = fc.oneof(fc.constantFrom(500, 501, 502, 503, 504, 408, 409, 429, 302), fc.integer({ min: 500, max: 599 }));

describe('property: a refusal\'s code under a status that cannot refuse proves nothing (every HTTP binding)', () => {
  it('SendMessage: binding × status × body × refusal: effect maybe, delivery received', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...BINDINGS), notRefusingStatusArb, fc.constantFrom(...Object.keys(REFUSAL_BODIES)), fc.constantFrom(...REFUSALS), async (binding, status, shape, refusal) => {
        answerWith({ status, body: REFUSAL_BODIES[shape]!(status, refusal), contentType: 'application/json' });
        const error = await settle(transport(binding).sendMessage({ message }));
        const what = `${binding} HTTP ${status} ${shape} ${refusal[0]}`;
        expect(error, what).toBeInstanceOf(A2AError);
        expect((error as A2AError).delivery, what).toBe('received');
        expect(sendEffectOf(error, { namesTask: false }), what).toBe('maybe');
        expect(sendEffectOf(error, { namesTask: true }), what).toBe('maybe');
      }),
      {
        numRuns: 300,
        examples: [
          ['HTTP+JSON 0.3', 502, '0.3 {code} body', ['INVALID_PARAMS', -32602]],
          ['HTTP+JSON 0.3', 500, '0.3 {code} body', ['INVALID_PARAMS', -32602]],
          ['HTTP+JSON 1.0', 503, 'JSON-RPC envelope, null id', ['INVALID_PARAMS', -32602]],
          ['JSONRPC', 502, 'JSON-RPC envelope, our id', ['INVALID_PARAMS', -32602]],
          ['JSONRPC', 500, 'JSON-RPC envelope, null id', ['INVALID_REQUEST', -32600]],
          ['JSONRPC 0.3', 503, 'JSON-RPC envelope, our id', ['INVALID_PARAMS', -32602]],
        ],
      },
    );
  });

  it('GetTask and ListTasks: TaskNotFound or "unsupported" under such a status is no proof (never toward LOST, never "cannot list")', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...BINDINGS), notRefusingStatusArb, fc.constantFrom(...Object.keys(REFUSAL_BODIES)), async (binding, status, shape) => {
        answerWith({ status, body: REFUSAL_BODIES[shape]!(status, ['TASK_NOT_FOUND', -32001]), contentType: 'application/json' });
        const read = await settle(transport(binding).getTask({ id: 'T1' }));
        expect(taskNotFoundProven(read), `${binding} HTTP ${status} ${shape} GetTask`).toBe(false);
        if (binding.endsWith('0.3')) return; // 0.3 has no list: refused before sending
        answerWith({ status, body: REFUSAL_BODIES[shape]!(status, ['UNSUPPORTED_OPERATION', -32004]), contentType: 'application/json' });
        const list = await settle(transport(binding).listTasks({ contextId: 'c-ours' }));
        expect(operationUnsupportedProven(list), `${binding} HTTP ${status} ${shape} ListTasks`).toBe(false);
      }),
      { numRuns: 120, examples: [['HTTP+JSON 0.3', 500, '0.3 {code} body'], ['JSONRPC', 502, 'JSON-RPC envelope, our id']] },
    );
  });

  it('control: the binding\'s own refusal (JSON-RPC on 200 or a refusing 4xx, HTTP+JSON on a refusing 4xx) still proves nothing was created', async () => {
    const spoken = (binding: Binding, status: number, [reason, code]: [string, number]): string => {
      if (binding.startsWith('JSONRPC')) return JSON.stringify({ jsonrpc: '2.0', id: '__ID__', error: { code, message: 'refused', data: [errorInfo(reason, 'a2a-protocol.org')] } });
      if (binding === 'HTTP+JSON 0.3') return JSON.stringify({ code, message: 'refused' });
      return JSON.stringify({ error: { code: status, status: 'INVALID_ARGUMENT', message: 'refused', details: [errorInfo(reason, 'a2a-protocol.org')] } });
    };
    const refusalsOfASend = REFUSALS.filter(([reason]) => reason !== 'TASK_NOT_FOUND');
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...BINDINGS), fc.constantFrom(200, 400, 404, 405, 415, 422), fc.constantFrom(...refusalsOfASend), async (binding, status, refusal) => {
        if (status === 200 && binding.startsWith('HTTP')) return; // a 2xx is HTTP+JSON's success, never an error
        answerWith({ status, body: spoken(binding, status, refusal), contentType: 'application/json' });
        const error = await settle(transport(binding).sendMessage({ message }));
        expect(sendEffectOf(error, { namesTask: false }), `${binding} HTTP ${status} ${refusal[0]}`).toBe('none');
      }),
      { numRuns: 80 },
    );
  });
});

/** Domains an ErrorInfo may carry that are not A2A's (spec §10.6, §11.6: "a2a-protocol.org"), and none at all. */
const FOREIGN_DOMAINS = ['googleapis.com', 'gateway.example', 'a2a-protocol.org.evil', 'A2A-PROTOCOL.ORG', '', undefined];

describe('property: an ErrorInfo of another domain names no A2A error', () => {
  it('HTTP+JSON 1.0: a refusing 4xx whose only ErrorInfo is another domain\'s (any reason of the table): effect maybe, no TaskNotFound proven', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(400, 404, 405, 415), fc.constantFrom(...REFUSALS), fc.constantFrom(...FOREIGN_DOMAINS), async (status, [reason], domain) => {
        answerWith({ status, body: JSON.stringify({ error: { code: status, status: 'NOT_FOUND', message: 'no', details: [errorInfo(reason, domain)] } }), contentType: 'application/a2a+json' });
        const what = `HTTP ${status} ${reason} domain ${String(domain)}`;
        const send = await settle(transport('HTTP+JSON 1.0').sendMessage({ message }));
        expect(sendEffectOf(send, { namesTask: true }), what).toBe('maybe');
        const read = await settle(transport('HTTP+JSON 1.0').getTask({ id: 'T1' }));
        expect(taskNotFoundProven(read), what).toBe(false);
        expect(operationUnsupportedProven(read), what).toBe(false);
        // Kept for the logs, qualified by its domain: never one of the table's reasons.
        expect((read as A2AError).reason, what).toBe(`${domain ?? ''}/${reason}`);
      }),
      { numRuns: 80, examples: [[404, ['TASK_NOT_FOUND', -32001], 'googleapis.com']] },
    );
  });

  it('control: the A2A domain\'s reason beside another domain\'s is read, in any order', async () => {
    for (const details of [[errorInfo('TASK_NOT_FOUND', 'googleapis.com'), errorInfo('TASK_NOT_FOUND', 'a2a-protocol.org')], [errorInfo('TASK_NOT_FOUND', 'a2a-protocol.org'), errorInfo('QUOTA', 'googleapis.com')]]) {
      answerWith({ status: 404, body: JSON.stringify({ error: { code: 404, status: 'NOT_FOUND', message: 'no', details } }), contentType: 'application/a2a+json' });
      const read = await settle(transport('HTTP+JSON 1.0').getTask({ id: 'T1' }));
      expect(taskNotFoundProven(read)).toBe(true);
      expect((read as A2AError).reason).toBe('TASK_NOT_FOUND');
    }
  });

  it('gRPC: a status that may refuse whose ErrorInfo is another domain\'s: no TaskNotFound, no "unsupported", effect maybe', async () => {
    let current: ScriptedStatus = { code: 5, shape: 'ErrorInfo', reason: 'TASK_NOT_FOUND', domain: 'googleapis.com' };
    const grpc = await startStatusServer(['SendMessage', 'GetTask'], () => current);
    try {
      await withGrpcTransport(grpc.url, 1 << 20, async (agent) => {
        await fc.assert(
          fc.asyncProperty(fc.constantFrom(5, 9, 3, 12), fc.constantFrom(...REFUSALS), fc.constantFrom('googleapis.com', 'gateway.example', ''), async (code, [reason], domain) => {
            current = { code, shape: 'ErrorInfo', reason, domain };
            const what = `gRPC ${code} ${reason} domain ${domain}`;
            const read = await callError(agent, 'get', 'T1');
            expect(taskNotFoundProven(read), what).toBe(false);
            expect(operationUnsupportedProven(read), what).toBe(false);
            expect((read as A2AError).reason, what).toBe(`${domain}/${reason}`);
            const send = await callError(agent, 'send', 'book');
            expect(sendEffectOf(send, { namesTask: true }), what).toBe('maybe');
          }),
          { numRuns: 40, examples: [[5, ['TASK_NOT_FOUND', -32001], 'googleapis.com']] },
        );
      });
    } finally {
      grpc.close();
    }
  });
});
