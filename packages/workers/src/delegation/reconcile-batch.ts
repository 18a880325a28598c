/**
 * Reconcile batches (issue 16, recovery): the sweeps hand a page of index
 * entries to reconcile jobs of `REFS_PER_BATCH` entries each, instead of one
 * job per entry (a BullMQ job costs about 35 Redis commands and a queue hop:
 * after a fleet-wide crash the fresh workers ran three jobs per followed
 * delegation, the sweep's, the one at its lease end, and its workflow's).
 * Each entry is reconciled exactly as its own job would be (`reconcileDelegation`:
 * the same rules and compare-and-set writes, a record reattached only once its
 * follow lease ran out), `BATCH_PARALLELISM` at a time. The checks at the ends
 * of the leases a batch finds held go into one delayed batch job, due at the
 * latest of them (a dead worker renewed all its leases in one tick: they end
 * together); each entry's index score moves to its own lease end first, as before.
 * An entry whose reconcile throws gets a job of its own, retried by BullMQ as
 * before; if even that cannot be enqueued the batch job fails and is retried
 * whole (reconciling is safe to repeat).
 */
import { enqueueReconcile, enqueueReconcileBatch, RECONCILE_BATCH_MAX, type DelegationRef } from '@durable-a2a/shared';
import type { WorkerContext } from '../context.ts';
import { reconcileDelegation } from './recover.ts';

/** Index entries per batch job the sweeps enqueue (a fleet spreads the jobs over its workers). */
export const REFS_PER_BATCH = 100;

/** Entries of one batch reconciled at once. */
const BATCH_PARALLELISM = 10;

/** Delay before an entry whose reconcile threw in a batch runs again as a job of its own, in ms. */
const RETRY_DELAY_MS = 1_000;

/** Splits `refs` into batches of at most `size` (default `REFS_PER_BATCH`). */
export function batchesOf<T>(refs: readonly T[], size = REFS_PER_BATCH): T[][] {
  const batches: T[][] = [];
  for (let start = 0; start < refs.length; start += size) batches.push(refs.slice(start, start + size));
  return batches;
}

/**
 * Reconciles every entry of one batch job (`afterLease`: the batch enqueued for its leases' end).
 * @returns a short summary, e.g. `batch 100: followed 98, reattached 2`.
 */
export async function reconcileBatch(ctx: WorkerContext, refs: readonly DelegationRef[], jobId: string | undefined, afterLease: boolean): Promise<string> {
  const leaseEnds: { ref: DelegationRef; checkAt: number }[] = [];
  const onLeaseHeld = (ref: DelegationRef, checkAt: number) => void leaseEnds.push({ ref, checkAt });
  const outcomes = new Map<string, number>();
  await eachLimited(refs, BATCH_PARALLELISM, async (ref) => {
    let outcome: string;
    try {
      outcome = await reconcileDelegation(ctx, ref, jobId, { afterLease, onLeaseHeld });
    } catch (error) {
      ctx.logger.warn({ queue: 'reconcile', ...ref, jobId, reason: (error as Error).message }, 'reconcile in a batch failed; retrying as a job of its own');
      const now = ctx.options.now();
      await enqueueReconcile(ctx.queues, ref, { dueAt: now + RETRY_DELAY_MS, now });
      outcome = 'retry-alone';
    }
    outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
  });
  if (leaseEnds.length > 0) {
    const now = ctx.options.now();
    const leaseEndsAt = Math.max(...leaseEnds.map(({ checkAt }) => checkAt));
    for (const [part, batch] of batchesOf(leaseEnds.map(({ ref }) => ref), RECONCILE_BATCH_MAX).entries()) {
      await enqueueReconcileBatch(ctx.queues, batch, { leaseEndsAt, now, batch: `${jobId ?? 'local'}|${part}` });
    }
  }
  return `batch ${refs.length}: ${[...outcomes].map(([outcome, count]) => `${outcome} ${count}`).join(', ')}`;
}

/** Runs `task` over `items`, at most `limit` at once; rejects with the first error after all started ones end. */
async function eachLimited<T>(items: readonly T[], limit: number, task: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < items.length) await task(items[next++]!);
  };
  const lanes = await Promise.allSettled(Array.from({ length: Math.min(limit, items.length) }, lane));
  const failed = lanes.find((lane) => lane.status === 'rejected');
  if (failed) throw failed.reason;
}
