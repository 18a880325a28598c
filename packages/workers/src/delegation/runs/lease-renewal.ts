/**
 * Renewal of the follow leases this process holds: one timer per fleet, every
 * `lockDurationMs / 3`, renews them all with one journal call (`renewLeases`:
 * one pipelined round trip) and moves the reconciler's next check of each
 * forward (a healthy stream keeps the reconciler away). A lease found lost
 * aborts its stream (someone else follows the task now). One timer and one
 * batch instead of a timer and two round trips per open stream: the cost of
 * 10,000 open streams is one pipeline per tick.
 *
 * A lease that ran out before its renewal (this process too slow: an event
 * loop stalled past `lockDurationMs`) and that nobody took since is taken back
 * (renewFollow-2.lua): the stream goes on, as before the stall (the journal's
 * fence refuses its writes if anyone claimed the delegation meanwhile). A lease
 * someone else holds is lost: its stream stops, and the record is reconciled
 * at once (one batch job per tick), never left to its index entry a reconcile
 * interval away (the reconciler checks again when the other holder's lease ends).
 *
 * A follower reads only its own task, and a followed row never comes due for the reconciler's periodic check (the
 * renewals keep it ahead): the same renewal script says whether the row keeps suspects (tasks a refused push showed
 * holding our message, noteSuspect-1.lua), and each such row gets a suspect read job (`enqueueReconcile`, one per
 * delegation per second across workers, as the push route's), read by the reconciler before its lease check. A suspect
 * the push route kept without its job (a crash between the two, a failed enqueue) is read within a tick, not when
 * the follow ends (hours for a long-lived stream). A row without suspects costs nothing more (the script's HMGET).
 *
 * A lease whose delegation is finished (by a push, the reconciler, a person's resolve while the stream stayed open)
 * is not renewed and its stream stops: nothing it could still carry changes a finished row, and a stream of
 * keep-alive comments alone would otherwise hold the lease, a job slot and a socket until `streamQuietMs` (attack 27).
 * No reconcile is asked for it: the row is finished.
 */
import { DEFAULT_JOB_OPTIONS, enqueueReconcile, enqueueReconcileBatch, RECONCILE_BATCH_MAX, type DelegationRef } from '@durable-a2a/shared';
import type { WorkerContext } from '../../context.ts';
import { jitteredCheckTime, suspectReadDueAt } from '../core/policy.ts';
import { batchesOf } from './reconcile-batch.ts';

interface HeldLease {
  ref: DelegationRef;
  token: string;
  lost: AbortController;
  /** Renewals issued for it so far (counted when the batch is issued, see `renewWhileHeld`'s `issued`). */
  issued: number;
}

interface Renewal {
  held: Map<string, HeldLease>;
  timer: NodeJS.Timeout | undefined;
}

/**
 * The follow leases this process holds, renewed by one timer. A member of `WorkerContext` (`leaseRenewals`),
 * created in `fleet.ts`: no module-level state.
 */
export class LeaseRenewals {
  /** @internal The held leases and the timer (one per fleet). */
  readonly renewal: Renewal = { held: new Map(), timer: undefined };
}

/**
 * Registers a follow lease (just acquired with `token`) for renewal until `release()`.
 * `lost` aborts when a renewal finds the lease no longer ours. `issued()`: the renewals issued for it so far; one
 * issued after a write that gave the lease back reaches Redis after it and may take the lease back (renewFollow-2.lua).
 */
export function renewWhileHeld(ctx: WorkerContext, ref: DelegationRef, token: string): { lost: AbortSignal; release(): void; issued(): number } {
  const renewal = ctx.leaseRenewals.renewal;
  const lease: HeldLease = { ref, token, lost: new AbortController(), issued: 0 };
  renewal.held.set(token, lease);
  const active = renewal;
  active.timer ??= setInterval(() => void renewAll(ctx, active), ctx.options.lockDurationMs / 3);
  return {
    lost: lease.lost.signal,
    issued: () => lease.issued,
    release() {
      if (active.held.get(token) === lease) active.held.delete(token);
      if (active.held.size === 0 && active.timer) {
        clearInterval(active.timer);
        active.timer = undefined;
      }
    },
  };
}

