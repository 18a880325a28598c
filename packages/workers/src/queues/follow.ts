/**
 * follow queue: SubscribeToTask (spec §3.1.6). The first event of each
 * subscription is the authoritative snapshot and replaces local state; later
 * events are applied forward-only and idempotently. A stream that drops or
 * closes before a terminal state gets one GetTask, then a delayed
 * resubscription (full-jitter backoff, capped; the follow queue's BullMQ
 * limiter caps subscriptions per second fleet-wide). A stream that stops on
 * INPUT_REQUIRED parks the delegation with its question (no resubscribe).
 */
import { DelayedError, type Job } from 'bullmq';
import {
  FollowJobSchema,
  JournalError,
  TaskNotFoundError,
  UnsupportedOperationError,
  applyStreamResponse,
  applyTask,
  isFinished,
  isAwaitingAnswer,
  isRetryable,
  jobId,
  type DelegationRecord,
  type DelegationRef,
  type StreamEnd,
  type StreamResponse,
} from '@durable-a2a/shared';
import type { WorkerContext } from '../context.ts';
import { fullJitterDelayMs, jitteredCheckTime } from '../backoff.ts';
import { settleDelegation } from '../settle.ts';
import { handleTaskNotFound } from '../not-found.ts';
import { handleAuthRequired } from '../auth.ts';

export const FOLLOW_QUEUE = 'follow';
export { FollowJobSchema };


/**
 * True when a parked delegation should not be followed: its question has no
 * reply yet, or its reply has not been delivered (the reply job re-follows).
 */
export function shouldPark(record: DelegationRecord): boolean {
  if (record.state !== 'INPUT_REQUIRED' && record.state !== 'AUTH_REQUIRED') return false;
  return isAwaitingAnswer(record) || record.replyState !== 'sent';
}

/**
 * Parks a delegation on its question: no stream; the reconciler re-reads it now
 * and then. An AUTH_REQUIRED challenge first goes to the agent's auth handler,
 * and a journaled reply that is not delivered yet is (re)enqueued.
 */
async function park(ctx: WorkerContext, record: DelegationRecord): Promise<void> {
  await handleAuthRequired(ctx, record);
  // A reply journaled but not sent (its job lost), or stuck 'sending' longer than a request can take.
  const stuckSending = record.replyState === 'sending' && ctx.options.now() - record.updatedAt > ctx.options.requestTimeoutMs + 1_000;
  if (!isAwaitingAnswer(record) && record.replyMessageId && (record.replyState === 'pending' || stuckSending)) {
    const id = jobId('reply', record.workflowId, record.delegationId, record.replyMessageId, ctx.options.now());
    await ctx.queues.send.add('send', { workflowId: record.workflowId, delegationId: record.delegationId, kind: 'reply' }, { jobId: id });
  }
  await ctx.journal.scheduleCheck(record, jitteredCheckTime(ctx.options.now(), ctx.options.parkedPollMs));
  ctx.logger.info({ workflowId: record.workflowId, delegationId: record.delegationId, question: record.question }, 'parked on a question');
}

/** Enqueues a subscription after `delayMs`; `again` for any but the first (rate-limited fleet-wide). */
export async function enqueueFollow(ctx: WorkerContext, ref: DelegationRef, resubscription: number, delayMs = 0, again = true): Promise<void> {
  const id = jobId('follow', ref.workflowId, ref.delegationId, resubscription, ctx.options.now());
  await ctx.queues.follow.add('follow', { ...ref, resubscription, again }, { jobId: id, delay: delayMs });
}

/**
 * True when the user canceled the (still running) workflow, or it is stopping after a step failed for
 * good, and no CancelTask went out for this delegation within the last reconcile interval.
 * Compensations are never canceled.
 */
async function cancelWanted(ctx: WorkerContext, ref: DelegationRef): Promise<boolean> {
  const [cancelRequested, stopping, state] = await ctx.journal.redis.hmget(ctx.journal.keys.workflow(ref.workflowId), 'cancelRequested', 'stopping', 'state');
  if ((cancelRequested !== '1' && !stopping) || state !== 'RUNNING') return false;
  const onceKey = `${ctx.journal.keys.delegation(ref.workflowId, ref.delegationId)}:cancel-sent`;
  return (await ctx.journal.redis.set(onceKey, ctx.workerId, 'PX', ctx.options.reconcileIntervalMs, 'NX')) === 'OK';
}

/** How `afterObservation` re-follows a delegation that is still running. */
export interface FollowPlan {
  /** Consecutive resubscriptions without progress (backoff exponent). Default 0. */
  resubscription?: number;
  /** Delay before subscribing, in ms. Default 0. */
  delayMs?: number;
  /** False for the first subscription of new work (not rate-limited). Default true. */
  again?: boolean;
  /** False when the caller just sent CancelTask itself (no second cancel). Default true. */
  cancelIfRequested?: boolean;
}

