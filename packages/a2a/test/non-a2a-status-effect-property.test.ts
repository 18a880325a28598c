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
 * content type × body shape, through the real transports against a byte-exact node:http server.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTransport } from '../src/client.ts';
import { A2AError, sendEffectOf } from '../src/errors.ts';
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
