/**
 * reconcile queue: at fleet start-up and on a jittered timer (a BullMQ job
 * scheduler with a fixed id, so restarts and deploys never multiply it: R22),
 * every unfinished delegation is re-read from its agent, and what the agent
 * says decides the next action. It never trusts the journal's last state and
 * is safe to repeat any number of times, from any worker. Writes are
 * compare-and-set on the version it read.
 */
import type { Job } from 'bullmq';
import {
  A2AError,
  AgentCardError,
  AgentRegistry,
  JournalError,
  ReconcileJobSchema,
  TaskNotFoundError,
  applyTask,
  isFinished,
  isRetryable,
  jobId,
  type DelegationRecord,
  type DelegationRef,
} from '@durable-a2a/shared';
import type { WorkerContext } from '../context.ts';
import { jitteredCheckTime } from '../backoff.ts';
import { advanceWorkflow } from '../advance.ts';
import { settleDelegation } from '../settle.ts';
import { findTaskByMessageId } from '../search.ts';
import { HANDLER_PREFIX } from './send.ts';
import { handleTaskNotFound } from '../not-found.ts';
import { afterObservation, enqueueFollow } from './follow.ts';

export const RECONCILE_QUEUE = 'reconcile';
export const SWEEP_SCHEDULER_ID = 'reconcile-sweep';
export { ReconcileJobSchema };

/** Processes a sweep (no ids) or one delegation. */
export async function processReconcile(job: Job, ctx: WorkerContext): Promise<string> {
  const data = ReconcileJobSchema.parse(job.data);
  if (!data.workflowId || !data.delegationId) return sweep(ctx, data.all === true);
  const ref = { workflowId: data.workflowId, delegationId: data.delegationId };
  try {
    const outcome = await reconcileOne(ctx, ref, job);
    ctx.metrics.reconcileRuns.inc({ outcome });
    return outcome;
  } catch (error) {
    if (error instanceof JournalError && error.code === 'VERSION_CONFLICT') {
      // Someone wrote newer information while we read: check again soon.
      await ctx.journal.scheduleCheck(ref, ctx.options.now() + 1_000);
      ctx.metrics.reconcileRuns.inc({ outcome: 'conflict' });
      return 'conflict';
    }
    if (isRetryable(error)) {
      await ctx.journal.scheduleCheck(ref, jitteredCheckTime(ctx.options.now(), ctx.options.reconcileIntervalMs));
      ctx.logger.warn({ err: error, ...ref }, 'agent unreachable during reconciliation; will retry');
      ctx.metrics.reconcileRuns.inc({ outcome: 'unreachable' });
      return 'unreachable';
    }
    throw error;
  }
}

/** Enqueues one reconcile job per due delegation and pushes its next check out (per-record jitter). */
async function sweep(ctx: WorkerContext, all: boolean): Promise<string> {
  const now = ctx.options.now();
  await refreshAgentCards(ctx).catch((error: unknown) => ctx.logger.warn({ err: error }, 'agent card refresh failed'));
  const due = await ctx.journal.redis.zrangebyscore(ctx.journal.keys.unfinished(), '-inf', all ? '+inf' : now, 'WITHSCORES', 'LIMIT', 0, ctx.options.reconcileBatchSize);
  let count = 0;
  for (let index = 0; index < due.length; index += 2) {
    const member = due[index]!;
    const separator = member.indexOf('|');
    const ref = { workflowId: member.slice(0, separator), delegationId: member.slice(separator + 1) };
    ctx.metrics.reconcileLag.observe(Math.max(0, now - Number(due[index + 1])) / 1000);
    await ctx.journal.scheduleCheck(ref, jitteredCheckTime(now, ctx.options.reconcileIntervalMs));
    // One job per record per interval: overlapping sweeps (or a slow fleet) never pile them up.
    // Finished ones are removed at once, so the id only deduplicates jobs still waiting; the start-up sweep has its own ids.
    const bucket = all ? `startup-${now}` : Math.floor(now / ctx.options.reconcileIntervalMs);
    await ctx.queues.reconcile.add('delegation', ref, { jobId: jobId('reconcile', ref.workflowId, ref.delegationId, 'sweep', bucket), removeOnComplete: true });
    count++;
  }
  return `swept ${count}`;
}

