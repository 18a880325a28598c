/**
 * send queue: delivers a delegation's journaled message with SendMessage
 * (`returnImmediately: true`, spec §3.2.2) or its journaled reply on the same
 * task. The journal decides first: a delegation that may already have been
 * sent is never resent from here; the reconciler asks the agent and decides.
 */
import { UnrecoverableError, type Job } from 'bullmq';
import {
  A2AError,
  ContentTypeNotSupportedError,
  InvalidParamsError,
  InvalidAgentResponseError,
  ProtocolError,
  isFinished,
  isInterruptedTaskState,
  isRetryable,
  jobId,
  JournalError,
  ReplicationTimeoutError,
  SendJobSchema,
  applyTask,
  questionKeyOf,
  type DelegationRecord,
  type Message,
  type SendMessageRequest,
} from '@durable-a2a/shared';
import type { WorkerContext } from '../context.ts';
import { settleDelegation } from '../settle.ts';
import { afterObservation } from './follow.ts';

export const SEND_QUEUE = 'send';
export { SendJobSchema };

/** The wire message of a delegation (spec §5.5 Message): our journaled ids, never new ones. */
export function outgoingMessage(record: DelegationRecord): Message {
  return {
    messageId: record.messageId,
    role: 'ROLE_USER',
    parts: record.message.parts,
    ...(record.contextRefused || !record.requestedContextId ? {} : { contextId: record.requestedContextId }),
    ...(record.message.metadata ? { metadata: record.message.metadata } : {}),
    ...(record.message.referenceTaskIds ? { referenceTaskIds: record.message.referenceTaskIds } : {}),
  };
}

/** Processes one send job. Returns a short outcome for logs and tests. */
export async function processSend(job: Job, ctx: WorkerContext): Promise<string> {
  const data = SendJobSchema.parse(job.data);
  const ref = { workflowId: data.workflowId, delegationId: data.delegationId };
  const record = await ctx.journal.getDelegation(ref);
  if (!record) return 'missing';
  if (data.kind === 'reply') return sendReply(job, ctx, record);
  if (data.kind === 'cancel') return cancelTask(ctx, record);
  if (isFinished(record.state)) {
    await settleDelegation(ctx, ref, record);
    return 'already-finished';
  }
  if (record.state !== 'INTENT') return 'already-sent';
  if (record.held) return 'held';
  if (record.sendStartedAt !== undefined) {
    await askReconciler(ctx, record);
    return 'may-have-sent';
  }
  const fence = await ctx.journal.claim(ref, `${ctx.workerId}/send/${job.id}`);
  ctx.crashPoint('send.after-claim', record.step);
  if (record.agentCardUrl.startsWith(HANDLER_PREFIX)) return runHandler(ctx, record, fence);
  const log = ctx.logger.child({ queue: 'send', workflowId: ref.workflowId, step: record.step, delegationId: ref.delegationId, messageId: record.messageId, jobId: job.id, attempt: job.attemptsMade });
  let agentInterface = record.agentInterface;
  try {
    agentInterface ??= await ctx.agents.chooseInterface(record.agentCardUrl);
    await ctx.journal.markSending(ref, fence, record.agentInterface ? undefined : agentInterface);
  } catch (error) {
    // Not on enough replicas: nothing leaves, and a replica outage does not use up the send's attempts.
    if (error instanceof ReplicationTimeoutError) return askReconciler(ctx, { ...record, sendStartedAt: ctx.options.now() }).then(() => 'replicas-behind');
    return handleFailure(ctx, record, fence, error, log, job);
  }
  const markedAt = ctx.options.now();
  ctx.crashPoint('send.after-mark', record.step);
  const transport = ctx.agents.transport(record.agentCardUrl, agentInterface);
  const request: SendMessageRequest = {
    message: outgoingMessage(record),
    configuration: { returnImmediately: true, ...pushConfiguration(ctx, record, await ctx.journal.pushToken(ref)) },
  };
  // Crash window 8: a worker that stalled after the mark may find that the reconciler (which waits
  // sendSettleMs = request timeout + 1 s) already decided. Past the 1 s margin, or with a lost fence,
  // it must not send: the reconciler owns the delegation now.
  const current = await ctx.journal.getDelegation(ref);
  if (current?.fence !== fence || current.sendCount !== record.sendCount + 1 || ctx.options.now() - markedAt > ctx.options.sendSettleMs - ctx.options.requestTimeoutMs) {
    log.warn('stalled between the mark and the request; leaving the delegation to the reconciler');
    return 'stalled-before-request';
  }
  let response;
  try {
    ctx.metrics.sends.inc({ kind: record.resendCount > 0 ? 'resend' : 'message' });
    if (record.resendCount > 0) ctx.metrics.resends.inc();
    response = await transport.sendMessage(request);
  } catch (error) {
    return handleFailure(ctx, record, fence, error, log, job, true);
  }
  ctx.crashPoint('send.after-request', record.step);
  if ('message' in response) {
    // A direct Message reply completes the delegation (spec §3.1.1).
    await ctx.journal.applyStatus(ref, { mode: 'outcome', state: 'COMPLETED', result: { message: response.message }, contextId: response.message.contextId });
    log.info('agent replied with a message');
    await settleDelegation(ctx, ref);
    return 'completed-by-message';
  }
  // Unfenced on purpose: the agent's answer is the truth about this send, so it is recorded even if
  // another worker claimed the delegation meanwhile (forward-only rules and the task id check still hold).
  await applyTask(ctx.journal, ref, response.task, { snapshot: true });
  log.info({ taskId: response.task.id, state: response.task.status.state }, 'task created');
  await afterObservation(ctx, ref, { again: false }); // the first subscription of new work is not rate-limited
  return 'sent';
}

