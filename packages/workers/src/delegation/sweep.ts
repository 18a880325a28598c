/**
 * The reconcile sweep: at fleet start-up (every unfinished delegation) and on a
 * jittered timer (a BullMQ job scheduler with a fixed id, so restarts and
 * deploys never multiply it: R22), one reconcile job per due delegation from
 * the unfinished index; registered Agent Cards are refreshed on the way.
 */
import { AgentCardError, enqueueReconcile, isRetryable } from '@durable-a2a/shared';
import type { WorkerContext } from '../context.ts';
import { jitteredCheckTime } from './backoff.ts';

/** Id of the reconcile queue's job scheduler. */
export const SWEEP_SCHEDULER_ID = 'reconcile-sweep';

/** Enqueues one reconcile job per due delegation and pushes its next check out (per-record jitter). */
export async function sweep(ctx: WorkerContext, all: boolean): Promise<string> {
  const now = ctx.options.now();
  await refreshAgentCards(ctx).catch((error: unknown) => ctx.logger.warn({ err: error }, 'agent card refresh failed'));
  const due = await ctx.journal.dueDelegationsWithTimes(all ? Infinity : now, ctx.options.reconcileBatchSize);
  let count = 0;
  for (const { ref, dueAt } of due) {
    ctx.metrics.reconcileLag.observe(Math.max(0, now - dueAt) / 1000);
    await ctx.journal.scheduleCheck(ref, jitteredCheckTime(now, ctx.options.reconcileIntervalMs));
    // One job per record per interval: overlapping sweeps (or a slow fleet) never pile them up.
    // Finished ones are removed at once, so the id only deduplicates jobs still waiting; the start-up sweep has its own ids.
    const bucket = all ? `startup-${now}` : Math.floor(now / ctx.options.reconcileIntervalMs);
    await enqueueReconcile(ctx.queues, ref, { sweep: bucket });
    count++;
  }
  return `swept ${count}`;
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