async function reconcileOne(ctx: WorkerContext, ref: DelegationRef, job: Job): Promise<string> {
  if (ref.delegationId === '*') {
    const workflow = await ctx.journal.getWorkflowHash(ref.workflowId);
    if (workflow?.state === 'COMPENSATING') {
      // Its compensate job may have been lost (a crash right after the state change): the
      // processor works from the journal, so one more job is harmless.
      await ctx.queues.compensate.add('compensate', { workflowId: ref.workflowId }, { jobId: jobId('compensate', ref.workflowId, 'recover', ctx.options.now()) });
      return 'workflow-compensating';
    }
    if (workflow?.state === 'NEEDS_ATTENTION') {
      // Waiting for a person: look again rarely.
      await ctx.journal.scheduleCheck(ref, ctx.options.now() + 3_600_000);
      return 'workflow-needs-attention';
    }
    // A workflow waiting for a decision (e.g. its first step's intent is not written yet).
    const decision = await advanceWorkflow(ctx, ref.workflowId);
    return `workflow-${decision.kind}`;
  }
  const record = await ctx.journal.getDelegation(ref);
  if (!record) {
    await ctx.journal.removeFromIndex(ref);
    return 'expired';
  }
  const log = ctx.logger.child({ queue: 'reconcile', ...ref, step: record.step, messageId: record.messageId, taskId: record.taskId, jobId: job.id });
  if (isFinished(record.state)) {
    await settleDelegation(ctx, ref, record);
    return 'settled';
  }
  if (record.state === 'INTENT') return reconcileIntent(ctx, record, log);
  const leaseMs = await ctx.journal.followLeaseRemainingMs(ref);
  if (leaseMs > 0) {
    // Someone holds the stream (or held it before a crash): look again right after the lease runs out.
    await ctx.journal.scheduleCheck(ref, ctx.options.now() + leaseMs + Math.floor(Math.random() * 1_000));
    return 'followed';
  }
  // Parked: re-read (the agent may have moved on). Otherwise reattach: the subscription's
  // first event is the authoritative snapshot, and a refusal means terminal (one GetTask).
  if (record.state === 'INPUT_REQUIRED' || record.state === 'AUTH_REQUIRED') return rereadTask(ctx, record, log);
  await enqueueFollow(ctx, ref, 0);
  return 'reattached';
}

/** No taskId yet: never sent (send it), maybe sent (search, then adopt / resend / AMBIGUOUS). */
async function reconcileIntent(ctx: WorkerContext, record: DelegationRecord, log: WorkerContext['logger']): Promise<string> {
  const ref = { workflowId: record.workflowId, delegationId: record.delegationId };
  if (record.held) {
    // Waiting for earlier steps: the workflow decides when to release it.
    await advanceWorkflow(ctx, record.workflowId);
    return 'held';
  }
  if (record.sendStartedAt === undefined && ctx.options.now() - record.updatedAt < ctx.options.sendSettleMs) {
    // Just journaled (or just released): its send job is on its way; check again later.
    await ctx.journal.scheduleCheck(ref, record.updatedAt + ctx.options.sendSettleMs);
    return 'send-pending';
  }
  if (record.sendStartedAt === undefined) {
    // Not sent yet (its send job may have been lost): enqueue it again. A duplicate job is harmless:
    // the journal's fence and sendStartedAt let only one SendMessage leave.
    await ctx.queues.send.add('send', { ...ref, kind: 'message' }, { jobId: jobId('send', ref.workflowId, ref.delegationId, record.resendCount, ctx.options.now()) });
    return 'send-enqueued';
  }
  const settlesAt = record.sendStartedAt + ctx.options.sendSettleMs;
  if (ctx.options.now() < settlesAt) {
    // The send may still be in flight: searching now could miss it and resend.
    await ctx.journal.scheduleCheck(ref, settlesAt);
    await ctx.queues.reconcile.add('delegation', ref, { jobId: jobId('reconcile', ref.workflowId, ref.delegationId, settlesAt), delay: settlesAt - ctx.options.now() });
    return 'send-in-flight';
  }
  if (record.agentCardUrl.startsWith(HANDLER_PREFIX)) {
    // Handlers are idempotent on the messageId: run it again.
    await ctx.journal.releaseForResend(ref, record.version);
    await ctx.queues.send.add('send', { ...ref, kind: 'message' }, { jobId: jobId('send', ref.workflowId, ref.delegationId, record.resendCount + 1) });
    return 'handler-rerun';
  }
  const transport = await ctx.agents.transportFor(record);
  let result;
  try {
    result = await findTaskByMessageId(transport, record, {
      marginMs: ctx.options.searchMarginMs,
      maxListTasksCalls: ctx.options.maxListTasksCalls,
      now: ctx.options.now,
    });
  } catch (error) {
    // The agent answers the search with something we cannot use (and retrying will not change it).
    if (error instanceof A2AError && !isRetryable(error)) return markAmbiguous(ctx, record, `the search for our message failed: ${error.message}`, log);
    throw error;
  }
  ctx.crashPoint('reconcile.after-search', record.step);
  if (result.kind === 'found') {
    await applyTask(ctx.journal, ref, result.task, { expectedVersion: record.version, snapshot: true });
    ctx.metrics.adoptions.inc();
    log.info({ taskId: result.task.id, state: result.task.status.state }, 'adopted the task found by our messageId');
    await afterObservation(ctx, ref);
    return 'adopted';
  }
  const deduplicates = ctx.options.deduplicatingAgents.has(record.agentCardUrl);
  if (result.kind === 'unsupported' && !deduplicates) {
    return markAmbiguous(ctx, record, 'the agent cannot list tasks, so a send that may have happened cannot be checked', log);
  }
  if (result.kind === 'not-found' && (result.inconclusive || result.paginationBroken)) {
    const why = result.paginationBroken ? 'ListTasks pagination is broken' : `candidate task(s) ${result.candidates.join(', ')} have too little history`;
    return markAmbiguous(ctx, record, `cannot tell whether the agent received our message: ${why}`, log);
  }
  if (record.resendCount + 1 >= ctx.options.sendAttempts) {
    await ctx.journal.applyStatus(ref, {
      expectedVersion: record.version,
      mode: 'outcome',
      state: 'FAILED',
      error: { code: 'SEND_ATTEMPTS_EXHAUSTED', message: `SendMessage never reached the agent in ${record.resendCount + 1} attempts`, retryable: true },
    });
    await settleDelegation(ctx, ref);
    return 'send-exhausted';
  }
  // Proven absent (or the agent deduplicates): resend with the same messageId.
  await ctx.journal.releaseForResend(ref, record.version, result.kind === 'not-found' && result.contextRefused);
  await ctx.queues.send.add('send', { ...ref, kind: 'message' }, { jobId: jobId('send', ref.workflowId, ref.delegationId, record.resendCount + 1) });
  log.info('message never reached the agent; resending with the same messageId');
  return 'resend';
}