/** Agent URL of a compensation run by a registered handler instead of an agent. */
export const HANDLER_PREFIX = 'handler:';

/**
 * Runs a registered compensation handler (no agent). Journaled like a send:
 * marked before it runs, so a crash in between goes through the reconciler,
 * which cannot search a handler and so leaves it AMBIGUOUS for a person; the
 * handler gets the delegation's messageId as its idempotency key.
 */
async function runHandler(ctx: WorkerContext, record: DelegationRecord, fence: number): Promise<string> {
  const name = record.agentCardUrl.slice(HANDLER_PREFIX.length);
  const handler = ctx.compensationHandlers.get(name);
  await ctx.journal.markSending(record, fence);
  const originalId = record.delegationId.replace(/^undo\./, '');
  const original = await ctx.journal.getDelegation({ workflowId: record.workflowId, delegationId: originalId });
  try {
    if (!handler || !original) throw new Error(handler ? `original delegation ${originalId} is gone` : `no compensation handler named ${name}`);
    const workflow = await ctx.journal.getWorkflowHash(record.workflowId);
    const step = workflow ? (JSON.parse(workflow.definition!) as { steps: { name: string; compensation?: { params?: Record<string, unknown> } }[] }).steps.find((candidate) => candidate.name === record.step) : undefined;
    const { evidence } = await handler({ idempotencyKey: record.messageId, original, params: step?.compensation?.params ?? {} });
    await ctx.journal.applyStatus(record, { fence, mode: 'outcome', state: 'COMPLETED', result: { handler: name, evidence: evidence ?? null } });
  } catch (error) {
    await ctx.journal.applyStatus(record, { fence, mode: 'outcome', state: 'FAILED', error: { code: 'HANDLER_FAILED', message: error instanceof Error ? error.message : String(error) } });
  }
  await settleDelegation(ctx, record);
  return 'handler-ran';
}

/** Registers our webhook for this task when the step asked for push (spec §4.3.3). */
function pushConfiguration(ctx: WorkerContext, record: DelegationRecord, token: string | undefined) {
  if (!record.push || !ctx.options.webhookUrl || !token) return {};
  const url = `${ctx.options.webhookUrl}/${encodeURIComponent(record.workflowId)}/${encodeURIComponent(record.delegationId)}`;
  // The same per-delegation secret as token and as Bearer credentials: agents send one or the other (R18).
  return { taskPushNotificationConfig: { url, token, authentication: { scheme: 'Bearer', credentials: token } } };
}

async function askReconciler(ctx: WorkerContext, record: DelegationRecord): Promise<void> {
  const due = (record.sendStartedAt ?? 0) + ctx.options.sendSettleMs;
  await ctx.journal.scheduleCheck(record, due);
  await ctx.queues.reconcile.add(
    'delegation',
    { workflowId: record.workflowId, delegationId: record.delegationId },
    { jobId: jobId('reconcile', record.workflowId, record.delegationId, due), delay: Math.max(0, due - ctx.options.now()) },
  );
}

/**
 * A failed send: a lost fence stops quietly; a permanent A2A error records the
 * step FAILED (the workflow may re-delegate); anything else is retried by
 * BullMQ, and the retry goes through the reconciler because the message may
 * have arrived.
 */
