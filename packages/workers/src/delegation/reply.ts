/**
 * Replies to a question (spec §3.4 multi-turn): journaled before it leaves
 * (`producer.reply` or an auth handler wrote it), sent on the same task and
 * context, at most once where the agent can be asked (C1).
 */
import { randomUUID } from 'node:crypto';
import {
  ContentTypeNotSupportedError,
  InvalidParamsError,
  applyTask,
  isFinished,
  isInterruptedTaskState,
  questionKeyOf,
  type A2ATransport,
  type DelegationRecord,
  type DelegationRef,
  type Message,
  type Task,
} from '@durable-a2a/shared';
import type { JobRun, WorkerContext } from '../context.ts';
import { routeDelegation } from './route.ts';
import { jitteredCheckTime } from './backoff.ts';
import { shouldPark } from './park.ts';
import { isForeignAnswer } from './read.ts';

/** Another worker holds the reply's live 'sending' lease: never a second racing send; the job retries later. */
export class ReplyInFlightError extends Error {
  override readonly name = 'ReplyInFlightError';
  readonly retryable = true;
  constructor(ref: DelegationRef) {
    super(`the reply of ${ref.workflowId}/${ref.delegationId} is being sent by another worker`);
  }
}

/** The agent has our reply: its history holds the reply's messageId, or it no longer asks that question. */
function replyDelivered(task: Task, record: DelegationRecord): boolean {
  if (task.history?.some((message) => message.messageId === record.replyMessageId)) return true;
  const key = questionKeyOf(task.status.message, task.status.timestamp);
  return !(isInterruptedTaskState(task.status.state) && (key === '' || key === record.replyForQuestion));
}

interface ReplyRun {
  ctx: WorkerContext;
  ref: DelegationRef;
  fence: number;
  record: DelegationRecord;
  transport: A2ATransport;
  token: string;
}

/**
 * Sends the journaled reply on the same taskId and contextId (spec §3.4 multi-turn). The reply's
 * 'sending' mark is a lease owned by one worker (compare-and-set in the journal, `sendSettleMs` long):
 * a worker that finds a live lease does not send (ReplyInFlightError, retried later); one that takes
 * an expired lease over first asks the agent (GetTask: history holds the reply, or the question moved
 * on) and resends only when the agent does not have it. Never two racing sends.
 */
export async function sendReply(ctx: WorkerContext, record: DelegationRecord, job: JobRun): Promise<string> {
  const ref = { workflowId: record.workflowId, delegationId: record.delegationId };
  if (!record.replyMessageId || !record.replyMessage || !record.taskId || !record.replyState) return 'no-reply';
  if (record.replyState === 'sent' || record.replyState === 'refused') return `already-${record.replyState}`;
  if (isFinished(record.state)) return 'already-finished';
  if (record.replyState === 'sending' && (record.replySendUntil ?? 0) >= ctx.options.now()) throw new ReplyInFlightError(ref);
  const transport = await ctx.agents.transportFor(record);
  const fence = await ctx.journal.claim(ref, `${ctx.workerId}/reply/${job.id}`);
  const token = `${ctx.workerId}/${job.id}/${randomUUID()}`;
  const taken = await ctx.journal.takeReplySend(ref, fence, record.replyMessageId, token, ctx.options.sendSettleMs);
  if (taken === 'busy') {
    const current = await ctx.journal.getDelegation(ref);
    if (current?.replyMessageId === record.replyMessageId && current.replyState === 'sending') throw new ReplyInFlightError(ref);
    return 'reply-moved-on';
  }
  const run: ReplyRun = { ctx, ref, fence, record, transport, token };
  if (taken === 'taken-over') {
    // The previous sender's lease expired: the agent may have the reply already. Ask before any resend.
    const task = await readOurTask(run);
    if (task && replyDelivered(task, record)) return settleDelivered(run, task);
  }
  return deliver(run);
}

/** GetTask of our task; undefined when the answer names another task (journaled as a protocol error: it tells nothing). */
async function readOurTask({ ctx, record, transport }: ReplyRun): Promise<Task | undefined> {
  const task = await transport.getTask({ id: record.taskId! });
  return (await isForeignAnswer(ctx, record, task, 'GetTask')) ? undefined : task;
}

/** The agent has the reply: journal it sent and apply what the agent says now. */
async function settleDelivered(run: ReplyRun, task: Task): Promise<string> {
  const { ctx, ref, fence, record, token } = run;
  await ctx.journal.markReply(ref, fence, record.replyMessageId!, 'sent', '', { token });
  await applyTask(ctx.journal, ref, task, { snapshot: true });
  await routeAfterReply(run, true);
  return 'reply-already-delivered';
}

/** Sends the reply once, under our lease. */
async function deliver(run: ReplyRun): Promise<string> {
  const { ctx, ref, fence, record, transport, token } = run;
  const message: Message = {
    messageId: record.replyMessageId!,
    role: 'ROLE_USER',
    taskId: record.taskId,
    ...(record.contextId ? { contextId: record.contextId } : {}),
    parts: record.replyMessage!.parts,
    ...(record.replyMessage!.metadata ? { metadata: record.replyMessage!.metadata } : {}),
  };
  ctx.metrics.sends.inc({ kind: 'reply' });
  let response;
  try {
    response = await transport.sendMessage({ message, configuration: { returnImmediately: true } });
  } catch (error) {
    // Only an explicit refusal of the answer itself reopens the question; anything else is retried, and
    // the rerun asks the agent first once the lease has expired (the reply is 'sending').
    if (!(error instanceof InvalidParamsError || error instanceof ContentTypeNotSupportedError)) throw error;
    const task = await readOurTask(run);
    if (task && replyDelivered(task, record)) return settleDelivered(run, task);
    await ctx.journal.markReply(ref, fence, record.replyMessageId!, 'refused', error.message, { token });
    ctx.logger.warn({ workflowId: ref.workflowId, delegationId: ref.delegationId, err: error }, 'the agent refused the reply; the question is open again');
    return 'reply-refused';
  }
  await ctx.journal.markReply(ref, fence, record.replyMessageId!, 'sent', '', { token });
  // An answer about another task is a protocol error: nothing of it is applied, our task is followed as it is.
  if ('task' in response && !(await isForeignAnswer(ctx, record, response.task, 'SendMessage'))) await applyTask(ctx.journal, ref, response.task, { snapshot: true });
  await routeAfterReply(run, false);
  return 'reply-sent';
}

/**
 * Routes a delegation whose reply the agent has (`again` false: the first follow after a reply just sent is not
 * rate-limited). Its follow may run in this process with no job behind it (`follow-local.ts`): the reconciler's
 * next check, a parked poll away until now, comes back to within a reconcile interval first, so a crash before
 * that follow takes its lease is found as soon as after a send.
 */
async function routeAfterReply({ ctx, ref }: ReplyRun, again: boolean): Promise<void> {
  const record = await ctx.journal.getDelegation(ref);
  if (record && !isFinished(record.state) && !shouldPark(record)) {
    await ctx.journal.scheduleCheck(ref, jitteredCheckTime(ctx.options.now(), ctx.options.reconcileIntervalMs));
  }
  await routeDelegation(ctx, ref, { again, ...(record ? { known: record } : {}) });
}
