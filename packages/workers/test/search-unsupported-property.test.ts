/**
 * Property (bare unsupported; mends31): the search for our message reads "the agent cannot list tasks" only from the
 * agent's own MethodNotFoundError or UnsupportedOperationError on its first ListTasks, as the binding speaks it
 * (`operationUnsupportedProven`: JSON-RPC -32601 / -32004; HTTP+JSON and gRPC a status that may refuse carrying the
 * ErrorInfo reason METHOD_NOT_FOUND or UNSUPPORTED_OPERATION). A bare gRPC UNIMPLEMENTED, an HTTP 405 without the
 * ErrorInfo, 405 or 501 in a JSON-RPC `code`, a reason over another code: a search that failed (PROTOCOL_ERROR, one
 * counted round: `progress`), never `unsupported`, so never a resend to a deduplicating agent nor a person at once.
 * Before, the class alone (named from the status) was `unsupported`: a proxy's UNIMPLEMENTED had a deduplicating agent's
 * message resent, and any other agent's delegation went to a person at once. Over binding × status × reason (× JSON-RPC
 * code) × the call it answered (the first ListTasks, a later page) × deduplicating or not × purpose (reconcile, the
 * check before LOST); the errors built by the a2a package's own mappings (gRPC: the class its status table names).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  A2AError,
  MethodNotFoundError,
  UnsupportedOperationError,
  errorFromHttp,
  errorFromJsonRpc,
  type A2ATransport,
  type Task,
} from '@durable-a2a/a2a';
import type { WorkerContext } from '../src/context.ts';
import type { Policy } from '../src/delegation/core/policy.ts';
import { transition, type Write } from '../src/delegation/core/transitions.ts';
import { searchForMessage } from '../src/delegation/io/search.ts';
import { stepRow } from './step-row.ts';

const NOW = 5_000_000;
const AGENT = 'http://agent.example/.well-known/agent-card.json';
const policy = { now: () => NOW, random: () => 0.5, sendAttempts: 3, sendSettleMs: 31_000, notFoundThreshold: 3, notFoundWindowMs: 30_000, reconcileIntervalMs: 1_000, unacceptableAnswerLimit: 3 } as unknown as Policy;
const silent = { warn: () => undefined, info: () => undefined, debug: () => undefined, error: () => undefined } as never;

const errorInfo = (reason: string) => ({ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason, domain: 'a2a-protocol.org' });
const REASONS = ['METHOD_NOT_FOUND', 'UNSUPPORTED_OPERATION', 'INVALID_PARAMS', 'UNIMPLEMENTED', 'API_KEY_INVALID'];
const UNSUPPORTED_REASONS = new Set(['METHOD_NOT_FOUND', 'UNSUPPORTED_OPERATION']);
const refusingHttp = (status: number) => status >= 400 && status < 500 && ![401, 403, 408, 409, 429].includes(status);
const GRPC_MAY_REFUSE = new Set([3, 5, 7, 9, 11, 12, 16]);

/** One failed ListTasks as a binding answers it, and whether the oracle calls it the agent's own "not served". */
type Answer = { error: A2AError; proven: boolean; what: string };

const httpAnswer = fc
  .record({ status: fc.constantFrom(400, 404, 405, 422, 500, 501, 502), shape: fc.constantFrom('A2A Status', 'Status without ErrorInfo', 'JSON message', 'HTML', 'empty'), reason: fc.constantFrom(...REASONS) })
  .map(({ status, shape, reason }): Answer => {
    const body =
      shape === 'A2A Status' ? JSON.stringify({ error: { code: status, status: 'UNIMPLEMENTED', message: 'no', details: [errorInfo(reason)] } })
      : shape === 'Status without ErrorInfo' ? JSON.stringify({ error: { code: status, status: 'UNIMPLEMENTED', message: 'Method Not Allowed' } })
      : shape === 'JSON message' ? JSON.stringify({ message: 'Method not allowed' })
      : shape === 'HTML' ? '<html>405 Method Not Allowed</html>' : '';
    return { error: errorFromHttp(status, shape === 'HTML' ? 'text/html' : 'application/json', body), proven: shape === 'A2A Status' && refusingHttp(status) && UNSUPPORTED_REASONS.has(reason), what: `HTTP ${status} ${shape} ${reason}` };
  });

const jsonRpcAnswer = fc
  .record({ code: fc.constantFrom(-32601, -32004, 405, 501, -32050, -32603), reason: fc.option(fc.constantFrom(...REASONS), { nil: undefined }), httpStatus: fc.constantFrom(undefined, 200, 405) })
  .map(({ code, reason, httpStatus }): Answer => {
    const error = errorFromJsonRpc({ code, message: 'no', ...(reason ? { data: [errorInfo(reason)] } : {}) }, '{}', httpStatus);
    return { error, proven: code === -32601 || code === -32004, what: `JSON-RPC ${code} ${reason ?? 'no ErrorInfo'} HTTP ${httpStatus ?? '-'}` };
  });

/** gRPC: the class the transport names (the reason's first, else UNIMPLEMENTED's), with the status and reason it read. */
const grpcAnswer = fc.record({ status: fc.integer({ min: 1, max: 16 }), reason: fc.option(fc.constantFrom(...REASONS), { nil: undefined }) }).map(({ status, reason }): Answer => {
  const details = { grpcStatus: status, ...(reason ? { reason } : {}), delivery: 'received' as const };
  const named = reason === 'METHOD_NOT_FOUND' ? MethodNotFoundError : reason === 'UNSUPPORTED_OPERATION' || (reason === undefined && status === 12) ? UnsupportedOperationError : undefined;
  const error = named ? new named(`gRPC status ${status}`, details) : new A2AError(`gRPC status ${status}`, 'INTERNAL_ERROR', true, details);
  return { error, proven: named !== undefined && GRPC_MAY_REFUSE.has(status) && reason !== undefined && UNSUPPORTED_REASONS.has(reason), what: `gRPC ${status} ${reason ?? 'bare'}` };
});