/** One tick: renews every held lease at once; a failed batch is retried on the next tick. */
async function renewAll(ctx: WorkerContext, renewal: Renewal): Promise<void> {
  const leases = [...renewal.held.values()];
  if (leases.length === 0) return;
  // Counted as the batch is issued (the same turn of the event loop): a write issued before it reaches Redis first.
  for (const lease of leases) lease.issued++;
  let lost: HeldLease[] = [];
  let suspected: SuspectedRow[] = [];
  let finished: HeldLease[] = [];
  try {
    const results = await ctx.journal.renewLeases(leases, ctx.options.lockDurationMs, () => jitteredCheckTime(ctx.options.now(), ctx.options.reconcileIntervalMs));
    const renewals = results.map(({ lease }) => lease);
    // Rows keeping suspects, of streams still open here (a stream that ended meanwhile left its row to whoever routed it).
    suspected = leases.flatMap((lease, index) => {
      const { keepsSuspects, suspectReadRounds, suspectReadRoundAt } = results[index]!;
      return keepsSuspects && renewal.held.get(lease.token) === lease ? [{ ref: lease.ref, suspectReadRounds, suspectReadRoundAt }] : [];
    });
    lost = leases.filter((_, index) => renewals[index] === 'lost');
    finished = leases.filter((_, index) => renewals[index] === 'finished');
    // A lease its holder gave back meanwhile (a stream that ended) and that this batch took back is released by that
    // holder (`issued`): not a stall.
    const retaken = leases.filter((lease, index) => renewals[index] === 'retaken' && renewal.held.get(lease.token) === lease).length;
    if (retaken > 0) ctx.logger.warn({ retaken, lockDurationMs: ctx.options.lockDurationMs }, 'follow leases ran out before their renewal (a stalled event loop); taken back');
    // Taken back although its holder gave it back meanwhile: a renewal issued before the holder's finishing change that
    // went again with EVAL after it (a server that lost its scripts answered NOSCRIPT) reached Redis after the change's
    // release, which its holder does not know (`issued` counted it before). Given back here, not held for lockDurationMs.
    // Not when the same token holds a lease here again (a rerun of the same job): that lease is its, not an orphan.
    const orphaned = leases.filter((lease, index) => renewals[index] === 'retaken' && !renewal.held.has(lease.token));
    await Promise.all(orphaned.map(({ ref, token }) => ctx.journal.lease(ref, 'release', token).catch(() => undefined)));
  } catch {
    // Redis unreachable for this tick: the next one tries again (as the per-stream timers did).
    return;
  }
  await enqueueSuspectReads(ctx, suspected, 'tick');
  // Not ours any more: stop these streams, and have the reconciler look at each at once (not those released
  // meanwhile: a stream that ended gave its lease back during the round trip).
  const stillRegistered = lost.filter((lease) => renewal.held.get(lease.token) === lease);
  // Finished elsewhere: its stream stops (the run gives the lease back); nothing to reconcile.
  for (const lease of [...lost, ...finished]) lease.lost.abort();
  const lostAt = ctx.options.now();
  const batches = batchesOf(stillRegistered.map(({ ref }) => ref), RECONCILE_BATCH_MAX);
  await Promise.all(batches.map((refs, part) => enqueueReconcileBatch(ctx.queues, refs, { lostAt, holder: ctx.workerId, part })))
    .then(() => batches.length > 0 && ctx.logger.warn({ lost: lost.length }, 'follow leases lost; reconciling them now'))
    .catch((error: unknown) => ctx.logger.warn({ err: error, lost: lost.length }, 'follow leases lost; their reconcile could not be enqueued (the index entries remain)'));
}

/** A followed row that keeps suspects, with its failed suspect read rounds in a row and when the last ended (ms). */
export interface SuspectedRow {
  ref: DelegationRef;
  suspectReadRounds: number;
  suspectReadRoundAt?: number | undefined;
}

/**
 * A suspect read job for each of `rows` (followed rows that keep suspects pending or lost: found by a renewal `tick`,
 * or in the row a follow run `start`s on): the reconciler reads them before its lease check (`reconcile.ts`,
 * `reconcileSuspects`), whoever follows the row. Due now, or, after rounds that could not read some, when their
 * backoff allows (`suspectRetryAt`): the same job as the one the round's ender asked for, never an earlier read. One
 * job per delegation per second of its time across workers (`enqueueReconcile`'s id). Never throws: a failed enqueue
 * is logged and tried again on the next renewal tick (the suspects stay in the row until read).
 */
export async function enqueueSuspectReads(ctx: WorkerContext, rows: readonly SuspectedRow[], found: 'tick' | 'start'): Promise<void> {
  if (rows.length === 0) return;
  const now = ctx.options.now();
  const retryDelayMs = DEFAULT_JOB_OPTIONS.reconcile.backoff.delay;
  await Promise.all(rows.map((row) => enqueueReconcile(ctx.queues, row.ref, { suspect: undefined, at: suspectReadDueAt(row, now, retryDelayMs), now })))
    .then(() => ctx.logger.debug({ suspected: rows.length, found }, 'followed delegations keep suspects; suspect reads enqueued'))
    .catch((error: unknown) => ctx.logger.warn({ err: error, suspected: rows.length, found }, 'followed delegations keep suspects; their reads could not be enqueued (tried again next renewal tick)'));
}