async function handleFailure(
  ctx: WorkerContext,
  record: DelegationRecord,
  fence: number,
  error: unknown,
  log: WorkerContext['logger'],
  job: Job,
  afterMark = false,
): Promise<string> {
  if (error instanceof JournalError) {
    if (error.code === 'FENCE_LOST') {
      log.warn('another worker took this delegation over; stopping');
      return 'fence-lost';
    }
    if (error.code === 'MAY_HAVE_SENT') {
      await askReconciler(ctx, record);
      return 'may-have-sent';
    }
    throw error;
  }
  // An answer we could not read (an HTML page, a body that breaks the schema) does not prove the agent
  // refused: it may have created the task. Only an explicit refusal is permanent here.
  const status = (error as { httpStatus?: number }).httpStatus;
  const unreadable = (error instanceof ProtocolError || error instanceof InvalidAgentResponseError) && (status === undefined || (status >= 200 && status < 300));
  if (unreadable && afterMark) {
    log.warn({ err: error }, 'unreadable answer to SendMessage; the reconciler will ask the agent');
    await askReconciler(ctx, { ...record, sendStartedAt: ctx.options.now() });
    return 'unreadable-answer';
  }
  const permanent = (error instanceof A2AError || (error as { retryable?: boolean })?.retryable === false) && !isRetryable(error);
  const lastAttempt = job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
  if (permanent || lastAttempt) {
    const code = (error as { code?: string }).code ?? 'SEND_FAILED';
    const message = error instanceof Error ? error.message : String(error);
    log.warn({ err: error, permanent }, 'send failed; recording the step FAILED');
    await ctx.journal.applyStatus(record, { fence, mode: 'outcome', state: 'FAILED', error: { code, message, retryable: !permanent } });
    await settleDelegation(ctx, record);
    if (permanent) throw new UnrecoverableError(message);
    return 'failed';
  }
  log.warn({ err: error }, 'send failed; will retry');
  throw error;
}


/**
 * Sends the journaled reply on the same taskId and contextId (spec §3.4
 * multi-turn). The reply is marked 'sending' before it leaves, so a rerun
 * after a crash or a stall first asks the agent whether the question is still
 * open, and never answers a newer question with an older reply.
 */
async function sendReply(job: Job, ctx: WorkerContext, record: DelegationRecord): Promise<string> {
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
      await afterObservation(ctx, ref);
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
    await afterObservation(ctx, ref);
    return 'reply-already-delivered';
  }
  await ctx.journal.markReply(ref, fence, record.replyMessageId, 'sent');
  if ('task' in response) await applyTask(ctx.journal, ref, response.task, { snapshot: true });
  await afterObservation(ctx, ref, { again: false });
  return 'reply-sent';
}

/**
 * The user canceled the workflow: CancelTask on a running task (spec §3.1.5).
 * A terminal task answers TaskNotCancelableError: its outcome is read instead.
 * A delegation never sent is closed locally as CANCELED.
 */
async function cancelTask(ctx: WorkerContext, record: DelegationRecord): Promise<string> {
  const ref = { workflowId: record.workflowId, delegationId: record.delegationId };
  if (isFinished(record.state)) {
    await settleDelegation(ctx, ref, record);
    return 'already-finished';
  }
  if (!record.taskId) {
    if (record.sendStartedAt !== undefined) {
      // It may have been sent: find it first, then cancel (the reconciler re-enqueues us via advance).
      await askReconciler(ctx, record);
      return 'cancel-after-reconcile';
    }
    await ctx.journal.applyStatus(ref, { expectedVersion: record.version, mode: 'outcome', state: 'CANCELED', error: { code: 'CANCELED_BEFORE_SEND', message: 'canceled before it was sent' } });
    await settleDelegation(ctx, ref);
    return 'canceled-locally';
  }
  const transport = await ctx.agents.transportFor(record);
  let task;
  try {
    task = await transport.cancelTask({ id: record.taskId });
  } catch (error) {
    if (!(error instanceof A2AError) || isRetryable(error)) throw error;
    task = await transport.getTask({ id: record.taskId });
  }
  await applyTask(ctx.journal, ref, task, { snapshot: true });
  // Keep following until the agent reports the cancellation (it may finish first); no second CancelTask.
  await afterObservation(ctx, ref, { cancelIfRequested: false });
  return 'cancel-sent';
}