const answerArb = fc.oneof(httpAnswer, jsonRpcAnswer, grpcAnswer);

/** An agent whose ListTasks answers `error` on its first call, or (`later`) on its second page after a page of another client's task. */
function agentFailing(error: A2AError, later: boolean): A2ATransport {
  const other = { id: 'X1', contextId: 'C-other', status: { state: 'TASK_STATE_WORKING', timestamp: new Date(NOW - 1_000).toISOString() }, history: [{ messageId: 'M-other', role: 'ROLE_USER', parts: [{ text: 'x' }] }] } as unknown as Task;
  return {
    listTasks: async (request: { pageToken?: string }) => {
      if (!later || request.pageToken) throw error;
      return { tasks: [other], nextPageToken: 'p2', pageSize: 1 };
    },
    getTask: async () => other,
  } as unknown as A2ATransport;
}

describe('property: only the binding\'s own "not served" makes the search read "cannot list tasks"', () => {
  it('binding × status × reason × code × call × deduplicating × purpose: unsupported exactly as the oracle says; a bare one a counted round, never resent', async () => {
    await fc.assert(
      fc.asyncProperty(answerArb, fc.boolean(), fc.boolean(), fc.constantFrom('reconcile', 'lost-check') as fc.Arbitrary<'reconcile' | 'lost-check'>, async ({ error, proven, what }, later, deduplicates, purpose) => {
        const transport = agentFailing(error, later);
        const ctx = {
          options: { deduplicatingAgents: new Set(deduplicates ? [AGENT] : []), searchMarginMs: 5_000, maxListTasksCalls: 20, now: () => NOW, attemptDeadlineMs: 3_600_000 },
          agents: { transportFor: async () => transport },
          logger: silent,
          crashPoint: () => undefined,
        } as unknown as WorkerContext;
        const record = purpose === 'reconcile' ? stepRow({ kind: undefined, agentCardUrl: AGENT }) : stepRow({ kind: undefined, agentCardUrl: AGENT, state: 'WORKING', taskId: 'T1' });
        const observation = await searchForMessage(ctx, record, purpose, 'checking');
        const label = `${what} (${error.name}) ${later ? 'later page' : 'first call'} ${deduplicates ? 'deduplicating' : ''} ${purpose}`;
        if (observation.kind !== 'search-result') throw new Error(`not a search result: ${label}`);
        expect(observation.finding.kind, label).toBe(proven && !later ? 'unsupported' : 'failed');
        const step = transition(record, observation, policy);
        const writes: readonly Write[] = step.write === undefined ? [] : Array.isArray(step.write) ? step.write : [step.write as Write];
        const resent = step.next.kind === 'resend' || writes.some((write) => write.kind === 'release-for-resend');
        expect(resent, label).toBe(proven && !later && deduplicates && purpose === 'reconcile');
        // (The agent's own "no ListTasks" after its own TaskNotFound ends LOST, as before; nothing else does.)
        if (!(proven && !later)) expect(writes.map((write) => (write.kind === 'outcome' ? write.state : undefined)), label).not.toContain('LOST');
        const unprovenClass = (error instanceof MethodNotFoundError || error instanceof UnsupportedOperationError) && !proven;
        if (unprovenClass) {
          // The answer of a server on the way: one counted round of the search (bounded, then a person), what arrived named.
          expect(observation.finding, label).toMatchObject({ kind: 'failed', retryable: true, error: { code: 'PROTOCOL_ERROR' } });
          expect(step.next, label).toMatchObject({ kind: 'progress', unacceptable: { code: 'PROTOCOL_ERROR', outcome: 'SEARCH_UNAVAILABLE' } });
        }
      }),
      {
        numRuns: 400,
        examples: [
          [{ error: new UnsupportedOperationError('gRPC status 12', { grpcStatus: 12, delivery: 'received' }), proven: false, what: 'gRPC UNIMPLEMENTED bare' }, false, true, 'reconcile'],
          [{ error: errorFromHttp(405, 'application/json', JSON.stringify({ error: { code: 405, status: 'UNIMPLEMENTED', message: 'Method Not Allowed' } })), proven: false, what: 'HTTP 405 Status without ErrorInfo' }, false, true, 'reconcile'],
          [{ error: errorFromJsonRpc({ code: 405, message: 'Method Not Allowed' }, '{}'), proven: false, what: 'JSON-RPC code 405' }, false, false, 'reconcile'],
          [{ error: new UnsupportedOperationError('gRPC status 12', { grpcStatus: 12, delivery: 'received' }), proven: false, what: 'gRPC UNIMPLEMENTED bare' }, false, false, 'lost-check'],
          [{ error: errorFromJsonRpc({ code: -32601, message: 'Method not found' }, '{}'), proven: true, what: 'JSON-RPC -32601' }, false, true, 'reconcile'],
          [{ error: new UnsupportedOperationError('gRPC status 9', { grpcStatus: 9, reason: 'UNSUPPORTED_OPERATION', delivery: 'received' }), proven: true, what: 'gRPC FAILED_PRECONDITION UNSUPPORTED_OPERATION' }, false, true, 'reconcile'],
        ],
      },
    );
  });
});
