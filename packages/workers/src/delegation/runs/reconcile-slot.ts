/**
 * The agent's share of this process's reconcile slots (`reconcileSlotsPerAgent`), for the reconcile runs' calls to
 * the agent (`reconcile.ts`, `suspect-reads.ts`).
 */
import type { DelegationRecord } from '@durable-a2a/shared';
import type { WorkerContext } from '../../context.ts';

/**
 * Runs a reconcile call to the agent (a search, a re-read) within the agent's share of this process's reconcile
 * slots (`reconcileSlotsPerAgent`): beyond it the record is looked at again after `slotWaitMs` (+ jitter), so an agent
 * that answers slowly cannot hold every reconcile slot.
 */
export async function withReconcileSlot<T>(ctx: WorkerContext, record: DelegationRecord, call: () => Promise<T>): Promise<T | 'agent-share-full'> {
  if (!ctx.reconcileSlots.take(record.agentCardUrl)) {
    const delayMs = ctx.options.slotWaitMs + Math.floor(Math.random() * ctx.options.slotWaitMs);
    await ctx.journal.scheduleCheck(record, ctx.options.now() + delayMs);
    return 'agent-share-full';
  }
  try {
    return await call();
  } finally {
    ctx.reconcileSlots.release(record.agentCardUrl);
  }
}

