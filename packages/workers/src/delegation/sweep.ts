/**
 * The reconcile sweep: at fleet start-up (every unfinished delegation) and on a
 * jittered timer (a BullMQ job scheduler with a fixed id, so restarts and
 * deploys never multiply it: R22), one reconcile job per due delegation from
 * the unfinished index; registered Agent Cards are refreshed on the way.
 */
import { AgentCardError, enqueueReconcile, isRetryable, type DelegationRef } from '@durable-a2a/shared';
import type { WorkerContext } from '../context.ts';
import { jitteredCheckTime } from './backoff.ts';

/** Id of the reconcile queue's job scheduler. */
export const SWEEP_SCHEDULER_ID = 'reconcile-sweep';

/** Pages the start-up sweep may read per `reconcileBatchSize` entries of the index (ZSCAN may return sparse pages). */
const PAGES_PER_BATCH = 16;

/**
 * Enqueues one reconcile job per due delegation (`reconcileBatchSize` at most) and pushes its next check out
 * (per-record jitter). `all` (start-up): every unfinished delegation, due or not, page by page of
 * `reconcileBatchSize`; the pages are bounded by the index size.
 */
export async function sweep(ctx: WorkerContext, all: boolean): Promise<string> {
  const now = ctx.options.now();
  await refreshAgentCards(ctx).catch((error: unknown) => ctx.logger.warn({ err: error }, 'agent card refresh failed'));
  const batch = ctx.options.reconcileBatchSize;
  if (!all) {
    const due = await ctx.journal.dueDelegationsWithTimes(now, batch);
    return `swept ${await enqueueChecks(ctx, due, now, Math.floor(now / ctx.options.reconcileIntervalMs))}`;
  }
  const maxPages = PAGES_PER_BATCH * (Math.ceil((await ctx.journal.unfinishedCount()) / batch) + 1);
  let cursor = '0';
  let count = 0;
  for (let page = 0; page < maxPages; page++) {
    const result = await ctx.journal.scanUnfinished(cursor, batch);
    // An entry may come twice in one scan: the start-up sweep's job ids (`startup-<now>`) make it one job.
    count += await enqueueChecks(ctx, result.due, now, `startup-${now}`);
    cursor = result.cursor;
    if (cursor === '0') return `swept ${count}`;
  }
  ctx.logger.warn({ swept: count, maxPages }, 'start-up sweep stopped at its page bound; the timer sweep finds the rest');
  return `swept ${count} (page bound)`;
}

/**
 * Moves the next check of each entry out (one ZADD) and enqueues its reconcile job; a workflow entry's job
 * runs after every delegation's (`later`): a running workflow only waits, its delegation may need
 * reattaching. One job per record per `bucket`: overlapping sweeps (or a slow fleet) never pile them up.
 * Finished jobs are removed at once, so the id only deduplicates jobs still waiting.
 */
async function enqueueChecks(ctx: WorkerContext, due: readonly { ref: DelegationRef; dueAt: number }[], now: number, bucket: string | number): Promise<number> {
  for (const { dueAt } of due) ctx.metrics.reconcileLag.observe(Math.max(0, now - dueAt) / 1000);
  await ctx.journal.scheduleChecks(due.map(({ ref }) => ({ ref, atMs: jitteredCheckTime(now, ctx.options.reconcileIntervalMs) })));
  await Promise.all(due.map(({ ref }) => enqueueReconcile(ctx.queues, ref, { sweep: bucket, later: ref.delegationId === '*' })));
  return due.length;
}

/**
 * Refreshes registered Agent Cards older than `agentRefreshMs`: a card that is
 * now rejected (blocked address, no usable interface, invalid) marks the agent
 * unavailable, so it is never chosen for a step; an unreachable one is kept and
 * tried again later.
 */
export async function refreshAgentCards(ctx: WorkerContext): Promise<void> {
  const registry = ctx.registry;
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