/** After an observation outside a stream: settle if finished, cancel if the user asked, park if asking, else follow. */
export async function afterObservation(ctx: WorkerContext, ref: DelegationRef, plan: FollowPlan = {}): Promise<string> {
  const { resubscription = 0, delayMs = 0, again = true, cancelIfRequested = true } = plan;
  const record = await ctx.journal.getDelegation(ref);
  if (!record) return 'missing';
  if (isFinished(record.state)) {
    await settleDelegation(ctx, ref, record);
    return 'finished';
  }
  if (cancelIfRequested && record.kind === 'step' && record.taskId && (await cancelWanted(ctx, ref))) {
    // Canceled while this task was being found or sent: CancelTask it now (at most once per interval).
    await ctx.queues.send.add('send', { ...ref, kind: 'cancel' }, { jobId: jobId('cancel', ref.workflowId, ref.delegationId, ctx.options.now()) });
    return 'canceling';
  }
  if (shouldPark(record)) {
    await park(ctx, record);
    return 'parked';
  }
  await enqueueFollow(ctx, ref, resubscription, delayMs, again);
  return resubscription > 0 ? 'resubscribing' : 'following';
}

const stateOf = (response: StreamResponse) =>
  'task' in response ? response.task.status.state : 'statusUpdate' in response ? response.statusUpdate.status.state : undefined;

/** Processes one follow job. */
export async function processFollow(job: Job, ctx: WorkerContext): Promise<string> {
  const data = FollowJobSchema.parse(job.data);
  const ref = { workflowId: data.workflowId, delegationId: data.delegationId };
  const record = await ctx.journal.getDelegation(ref);
  if (!record) return 'missing';
  if (isFinished(record.state)) {
    await settleDelegation(ctx, ref, record);
    return 'finished';
  }
  if (!record.taskId) return 'no-task';
  if (record.state === 'INPUT_REQUIRED' && shouldPark(record)) {
    await park(ctx, record);
    return 'parked';
  }
  const token = `${ctx.workerId}/${job.id}`;
  const leaseMs = ctx.options.lockDurationMs;
  if (ctx.shutdownSignal.aborted) {
    // This worker is closing: leave the delegation to another one.
    await enqueueFollow(ctx, ref, data.resubscription);
    return 'handed-over';
  }
  if (data.again && !data.slotTaken) {
    // Fleet-wide limit on resubscriptions only (a restarted agent is not stormed); first subscriptions of new
    // work are not held back. The slot is reserved once: the job sleeps until it and then runs without asking again.
    const waitMs = await ctx.journal.takeToken('resubscribe', ctx.options.subscribeRateLimit.max, ctx.options.subscribeRateLimit.durationMs);
    if (waitMs > 0) {
      // Keep the reconciler from reattaching (and reserving again) while this job waits for its slot.
      await ctx.journal.scheduleCheck(ref, ctx.options.now() + waitMs + ctx.options.lockDurationMs);
      await job.updateData({ ...data, slotTaken: true });
      await job.moveToDelayed(Date.now() + waitMs, job.token); // BullMQ measures delays on the real clock
      throw new DelayedError();
    }
  }
  if (!(await ctx.journal.lease(ref, 'acquire', token, leaseMs))) return 'already-followed';
  // While the stream is healthy, the lease and the reconciler's next check move forward together.
  const lost = new AbortController();
  const renew = setInterval(() => {
    void ctx.journal.lease(ref, 'renew', token, leaseMs).then(
      (held) => {
        if (!held) return lost.abort(); // someone else follows it now: stop this stream
        return ctx.journal.scheduleCheck(ref, jitteredCheckTime(ctx.options.now(), ctx.options.reconcileIntervalMs));
      },
      () => undefined,
    );
  }, leaseMs / 3);
  try {
    // Keep the reconciler away while the stream is healthy.
    await ctx.journal.scheduleCheck(ref, jitteredCheckTime(ctx.options.now(), ctx.options.reconcileIntervalMs));
    const fence = await ctx.journal.claim(ref, token);
    return await followStream(ctx, record, fence, data.resubscription, job, lost.signal);
  } finally {
    clearInterval(renew);
    await ctx.journal.lease(ref, 'release', token).catch(() => undefined);
  }
}

