/**
 * Replies to a question (spec §3.4 multi-turn): journaled before it leaves
 * (`producer.reply` or an auth handler wrote it), sent on the same task and
 * context, at most once where the agent can be asked.
 */
import {
  ContentTypeNotSupportedError,
  InvalidParamsError,
  applyTask,
  isFinished,
  isInterruptedTaskState,
  questionKeyOf,
  type DelegationRecord,
  type Message,
} from '@durable-a2a/shared';
import type { JobRun, WorkerContext } from '../context.ts';
import { routeDelegation } from './route.ts';

/**
 * Sends the journaled reply on the same taskId and contextId (spec §3.4
 * multi-turn). The reply is marked 'sending' before it leaves, so a rerun
 * after a crash or a stall first asks the agent whether the question is still
 * open, and never answers a newer question with an older reply.
 */
export async function sendReply(ctx: WorkerContext, record: DelegationRecord, job: JobRun): Promise<string> {
  const ref = { workflowId: record.workflowId, delegationId: record.delegationId };
  if (!record.replyMessageId || !record.replyMessage || !record.taskId || !record.replyState) return 'no-reply';
  if (record.replyState === 'sent' || record.replyState === 'refused') return `already-${record.replyState}`;
  if (isFinished(record.state)) return 'already-finished';
  const fence = await ctx.journal.claim(ref, `${ctx.workerId}/reply/${job.id}`);
  const transport = await ctx.agents.transportFor(record);
  if (record.replyState === 'sending') {
    const task = await transport.getTask({ id: record.taskId });
    const key = questionKeyOf(task.status.message, task.status.timestamp);
    const stillAsking = isInterruptedTaskState(task.status.state) && (key === '' || key === record.replyForQuestion);
    if (!stillAsking) {
      await ctx.journal.markReply(ref, fence, record.replyMessageId, 'sent');
      await applyTask(ctx.journal, ref, task, { snapshot: true });
      await routeDelegation(ctx, ref);
      return 'reply-already-delivered';
    }
  } else if (!(await ctx.journal.markReply(ref, fence, record.replyMessageId, 'sending'))) {
    return 'reply-moved-on';
  }
  const message: Message = {
    messageId: record.replyMessageId,
    role: 'ROLE_USER',
    taskId: record.taskId,
    ...(record.contextId ? { contextId: record.contextId } : {}),
    parts: record.replyMessage.parts,
    ...(record.replyMessage.metadata ? { metadata: record.replyMessage.metadata } : {}),
  };
  ctx.metrics.sends.inc({ kind: 'reply' });
  let response;
  try {
    response = await transport.sendMessage({ message, configuration: { returnImmediately: true } });
  } catch (error) {
    // Only an explicit refusal of the answer itself reopens the question; anything else is retried, and
    // the rerun asks the agent first (the reply is 'sending').
    if (!(error instanceof InvalidParamsError || error instanceof ContentTypeNotSupportedError)) throw error;
    const task = await transport.getTask({ id: record.taskId });
    const key = questionKeyOf(task.status.message, task.status.timestamp);
    if (isInterruptedTaskState(task.status.state) && (key === '' || key === record.replyForQuestion)) {
      await ctx.journal.markReply(ref, fence, record.replyMessageId, 'refused', error.message);
      ctx.logger.warn({ workflowId: ref.workflowId, delegationId: ref.delegationId, err: error }, 'the agent refused the reply; the question is open again');
      return 'reply-refused';
    }
    // The agent moved on after all: the reply was taken.
    await ctx.journal.markReply(ref, fence, record.replyMessageId, 'sent');
    await applyTask(ctx.journal, ref, task, { snapshot: true });
    await routeDelegation(ctx, ref);
    return 'reply-already-delivered';
  }
  await ctx.journal.markReply(ref, fence, record.replyMessageId, 'sent');
  if ('task' in response) await applyTask(ctx.journal, ref, response.task, { snapshot: true });
  await routeDelegation(ctx, ref, { again: false });
  return 'reply-sent';
}

