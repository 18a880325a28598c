/**
 * Property (bare unsupported; mends31): an answer proves that the agent does not serve an operation (ListTasks, GetTask,
 * streaming, SubscribeToTask) only as the spec's MethodNotFoundError or UnsupportedOperationError in the binding's own
 * form (spec §5.4 table): JSON-RPC (and a 0.3 HTTP+JSON `{code}` body) the code -32601 or -32004; HTTP+JSON and gRPC a
 * status that may refuse carrying the ErrorInfo reason METHOD_NOT_FOUND or UNSUPPORTED_OPERATION; an A2A 0.3 binding's
 * own "no ListTasks", raised here with no answer. A bare gRPC UNIMPLEMENTED, an HTTP 405 without the ErrorInfo (a
 * proxy's, a gateway's, a framework's page), 405 or 501 put in a JSON-RPC `code`, a reason over another code proves
 * delivery and nothing about what the agent serves. Before, the class alone (named from the status) made a search read
 * "the agent cannot list tasks" (a deduplicating agent's message resent, any other's delegation a person's at once) and a
 * stream's COMPLETED settle without its artifacts. Over binding × status × body (or details) shape × reason × JSON-RPC
 * code × call (ListTasks, GetTask), through the real transports against a byte-exact node:http server and a grpc-js
 * server; the oracle is written out below.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { A2AError, MethodNotFoundError, UnsupportedOperationError, inStreamFrame, operationUnsupportedProven } from '../src/errors.ts';
import { GRPC_MAY_REFUSE, HTTP_BINDINGS, SHAPES, type HttpBinding, type Shape, bodyOf, grpcStatusProperty, refusingHttpStatus, statusMayCarryCode, useAnswerServer } from './helpers/status-property.ts';

const server = useAnswerServer();
type Call = 'ListTasks' | 'GetTask';
const callError = (agent: { listTasks(request: object): Promise<unknown>; getTask(request: { id: string }): Promise<unknown> }, call: Call): Promise<unknown> =>
  (call === 'ListTasks' ? agent.listTasks({ pageSize: 50 }) : agent.getTask({ id: 'T1' })).then(() => undefined, (error: unknown) => error);

const REASONS = ['METHOD_NOT_FOUND', 'UNSUPPORTED_OPERATION', 'TASK_NOT_FOUND', 'INVALID_PARAMS', 'UNIMPLEMENTED', 'method_not_found', 'API_KEY_INVALID'];
const CODES = [-32601, -32004, 405, 501, -32050, -32603, -32001];
const WORDS = { statusName: 'UNIMPLEMENTED', title: 'Method Not Allowed', message: 'Method not allowed' };
/** The reasons of the spec's table that name "not served". */
const UNSUPPORTED_REASONS = new Set(['METHOD_NOT_FOUND', 'UNSUPPORTED_OPERATION']);

/** The oracle over HTTP, written out: which answers are the agent's own "not served". */
function provenOverHttp(binding: HttpBinding, call: Call, status: number, shape: Shape, reason: string, code: number): boolean {
  // A2A 0.3 has no ListTasks: the binding says so itself, nothing is sent.
  if (call === 'ListTasks' && binding.endsWith('0.3')) return true;
  if (status === 401 || status === 403) return false;
  // The JSON-RPC code is the binding's own code (an envelope on any binding; a `{code}` body on 0.3 HTTP+JSON), under
  // a status that may carry a refusal (never a 5xx, 408/409/429: edges35).
  if (shape === 'JSON-RPC envelope' || (shape === '0.3 {code} body' && binding === 'HTTP+JSON 0.3')) return statusMayCarryCode(status) && (code === -32601 || code === -32004);
  // On a status binding (or any HTTP answer without a JSON-RPC code): a status that may refuse and its ErrorInfo.
  if (shape === 'google.rpc.Status with ErrorInfo') return status !== 200 && refusingHttpStatus(status) && UNSUPPORTED_REASONS.has(reason);
  return false;
}

const statusArb = fc.constantFrom(200, 400, 401, 403, 404, 405, 409, 422, 429, 500, 501, 502, 503);

