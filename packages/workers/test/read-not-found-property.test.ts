/**
 * Property (readnotfound): the reads' one reading of "not found" (`readFailure`, used by GetTask, CancelTask, the
 * reply, the read after a refused push, the collect before a stream's COMPLETED). A failed read is the `task-not-found`
 * observation (the not-found window, then the check before LOST, then LOST) exactly when the answer is the spec's
 * TaskNotFoundError in its binding's form: JSON-RPC -32001; HTTP+JSON or gRPC a status that may refuse with the
 * ErrorInfo reason TASK_NOT_FOUND. A bare 404 or NOT_FOUND, or TASK_NOT_FOUND over another code, is a `read-failed`
 * answer we cannot use (PROTOCOL_ERROR): the table never counts it toward the window nor writes LOST from it, whatever the row's not-found count and the time since its first not-found. Before, any
 * TaskNotFoundError (the class named from a bare status) was `task-not-found`: a proxy's NOT_FOUND to every read ended
 * a running task LOST and the step went to another agent. Over binding × status × body (or details) shape × reason ×
 * JSON-RPC code × call × the row's not-found history; the errors built by the a2a package's own mappings.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { A2AError, TaskNotFoundError, errorFromHttp, errorFromJsonRpc } from '@durable-a2a/a2a';
import type { DelegationRecord } from '@durable-a2a/shared';
import type { AgentCall } from '../src/delegation/core/observation.ts';
import type { Policy } from '../src/delegation/core/policy.ts';
import { transition, type Write } from '../src/delegation/core/transitions.ts';
import { readFailure } from '../src/delegation/io/read.ts';
import { stepRow } from './step-row.ts';

const NOW = 5_000_000;
const policy = { now: () => NOW, random: () => 0.5, sendAttempts: 3, sendSettleMs: 31_000, notFoundThreshold: 3, notFoundWindowMs: 30_000, reconcileIntervalMs: 1_000, unacceptableAnswerLimit: 3 } as unknown as Policy;
const silent = { warn: () => undefined, info: () => undefined, debug: () => undefined, error: () => undefined } as never;

const errorInfo = (reason: string) => ({ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason, domain: 'a2a-protocol.org' });
const REASONS = ['TASK_NOT_FOUND', 'NOT_FOUND', 'INVALID_PARAMS', 'TASK_NOT_CANCELABLE', 'task_not_found', 'API_KEY_INVALID'];
const CODES = [-32001, 404, -32050, -32602, -32603];
const refusingHttp = (status: number) => status >= 400 && status < 500 && ![401, 403, 408, 409, 429].includes(status);
const GRPC_MAY_REFUSE = new Set([3, 5, 7, 9, 11, 12, 16]);

/** One failed read as a binding answers it, and whether the oracle calls it the agent's TaskNotFoundError. */
type Answer = { error: unknown; proven: boolean; what: string };

const httpAnswer = fc
  .record({ status: fc.constantFrom(400, 404, 405, 410, 422, 500, 502), shape: fc.constantFrom('A2A Status', 'Status without ErrorInfo', 'JSON message', 'HTML', 'empty'), reason: fc.constantFrom(...REASONS) })
  .map(({ status, shape, reason }): Answer => {
    const body =
      shape === 'A2A Status' ? JSON.stringify({ error: { code: status, status: 'NOT_FOUND', message: 'no', details: [errorInfo(reason)] } })
      : shape === 'Status without ErrorInfo' ? JSON.stringify({ error: { code: status, status: 'NOT_FOUND', message: 'Not Found' } })
      : shape === 'JSON message' ? JSON.stringify({ message: 'Task not found' })
      : shape === 'HTML' ? '<html>404 Not Found</html>' : '';
    return { error: errorFromHttp(status, shape === 'HTML' ? 'text/html' : 'application/json', body), proven: shape === 'A2A Status' && refusingHttp(status) && reason === 'TASK_NOT_FOUND', what: `HTTP ${status} ${shape} ${reason}` };
  });

const jsonRpcAnswer = fc
  .record({ code: fc.constantFrom(...CODES), reason: fc.option(fc.constantFrom(...REASONS), { nil: undefined }), httpStatus: fc.constantFrom(undefined, 200, 404) })
  .map(({ code, reason, httpStatus }): Answer => {
    const error = errorFromJsonRpc({ code, message: 'no', ...(reason ? { data: [errorInfo(reason)] } : {}) }, '{}', httpStatus);
    return { error, proven: code === -32001, what: `JSON-RPC ${code} ${reason ?? 'no ErrorInfo'} HTTP ${httpStatus ?? '-'}` };
  });

