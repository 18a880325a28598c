/**
 * When a parked row's question is looked at next (`question-life.ts` says what happens then): the step's question
 * policy of an attempt, when its question was asked, and the next check the park schedules.
 */
import { enqueueReconcile, isAwaitingAnswer, isParked, type DelegationRecord, type QuestionPolicy } from '@durable-a2a/shared';
import type { WorkerContext } from '../context.ts';
import { questionClosedByStop } from '../notify/question.ts';
import { stepOfAttempt } from './attempt-step.ts';
import { questionMoments } from './core/policy.ts';

/** The step's question policy of an attempt; undefined for a compensation, a step without one, or a definition not readable now. */
export async function questionPolicyOf(ctx: WorkerContext, record: DelegationRecord): Promise<QuestionPolicy | undefined> {
  if (record.kind !== 'step') return undefined;
  const step = await stepOfAttempt(ctx, record);
  return step === 'unreadable' ? undefined : step?.question;
}

/** When the row's current question was asked (ms): journaled with it; a row written before that field: its last change. */
export const askedAtOf = (record: DelegationRecord): number => record.questionAskedAt ?? record.updatedAt;

/**
 * The next check of a parked row (`park.ts`): its question's next moment when that comes before `pollAt` (the parked
 * poll), with a delayed reconcile job at that moment so a reminder or the expiry is on time whichever worker runs it.
 * A step of a stopping workflow (`isStepStopped`) gets no reminder, so no check at a reminder's time: its expiry only.
 * Returns the time to schedule the row's next check at.
 */
export async function nextQuestionCheckAt(ctx: WorkerContext, record: DelegationRecord, pollAt: number): Promise<number> {
  if (!isParked(record.state) || !record.questionKey || !isAwaitingAnswer(record)) return pollAt;
  const policy = await questionPolicyOf(ctx, record);
  if (!policy) return pollAt;
  const now = ctx.options.now();
  const { nextAt, expiresAt } = questionMoments(askedAtOf(record), policy, now);
  // Past the expiry and still open (its check did not run yet): now.
  const expired = expiresAt !== undefined && expiresAt <= now;
  let at = expired ? now : nextAt;
  // A reminder of a stopped step's question is never sent (`checkQuestionLife`): only its expiry is a moment then (one
  // workflow read, only when a reminder would come before the parked poll).
  if (!expired && at !== undefined && at !== expiresAt && at < pollAt && (await questionClosedByStop(ctx, record))) at = expiresAt;
  if (at === undefined || at >= pollAt) return pollAt;
  await enqueueReconcile(ctx.queues, record, { dueAt: at, now });
  return at;
}

/**
 * The next moment of a row's open question while a stream follows it (AUTH_REQUIRED: the agent waits for a credential
 * given out of band, so the follow keeps its stream): a delayed reconcile job at that moment (a reminder, the expiry),
 * which `checkQuestionLife` takes whoever holds the stream. The row's next check in the index is left to the stream's
 * lease renewals, which keep moving it ahead: without this job a question never expired, and was never reminded of,
 * while its stream lived. One job per moment (its id names the moment): calling it again for the same question
 * enqueues nothing new. Nothing for a row not awaiting an answer or a step without a question policy.
 */
export async function scheduleQuestionMoment(ctx: WorkerContext, record: DelegationRecord): Promise<void> {
  await nextQuestionCheckAt(ctx, record, Number.POSITIVE_INFINITY);
}
