/**
 * Property (fourohfour): an HTTP status whose body is not an A2A error proves delivery, never that a SendMessage
 * created nothing. An agent booked (made the task, did the work), then answered HTTP 404 with `{"message":"Task not
 * found"}` (or `application/problem+json`, an HTML page, nothing): before, `statusRefuses` read any 4xx other than
 * 408/409/429 without an A2A body as a wrong URL's page, effect none: the attempt FAILED without a search and the step
 * went to a second agent, booked twice. Now only A2A speech refuses: on JSON-RPC the spec's own refusal code in an
 * envelope, on HTTP+JSON 1.0 a refusing 4xx whose `google.rpc.Status` carries an ErrorInfo naming a refusal of the
 * spec's table (spec §11.6: ErrorInfo MUST be present, several errors share 400), on 0.3 a `{code}` body with such a
 * code; and 401/403 (credentials refused, the table's row; P34 resends to the same agent, never another). Everything
 * else is effect maybe: the search by our messageId decides. Over binding (JSON-RPC and HTTP+JSON, 1.0 and 0.3) × status ×
 * content type × body shape, through the real transports against a byte-exact node:http server; and over gRPC (below).
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTransport } from '../src/client.ts';
import { A2AError, sendEffectOf } from '../src/errors.ts';
import { GrpcTransport } from '../src/grpc/transport.ts';
import { callError } from './helpers/grpc-calls.ts';
import { type ScriptedStatus, type StatusDetailsShape, startStatusServer } from './helpers/grpc-status-server.ts';
import { type RawServer, requestIdOf, startRawServer } from './helpers/raw-server.ts';

const message = { messageId: 'm-ours', contextId: 'c-ours', role: 'ROLE_USER' as const, parts: [{ text: 'book' }] };

let answer: { status: number; body: string; contentType: string | undefined } = { status: 200, body: '{}', contentType: 'application/json' };
let server: RawServer;
beforeAll(async () => {
  server = await startRawServer((request, response) => {
    // A JSON-RPC envelope echoes our request id: the body answers our request as far as ids go.
    const body = answer.body.replaceAll('"__ID__"', JSON.stringify(requestIdOf(request)));
    response.writeHead(answer.status, { ...(answer.contentType === undefined ? {} : { 'content-type': answer.contentType }), 'content-length': Buffer.byteLength(body) });
    response.end(body);
  });
});
afterAll(() => server.close());

type Binding = 'JSONRPC' | 'JSONRPC 0.3' | 'HTTP+JSON 1.0' | 'HTTP+JSON 0.3';
const BINDINGS: Binding[] = ['JSONRPC', 'JSONRPC 0.3', 'HTTP+JSON 1.0', 'HTTP+JSON 0.3'];
const transport = (binding: Binding) =>
  createTransport({ url: server.url, protocolBinding: binding.startsWith('JSONRPC') ? 'JSONRPC' : 'HTTP+JSON', protocolVersion: binding.endsWith('0.3') ? '0.3' : '1.0' });
const failure = (binding: Binding) => transport(binding).sendMessage({ message }).then((value) => ({ value }), (error: unknown) => error);

const errorInfo = (reason: string, domain = 'a2a-protocol.org') => ({ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason, domain });

/** Bodies no A2A binding speaks: a framework's or a proxy's page, whatever its status. */
const NON_A2A_BODIES: Record<string, (status: number) => string> = {
  empty: () => '',
  'HTML page': () => '<html><body><h1>404 Not Found</h1></body></html>',
  'plain text': () => 'Not Found',
  'JSON message': () => JSON.stringify({ message: 'Task not found' }),
  'JSON error string': () => JSON.stringify({ error: 'Not Found', statusCode: 404 }),
  'problem+json': (status) => JSON.stringify({ type: 'about:blank', title: 'Not Found', status, detail: 'Task not found' }),
  'google.rpc.Status without ErrorInfo': (status) => JSON.stringify({ error: { code: status, status: 'NOT_FOUND', message: 'Method not found' } }),
  'google.rpc.Status with another API\'s reason': (status) => JSON.stringify({ error: { code: status, status: 'INVALID_ARGUMENT', message: 'no', details: [errorInfo('API_KEY_INVALID', 'googleapis.com')] } }),
  'error object without code': () => JSON.stringify({ error: { message: 'Task not found' } }),
};
const CONTENT_TYPES = ['application/json', 'application/problem+json', 'text/html', 'text/plain', 'application/a2a+json', undefined];
const statusArb = fc.oneof(fc.constantFrom(400, 401, 403, 404, 405, 406, 408, 409, 410, 411, 413, 415, 422, 429, 451, 500, 501, 502, 503, 504), fc.integer({ min: 400, max: 599 }));

