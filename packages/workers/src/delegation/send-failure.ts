/**
 * What a failed or refused send does next (issue 12 kinds 1, 3, 5; V5). Before
 * the mark nothing left: BullMQ retries, or a permanent error ends the attempt.
 * After the mark the agent may have our message, so an answer is never read as
 * "not created" unless it proves it (`provesNotCreated`): a refusal ends the
 * attempt FAILED (a request that never left is retried by BullMQ); an answer
 * over a limit ends it FAILED with its limit; every
 * other answer (an error that may come after the task was created, a foreign
 * task, another request id, an unreadable body) and every missing answer go to
 * the reconciler, which resolves the send through a search by our messageId
 * (`recover.ts`: adopt, resend, FAILED with the agent's error, or AMBIGUOUS).
 */
import { UnrecoverableError } from 'bullmq';
import { A2AError, JournalError, LimitExceededError, enqueueReconcile, isRetryable, type DelegationRecord, type DelegationRef, type Ownership } from '@durable-a2a/shared';
import type { JobRun, WorkerContext } from '../context.ts';
import { routeDelegation } from './route.ts';
import { noteSendError, provesNotCreated, recordedErrorOf } from './send-errors.ts';

type Log = WorkerContext['logger'];

/** A send that may have left: the reconciler decides once it has settled (`sendSettleMs` after `sendStartedAt`). */
export async function askReconciler(ctx: WorkerContext, record: DelegationRef & Pick<DelegationRecord, 'sendStartedAt'>): Promise<void> {
  const due = (record.sendStartedAt ?? 0) + ctx.options.sendSettleMs;
  await ctx.journal.scheduleCheck(record, due);
  await enqueueReconcile(ctx.queues, record, { dueAt: due, now: ctx.options.now() });
}

/** Asks the reconciler to search now: an answer arrived (or nothing left), so nothing is in flight. */
const searchNow = (ctx: WorkerContext, record: DelegationRecord) => askReconciler(ctx, { ...record, sendStartedAt: ctx.options.now() - ctx.options.sendSettleMs });

/**
 * A task in the answer to our SendMessage that is not ours (another task, another context): nothing is
 * adopted; the refusal is journaled as a protocol error (the agent had our message: `received`) and the
 * reconciler decides from a search (adopt only what holds our messageId in our context).
 */
export async function refuseForeignAnswer(ctx: WorkerContext, record: DelegationRecord, ownership: Exclude<Ownership, { ours: true }>, log: Log): Promise<string> {
  log.warn({ reason: ownership.reason, detail: ownership.detail }, 'the SendMessage answer names a task that is not ours; the reconciler will search');
  await noteSendError(ctx, record, { code: 'FOREIGN_TASK', message: `${ownership.reason}: ${ownership.detail}`, retryable: false, delivery: 'received', answer: 'unreadable' });
  await searchNow(ctx, record);
  return 'foreign-answer';
}

/** Where a failure happened: `afterMark` once the SendMessage may have left. */
export interface SendFailure {
  record: DelegationRecord;
  fence: number;
  error: unknown;
  log: Log;
  job: JobRun;
  afterMark: boolean;
}

/** A failed send (see the module header). Returns a short outcome; throws for a BullMQ retry or an unrecoverable error. */
export async function handleSendFailure(ctx: WorkerContext, failure: SendFailure): Promise<string> {
  const { record, error, log } = failure;
  if (error instanceof JournalError) {
    if (error.code === 'FENCE_LOST') {
      log.warn('another worker took this delegation over; stopping');
      return 'fence-lost';
    }
    if (error.code !== 'MAY_HAVE_SENT') throw error;
    await askReconciler(ctx, record);
    return 'may-have-sent';
  }
  const recorded = recordedErrorOf(error, failure.afterMark);
  if (error instanceof LimitExceededError) {
    // Over a limit: the agent would send the same again. The attempt ends; the step may go elsewhere.
    log.warn({ err: error, limit: recorded.limit }, 'SendMessage answer over a limit; the attempt ends (re-delegable)');
    await ctx.journal.applyStatus(record, { mode: 'outcome', state: 'FAILED', error: { ...recorded, retryable: false } });
    await routeDelegation(ctx, record);
    return 'limit-exceeded';
  }
  if (failure.afterMark && recorded.delivery !== 'not-sent' && !provesNotCreated(error)) {
    // The agent may have created the task: never concluded FAILED, never resent blind; a search decides.
    log.warn({ err: error, code: recorded.code, delivery: recorded.delivery, answer: recorded.answer }, 'SendMessage may have created work; the reconciler searches for our messageId');
    await noteSendError(ctx, record, recorded);
    // No answer at all (a timeout, a reset): the request may still be in flight, so the search waits for it to settle.
    if (recorded.delivery === 'maybe') await askReconciler(ctx, { ...record, sendStartedAt: ctx.options.now() });
    else await searchNow(ctx, record);
    return recorded.answer === 'error' ? 'error-answer' : recorded.answer === 'unreadable' ? 'unreadable-answer' : 'no-answer';
  }
  return failOrRetry(ctx, failure, recorded);
}

/** A refusal after the mark, or any failure before it: FAILED when permanent or out of attempts, else a BullMQ retry. */
async function failOrRetry(ctx: WorkerContext, failure: SendFailure, recorded: ReturnType<typeof recordedErrorOf>): Promise<string> {
  const { record, fence, error, log, job } = failure;
  const permanent = (error instanceof A2AError || (error as { retryable?: boolean })?.retryable === false) && !isRetryable(error);
  if (permanent || job.attemptsMade + 1 >= job.attempts) {
    log.warn({ err: error, permanent }, 'send failed; recording the step FAILED');
    await ctx.journal.applyStatus(record, { fence, mode: 'outcome', state: 'FAILED', error: { ...recorded, retryable: !permanent } });
    await routeDelegation(ctx, record);
    if (permanent) throw new UnrecoverableError(recorded.message);
    return 'failed';
  }
  if (failure.afterMark) await noteSendError(ctx, record, recorded);
  log.warn({ err: error }, 'send failed; will retry');
  throw error;
}
