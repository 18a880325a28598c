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
  LimitExceededError,
  ProtocolError,
  enqueueReconcile,
  isFinished,
  isRetryable,
  JournalError,
  ReplicationTimeoutError,
  applyTask,
  taskOwnership,
  type Ownership,
  type DelegationRecord,
  type DelegationRef,
  type Message,
  type SendMessageRequest,
} from '@durable-a2a/shared';
import type { JobRun, WorkerContext } from '../context.ts';
import { routeDelegation } from './route.ts';
import { HANDLER_PREFIX, runHandler } from './handler.ts';
import { attemptTimeLeftMs, enforceAttemptDeadline } from './deadline.ts';
import { refuseUnknownVerifier } from './verifier-check.ts';
import { holdingSendLease, isTypedProtocolError, noteSendError, recordedErrorOf } from './send-errors.ts';

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
  const log = ctx.logger.child({ queue: 'send', workflowId: ref.workflowId, step: record.step, delegationId: ref.delegationId, messageId: record.messageId, jobId: job.id, attempt: job.attemptsMade });
  if (await enforceAttemptDeadline(ctx, record, log)) return 'deadline-exceeded';
  if (await refuseUnknownVerifier(ctx, record, log)) return 'verifier-unknown';
  const fence = await ctx.journal.claim(ref, `${ctx.workerId}/send/${job.id}`);
  ctx.crashPoint('send.after-claim', record.step);
  if (record.agentCardUrl.startsWith(HANDLER_PREFIX)) return runHandler(ctx, record, fence);
  let agentInterface = record.agentInterface;
  try {
    agentInterface ??= await ctx.agents.chooseInterface(record.agentCardUrl, Math.max(1, await attemptTimeLeftMs(ctx, record)));
    if ((await attemptTimeLeftMs(ctx, record)) <= 0 && (await enforceAttemptDeadline(ctx, (await ctx.journal.getDelegation(ref)) ?? record, log))) return 'deadline-exceeded';
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
  const timeLeftMs = Math.max(1, await attemptTimeLeftMs(ctx, record));
  let response;
  try {
    ctx.metrics.sends.inc({ kind: record.resendCount > 0 ? 'resend' : 'message' });
    if (record.resendCount > 0) ctx.metrics.resends.inc();
    // V2: an agent may hold the send until the work is done; the attempt's deadline bounds it, and the
    // send lease keeps the reconciler from deciding "may have been sent" while the answer can still come.
    response = await holdingSendLease(ctx, ref, `${ctx.workerId}/send/${job.id}`, () => transport.sendMessage(request, { timeoutMs: timeLeftMs }));
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
  // Ownership (issue 12 kind 1): a task in the answer to our own SendMessage must be in our context.
  // Without a context of ours to compare, the request id (checked at the edge) is the proof.
  const contextId = record.contextRefused ? undefined : record.requestedContextId;
  let ownership = taskOwnership(response.task, { contextId, messageId: contextId ? record.messageId : undefined, taskId: record.taskId }, 'answer');
  // An agent may replace our context with its own (R16): then its history must hold our messageId.
  if (!ownership.ours && ownership.reason === 'foreign-context') ownership = taskOwnership(response.task, { messageId: record.messageId, taskId: record.taskId }, 'found');
  if (!ownership.ours) return refuseForeignAnswer(ctx, record, ownership, log);
  // Unfenced on purpose: the agent's answer is the truth about this send, so it is recorded even if
  // another worker claimed the delegation meanwhile (forward-only rules and the task id check still hold).
  await applyTask(ctx.journal, ref, response.task, { snapshot: true });
  log.info({ taskId: response.task.id, state: response.task.status.state }, 'task created');
  await routeDelegation(ctx, ref, { again: false }); // the first subscription of new work is not rate-limited
  return 'sent';
}

/**
 * A task in the answer to our SendMessage that is not ours (another task, another context): nothing is
 * adopted; the refusal is journaled as a protocol error (the agent had our message: `received`) and the
 * reconciler decides from a search (adopt only what holds our messageId in our context).
 */
async function refuseForeignAnswer(ctx: WorkerContext, record: DelegationRecord, ownership: Exclude<Ownership, { ours: true }>, log: WorkerContext['logger']): Promise<string> {
  log.warn({ reason: ownership.reason, detail: ownership.detail }, 'the SendMessage answer names a task that is not ours; the reconciler will search');
  await noteSendError(ctx, record, { code: 'FOREIGN_TASK', message: `${ownership.reason}: ${ownership.detail}`, retryable: false, delivery: 'received' });
  await askReconciler(ctx, { ...record, sendStartedAt: ctx.options.now() - ctx.options.sendSettleMs });
  return 'foreign-answer';
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
 * A failed send: a lost fence stops quietly; an answer over a limit ends the attempt FAILED with its
 * code and limit (the workflow may re-delegate); another typed protocol error (another request id,
 * an unknown wire value) and an unreadable answer go to the reconciler, never a resend; a permanent
 * A2A error records the step FAILED; anything else is retried by BullMQ (through the reconciler,
 * because the message may have arrived). Every journaled error carries `deliveryOf(error)` (V5).
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
  const recorded = recordedErrorOf(error, afterMark);
  if (error instanceof LimitExceededError) {
    // Over a limit: the agent would send the same again. The attempt ends; the step may go elsewhere.
    log.warn({ err: error, limit: recorded.limit, delivery: recorded.delivery }, 'SendMessage answer over a limit; the attempt ends (re-delegable)');
    await ctx.journal.applyStatus(record, { mode: 'outcome', state: 'FAILED', error: { ...recorded, retryable: false } });
    await routeDelegation(ctx, record);
    return 'limit-exceeded';
  }
  if (isTypedProtocolError(error) && afterMark) {
    // Another request id, a value no spelling explains: nothing in the answer is adopted and the same
    // message is never resent; the reconciler decides from a search (adopt what is provably ours, else
    // AMBIGUOUS for a person: the answer arrived, so the agent may have acted).
    log.warn({ err: error, code: recorded.code, delivery: recorded.delivery }, 'protocol error on SendMessage; the reconciler decides from a search');
    await noteSendError(ctx, record, recorded);
    await askReconciler(ctx, { ...record, sendStartedAt: ctx.options.now() - ctx.options.sendSettleMs });
    return 'protocol-error';
  }
  // An answer we could not read (an HTML page, a body that breaks the schema) does not prove the agent
  // refused: it may have created the task. Only an explicit refusal is permanent here.
  const status = (error as { httpStatus?: number }).httpStatus;
  const unreadable = (error instanceof ProtocolError || error instanceof InvalidAgentResponseError) && (status === undefined || (status >= 200 && status < 300));
  if (unreadable && afterMark) {
    log.warn({ err: error, delivery: recorded.delivery }, 'unreadable answer to SendMessage; the reconciler will ask the agent');
    await noteSendError(ctx, record, recorded);
    await askReconciler(ctx, { ...record, sendStartedAt: ctx.options.now() });
    return 'unreadable-answer';
  }
  const permanent = (error instanceof A2AError || (error as { retryable?: boolean })?.retryable === false) && !isRetryable(error);
  const lastAttempt = job.attemptsMade + 1 >= job.attempts;
  if (permanent || lastAttempt) {
    log.warn({ err: error, permanent }, 'send failed; recording the step FAILED');
    await ctx.journal.applyStatus(record, { fence, mode: 'outcome', state: 'FAILED', error: { ...recorded, retryable: !permanent } });
    await routeDelegation(ctx, record);
    if (permanent) throw new UnrecoverableError(recorded.message);
    return 'failed';
  }
  if (afterMark) await noteSendError(ctx, record, recorded);
  log.warn({ err: error }, 'send failed; will retry');
  throw error;
}
