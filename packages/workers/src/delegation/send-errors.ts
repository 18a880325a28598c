/**
 * What a failed or refused SendMessage leaves in the journal (issue 12 kinds 1, 3, 5):
 * a typed reason (stable `code`, the `limit` when one was exceeded) and what we know
 * about delivery (`deliveryOf(error)`, V5), so the reconciler never reads an answer
 * that arrived as "never reached the agent". Also the send lease that keeps the
 * reconciler away while an agent holds the send (V2).
 */
import { LimitExceededError, ProtocolError, deliveryOf, type DelegationRef, type RecordedError } from '@durable-a2a/shared';
import type { WorkerContext } from '../context.ts';
import type { SearchResult } from './search.ts';

/**
 * A protocol error with its own type (`UNKNOWN_WIRE_VALUE`, `RESPONSE_ID_MISMATCH`, `LIMIT_EXCEEDED`, …):
 * permanent for the attempt, never a resend. A plain `PROTOCOL_ERROR` (an unreadable answer) is not:
 * the reconciler asks the agent.
 */
export const isTypedProtocolError = (error: unknown): error is ProtocolError =>
  error instanceof ProtocolError && !error.retryable && error.code !== 'PROTOCOL_ERROR';

/** The journal form of a send error: code, message, delivery (`not-sent` before the mark), limit. */
export function recordedErrorOf(error: unknown, afterMark: boolean): RecordedError & { message: string } {
  const code = (error as { code?: unknown }).code;
  return {
    code: typeof code === 'string' ? code : 'SEND_FAILED',
    message: error instanceof Error ? error.message : String(error),
    delivery: afterMark ? deliveryOf(error) : 'not-sent',
    ...(error instanceof LimitExceededError ? { limit: error.limit } : {}),
  };
}

/**
 * Journals a send error on a delegation that stays INTENT (a local note, no state change): the
 * reconciler reads its `delivery`. A delegation that moved on meanwhile is left alone.
 */
export async function noteSendError(ctx: WorkerContext, record: DelegationRef, error: RecordedError): Promise<void> {
  const current = await ctx.journal.getDelegation(record);
  if (current?.state !== 'INTENT') return;
  // Never downgrade: once an answer arrived for this messageId, it stays `received`.
  const delivery = current.error?.delivery === 'received' ? 'received' : error.delivery;
  await ctx.journal.applyStatus(record, { expectedVersion: current.version, mode: 'outcome', state: 'INTENT', error: { ...error, delivery } }).catch(() => undefined);
}

/** What the reconciler does with a maybe-sent message the search did not find: resend it, or a person decides. */
export type UnfoundVerdict = { resend: true } | { resend: false; reason: string };

/**
 * The one rule for resending the same messageId (V5, crash window 1): never when an answer arrived
 * (`delivery: received`), whatever the agent is listed as; otherwise only when the search proves the
 * message absent, or the agent cannot list tasks but deduplicates by messageId.
 */
export function unfoundVerdict(input: { error?: RecordedError; deduplicates: boolean; search: Exclude<SearchResult, { kind: 'found' }> }): UnfoundVerdict {
  const { error, deduplicates, search } = input;
  if (error?.delivery === 'received') return { resend: false, reason: `the agent answered our message (${error.code}) but the task cannot be found by our messageId` };
  if (search.kind === 'unsupported') {
    return deduplicates ? { resend: true } : { resend: false, reason: 'the agent cannot list tasks, so a send that may have happened cannot be checked' };
  }
  if (search.inconclusive || search.paginationBroken) {
    const why = search.paginationBroken ? 'ListTasks pagination is broken' : `candidate task(s) ${search.candidates.join(', ')} have too little history`;
    return { resend: false, reason: `cannot tell whether the agent received our message: ${why}` };
  }
  return { resend: true };
}

/**
 * Runs `call` holding the delegation's lease (renewed every `lockDurationMs / 3`), so the reconciler
 * does not decide "may have been sent" while an agent holds the send (V2). A crash drops the lease
 * after `lockDurationMs`, and the reconciler takes over as before.
 */
export async function holdingSendLease<T>(ctx: WorkerContext, ref: DelegationRef, token: string, call: () => Promise<T>): Promise<T> {
  const leaseMs = ctx.options.lockDurationMs;
  const held = await ctx.journal.lease(ref, 'acquire', token, leaseMs).catch(() => false);
  const renew = held ? setInterval(() => void ctx.journal.lease(ref, 'renew', token, leaseMs).catch(() => undefined), leaseMs / 3) : undefined;
  try {
    return await call();
  } finally {
    clearInterval(renew);
    if (held) await ctx.journal.lease(ref, 'release', token).catch(() => undefined);
  }
}
