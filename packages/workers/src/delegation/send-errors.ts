/**
 * What a failed or refused SendMessage leaves in the journal (issue 12 kinds 1, 3, 5):
 * a typed reason (stable `code`, the `limit` when one was exceeded) and what we know
 * about delivery (`deliveryOf(error)`, V5), so the reconciler never reads an answer
 * that arrived as "never reached the agent". Also the send lease that keeps the
 * reconciler away while an agent holds the send (V2).
 */
import {
  A2AError,
  AuthenticationError,
  ContentTypeNotSupportedError,
  ExtensionSupportRequiredError,
  InvalidParamsError,
  InvalidRequestError,
  JsonRpcParseError,
  LimitExceededError,
  MethodNotFoundError,
  ProtocolError,
  PushNotificationNotSupportedError,
  TaskNotFoundError,
  UnsupportedOperationError,
  VersionNotSupportedError,
  deliveryOf,
  isRetryable,
  type DelegationRef,
  type RecordedError,
} from '@durable-a2a/shared';
import type { JobRun, WorkerContext } from '../context.ts';
import type { SearchResult } from './search.ts';

/**
 * A protocol error with its own type (`UNKNOWN_WIRE_VALUE`, `RESPONSE_ID_MISMATCH`, `LIMIT_EXCEEDED`, …):
 * permanent for the attempt, never a resend. A plain `PROTOCOL_ERROR` (an unreadable answer) is not:
 * the reconciler asks the agent.
 */
export const isTypedProtocolError = (error: unknown): error is ProtocolError =>
  error instanceof ProtocolError && !error.retryable && error.code !== 'PROTOCOL_ERROR';

/**
 * Errors with which an agent refuses a request before acting on it, so a SendMessage answered with one
 * created no task: JSON-RPC 2.0 §5.1 request errors (-32700, -32600, -32601, -32602) and the A2A errors
 * the spec raises while validating a request (spec §3.3.2, §3.6, §5.4: -32001 unknown referenced task,
 * -32003 push not supported, -32004 unsupported operation or terminal task, -32005 content type,
 * -32008 required extension, -32009 version), and 401/403. Every other error answer (-32603 and the
 * server-defined -32000..-32099, -32006, -32002, an unknown code, 5xx, 408, 429) may come after the
 * agent created the task: the reconciler resolves it by a search for our messageId.
 */
const REFUSALS = [
  JsonRpcParseError,
  InvalidRequestError,
  MethodNotFoundError,
  InvalidParamsError,
  TaskNotFoundError,
  PushNotificationNotSupportedError,
  UnsupportedOperationError,
  ContentTypeNotSupportedError,
  ExtensionSupportRequiredError,
  VersionNotSupportedError,
  AuthenticationError,
];

/**
 * True when a SendMessage error proves the agent created no task (see `REFUSALS`; also an HTTP 4xx
 * other than 408/429 whose body is not an A2A error, e.g. a wrong URL's page): the attempt ends FAILED.
 */
export function provesNotCreated(error: unknown): boolean {
  if (REFUSALS.some((refusal) => error instanceof refusal)) return true;
  const status = error instanceof ProtocolError && error.jsonRpcCode === undefined ? error.httpStatus : undefined;
  return status !== undefined && status >= 400 && status < 500 && status !== 408 && status !== 429;
}

/** What arrived with a send error: the agent's error answer, an answer we could not read, or nothing. */
function answerOf(error: unknown): RecordedError['answer'] {
  if (!(error instanceof A2AError) || error.delivery !== 'received') return undefined;
  const unreadable = error instanceof ProtocolError && error.jsonRpcCode === undefined && (error.httpStatus === undefined || error.httpStatus < 300);
  return unreadable || (error.jsonRpcCode === undefined && error.httpStatus === undefined) ? 'unreadable' : 'error';
}

