/**
 * Property (readnotfound): a read's "not found" proves the agent lost the task only as the spec's TaskNotFoundError in
 * the binding's own form (spec §5.4 table): JSON-RPC (1.0 and 0.3, and a 0.3 HTTP+JSON `{code}` body) the code -32001;
 * HTTP+JSON and gRPC a status that may refuse carrying the ErrorInfo reason TASK_NOT_FOUND. A bare 404 (a framework's
 * or a proxy's page, a `google.rpc.Status` without an ErrorInfo or with another API's reason, 404 in a JSON-RPC `code`,
 * TASK_NOT_FOUND over another code) or a bare gRPC NOT_FOUND proves delivery and nothing about the task. Before, the
 * class alone (TaskNotFoundError, named from the status) counted toward the not-found window: a proxy answering
 * NOT_FOUND to every read ended a running task LOST, and the step was delegated again. Over binding × status × body
 * (or details) shape × reason (× JSON-RPC code) × call (GetTask, CancelTask), through the real transports against a
 * byte-exact node:http server and a grpc-js server; the oracle is written out below.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { A2AError, TaskNotFoundError, inStreamFrame, taskNotFoundProven } from '../src/errors.ts';
import { GRPC_MAY_REFUSE, HTTP_BINDINGS, SHAPES, type HttpBinding, type Shape, bodyOf, grpcStatusProperty, refusingHttpStatus, statusMayCarryCode, useAnswerServer } from './helpers/status-property.ts';

const server = useAnswerServer();
type Call = 'GetTask' | 'CancelTask';
const readError = (read: { getTask(request: { id: string }): Promise<unknown>; cancelTask(request: { id: string }): Promise<unknown> }, call: Call): Promise<unknown> =>
  (call === 'GetTask' ? read.getTask({ id: 'T1' }) : read.cancelTask({ id: 'T1' })).then(() => undefined, (error: unknown) => error);

const REASONS = ['TASK_NOT_FOUND', 'TASK_NOT_CANCELABLE', 'INVALID_PARAMS', 'UNSUPPORTED_OPERATION', 'NOT_FOUND', 'task_not_found', 'API_KEY_INVALID'];
const CODES = [-32001, 404, -32050, -32602, -32004, -32603, -32002];

const WORDS = { statusName: 'NOT_FOUND', title: 'Not Found', message: 'Task not found' };

/** The oracle over HTTP, written out: which answers are the agent's own TaskNotFoundError. */
function provenOverHttp(binding: HttpBinding, status: number, shape: Shape, reason: string, code: number): boolean {
  if (status === 401 || status === 403) return false;
  // The JSON-RPC code is the binding's own code (an envelope on any binding; a `{code}` body on 0.3 HTTP+JSON), under
  // a status that may carry a refusal (never a 5xx, 408/409/429: edges35).
  if (shape === 'JSON-RPC envelope' || (shape === '0.3 {code} body' && binding === 'HTTP+JSON 0.3')) return statusMayCarryCode(status) && code === -32001;
  // On a status binding (or any HTTP answer without a JSON-RPC code): a status that may refuse and its ErrorInfo.
  if (shape === 'google.rpc.Status with ErrorInfo') return status !== 200 && refusingHttpStatus(status) && reason === 'TASK_NOT_FOUND';
  return false;
}

const statusArb = fc.constantFrom(200, 400, 401, 403, 404, 405, 408, 409, 410, 422, 429, 500, 502, 503);