describe('property: over HTTP, only the binding\'s MethodNotFound / UnsupportedOperation proves an operation not served', () => {
  it('binding × status × body shape × reason × JSON-RPC code × call: operationUnsupportedProven as the oracle says', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...HTTP_BINDINGS), statusArb, fc.constantFrom(...SHAPES), fc.constantFrom(...REASONS), fc.constantFrom(...CODES), fc.constantFrom<Call>('ListTasks', 'GetTask'), async (binding, status, shape, reason, code, call) => {
        // A 2xx is an error answer only as a JSON-RPC envelope on JSON-RPC (the others are answers, read as such).
        fc.pre(status !== 200 || (shape === 'JSON-RPC envelope' && binding.startsWith('JSONRPC')) || (call === 'ListTasks' && binding.endsWith('0.3')));
        server.set({ status, ...bodyOf(shape, status, reason, code, WORDS) });
        const error = await callError(server.transport(binding), call);
        const what = `${binding} ${call} HTTP ${status} ${shape} reason ${reason} code ${code}`;
        expect(error, what).toBeInstanceOf(A2AError);
        expect(operationUnsupportedProven(error), `${what} (${(error as A2AError).name})`).toBe(provenOverHttp(binding, call, status, shape, reason, code));
      }),
      {
        numRuns: 400,
        examples: [
          ['JSONRPC', 200, 'JSON-RPC envelope', 'METHOD_NOT_FOUND', -32601, 'ListTasks'],
          ['JSONRPC', 200, 'JSON-RPC envelope', 'UNSUPPORTED_OPERATION', -32004, 'GetTask'],
          ['JSONRPC', 200, 'JSON-RPC envelope', 'METHOD_NOT_FOUND', 405, 'ListTasks'],
          ['JSONRPC', 200, 'JSON-RPC envelope', 'METHOD_NOT_FOUND', 501, 'ListTasks'],
          ['JSONRPC', 200, 'JSON-RPC envelope', 'METHOD_NOT_FOUND', -32050, 'ListTasks'],
          ['JSONRPC', 405, 'google.rpc.Status without ErrorInfo', 'METHOD_NOT_FOUND', -32601, 'ListTasks'],
          ['JSONRPC', 405, 'HTML page', 'METHOD_NOT_FOUND', -32601, 'ListTasks'],
          ['HTTP+JSON 1.0', 405, 'google.rpc.Status without ErrorInfo', 'METHOD_NOT_FOUND', -32601, 'ListTasks'],
          ['HTTP+JSON 1.0', 405, 'google.rpc.Status with ErrorInfo', 'API_KEY_INVALID', -32601, 'ListTasks'],
          ['HTTP+JSON 1.0', 405, 'google.rpc.Status with ErrorInfo', 'METHOD_NOT_FOUND', -32601, 'ListTasks'],
          ['HTTP+JSON 1.0', 400, 'google.rpc.Status with ErrorInfo', 'UNSUPPORTED_OPERATION', -32601, 'GetTask'],
          ['HTTP+JSON 1.0', 501, 'google.rpc.Status with ErrorInfo', 'UNSUPPORTED_OPERATION', -32601, 'ListTasks'],
          ['HTTP+JSON 0.3', 405, '0.3 {code} body', 'METHOD_NOT_FOUND', -32601, 'GetTask'],
          ['HTTP+JSON 0.3', 405, 'HTML page', 'METHOD_NOT_FOUND', -32601, 'ListTasks'],
        ],
      },
    );
  });
});

describe('property: over gRPC, only a refusing status with the ErrorInfo METHOD_NOT_FOUND / UNSUPPORTED_OPERATION proves an operation not served', () => {
  it('status × details shape × reason × call: operationUnsupportedProven exactly for a refusing status whose ErrorInfo names "not served"', async () => {
    await grpcStatusProperty<Call>({
      calls: ['ListTasks', 'GetTask'],
      reasons: REASONS,
      callError,
      check: (error, { code, carried, what }) => {
        expect(error, what).toBeInstanceOf(A2AError);
        expect(operationUnsupportedProven(error), `${what} (${(error as A2AError).name})`).toBe(GRPC_MAY_REFUSE.has(code) && carried !== undefined && UNSUPPORTED_REASONS.has(carried));
        // The class still names UNIMPLEMENTED for the logs: a bare one is an UnsupportedOperationError that proves nothing.
        if (code === 12 && carried === undefined) expect(error, what).toBeInstanceOf(UnsupportedOperationError);
      },
      examples: [
        [12, 'bare', '', 'ListTasks'],
        [12, 'Status without details', '', 'GetTask'],
        [12, 'undecodable details', 'UNSUPPORTED_OPERATION', 'ListTasks'],
        [12, 'ErrorInfo', 'UNIMPLEMENTED', 'ListTasks'],
        [12, 'ErrorInfo', 'METHOD_NOT_FOUND', 'ListTasks'],
        [9, 'ErrorInfo', 'UNSUPPORTED_OPERATION', 'ListTasks'],
        [9, 'another detail, then ErrorInfo', 'UNSUPPORTED_OPERATION', 'GetTask'],
        [13, 'ErrorInfo', 'UNSUPPORTED_OPERATION', 'ListTasks'],
      ],
    });
  });
});

describe('the rule reads the whole answer', () => {
  it('one in a frame of a stream that had opened proves nothing; one raised here with no answer is its class', () => {
    expect(operationUnsupportedProven(inStreamFrame(new UnsupportedOperationError('no', { jsonRpcCode: -32004 })))).toBe(false);
    expect(operationUnsupportedProven(new UnsupportedOperationError('no', { jsonRpcCode: -32004 }))).toBe(true);
    expect(operationUnsupportedProven(new MethodNotFoundError('no', { jsonRpcCode: -32601 }))).toBe(true);
    expect(operationUnsupportedProven(new MethodNotFoundError('no', { jsonRpcCode: 405 }))).toBe(false);
    expect(operationUnsupportedProven(new UnsupportedOperationError('A2A 0.3 has no ListTasks', { delivery: 'not-sent' }))).toBe(true);
    expect(operationUnsupportedProven(new Error('Method not found'))).toBe(false);
  });
});