/** The journal form of a send error: code, message, retryable, delivery (`not-sent` before the mark), what arrived, limit. */
export function recordedErrorOf(error: unknown, afterMark: boolean): RecordedError & { message: string } {
  const code = (error as { code?: unknown }).code;
  const answer = afterMark ? answerOf(error) : undefined;
  return {
    code: typeof code === 'string' ? code : 'SEND_FAILED',
    message: error instanceof Error ? error.message : String(error),
    retryable: isRetryable(error),
    delivery: afterMark ? deliveryOf(error) : 'not-sent',
    ...(answer ? { answer } : {}),
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

/**
 * What the reconciler does with a maybe-sent message the search did not find: resend it (same
 * messageId), end the attempt FAILED with the agent's own error, or a person decides (`reason`).
 */
export type UnfoundVerdict = { resend: true } | { resend: false; fail: RecordedError } | { resend: false; reason: string };

/**
 * The one rule for resending the same messageId (V5, crash window 1). An unreadable answer arrived
 * (`delivery: received`): never, whatever the agent is listed as. The agent answered an error and a
 * conclusive search does not find our message: the error created nothing, so a retryable one is
 * resent and a permanent one ends the attempt. Otherwise only when the search proves the message
 * absent, or the agent cannot list tasks but deduplicates by messageId.
 */
export function unfoundVerdict(input: { error?: RecordedError; deduplicates: boolean; search: Exclude<SearchResult, { kind: 'found' }> }): UnfoundVerdict {
  const { error, deduplicates, search } = input;
  const conclusive = search.kind === 'not-found' && !search.inconclusive && !search.paginationBroken;
  if (error?.delivery === 'received' && error.answer === 'error' && conclusive) return error.retryable ? { resend: true } : { resend: false, fail: error };
  if (error?.delivery === 'received') return { resend: false, reason: `the agent answered our message (${error.code}) but the task cannot be found by our messageId` };
  if (search.kind === 'unsupported') {
    return deduplicates ? { resend: true } : { resend: false, reason: 'the agent cannot list tasks, so a send that may have happened cannot be checked' };
  }
  if (!conclusive) {
    const why = search.paginationBroken ? 'ListTasks pagination is broken' : `candidate task(s) ${search.candidates.join(', ')} have too little history`;
    return { resend: false, reason: `cannot tell whether the agent received our message: ${why}` };
  }
  return { resend: true };
}

/** A send job run's holder token: its claim's owner and its send lease's holder. */
export const sendRunToken = (ctx: WorkerContext, job: JobRun): string => `${ctx.workerId}/send/${job.id}`;

/** Gives a send run's lease back (a no-op when it is not ours); never rejects. */
export const releaseSendLease = (ctx: WorkerContext, ref: DelegationRef, job: JobRun): Promise<unknown> =>
  ctx.journal.lease(ref, 'release', sendRunToken(ctx, job)).catch(() => undefined);

/**
 * Runs `call` holding the delegation's lease (renewed every `lockDurationMs / 3`), so the reconciler
 * does not decide "may have been sent" while an agent holds the send (V2), and no other worker follows
 * the task while a streaming send reads it. A crash drops the lease after `lockDurationMs`, and the
 * reconciler takes over as before; `leaseLost` aborts when a renewal finds the lease taken; `held` is
 * false when another holder had the lease at the start (the caller decides whether it may still send).
 * `takenByMark`: whether `markSending` already took the lease for `token` (then it is not asked for again).
 * `handsOver(result)`: true when the caller gives the lease back with the answer's own transition
 * (`StatusChange.endsLease`, one round trip less); the caller then owns the release on every path.
 */
export async function holdingSendLease<T>(
  ctx: WorkerContext,
  ref: DelegationRef,
  token: string,
  call: (leaseLost: AbortSignal, held: boolean) => Promise<T>,
  takenByMark?: boolean,
  handsOver?: (result: T) => boolean,
): Promise<T> {
  const leaseMs = ctx.options.lockDurationMs;
  const lost = new AbortController();
  const held = takenByMark ?? (await ctx.journal.lease(ref, 'acquire', token, leaseMs).catch(() => false));
  const renew = held
    ? setInterval(() => void ctx.journal.lease(ref, 'renew', token, leaseMs).then((still) => still || lost.abort(), () => undefined), leaseMs / 3)
    : undefined;
  let handedOver = false;
  try {
    const result = await call(lost.signal, held);
    handedOver = held && handsOver?.(result) === true;
    return result;
  } finally {
    clearInterval(renew);
    // Not waited for: on the journal's one connection the release reaches Redis before anything issued after it
    // (the answer's transitions, the follow that takes the lease next), and a failed release only lets the lease
    // run out (lockDurationMs), as when it was waited for and its error dropped. One exception: a server that
    // lost its scripts (failover, restart) answers NOSCRIPT and the release goes again with EVAL, after what
    // followed it; the local follow is then turned away ('already-followed') and the reconciler reattaches the
    // delegation after the lease's end (no second send, no loss).
    if (held && !handedOver) void ctx.journal.lease(ref, 'release', token).catch(() => undefined);
  }
}
