/**
 * The attempt deadline (issue 12 kind 6, field case RT-deadline): every
 * delegation attempt has an overall deadline, `attemptDeadlineMs` after the
 * attempt was journaled (`createdAt`). The step's own `attemptDeadlineMs`
 * wins over the fleet-wide default (`attemptDeadlineMs` option,
 * `DA2A_ATTEMPT_DEADLINE_MS`, default 24 h). Past it, whatever the agent is
 * doing (hanging on the Agent Card, holding the send, streaming nothing), the
 * attempt is journaled FAILED with the permanent reason `DEADLINE_EXCEEDED`
 * and routed, so the workflow re-delegates within the step's budget.
 *
 * Checked here only: by the reconciler on every sweep of an unfinished
 * delegation, and by the send path before the Agent Card fetch and before
 * SendMessage; every agent call of a send is bounded by the time left. A send
 * that may have reached the agent is not abandoned blind: the reconciler
 * searches first (adopt / AMBIGUOUS), and only a proven absence ends it here.
 * A held step (waiting for earlier steps) is never past its deadline.
 */
import { isFinished, type DelegationRecord } from '@durable-a2a/shared';
import type { WorkerContext } from '../context.ts';
import { stepOfAttempt } from './attempt-step.ts';
import { routeDelegation } from './route.ts';

/** Stable code journaled for an attempt past its deadline (permanent for the attempt, re-delegable). */
export const DEADLINE_EXCEEDED = 'DEADLINE_EXCEEDED';

/** An INTENT whose SendMessage may have left (marked, and not journaled as `not-sent`). */
const mayHaveReachedAgent = (record: DelegationRecord): boolean =>
  record.state === 'INTENT' && record.sendStartedAt !== undefined && record.error?.delivery !== 'not-sent';

/** The deadline of an attempt as epoch ms: `createdAt` + the step's (or the fleet's) `attemptDeadlineMs`. */
export async function attemptDeadlineAt(ctx: WorkerContext, record: DelegationRecord): Promise<number> {
  let deadlineMs = ctx.options.attemptDeadlineMs;
  if (record.kind === 'step') {
    const step = await stepOfAttempt(ctx, record);
    const stepDeadlineMs = step === 'unreadable' ? undefined : step?.attemptDeadlineMs;
    if (stepDeadlineMs !== undefined) deadlineMs = stepDeadlineMs;
  }
  return record.createdAt + deadlineMs;
}

/** Milliseconds left before the attempt's deadline (≤ 0 = past it). */
export async function attemptTimeLeftMs(ctx: WorkerContext, record: DelegationRecord): Promise<number> {
  return (await attemptDeadlineAt(ctx, record)) - ctx.options.now();
}

/**
 * Ends an unfinished, released attempt that is past its deadline: journals FAILED with
 * `DEADLINE_EXCEEDED` (compare-and-set on the version read) and routes it.
 * @returns true when the attempt was past its deadline (the caller stops), false otherwise.
 */
export async function enforceAttemptDeadline(
  ctx: WorkerContext,
  record: DelegationRecord,
  log: WorkerContext['logger'],
  options: { provenAbsent?: boolean } = {},
): Promise<boolean> {
  if (isFinished(record.state) || record.held) return false;
  // A send that may have reached the agent is never abandoned blind: the reconciler's search decides
  // (adopt, AMBIGUOUS, or proven absent: then the deadline applies, `provenAbsent`).
  if (mayHaveReachedAgent(record) && !options.provenAbsent) return false;
  const deadlineAt = await attemptDeadlineAt(ctx, record);
  const now = ctx.options.now();
  if (now < deadlineAt) return false;
  const message = `the attempt passed its deadline (${deadlineAt - record.createdAt} ms after it was journaled) in state ${record.state}`;
  const applied = await ctx.journal.applyStatus(record, {
    expectedVersion: record.version,
    mode: 'outcome',
    state: 'FAILED',
    error: { code: DEADLINE_EXCEEDED, message, retryable: false },
  });
  if (applied.applied) log.warn({ deadlineAt, state: record.state }, 'attempt deadline exceeded; the step moves on');
  await routeDelegation(ctx, record);
  return true;
}