/** gRPC: the class the transport names (the reason's first, else NOT_FOUND's), with the status and reason it read. */
const grpcAnswer = fc.record({ status: fc.integer({ min: 1, max: 16 }), reason: fc.option(fc.constantFrom('TASK_NOT_FOUND', 'NOT_FOUND', 'API_KEY_INVALID'), { nil: undefined }) }).chain(({ status, reason }) => {
  const named = reason === 'TASK_NOT_FOUND' || status === 5;
  if (!named) return fc.constant<Answer>({ error: new A2AError(`gRPC ${status}`, 'INTERNAL_ERROR', true, { grpcStatus: status, delivery: 'received' }), proven: false, what: `gRPC ${status} ${reason}` });
  const error = new TaskNotFoundError(`gRPC status ${status}`, { grpcStatus: status, ...(reason ? { reason } : {}), delivery: 'received' });
  return fc.constant<Answer>({ error, proven: GRPC_MAY_REFUSE.has(status) && reason === 'TASK_NOT_FOUND', what: `gRPC ${status} ${reason ?? 'bare'}` });
});

const answerArb = fc.oneof(httpAnswer, jsonRpcAnswer, grpcAnswer);

describe('property: only the binding\'s TaskNotFoundError reaches the not-found window', () => {
  it('binding × status × shape × reason × code × call × not-found history: task-not-found exactly as the oracle says; a bare one never noted, never LOST', () => {
    fc.assert(
      fc.property(
        answerArb,
        fc.constantFrom<AgentCall>('get-task', 'cancel', 'reply', 'push'),
        fc.integer({ min: 0, max: 10 }),
        fc.option(fc.integer({ min: 0, max: 120_000 }), { nil: undefined }),
        ({ error, proven, what }, call, notFoundCount, sinceAgo) => {
          const observed = readFailure(error, call, 'reading our task', call === 'get-task', silent);
          expect(observed.kind, what).toBe(proven ? 'task-not-found' : 'read-failed');
          if (proven) return;
          if (error instanceof TaskNotFoundError) expect(observed, what).toMatchObject({ kind: 'read-failed', retryable: false, code: 'PROTOCOL_ERROR', unacceptable: { code: 'PROTOCOL_ERROR' } });
          // Whatever the row counted before (a window already spent), a bare not-found neither counts nor ends it LOST.
          const record: DelegationRecord = stepRow({ state: 'WORKING', taskId: 'T1', notFoundCount, ...(sinceAgo === undefined ? {} : { firstNotFoundAt: NOW - sinceAgo }) });
          const step = transition(record, observed, policy);
          const writes: readonly Write[] = step.write === undefined ? [] : Array.isArray(step.write) ? step.write : [step.write as Write];
          expect(writes.map((write) => write.kind), what).not.toContain('note-not-found');
          expect(writes.map((write) => (write.kind === 'outcome' ? write.state : undefined)), what).not.toContain('LOST');
          // (A follow cycle reads our task by ListTasks instead: a search to read, never the check before LOST.)
          expect(step.next.kind === 'search' ? step.next.purpose : undefined, what).not.toBe('lost-check');
        },
      ),
      {
        numRuns: 500,
        examples: [
          [{ error: errorFromHttp(404, 'application/json', JSON.stringify({ error: { code: 404, status: 'NOT_FOUND', message: 'Not Found' } })), proven: false, what: 'HTTP 404 Status without ErrorInfo' }, 'get-task', 2, 60_000],
          [{ error: errorFromJsonRpc({ code: 404, message: 'Not Found' }, '{}'), proven: false, what: 'JSON-RPC code 404' }, 'cancel', 2, 60_000],
          [{ error: new TaskNotFoundError('gRPC status 5', { grpcStatus: 5, delivery: 'received' }), proven: false, what: 'gRPC NOT_FOUND bare' }, 'get-task', 2, 60_000],
          [{ error: new TaskNotFoundError('gRPC status 5', { grpcStatus: 5, reason: 'TASK_NOT_FOUND', delivery: 'received' }), proven: true, what: 'gRPC NOT_FOUND TASK_NOT_FOUND' }, 'get-task', 2, 60_000],
        ],
      },
    );
  });
});
