/**
 * What a failed or refused SendMessage leaves in the journal (docs/a2a-edge.md: ownership, delivery, limits):
 * a typed reason (stable `code`, the `limit` when one was exceeded) and what we know
 * about delivery (`deliveryOf(error)`, V5), so the reconciler never reads an answer
 * that arrived as "never reached the agent". Also the send lease that keeps the
 * reconciler away while an agent holds the send (V2).
 */
import {
  ADDRESS_POLICY_VARIABLES,
  ALLOWING_OPTION,
  A2AError,
  AuthenticationError,
  BlockedAddressError,
  InvalidAgentResponseError,
  LimitExceededError,
  ProtocolError,
  answerFault,
  blockedCause,
  deliveryOf,
  isRuntimeFault,
  sendEffectOf,
  isRetryable,
} from '@durable-a2a/a2a';
import {
  recordedErrorCodeOf,
  type AgentInterfaceRef,
  type DelegationRef,
  type RecordedError,
} from '@durable-a2a/shared';
import type { JobRun, WorkerContext } from '../../context.ts';
import { limitOf } from './read.ts';
import type { Delivery, Effect, Observation, UnreachableBounds } from '../core/observation.ts';

/**
 * A protocol error with its own type (`UNKNOWN_WIRE_VALUE`, `RESPONSE_ID_MISMATCH`, `LIMIT_EXCEEDED`, …):
 * permanent for the attempt, never a resend. A plain `PROTOCOL_ERROR` (an unreadable answer) is not:
 * the reconciler asks the agent.
 */
export const isTypedProtocolError = (error: unknown): error is ProtocolError =>
  error instanceof ProtocolError && !error.retryable && error.code !== 'PROTOCOL_ERROR';

/**
 * What arrived with a send error: the agent's error answer (a JSON-RPC code, an HTTP or a gRPC status), an answer we
 * could not read, or nothing. Unreadable: a
 * protocol error in a 2xx, or an invalid answer we judged so ourselves (no JSON-RPC code: the agent did not say
 * -32006), such as a 4xx whose body is a task not proven ours: its status is no verdict of "nothing created".
 */
export function answerOf(error: unknown): RecordedError['answer'] {
  if (!(error instanceof A2AError) || error.delivery !== 'received') return undefined;
  const judgedInvalid = error instanceof InvalidAgentResponseError && error.jsonRpcCode === undefined;
  const unreadable = judgedInvalid || (error instanceof ProtocolError && error.jsonRpcCode === undefined && (error.httpStatus === undefined || error.httpStatus < 300));
  return unreadable || (error.jsonRpcCode === undefined && error.httpStatus === undefined && error.grpcStatus === undefined) ? 'unreadable' : 'error';
}

/** The journal form of a send error: code, message, retryable, delivery (`not-sent` before the mark), what arrived, limit. */
export function recordedErrorOf(error: unknown, afterMark: boolean): RecordedError & { message: string } {
  const code = recordedErrorCodeOf(error);
  const answer = afterMark ? answerOf(error) : undefined;
  return {
    code: code === 'UNEXPECTED_ERROR' ? 'SEND_FAILED' : code,
    message: error instanceof Error ? error.message : String(error),
    retryable: isRetryable(error),
    delivery: afterMark ? deliveryOf(error) : 'not-sent',
    ...(answer ? { answer } : {}),
    ...(error instanceof LimitExceededError ? { limit: error.limit } : {}),
  };
}

/** The one rule for resending the same messageId lives in the core's policy (`core/policy.ts`). */
export { unfoundVerdict, type UnfoundVerdict } from '../core/policy.ts';

/**
 * True when a failed try proves the agent could not be reached and nothing was created: a retryable A2A error
 * (a connection refused, a DNS failure, a connect timeout; before the mark, the Agent Card's fetch failing with a
 * 5xx, a timeout or a refusal) whose request never reached the agent (`delivery` none: before the mark, or
 * `not-sent`). A blocked address or a card we cannot use is permanent; anything that is not an A2A error (a Redis
 * error) is not the agent's.
 */
export const provesUnreachable = (error: unknown, delivery: Delivery): boolean => delivery === 'none' && error instanceof A2AError && isRetryable(error);

/**
 * What a person reads when the workers' own address policy refused an agent's URL (nothing sent), with the exact
 * fix: the workers' variable and the `addressPolicy` switch of the refused category, or the allowed hosts when no
 * switch allows it (metadata, reserved, a scheme: then the URL itself is what to change). E.g. `the workers' address
 * policy refuses http://127.0.0.1:4000/...: set DA2A_ALLOW_LOOPBACK=true on the workers (addressPolicy.allowLoopback)`.
 */
export function addressRefusalMessage(refused: BlockedAddressError, cardUrl: string): string {
  const option = ALLOWING_OPTION[refused.category];
  const variable = option ? (ADDRESS_POLICY_VARIABLES as Partial<Record<string, string>>)[option] : undefined;
  const hosts = `${ADDRESS_POLICY_VARIABLES.allowedHosts}=${refused.host || '<host>'} on the workers (addressPolicy.allowedHosts)`;
  const fix = variable ? `set ${variable}=true on the workers (addressPolicy.${option})` : option ? `set addressPolicy.${option} on the workers, or ${hosts}` : `set ${hosts}, or change the agent's URL (no switch allows a ${refused.category} address)`;
  const cardHost = URL.parse(cardUrl)?.hostname.replace(/^\[(.*)\]$/, '$1');
  const what = cardHost === refused.host || !refused.host ? cardUrl : `${refused.host} (an interface of ${cardUrl})`;
  const address = refused.address && refused.address !== refused.host ? ` -> ${refused.address}` : '';
  return `the workers' address policy refuses ${what}: ${fix}; a ${refused.category} address${address}, nothing was sent; once the workers run with it, retry the workflow (durable-a2a resolve <workflow> retry)`;
}