async function markAmbiguous(ctx: WorkerContext, record: DelegationRecord, reason: string, log: WorkerContext['logger']): Promise<string> {
  await ctx.journal.applyStatus(record, {
    expectedVersion: record.version,
    mode: 'outcome',
    state: 'AMBIGUOUS',
    error: { code: 'AMBIGUOUS', message: reason, retryable: false },
  });
  log.error({ reason }, 'marked AMBIGUOUS: a person must decide');
  await settleDelegation(ctx, record);
  return 'ambiguous';
}

/** taskId known: GetTask decides: record terminal, keep the question, or reattach. */
async function rereadTask(ctx: WorkerContext, record: DelegationRecord, log: WorkerContext['logger']): Promise<string> {
  const ref = { workflowId: record.workflowId, delegationId: record.delegationId };
  const transport = await ctx.agents.transportFor(record);
  let task;
  try {
    task = await transport.getTask({ id: record.taskId! });
  } catch (error) {
    if (!(error instanceof TaskNotFoundError)) throw error;
    return handleTaskNotFound(ctx, record, log);
  }
  const applied = await applyTask(ctx.journal, ref, task, { expectedVersion: record.version, snapshot: true });
  if (!applied.applied) {
    ctx.metrics.staleObservations.inc({ reason: applied.reason });
    if (applied.reason === 'stale' || applied.reason === 'regress') log.info({ state: task.status.state, held: record.state }, 'stale read ignored');
  }
  // Settle a terminal task, keep the question of a parked one, reattach the rest.
  return afterObservation(ctx, ref);
}

/**
 * Refreshes registered Agent Cards older than `agentRefreshMs`: a card that is
 * now rejected (blocked address, no usable interface, invalid) marks the agent
 * unavailable, so it is never chosen for a step; an unreachable one is kept and
 * tried again later.
 */
async function refreshAgentCards(ctx: WorkerContext): Promise<void> {
  const registry = new AgentRegistry(ctx.journal.redis, ctx.options.prefix, ctx.options.now);
  for (const agent of await registry.list()) {
    if (ctx.options.now() - agent.refreshedAt < ctx.options.agentRefreshMs) continue;
    ctx.agents.forget(agent.cardUrl);
    try {
      await registry.register(agent.cardUrl, await ctx.agents.card(agent.cardUrl));
    } catch (error) {
      if (error instanceof AgentCardError && error.reason !== 'HTTP_STATUS') {
        await registry.markUnavailable(agent.cardUrl, `${error.reason}: ${error.message}`);
        ctx.logger.warn({ agent: agent.cardUrl, reason: error.reason }, 'agent card rejected on refresh; agent marked unavailable');
      } else if (!isRetryable(error) && !(error instanceof AgentCardError)) throw error;
    }
  }
}
