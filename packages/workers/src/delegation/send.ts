/**
 * Journal first, then SendMessage (`returnImmediately: true`, spec §3.2.2):
 * delivers a delegation's journaled message with our journaled ids. The
 * journal decides first: a delegation that may already have been sent
 * (`sendStartedAt` set) is never resent from here; the reconciler asks the
 * agent and decides (`recover.ts`). Crash windows 1, 2 and 8.
 */
import { UnrecoverableError } from 'bullmq';
import {
  A2AError,
  InvalidAgentResponseError,
  ProtocolError,
  enqueueReconcile,
  isFinished,
  isRetryable,
  JournalError,
  ReplicationTimeoutError,
  applyTask,
  type DelegationRecord,
  type DelegationRef,
  type Message,
  type SendMessageRequest,
} from '@durable-a2a/shared';
import type { JobRun, WorkerContext } from '../context.ts';
import { routeDelegation } from './route.ts';
import { HANDLER_PREFIX, runHandler } from './handler.ts';

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

/** Sends a delegation's journaled message once. Returns a short outcome for logs and tests. */
export async function sendMessage(ctx: WorkerContext, record: DelegationRecord, job: JobRun): Promise<string> {
  const ref = { workflowId: record.workflowId, delegationId: record.delegationId };
  if (isFinished(record.state)) {
    await routeDelegation(ctx, ref, { known: record });
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
    await routeDelegation(ctx, ref);
    return 'completed-by-message';
  }
  // Unfenced on purpose: the agent's answer is the truth about this send, so it is recorded even if
  // another worker claimed the delegation meanwhile (forward-only rules and the task id check still hold).
  await applyTask(ctx.journal, ref, response.task, { snapshot: true });
  log.info({ taskId: response.task.id, state: response.task.status.state }, 'task created');
  await routeDelegation(ctx, ref, { again: false }); // the first subscription of new work is not rate-limited
  return 'sent';
}

/** Registers our webhook for this task when the step asked for push (spec §4.3.3). */
function pushConfiguration(ctx: WorkerContext, record: DelegationRecord, token: string | undefined) {
  if (!record.push || !ctx.options.webhookUrl || !token) return {};
  const url = `${ctx.options.webhookUrl}/${encodeURIComponent(record.workflowId)}/${encodeURIComponent(record.delegationId)}`;
  // The same per-delegation secret as token and as Bearer credentials: agents send one or the other (R18).
  return { taskPushNotificationConfig: { url, token, authentication: { scheme: 'Bearer', credentials: token } } };
}

/** A send that may have left: the reconciler decides once it has settled (`sendSettleMs` after the mark). */
export async function askReconciler(ctx: WorkerContext, record: DelegationRef & Pick<DelegationRecord, 'sendStartedAt'>): Promise<void> {
  const due = (record.sendStartedAt ?? 0) + ctx.options.sendSettleMs;
  await ctx.journal.scheduleCheck(record, due);
  await enqueueReconcile(ctx.queues, record, { dueAt: due, now: ctx.options.now() });
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
  job: JobRun,
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
  const lastAttempt = job.attemptsMade + 1 >= job.attempts;
  if (permanent || lastAttempt) {
    const code = (error as { code?: string }).code ?? 'SEND_FAILED';
    const message = error instanceof Error ? error.message : String(error);
    log.warn({ err: error, permanent }, 'send failed; recording the step FAILED');
    await ctx.journal.applyStatus(record, { fence, mode: 'outcome', state: 'FAILED', error: { code, message, retryable: !permanent } });
    await routeDelegation(ctx, record);
    if (permanent) throw new UnrecoverableError(message);
    return 'failed';
  }
  log.warn({ err: error }, 'send failed; will retry');
  throw error;
}
