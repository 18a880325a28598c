/**
 * Replies to a question (spec §3.4 multi-turn): journaled before it leaves
 * (`producer.reply` or an auth handler wrote it), sent on the same task and
 * context, at most once where the agent can be asked (C1).
 */
import { randomUUID } from 'node:crypto';
import {
  ContentTypeNotSupportedError,
  InvalidParamsError,
  RequestTooLargeError,
  A2AError,
  isRetryable,
  sendEffectOf,
  isInterruptedTaskState,
  type A2ATransport,
  type Message,
  type Task,
} from '@durable-a2a/a2a';
import {
  isFinished,
  isStepStopped,
  asksQuestion,
  questionKeyOf,
  type DelegationRecord,
  type DelegationRef,
} from '@durable-a2a/shared';
import type { JobRun, WorkerContext } from '../../context.ts';
import { apply } from '../apply.ts';
import { jitteredCheckTime, questionOpen } from '../core/policy.ts';
import type { Observation } from '../core/observation.ts';
import { readFailure } from '../io/read.ts';

/** Another worker holds the reply's live 'sending' lease: never a second racing send; the job retries later. */
export class ReplyInFlightError extends Error {
  override readonly name = 'ReplyInFlightError';
  readonly retryable = true;
  constructor(ref: DelegationRef) {
    super(`the reply of ${ref.workflowId}/${ref.delegationId} is being sent by another worker`);
  }
}

/**
 * The agent has our reply: its history holds the reply's messageId, or it no longer asks that question (its status
 * asks no question, or another one, in either key form). A question journaled as asked again (`<key>#re<n>`) is still
 * asked by a status under `<key>` (`asksQuestion`): before, such a status read as "moved on" and the reply was never
 * sent again.
 */
function replyDelivered(task: Task, record: DelegationRecord): boolean {
  if (task.history?.some((message) => message.messageId === record.replyMessageId)) return true;
  const key = questionKeyOf(task.status.message, task.status.timestamp);
  return !(isInterruptedTaskState(task.status.state) && (key === '' || asksQuestion(record.replyForQuestion, task.status.message, task.status.timestamp)));
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
  // A step's reply never leaves once its workflow is stopping (a cancel, or another step failed for good): the agent
  // would do the work the CancelTask is on its way to stop. The journal refuses such answers (stepStopped.lua); this
  // holds back one journaled before the stop, and a default answer (question expiry) or an auth handler's.
  if (record.kind !== 'compensation' && isStepStopped(record.kind, await ctx.journal.getWorkflow(ref.workflowId))) return 'workflow-stopping';
  if (record.replyState === 'sending' && (record.replySendUntil ?? 0) >= ctx.options.now()) throw new ReplyInFlightError(ref);
  const transport = await ctx.agents.transportFor(record);
  const fence = await ctx.journal.claim(ref, `${ctx.workerId}/reply/${job.id}`);
  const token = `${ctx.workerId}/${job.id}/${randomUUID()}`;
  const taken = await ctx.journal.takeReplySend(ref, fence, record.replyMessageId, token, ctx.options.sendSettleMs);
  // A stop that landed after the read above: the take itself refused (atomic with the workflow's flags), held back alike.
  if (taken === 'workflow-stopping') return 'workflow-stopping';
  if (taken === 'busy') {
    const current = await ctx.journal.getDelegation(ref);
    if (current?.replyMessageId === record.replyMessageId && current.replyState === 'sending') throw new ReplyInFlightError(ref);
    return 'reply-moved-on';
  }
  const run: ReplyRun = { ctx, ref, fence, record, transport, token };
  if (taken === 'taken-over') {
    // The previous sender's lease expired: the agent may have the reply already. Ask before any resend.
    const task = await readOurTask(run);
    if (task && replyDelivered(task, record)) return settleDelivered(run, task, 'reply-already-delivered');
  }
  return deliver(run);
}

/** GetTask of our task; undefined when the answer names another task (it tells nothing about our reply). */
async function readOurTask({ record, transport }: ReplyRun): Promise<Task | undefined> {
  const task = await transport.getTask({ id: record.taskId! });
  return task.id === record.taskId ? task : undefined;
}

/** The agent has the reply: journal it sent and apply what the agent says now (the `reply-delivered` row). */
async function settleDelivered(run: ReplyRun, task: Task | undefined, outcome: string): Promise<string> {
  const { ctx, fence, record, token } = run;
  const ownership = task && task.id !== record.taskId ? ({ kind: 'disproven', reason: `answered task ${task.id}` } as const) : ({ kind: 'proven', by: 'task-id' } as const);
  const observation: Observation = { kind: 'reply-delivered', replyMessageId: record.replyMessageId!, ownership, ...(task ? { task } : {}) };
  const applied = await apply(ctx, record, observation, { fence, replyToken: token, source: 'reply' });
  // A follow that may run in this process with no job behind it: the reconciler's next check, a parked poll away
  // until now, comes back to within a reconcile interval (a crash before that follow takes its lease is found soon).
  if (applied.next === 'follow' && applied.record && !questionOpen(applied.record)) {
    await ctx.journal.scheduleCheck(run.ref, jitteredCheckTime(ctx.options.now(), ctx.options.reconcileIntervalMs));
  }
  return outcome;
}

/** Sends the reply once, under our lease. */
async function deliver(run: ReplyRun): Promise<string> {
  const { ctx, fence, record, transport, token } = run;
  const message: Message = {
    messageId: record.replyMessageId!,
    role: 'ROLE_USER',
    taskId: record.taskId,
    ...(record.contextId ? { contextId: record.contextId } : {}),
    parts: record.replyMessage!.parts,
    ...(record.replyMessage!.metadata ? { metadata: record.replyMessage!.metadata } : {}),
  };
  ctx.metrics.sends.inc({ kind: 'reply', agent: ctx.metrics.agentLabels.of(record.agentCardUrl) });
  let response;
  try {
    response = await transport.sendMessage({ message, configuration: { returnImmediately: true } });
  } catch (error) {
    // TaskNotFound as the binding speaks it: the task is gone (or forgotten): the `task-not-found` row, not a BullMQ
    // retry loop. A bare 404 or NOT_FOUND proves nothing (`readFailure`): effect maybe, retried as below.
    if (error instanceof A2AError && !isRetryable(error)) {
      const failed = readFailure(error, 'reply', 'reply refused', false, ctx.logger);
      if (failed.kind === 'task-not-found') return (await apply(ctx, record, failed, { source: 'reply' }), 'reply-task-not-found');
    }
    // Only an explicit refusal of the answer itself (its parts, its content type, its size), proven by the binding's own
    // code (effect none), reopens the question; anything else is retried, and the rerun asks the agent first once the
    // lease has expired (the reply is 'sending'). A 415 a proxy put in a JSON-RPC `code` proves no refusal.
    const refused = error instanceof InvalidParamsError || error instanceof ContentTypeNotSupportedError || error instanceof RequestTooLargeError;
    if (!refused || sendEffectOf(error) !== 'none') throw error;
    const task = await readOurTask(run);
    if (task && replyDelivered(task, record)) return settleDelivered(run, task, 'reply-already-delivered');
    await apply(ctx, record, { kind: 'reply-refused', replyMessageId: record.replyMessageId!, message: error.message }, { fence, replyToken: token, source: 'reply' });
    return 'reply-refused';
  }
  return settleDelivered(run, 'task' in response ? response.task : undefined, 'reply-sent');
}