/**
 * A failed SendMessage as an observation (`send-failed`): delivery (`none` before the mark or for a request that
 * never left), effect (`none` when the answer proves nothing was created: the A2A error table's `effect` column, `sendEffectOf`), whether retrying can
 * help, whether this was the job's last attempt, and, for an answer over a limit, the limit (delivery `received`).
 * `unreachable`: the attempt's wait bounds, attached when the error proves the agent unreachable (`provesUnreachable`).
 */
export function sendFailureObservation(error: unknown, afterMark: boolean, job: JobRun, nextInterface?: AgentInterfaceRef, unreachable?: UnreachableBounds, url?: string): Observation {
  const recorded = recordedErrorOf(error, afterMark);
  // P34: credentials refused after the request left are asked again (per request) and the same messageId resent.
  const credentialsRefused = afterMark && error instanceof AuthenticationError;
  const permanent = !credentialsRefused && (error instanceof A2AError || (error as { retryable?: boolean })?.retryable === false) && !isRetryable(error);
  const overLimit = error instanceof LimitExceededError;
  const delivery: Delivery = !afterMark || recorded.delivery === 'not-sent' ? 'none' : overLimit ? 'received' : (recorded.delivery ?? 'maybe');
  // A step's SendMessage (first or resent) names no task: TaskNotFound to it refuses nothing of ours (attack28).
  const effect: Effect = delivery === 'none' ? 'none' : sendEffectOf(error, { namesTask: false });
  const refused = blockedCause(error);
  return {
    kind: 'send-failed',
    afterMark,
    delivery,
    effect,
    error: overLimit && afterMark ? { ...recorded, delivery: 'received' } : recorded,
    permanent,
    lastAttempt: job.attemptsMade + 1 >= job.attempts,
    ...(overLimit ? { unacceptable: { code: 'LIMIT_EXCEEDED', message: recorded.message, ...limitOf(error) } } : {}),
    ...(credentialsRefused ? { credentialsRefused } : {}),
    // P37: another interface gets the same messageId only after a proven refusal (-32009 as the spec's own code).
    ...(nextInterface && afterMark && effect === 'none' ? { nextInterface } : {}),
    ...(unreachable && provesUnreachable(error, delivery) ? { unreachable } : {}),
    ...(refused && delivery === 'none' ? { addressRefused: { message: addressRefusalMessage(refused, url ?? refused.host) } } : {}),
  };
}

/**
 * An error thrown once the agent's answer had arrived (processing it, not reaching the agent): a fault of the runtime
 * on the answer (`isRuntimeFault`: a stack overflow, a shape the code did not foresee) is the answer's failure, an A2A
 * error with delivery `received` (`answerFault`: LIMIT_EXCEEDED jsonDepth for a stack overflow, else PROTOCOL_ERROR);
 * anything else (a journal or Redis error) stays as it is. Never read as "nothing came back" (retryable-unknown).
 */
export const afterAnswer = (ctx: WorkerContext, error: unknown, what: string): unknown =>
  isRuntimeFault(error) ? answerFault(error, what, ctx.options.limits.jsonDepth) : error;

/** A send job run's holder token: its claim's owner and its send lease's holder. */
export const sendRunToken = (ctx: WorkerContext, job: JobRun): string => `${ctx.workerId}/send/${job.id}`;

/** True when lease holder `holder` is a send run's token (`sendRunToken`: `<workerId>/send/<jobId>`). */
export const isSendRunToken = (holder: string): boolean => holder.slice(holder.indexOf('/') + 1).startsWith('send/');

/** Gives a send run's lease back (a no-op when it is not ours); never rejects. */
export const releaseSendLease = (ctx: WorkerContext, ref: DelegationRef, job: JobRun): Promise<unknown> =>
  ctx.journal.lease(ref, 'release', sendRunToken(ctx, job)).catch(() => undefined);

/**
 * Runs `call` holding the delegation's lease (renewed every `lockDurationMs / 3`), so the reconciler
 * does not decide "may have been sent" while an agent holds the send (V2), and no other worker follows
 * the task while a streaming send reads it. A crash drops the lease after `lockDurationMs`, and the
 * reconciler takes over as before; so does a close that stopped the request before its answer (the lease is left
 * to its TTL, `releaseUnlessUnanswered`); `leaseLost` aborts when a renewal finds the lease taken; `held` is
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
    if (held && !handedOver) {
      if (closing(ctx)) await releaseUnlessUnanswered(ctx, ref, token);
      else void ctx.journal.lease(ref, 'release', token).catch(() => undefined);
    }
  }
}

/** True once this process closes (`fleet.ts`): the held sends' pool and the open streams were told to stop. */
const closing = (ctx: WorkerContext): boolean => ctx.shutdownSignal.aborted || ctx.heldSends.signal.aborted;

/**
 * A send run that ends because its process closes: a request the close stopped before the agent answered may still
 * be open at the agent (one that creates its task only when it answers goes on whatever became of our connection).
 * Its send lease is left to its TTL, as a dead sender's is (docs/recovery.md): the reconciler's search adopts the task
 * when it finds it, and nothing is sent again before the lease runs out. Given back when the answer is journaled (a
 * streaming send that bound its task and followed it): the next follow need not wait. Never rejects.
 */
async function releaseUnlessUnanswered(ctx: WorkerContext, ref: DelegationRef, token: string): Promise<void> {
  const record = await ctx.journal.getDelegation(ref).catch(() => undefined);
  if (record === undefined || (record.state === 'INTENT' && record.sendStartedAt !== undefined)) return;
  await ctx.journal.lease(ref, 'release', token).catch(() => undefined);
}
