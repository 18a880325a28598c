/**
 * Questions with a life (a step's `question`: `expiresAfterMs`, `onExpiry`, `defaultAnswer`, `remindEveryMs`),
 * counted from when the question was journaled (`questionAskedAt`). Kept by the journal, so it survives any worker:
 * a parked row's next check in the unfinished index is its question's next moment when that comes before the parked
 * poll, with a delayed reconcile job at that moment (`question-schedule.ts`); the reconciler, from any worker, then
 * calls `checkQuestionLife`:
 *   - past the expiry, unanswered: the `question-expired` observation (the table journals the expiry with what is
 *     done, compare-and-set against an answer, then FAILED `QUESTION_EXPIRED`, the workflow canceled, or the
 *     default answer sent by the reply path; a default answer the agent refused for good: a person decides, AMBIGUOUS
 *     `QUESTION_EXPIRED`, as the reply path does at the refusal, here after a crash before it);
 *   - a reminder due: one log line and `durable_a2a_question_reminders_total`, once per reminder fleet-wide (a
 *     one-time mark), at most `MAX_QUESTION_REMINDERS` per question; none for a step of a stopping workflow
 *     (`isStepStopped`, as every listing of open questions: its question is closed, no person is asked any more).
 * A question the follow keeps streaming (AUTH_REQUIRED) has the same moments, on delayed reconcile jobs of their own
 * (`scheduleQuestionMoment`): the follow schedules them before it streams and when the stream shows a new question.
 * Without a `question` on the step (and for compensations) a question waits until the attempt deadline.
 */
import { randomUUID } from 'node:crypto';
import { JournalError, enqueueReconcile, isAwaitingAnswer, isParked, type DelegationRecord, type QuestionPolicy } from '@durable-a2a/shared';
import type { WorkerContext } from '../context.ts';
import { questionClosedByStop } from '../notify/question.ts';
import { apply } from './apply.ts';
import { attemptDeadlineAt } from './attempt-step.ts';
import type { Observation } from './core/observation.ts';
import { MAX_QUESTION_REMINDERS, questionMoments } from './core/policy.ts';
import { askedAtOf, questionPolicyOf, scheduleQuestionMoment } from './question-schedule.ts';

/**
 * The reconciler's look at a parked row's question (see the module header). Returns true when the question expired
 * (the `question-expired` observation was applied: the caller stops), false otherwise (a due reminder was sent,
 * unless the step is stopped: `isStepStopped`).
 * Throws journal errors (VERSION_CONFLICT: the reconciler checks again soon).
 */
export async function checkQuestionLife(ctx: WorkerContext, record: DelegationRecord, log: WorkerContext['logger']): Promise<boolean> {
  if (!isParked(record.state) || !record.questionKey) return false;
  const policy = await questionPolicyOf(ctx, record);
  if (!policy) return false;
  const now = ctx.options.now();
  const moments = questionMoments(askedAtOf(record), policy, now);
  const expiredBefore = record.questionExpired === record.questionKey;
  // A default answer journaled by the expiry is the reply path's now (the park re-sends it if its job was lost). Once
  // the agent refused it for good, a person decides (the `reply-refused` row; again here after a crash before it).
  if (expiredBefore && record.questionExpiry === 'answer' && record.replyState === 'refused' && record.replyMessageId) {
    await apply(ctx, record, { kind: 'reply-refused', replyMessageId: record.replyMessageId, message: record.replyError ?? '' }, { log, source: 'question' });
    return true;
  }
  if (expiredBefore && record.questionExpiry === 'answer') return false;
  if (expiredBefore || (moments.expiresAt !== undefined && now >= moments.expiresAt && isAwaitingAnswer(record))) {
    await expire(ctx, record, expiryObservation(record, policy, moments.expiresAt ?? now), log);
    return true;
  }
  if (moments.dueReminder !== undefined && isAwaitingAnswer(record) && !(await questionClosedByStop(ctx, record))) {
    await remind(ctx, record, moments.dueReminder, moments.expiresAt, log);
    // The moment after it: a parked row's park schedules it too (the same job); a streamed one has only this.
    await scheduleQuestionMoment(ctx, record);
  }
  return false;
}

/**
 * Applies the expiry. A write that lost to a concurrent one (VERSION_CONFLICT: a stream's event, say) is looked at
 * again a second later by a job of its own, not only by the index (a live stream's renewals keep moving the row's
 * next check ahead), and the error is rethrown for the reconciler's count.
 */
async function expire(ctx: WorkerContext, record: DelegationRecord, observation: Observation, log: WorkerContext['logger']): Promise<void> {
  try {
    await apply(ctx, record, observation, { log, source: 'question' });
  } catch (error) {
    if (error instanceof JournalError && error.code === 'VERSION_CONFLICT') {
      const now = ctx.options.now();
      await enqueueReconcile(ctx.queues, record, { dueAt: now + 1_000, now });
    }
    throw error;
  }
}

/** The `question-expired` observation of the row's question under `policy` (a new messageId for a default answer). */
function expiryObservation(record: DelegationRecord, policy: QuestionPolicy, expiresAt: number): Observation {
  const base = { kind: 'question-expired' as const, questionKey: record.questionKey!, expiresAt };
  const onExpiry = record.questionExpiry ?? policy.onExpiry ?? 'fail';
  if (onExpiry === 'answer') return { ...base, onExpiry, reply: { messageId: randomUUID(), text: policy.defaultAnswer ?? '' } };
  return { ...base, onExpiry };
}

/** Reminder `number` of the row's question: once fleet-wide (a one-time mark kept until the attempt deadline). */
async function remind(ctx: WorkerContext, record: DelegationRecord, number: number, expiresAt: number | undefined, log: WorkerContext['logger']): Promise<void> {
  const ttlMs = Math.max(1_000, (await attemptDeadlineAt(ctx, record)) - ctx.options.now() + ctx.options.reconcileIntervalMs);
  if (!(await ctx.journal.markOnce(record, `question-reminder:${askedAtOf(record)}:${number}`, ctx.workerId, ttlMs))) return;
  ctx.metrics.questionReminders.inc({ agent: ctx.metrics.agentLabels.of(record.agentCardUrl) });
  const at = (ms: number) => new Date(ms).toISOString();
  log.warn(
    { workflowId: record.workflowId, delegationId: record.delegationId, step: record.step, reminder: number, ofAtMost: MAX_QUESTION_REMINDERS, askedAt: at(askedAtOf(record)), ...(expiresAt !== undefined ? { expiresAt: at(expiresAt) } : {}) },
    'a question is waiting for an answer',
  );
}