/** The oracle, written out: only credentials refused (401/403, the table's row) prove anything without A2A speech. */
const credentialsRefused = (status: number) => status === 401 || status === 403;

describe('property: a status without A2A proof of refusal never proves that a SendMessage created nothing', () => {
  it('binding × status × content type × body shape: effect maybe (a search decides), but for 401/403', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...BINDINGS), statusArb, fc.constantFrom(...CONTENT_TYPES), fc.constantFrom(...Object.keys(NON_A2A_BODIES)), async (binding, status, contentType, shape) => {
        answer = { status, body: NON_A2A_BODIES[shape]!(status), contentType };
        const error = await failure(binding);
        const what = `${binding} HTTP ${status} ${contentType ?? '(no content type)'} ${shape}`;
        expect(error, what).toBeInstanceOf(A2AError);
        expect((error as A2AError).delivery, what).toBe('received');
        const expected = credentialsRefused(status) ? 'none' : 'maybe';
        // A step's SendMessage (it names no task) and a reply (it names one): the status alone decides neither.
        expect(sendEffectOf(error, { namesTask: false }), what).toBe(expected);
        expect(sendEffectOf(error, { namesTask: true }), what).toBe(expected);
      }),
      {
        numRuns: 300,
        examples: [
          ['JSONRPC', 404, 'application/json', 'JSON message'],
          ['HTTP+JSON 1.0', 404, 'application/json', 'JSON message'],
          ['HTTP+JSON 0.3', 404, 'application/problem+json', 'problem+json'],
          ['HTTP+JSON 1.0', 404, 'text/html', 'HTML page'],
          ['JSONRPC', 404, undefined, 'empty'],
          ['HTTP+JSON 1.0', 400, 'application/json', 'google.rpc.Status without ErrorInfo'],
          ['HTTP+JSON 1.0', 405, 'application/json', 'google.rpc.Status without ErrorInfo'],
          ['HTTP+JSON 1.0', 415, 'application/json', 'google.rpc.Status with another API\'s reason'],
          ['JSONRPC', 410, 'text/plain', 'plain text'],
          ['JSONRPC', 422, 'application/json', 'JSON error string'],
          ['HTTP+JSON 1.0', 413, 'text/html', 'HTML page'],
          ['JSONRPC', 403, 'text/html', 'HTML page'],
        ],
      },
    );
  });

  /** Refusals the spec's table names, as each binding speaks them, with an error that never follows the work. */
  const REFUSALS: [reason: string, jsonRpcCode: number][] = [
    ['INVALID_PARAMS', -32602],
    ['INVALID_REQUEST', -32600],
    ['METHOD_NOT_FOUND', -32601],
    ['UNSUPPORTED_OPERATION', -32004],
    ['CONTENT_TYPE_NOT_SUPPORTED', -32005],
    ['VERSION_NOT_SUPPORTED', -32009],
    ['EXTENSION_SUPPORT_REQUIRED', -32008],
  ];
  const a2aRefusal = (binding: Binding, status: number, [reason, code]: [string, number]): { body: string; contentType: string } => {
    if (binding.startsWith('JSONRPC')) return { body: JSON.stringify({ jsonrpc: '2.0', id: '__ID__', error: { code, message: 'refused', data: [errorInfo(reason)] } }), contentType: 'application/json' };
    if (binding === 'HTTP+JSON 0.3') return { body: JSON.stringify({ code, message: 'refused' }), contentType: 'application/json' };
    return { body: JSON.stringify({ error: { code: status, status: 'INVALID_ARGUMENT', message: 'refused', details: [errorInfo(reason)] } }), contentType: 'application/a2a+json' };
  };

  it('control: the spec\'s refusals, spoken by the binding on a refusing status, still prove nothing was created', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...BINDINGS), fc.constantFrom(400, 404, 405, 410, 415, 422), fc.constantFrom(...REFUSALS), async (binding, status, refusal) => {
        answer = { status, ...a2aRefusal(binding, status, refusal) };
        const error = await failure(binding);
        expect(sendEffectOf(error, { namesTask: false }), `${binding} HTTP ${status} ${refusal[0]}`).toBe('none');
      }),
      { numRuns: 60 },
    );
  });
});