async function followStream(ctx: WorkerContext, record: DelegationRecord, fence: number, resubscription: number, job: Job, leaseLost: AbortSignal): Promise<string> {
  const ref = { workflowId: record.workflowId, delegationId: record.delegationId };
  const log = ctx.logger.child({ queue: 'follow', workflowId: ref.workflowId, step: record.step, delegationId: ref.delegationId, taskId: record.taskId, jobId: job.id, resubscription });
  const transport = await ctx.agents.transportFor(record);
  const controller = new AbortController();
  const stream = transport.subscribeToTask({ id: record.taskId! }, { signal: AbortSignal.any([controller.signal, ctx.shutdownSignal, leaseLost]) });
  let end: StreamEnd | undefined;
  let first = true;
  // Progress = a change after the snapshot; an agent that only ever sends the snapshot and closes backs off.
  let progressed = false;
  try {
    for (;;) {
      const next = await stream.next();
      if (next.done) {
        end = next.value;
        break;
      }
      const response = next.value.response;
      const state = stateOf(response);
      if (state === 'TASK_STATE_COMPLETED' || state === 'TASK_STATE_FAILED' || state === 'TASK_STATE_CANCELED' || state === 'TASK_STATE_REJECTED') {
        ctx.crashPoint('follow.after-terminal-seen', record.step);
      }
      const result = await applyStreamResponse(ctx.journal, record, response, { fence, snapshot: first && 'task' in response });
      if (!first && (result.status?.applied || result.artifact === 'applied')) progressed = true;
      first = false;
      if (result.contextAnomaly) log.warn({ contextId: result.contextAnomaly, recorded: record.contextId }, 'event names another context (kept by taskId)');
      if (result.foreignTaskId) log.warn({ foreignTaskId: result.foreignTaskId }, 'event for another task ignored');
      if (result.artifact === 'sealed') log.warn({ event: response }, 'artifact update after lastChunk dropped (agent bug)');
      if (result.status?.applied === false) ctx.metrics.staleObservations.inc({ reason: result.status.reason });
      if (result.status?.applied && state) ctx.metrics.transitions.inc({ state, source: 'stream' });
      if (state === 'TASK_STATE_AUTH_REQUIRED' && result.status?.applied) {
        // Keep the stream open (the agent may resume on its own); the handler runs beside it.
        const current = await ctx.journal.getDelegation(ref);
        if (current) void handleAuthRequired(ctx, current).catch((error: unknown) => log.warn({ err: error }, 'auth handler failed'));
      }
      if (state === 'TASK_STATE_INPUT_REQUIRED') {
        const current = await ctx.journal.getDelegation(ref);
        if (current && shouldPark(current)) {
          // Parked on a question: close our side; a human may take hours.
          controller.abort();
          await stream.return(undefined as never).catch(() => undefined);
          await park(ctx, current);
          return 'parked';
        }
      }
    }
  } catch (error) {
    if (leaseLost.aborted) return 'lease-lost';
    if (ctx.shutdownSignal.aborted) {
      // This worker is closing: hand the delegation to another worker at once.
      await enqueueFollow(ctx, ref, 0);
      return 'handed-over';
    }
    if (error instanceof JournalError && error.code === 'FENCE_LOST') {
      log.warn('another worker took this delegation over; stopping');
      return 'fence-lost';
    }
    if (error instanceof UnsupportedOperationError || error instanceof TaskNotFoundError) {
      // Refused, most likely because the task is already terminal (spec §3.1.6): one GetTask, no loop.
      log.info({ code: (error as { code?: string }).code }, 'subscription refused; reading the task once');
      return readOnce(ctx, record, fence, resubscription, log);
    }
    if (isRetryable(error)) {
      ctx.metrics.resubscriptions.inc({ reason: (error as { code?: string }).code === 'STREAM_IDLE' ? 'idle' : 'dropped' });
      log.info({ err: error, progressed }, 'stream dropped; reading the task before resubscribing');
      return readOnce(ctx, record, fence, progressed ? 0 : resubscription + 1, log);
    }
    throw error;
  } finally {
    // Whatever ended the loop, the connection goes with it (no socket left to a fenced-out worker).
    controller.abort();
    await stream.return(undefined as never).catch(() => undefined);
  }
  const current = await ctx.journal.getDelegation(ref);
  if (!current) return 'missing';
  if (isFinished(current.state)) {
    await settleDelegation(ctx, ref, current);
    return 'finished';
  }
  if (end?.kind === 'interrupted' && shouldPark(current)) {
    await park(ctx, current);
    return 'parked';
  }
  // Ended before a terminal state (a clean close, an unterminated last event, an empty stream: R04).
  ctx.metrics.resubscriptions.inc({ reason: 'ended' });
  return readOnce(ctx, current, fence, progressed ? 0 : resubscription + 1, log);
}

/** One GetTask, then: settle, park, or resubscribe with backoff. */
async function readOnce(
  ctx: WorkerContext,
  record: DelegationRecord,
  fence: number,
  nextResubscription: number,
  log: WorkerContext['logger'],
): Promise<string> {
  const ref = { workflowId: record.workflowId, delegationId: record.delegationId };
  const delay = () => fullJitterDelayMs(nextResubscription, ctx.options.followBackoff);
  try {
    const transport = await ctx.agents.transportFor(record);
    const task = await transport.getTask({ id: record.taskId! });
    const applied = await applyTask(ctx.journal, ref, task, { fence, snapshot: true });
    if (applied.applied) ctx.metrics.transitions.inc({ state: task.status.state, source: 'get-task' });
  } catch (error) {
    if (error instanceof JournalError && error.code === 'FENCE_LOST') return 'fence-lost';
    // Possibly purged or an agent restart: decided over a window, never on one answer (R13).
    if (error instanceof TaskNotFoundError) return handleTaskNotFound(ctx, record, log);
    if (!isRetryable(error)) throw error;
    log.warn({ err: error }, 'GetTask failed; resubscribing later');
    await enqueueFollow(ctx, ref, nextResubscription, delay());
    return 'resubscribing';
  }
  return afterObservation(ctx, ref, { resubscription: nextResubscription, delayMs: delay() });
}
