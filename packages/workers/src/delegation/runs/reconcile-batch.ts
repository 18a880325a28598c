/**
 * Reconcile batches (recovery after a fleet-wide crash): the sweeps hand a page of index
 * entries to reconcile jobs of `REFS_PER_BATCH` entries each, instead of one
 * job per entry (a BullMQ job costs about 35 Redis commands and a queue hop:
 * after a fleet-wide crash the fresh workers ran three jobs per followed
 * delegation, the sweep's, the one at its lease end, and its workflow's).
 * Each entry is reconciled exactly as its own job would be (`reconcileDelegation`:
 * the same rules and compare-and-set writes, a record reattached only once its
 * follow lease ran out), `BATCH_PARALLELISM` at a time. The checks at the ends
 * of the leases a batch finds held go into delayed batch jobs, one per
 * `LEASE_END_GROUP_MS` of lease ends (a dead worker renewed all its leases in
 * one tick: they end together), each due just after the latest lease end of
 * its group; each entry's index score moves to its own lease end (+ jitter)
 * first, as before, all of the batch's in one ZADD (not one per entry: after
 * a whole-fleet crash the start-up sweep's batches find every lease still
 * held by a dead worker). A batch run at its leases' end (`afterLease`) that
 * finds them held again only moves their entries, in one ZADD too.
 * An entry whose reconcile throws gets a job of its own, retried by BullMQ as
 * before; if even that cannot be enqueued the batch job fails and is retried
 * whole (reconciling is safe to repeat).
 */
import { enqueueReconcile, enqueueReconcileBatch, RECONCILE_BATCH_MAX, type DelegationRef } from '@durable-a2a/shared';
import type { WorkerContext } from '../../context.ts';
import { reconcileDelegation } from './reconcile.ts';

/** Index entries per batch job the sweeps enqueue (a fleet spreads the jobs over its workers). */
export const REFS_PER_BATCH = 100;

/** Entries of one batch reconciled at once. */
const BATCH_PARALLELISM = 10;

/** Delay before an entry whose reconcile threw in a batch runs again as a job of its own, in ms. */
const RETRY_DELAY_MS = 1_000;

/** Lease ends within this span (ms) share one delayed check: none waits more than this past its own lease's end. */
const LEASE_END_GROUP_MS = 500;

/** A delayed check runs this long (ms) after the latest lease end of its group, so every lease in it has run out. */
const LEASE_END_MARGIN_MS = 50;

/** A batch of workflow entries only looks again this long (ms) later while this process has streams waiting to open. */
export const WORKFLOW_BATCH_WAIT_MS = 1_000;

/**
 * How long a batch job waits before it runs (ms; 0: run now). A batch of workflow entries only (`<workflowId>|*`: the
 * sweeps' `later` batches) waits while this process has local follows waiting for their opening turn
 * (`WorkerContext.openingsWaiting`: a fresh worker reattaching more streams than it opens at once), for at most
 * `options.workflowBatchWaits` waits (`waitsSoFar`: counted in the job's data, so no clock, neither the enqueuing
process's nor ours, makes the bound longer or shorter; default 60, at least a minute). After a whole-fleet crash the start-up sweep
 * enqueues one workflow entry per running workflow; once the dead-worker sweep's batches have handed their streams to
 * the local follows, those workflow batches take every reconcile slot and the CPU beside the openings still waiting
 * (a running workflow waiting on a followed step decides "wait"), where a recovery's slow last tenth is.
 * Delegation batches never wait. A waiting batch stays a BullMQ job (delayed): a crash meanwhile loses nothing.
 */
export function batchWaitMs(ctx: Pick<WorkerContext, 'options' | 'openingsWaiting'>, refs: readonly DelegationRef[], waitsSoFar: number): number {
  if (refs.length === 0 || refs.some((ref) => ref.delegationId !== '*')) return 0;
  if (waitsSoFar >= ctx.options.workflowBatchWaits || (ctx.openingsWaiting?.() ?? 0) === 0) return 0;
  return WORKFLOW_BATCH_WAIT_MS;
}

/** Splits `refs` into batches of at most `size` (default `REFS_PER_BATCH`). */
export function batchesOf<T>(refs: readonly T[], size = REFS_PER_BATCH): T[][] {
  const batches: T[][] = [];
  for (let start = 0; start < refs.length; start += size) batches.push(refs.slice(start, start + size));
  return batches;
}

/**
 * Reconciles every entry of one batch job (`afterLease`: the batch enqueued for its leases' end; `holderDied`: the
 * dead-worker sweep ended their leases, see `ReconcileCheck`).
 * @returns a short summary, e.g. `batch 100: followed 98, reattached 2`.
 */
export async function reconcileBatch(ctx: WorkerContext, refs: readonly DelegationRef[], jobId: string | undefined, { afterLease, holderDied }: { afterLease: boolean; holderDied: boolean }): Promise<string> {
  const leaseEnds: { ref: DelegationRef; endsAt: number; atMs: number }[] = [];
  const onLeaseHeld = (ref: DelegationRef, endsAt: number, atMs: number) => void leaseEnds.push({ ref, endsAt, atMs });
  const outcomes = new Map<string, number>();
  await eachLimited(refs, BATCH_PARALLELISM, async (ref) => {
    let outcome: string;
    try {
      outcome = await reconcileDelegation(ctx, ref, jobId, { afterLease, holderDied, onLeaseHeld });
    } catch (error) {
      ctx.logger.warn({ queue: 'reconcile', ...ref, jobId, reason: (error as Error).message }, 'reconcile in a batch failed; retrying as a job of its own');
      const now = ctx.options.now();
      await enqueueReconcile(ctx.queues, ref, { dueAt: now + RETRY_DELAY_MS, now });
      outcome = 'retry-alone';
    }
    outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
  });
  // The entries whose lease is held move to just after its end first (one ZADD XX: one settled meanwhile is not put
  // back), then the checks at the lease ends are enqueued (a batch at its leases' end only moves them).
  await ctx.journal.scheduleChecks(leaseEnds.map(({ ref, atMs }) => ({ ref, atMs })));
  if (!afterLease) await checkAtLeaseEnds(ctx, leaseEnds, jobId);
  return `batch ${refs.length}: ${[...outcomes].map(([outcome, count]) => `${outcome} ${count}`).join(', ')}`;
}

/** Enqueues the delayed checks of `leaseEnds` (ms since epoch): one batch job per group of lease ends (see the module header). */
async function checkAtLeaseEnds(ctx: WorkerContext, leaseEnds: { ref: DelegationRef; endsAt: number }[], jobId: string | undefined): Promise<void> {
  const sorted = [...leaseEnds].sort((left, right) => left.endsAt - right.endsAt);
  const groups: { refs: DelegationRef[]; firstEnd: number; lastEnd: number }[] = [];
  for (const { ref, endsAt } of sorted) {
    const group = groups.at(-1);
    if (group && endsAt - group.firstEnd <= LEASE_END_GROUP_MS && group.refs.length < RECONCILE_BATCH_MAX) {
      group.refs.push(ref);
      group.lastEnd = endsAt;
    } else groups.push({ refs: [ref], firstEnd: endsAt, lastEnd: endsAt });
  }
  const now = ctx.options.now();
  for (const [part, { refs, lastEnd }] of groups.entries()) {
    await enqueueReconcileBatch(ctx.queues, refs, { leaseEndsAt: lastEnd + LEASE_END_MARGIN_MS, now, batch: `${jobId ?? 'local'}|${part}` });
  }
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