/**
 * The same rule on gRPC (grpcstatus): a gRPC status refuses a SendMessage only when it may carry a refusal (the
 * statuses the table maps to a refusal class) and the binding's ErrorInfo (the `grpc-status-details-bin` trailer)
 * names a refusal of the spec's table, or when it refuses our credentials (UNAUTHENTICATED, PERMISSION_DENIED). A bare
 * NOT_FOUND, UNIMPLEMENTED, INVALID_ARGUMENT, FAILED_PRECONDITION or OUT_OF_RANGE (a proxy's, an interceptor's, a
 * server that threw after booking), or one whose details hold no ErrorInfo, another API's reason or bytes no one can
 * decode, is effect maybe. Before, the status alone refused: an agent booked, answered such a status, and the step went
 * to a second agent. Over status × details shape × reason (spec refusals, spec reasons that may follow the work, other
 * APIs' reasons, any string) × whether the request names a task, through the real gRPC transport against a grpc-js
 * server; each call's class is the one the reason (else the status) names, as the reads need (GetTask NOT_FOUND is a
 * TaskNotFoundError), and a status only a server sends is delivery `received`.
 */
describe('property: a gRPC status without the binding\'s ErrorInfo refusal never proves that a SendMessage created nothing', () => {
  let grpcAnswer: ScriptedStatus = { code: 5, shape: 'bare', reason: '', domain: '' };
  let grpcServer: { url: string; close: () => void };
  let grpcUrl = '';

  beforeAll(async () => {
    grpcServer = await startStatusServer(['SendMessage', 'GetTask'], () => grpcAnswer);
    grpcUrl = grpcServer.url;
  });
  afterAll(() => grpcServer.close());

  /** The spec's refusals (spec §5.4 and JSON-RPC 2.0 §5.1 reasons), with the class name each names. */
  const SPEC_REFUSALS: Record<string, string> = {
    TASK_NOT_FOUND: 'TaskNotFoundError', PUSH_NOTIFICATION_NOT_SUPPORTED: 'PushNotificationNotSupportedError', UNSUPPORTED_OPERATION: 'UnsupportedOperationError',
    CONTENT_TYPE_NOT_SUPPORTED: 'ContentTypeNotSupportedError', EXTENSION_SUPPORT_REQUIRED: 'ExtensionSupportRequiredError', VERSION_NOT_SUPPORTED: 'VersionNotSupportedError',
    PARSE_ERROR: 'JsonRpcParseError', INVALID_REQUEST: 'InvalidRequestError', METHOD_NOT_FOUND: 'MethodNotFoundError', INVALID_PARAMS: 'InvalidParamsError',
  };
  /** The spec's reasons for errors that may follow the work. */
  const SPEC_MAYBE: Record<string, string> = {
    TASK_NOT_CANCELABLE: 'TaskNotCancelableError', INVALID_AGENT_RESPONSE: 'InvalidAgentResponseError', EXTENDED_AGENT_CARD_NOT_CONFIGURED: 'ExtendedAgentCardNotConfiguredError',
    INTERNAL_ERROR: 'InternalAgentError', ALREADY_EXISTS: 'ConflictError',
  };
  /** gRPC status → the class it names without a known reason (spec §5.4 gRPC column; the others as status-table.ts says). */
  const BY_STATUS: Record<number, string> = {
    1: 'NetworkError', 2: 'InternalAgentError', 3: 'InvalidParamsError', 4: 'NetworkError', 5: 'TaskNotFoundError', 6: 'ConflictError', 7: 'AuthenticationError', 8: 'UpstreamError',
    9: 'InvalidRequestError', 10: 'UpstreamError', 11: 'InvalidParamsError', 12: 'UnsupportedOperationError', 13: 'InternalAgentError', 14: 'UpstreamError', 15: 'InternalAgentError', 16: 'AuthenticationError',
  };
  /** Statuses that may carry a refusal; of them, the ones that refuse our credentials alone. */
  const MAY_REFUSE = new Set([3, 5, 7, 9, 11, 12, 16]);
  const CREDENTIALS = new Set([7, 16]);
  /** Statuses grpc-js raises by itself (no answer needed): delivery not proven. */
  const LOCAL = new Set([1, 2, 4, 8, 13, 14]);
  const OTHER_REASONS = ['API_KEY_INVALID', 'RATE_LIMIT_EXCEEDED', 'SERVICE_DISABLED', 'NOT_FOUND', 'UNIMPLEMENTED', 'task_not_found', ''];
  // Names of Object.prototype too: a reason is looked up in a Map, never as an object key (CI drew one: the oracle erred).
  const reasonArb = fc.oneof(fc.constantFrom(...Object.keys(SPEC_REFUSALS)), fc.constantFrom(...Object.keys(SPEC_MAYBE)), fc.constantFrom(...OTHER_REASONS), fc.constantFrom('toString', 'constructor', '__proto__', 'hasOwnProperty', 'valueOf'), fc.string({ maxLength: 16 }));
  const shapeArb = fc.constantFrom<StatusDetailsShape>('bare', 'Status without details', 'ErrorInfo', 'another detail, then ErrorInfo', 'undecodable details');

  /** The oracle, written out: the class and effect of a status with `reason` carried (or not) to a request that names a task (or not). */
  function expectedOf(code: number, carried: string | undefined, namesTask: boolean): { name: string; effect: 'none' | 'maybe' } {
    // Own keys only: fast-check's strings include `toString`, `constructor`, `__proto__` (`in` walks the prototype).
    const known = carried !== undefined && (Object.hasOwn(SPEC_REFUSALS, carried) || Object.hasOwn(SPEC_MAYBE, carried));
    const name = known ? (SPEC_REFUSALS[carried!] ?? SPEC_MAYBE[carried!])! : BY_STATUS[code]!;
    const refusalClass = Object.values(SPEC_REFUSALS).includes(name) || name === 'AuthenticationError';
    const aboutAbsentTask = name === 'TaskNotFoundError' && !namesTask;
    const spoken = MAY_REFUSE.has(code) && (CREDENTIALS.has(code) || (carried !== undefined && Object.hasOwn(SPEC_REFUSALS, carried)));
    return { name, effect: refusalClass && !aboutAbsentTask && spoken ? 'none' : 'maybe' };
  }

  it('status × details shape × reason × names a task: effect none only for a refusing status with the spec\'s refusal in its ErrorInfo, or a credentials status', async () => {
    const transport = new GrpcTransport({ url: grpcUrl, protocolBinding: 'GRPC', protocolVersion: '1.0' }, { requestTimeoutMs: 5_000 });
    try {
      await fc.assert(
        fc.asyncProperty(fc.integer({ min: 1, max: 16 }), shapeArb, reasonArb, fc.constantFrom('a2a-protocol.org', 'googleapis.com', ''), fc.boolean(), async (code, shape, reason, domain, namesTask) => {
          grpcAnswer = { code, shape, reason, domain };
          const decoded = shape === 'ErrorInfo' || shape === 'another detail, then ErrorInfo' ? (reason === '' ? undefined : reason) : undefined;
          // Only the A2A domain's ErrorInfo names an A2A error (spec §10.6; edges35): another domain's is kept for the logs.
          const carried = domain === 'a2a-protocol.org' ? decoded : undefined;
          const what = `gRPC ${code} ${shape} reason ${JSON.stringify(reason)} domain ${domain} namesTask ${namesTask}`;
          const expected = expectedOf(code, carried, namesTask);
          const sent = await callError(transport, 'send', 'book');
          expect(sent, what).toBeInstanceOf(A2AError);
          expect((sent as A2AError).name, what).toBe(expected.name);
          // A status only a server sends, or any decoded reason, is an answer that arrived.
          expect((sent as A2AError).delivery, what).toBe(LOCAL.has(code) && decoded === undefined ? 'maybe' : 'received');
          expect(sendEffectOf(sent, { namesTask }), what).toBe(expected.effect);
          // The reads keep the class the status or reason names (GetTask NOT_FOUND on a task we know: TaskNotFoundError).
          const read = await callError(transport, 'get', 'T1');
          expect((read as A2AError).name, `GetTask ${what}`).toBe(expected.name);
        }),
        {
          numRuns: 300,
          examples: [
            [5, 'bare', '', '', false],
            [5, 'bare', '', '', true],
            [12, 'bare', '', '', false],
            [3, 'bare', '', '', false],
            [9, 'Status without details', '', '', false],
            [11, 'undecodable details', 'INVALID_PARAMS', 'a2a-protocol.org', false],
            [12, 'ErrorInfo', 'API_KEY_INVALID', 'googleapis.com', false],
            [12, 'ErrorInfo', 'UNSUPPORTED_OPERATION', 'a2a-protocol.org', false],
            [9, 'another detail, then ErrorInfo', 'VERSION_NOT_SUPPORTED', 'a2a-protocol.org', false],
            [3, 'ErrorInfo', 'CONTENT_TYPE_NOT_SUPPORTED', 'a2a-protocol.org', true],
            [5, 'ErrorInfo', 'TASK_NOT_FOUND', 'a2a-protocol.org', true],
            [9, 'ErrorInfo', 'TASK_NOT_CANCELABLE', 'a2a-protocol.org', false],
            [16, 'bare', '', '', false],
            [7, 'ErrorInfo', 'TOKEN_EXPIRED', 'googleapis.com', false],
            [5, 'ErrorInfo', 'TASK_NOT_FOUND', 'googleapis.com', true],
            [3, 'ErrorInfo', 'INVALID_PARAMS', '', false],
            [13, 'ErrorInfo', 'UNSUPPORTED_OPERATION', 'a2a-protocol.org', false],
          ],
        },
      );
    } finally {
      transport.close();
    }
  });
});
