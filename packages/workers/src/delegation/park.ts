/**
 * Questions (INPUT_REQUIRED / AUTH_REQUIRED, spec §3.4, §7.6): a delegation
 * whose question has no reply yet, or whose reply is not delivered, is parked:
 * no stream (a person may take hours); the reconciler re-reads it every
 * `parkedPollMs` (the agent may resume on its own), or sooner at its question's next moment (a reminder, its
 * expiry: `question-schedule.ts`). An AUTH_REQUIRED challenge
 * first goes to the agent's auth handler; a journaled reply that was never
 * delivered is enqueued again. The reply itself is sent by `reply.ts`.
 */
import { enqueueReply, isAwaitingAnswer, type DelegationRecord } from '@durable-a2a/shared';
import type { WorkerContext } from '../context.ts';
import { jitteredCheckTime } from './core/policy.ts';
import { notifyQuestionOpened } from '../notify/question.ts';
import { nextQuestionCheckAt } from './question-schedule.ts';

/**
 * Parks a delegation on its question (see the module header). Only `apply.ts` calls this. `asked`: the observation
 * just journaled the question (one info line then); a re-read of a row already parked logs at debug only, so a
 * question open for hours is not logged every `parkedPollMs`.
 */
export async function park(ctx: WorkerContext, record: DelegationRecord, asked: boolean): Promise<void> {
  // A reply journaled but not sent (its job lost), or stuck 'sending' longer than a request can take.
  const stuckSending = record.replyState === 'sending' && ctx.options.now() - record.updatedAt > ctx.options.requestTimeoutMs + 1_000;
  if (!isAwaitingAnswer(record) && record.replyMessageId && (record.replyState === 'pending' || stuckSending)) {
    await enqueueReply(ctx.queues, record, record.replyMessageId, ctx.options.now());
  }
  // The question's next moment (a reminder, its expiry: `question-life.ts`) when it comes before the parked poll.
  await ctx.journal.scheduleCheck(record, await nextQuestionCheckAt(ctx, record, jitteredCheckTime(ctx.options.now(), ctx.options.parkedPollMs)));
  const line = { workflowId: record.workflowId, delegationId: record.delegationId, question: record.question };
  if (asked) ctx.logger.info(line, 'parked on a question');
  else ctx.logger.debug(line, 'still parked on a question');
  await notifyQuestionOpened(ctx, record, asked);
}