describe('property: over HTTP, only the binding\'s TaskNotFoundError proves a task lost', () => {
  it('binding × status × body shape × reason × JSON-RPC code × call: taskNotFoundProven as the oracle says, delivery received', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...HTTP_BINDINGS), statusArb, fc.constantFrom(...SHAPES), fc.constantFrom(...REASONS), fc.constantFrom(...CODES), fc.constantFrom<Call>('GetTask', 'CancelTask'), async (binding, status, shape, reason, code, call) => {
        // A 2xx is an error answer only as a JSON-RPC envelope on JSON-RPC (the others are answers, read as such).
        fc.pre(status !== 200 || (shape === 'JSON-RPC envelope' && binding.startsWith('JSONRPC')));
        server.set({ status, ...bodyOf(shape, status, reason, code, WORDS) });
        const error = await readError(server.transport(binding), call);
        const what = `${binding} ${call} HTTP ${status} ${shape} reason ${reason} code ${code}`;
        expect(error, what).toBeInstanceOf(A2AError);
        expect((error as A2AError).delivery, what).toBe('received');
        expect(taskNotFoundProven(error), `${what} (${(error as A2AError).name})`).toBe(provenOverHttp(binding, status, shape, reason, code));
      }),
      {
        numRuns: 400,
        examples: [
          ['JSONRPC', 200, 'JSON-RPC envelope', 'TASK_NOT_FOUND', -32001, 'GetTask'],
          ['JSONRPC', 200, 'JSON-RPC envelope', 'TASK_NOT_FOUND', 404, 'GetTask'],
          ['JSONRPC', 200, 'JSON-RPC envelope', 'TASK_NOT_FOUND', -32050, 'CancelTask'],
          ['JSONRPC 0.3', 200, 'JSON-RPC envelope', 'NOT_FOUND', -32001, 'GetTask'],
          ['JSONRPC', 404, 'google.rpc.Status without ErrorInfo', 'TASK_NOT_FOUND', -32001, 'GetTask'],
          ['HTTP+JSON 1.0', 404, 'google.rpc.Status without ErrorInfo', 'TASK_NOT_FOUND', -32001, 'GetTask'],
          ['HTTP+JSON 1.0', 404, 'google.rpc.Status with ErrorInfo', 'NOT_FOUND', -32001, 'GetTask'],
          ['HTTP+JSON 1.0', 404, 'google.rpc.Status with ErrorInfo', 'TASK_NOT_FOUND', -32001, 'CancelTask'],
          ['HTTP+JSON 1.0', 500, 'google.rpc.Status with ErrorInfo', 'TASK_NOT_FOUND', -32001, 'GetTask'],
          ['HTTP+JSON 0.3', 404, '0.3 {code} body', 'TASK_NOT_FOUND', -32001, 'GetTask'],
          ['HTTP+JSON 0.3', 404, 'google.rpc.Status without ErrorInfo', 'TASK_NOT_FOUND', -32001, 'GetTask'],
          ['HTTP+JSON 1.0', 404, 'HTML page', 'TASK_NOT_FOUND', -32001, 'GetTask'],
        ],
      },
    );
  });
});

describe('property: over gRPC, only NOT_FOUND (or another refusing status) with the ErrorInfo TASK_NOT_FOUND proves a task lost', () => {
  it('status × details shape × reason × call: taskNotFoundProven exactly for a refusing status whose ErrorInfo says TASK_NOT_FOUND', async () => {
    await grpcStatusProperty<Call>({
      calls: ['GetTask', 'CancelTask'],
      reasons: REASONS,
      callError: readError,
      check: (error, { code, call, carried, what }) => {
        expect(error, what).toBeInstanceOf(A2AError);
        expect(taskNotFoundProven(error), `${what} (${(error as A2AError).name})`).toBe(GRPC_MAY_REFUSE.has(code) && carried === 'TASK_NOT_FOUND');
        // The class still names NOT_FOUND for the logs: a bare NOT_FOUND is a TaskNotFoundError that proves nothing.
        if (code === 5 && carried === undefined) expect(error, `${what} ${call}`).toBeInstanceOf(TaskNotFoundError);
      },
      examples: [
        [5, 'bare', '', 'GetTask'],
        [5, 'Status without details', '', 'CancelTask'],
        [5, 'undecodable details', 'TASK_NOT_FOUND', 'GetTask'],
        [5, 'ErrorInfo', 'NOT_FOUND', 'GetTask'],
        [5, 'ErrorInfo', 'TASK_NOT_FOUND', 'GetTask'],
        [5, 'another detail, then ErrorInfo', 'TASK_NOT_FOUND', 'CancelTask'],
        [13, 'ErrorInfo', 'TASK_NOT_FOUND', 'GetTask'],
        [12, 'bare', '', 'GetTask'],
      ],
    });
  });
});

describe('the rule reads the whole answer', () => {
  it('a TaskNotFoundError in a frame of a stream that had opened proves nothing; one raised here with no answer is its class', () => {
    expect(taskNotFoundProven(inStreamFrame(new TaskNotFoundError('gone', { jsonRpcCode: -32001 })))).toBe(false);
    expect(taskNotFoundProven(new TaskNotFoundError('gone', { jsonRpcCode: -32001 }))).toBe(true);
    expect(taskNotFoundProven(new TaskNotFoundError('gone'))).toBe(true);
    expect(taskNotFoundProven(new Error('Task not found'))).toBe(false);
  });
});
