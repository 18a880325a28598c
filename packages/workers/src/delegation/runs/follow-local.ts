/**
 * Local follows: when the router decides "follow now" (`route.ts` followLater
 * without delay), the follow runs in the process that decided, detached from
 * the job that decided it (a send job completes at once and holds no send
 * slot), instead of costing a follow job (add, fetch, lock, finish, events,
 * retention: ~35 Redis commands and a queue hop). It is the follow job's own
 * logic (`followDelegation`: checks, resubscription token, per-agent share,
 * follow lease renewed by `lease-renewal.ts`, stream, route at the end) under a
 * `local:<uuid>` run id. Where the job would wait (resubscription slot, agent
 * share full) or this process cannot take it (all `localFollowSlots` busy, the
 * fleet closing, no follow queue worked here) a follow job is enqueued as before.
 *
 * Durability: a local follow has no job in Redis; its backstop is the journal.
 * The delegation stays in the unfinished index (it leaves only when settled),
 * scored by its next check: its creation time, or at most about a reconcile
 * interval (or `sendSettleMs`) ahead, set by the sweep or the reconciler; a send
 * never moves it further. So a crash after the send job completed and before the
 * local follow took the lease leaves a delegation the sweep (start-up, jittered
 * timer) finds within about a reconcile interval, with no lease: the reconciler
 * reattaches it. A crash while the follow holds the lease: the lease expires
 * (`lockDurationMs`, no renewal), the index score is at most one jittered
 * reconcile interval past the last renewal, and the reconciler looks again right
 * after the lease runs out. Graceful close aborts `shutdownSignal`: each running
 * follow hands over (a follow job enqueued, then its lease released, as a follow
 * job does) and `drain()` waits for all of them before the fleet closes its queues.
 * A local follow that throws (a journal error) is retried as a follow job,
 * as BullMQ would retry the job.
 *
 * Openings are paced: at most `OPENINGS_AT_ONCE` local follows are between
 * their start and their stream's first event (or end) at once; the others wait
 * their turn in this process, holding no lease, as a local follow that has not
 * taken its lease yet (the journal is their backstop, as above); a lease a send's
 * answer handed over is given back when the follow has to wait. A fresh worker
 * that reattaches thousands of delegations at once would otherwise open every
 * stream in one burst, starve its event loop and lose the leases it already holds.
 * A resubscription whose rate-limit slot is at most `SLOT_WAIT_HERE_MS` away
 * waits for it here, in its turn, with no lease (a longer wait: a delayed
 * follow job, as before).
 */
import { randomUUID } from 'node:crypto';
import { enqueueFollow, type DelegationRef } from '@durable-a2a/shared';
import type { FollowStart, WorkerContext } from '../../context.ts';
import { followDelegation, followToken } from './follow.ts';

/** Delay before a failed local follow runs again as a follow job (the follow queue's first retry backoff), in ms. */
const RETRY_DELAY_MS = 1_000;

/**
 * Longest wait for a resubscription slot spent in this process, in ms (the slot reserved; `slotTaken` skips
 * the limiter afterwards): a burst of reattaches ahead of the smooth limit waits a few ms, not a follow job.
 */
const SLOT_WAIT_HERE_MS = 1_000;

/** Local follows opening their stream at once (see the module header). */
export const OPENINGS_AT_ONCE = 200;

/** The local follows of one fleet. */
export interface LocalFollows {
  /** Starts a follow now, detached, when a slot is free and the fleet is not closing; false: enqueue a follow job. */
  start(ref: DelegationRef, start: FollowStart): boolean;
  /** A lease token for a local follow that could start now (`WorkerContext.localFollowToken`); undefined: none free. */
  token(): string | undefined;
  /** Local follows running now. */
  running(): number;
  /** Local follows waiting for their opening turn (`OPENINGS_AT_ONCE` are opening): above 0 during a reattach burst. */
  waiting(): number;
  /** Resolves when every running local follow has ended (after `shutdownSignal` aborted: handed over). */
  drain(): Promise<void>;
}

/** Local follows of the fleet behind `ctx`, at most `ctx.options.localFollowSlots` at once (0: never). */
export function createLocalFollows(ctx: WorkerContext): LocalFollows {
  const running = new Set<Promise<void>>();
  const openings = createTurns(OPENINGS_AT_ONCE);
  return {
    start(ref, start) {
      if (ctx.shutdownSignal.aborted || running.size >= ctx.options.localFollowSlots) return false;
      // A lease handed over by the send's answer (`start.lease`) is not held while the follow waits for its opening
      // turn: unrenewed there it would run out, another holder could take it, and the follow (no takeFollow of its
      // own) would stream beside that holder. Given back now; the follow takes a lease of its own at its turn.
      const handBack = start.lease && !openings.free() ? ctx.journal.lease(ref, 'release', start.lease.token).catch(() => undefined) : undefined;
      const begin: FollowStart = handBack ? { ...start, lease: undefined } : start;
      const run: Promise<void> = Promise.all([openings.take(), handBack]).then(([opened]) => followHere(ctx, ref, begin, opened)).finally(() => {
        running.delete(run);
        ctx.metrics.localFollows.dec();
      });
      running.add(run);
      ctx.metrics.localFollows.inc();
      return true;
    },
    token() {
      if (ctx.shutdownSignal.aborted || running.size >= ctx.options.localFollowSlots || !openings.free()) return undefined;
      return followToken(ctx, `local:${randomUUID()}`);
    },
    running: () => running.size,
    waiting: () => openings.waiting(),
    async drain() {
      // A follow that ends may start another one before the fleet closes; bounded by the slots, each round ends.
      while (running.size > 0) await Promise.all([...running]);
    },
  };
}

/**
 * At most `limit` holders at once, the others served in arrival order: `take()` resolves with the function
 * that gives the turn back (once, however often it is called).
 */
function createTurns(limit: number): { take(): Promise<() => void>; free(): boolean; waiting(): number } {
  let free = limit;
  const waiting: (() => void)[] = [];
  const giveBack = () => {
    const next = waiting.shift();
    if (next) next();
    else free++;
  };
  const turn = () => {
    let given = false;
    return () => {
      if (given) return;
      given = true;
      giveBack();
    };
  };
  return {
    free: () => free > 0,
    waiting: () => waiting.length,
    take() {
      if (free > 0) {
        free--;
        return Promise.resolve(turn());
      }
      return new Promise((resolve) => waiting.push(() => resolve(turn())));
    },
  };
}

/**
 * One local follow: `followDelegation` under a local run id, timed like a follow job; a failure becomes a follow job.
 * `opened` gives the opening turn back: at the stream's first event or end, or when the follow ends without a stream.
 */
async function followHere(ctx: WorkerContext, ref: DelegationRef, start: FollowStart, opened: () => void): Promise<void> {
  // A lease handed over by the send's answer was taken for this run's token (`token()`): the run id is its own.
  const handed = start.lease?.token.startsWith(`${ctx.workerId}/`) ? start.lease.token.slice(ctx.workerId.length + 1) : undefined;
  if (start.lease && !handed) await ctx.journal.lease(ref, 'release', start.lease.token).catch(() => undefined);
  const run = { id: handed ?? `local:${randomUUID()}`, attemptsMade: 0, attempts: 1, opened };
  const stopTimer = ctx.metrics.jobDuration.startTimer({ queue: 'follow' });
  const enqueue = (delayMs: number, slotTaken = false) =>
    enqueueFollow(ctx.queues, ref, { resubscription: start.resubscription, again: start.again, delayMs, at: ctx.options.now(), slotTaken });
  try {
    const data = { ...ref, resubscription: start.resubscription, again: start.again, slotTaken: false };
    // A resubscription whose rate-limit slot is later: a short wait here (slot reserved), a longer one in a delayed follow job.
    const outcome = await followDelegation(ctx, data, run, async (waitMs) => {
      if (waitMs > SLOT_WAIT_HERE_MS) return (await enqueue(waitMs, true), 'deferred-to-job');
      await new Promise((resolve) => setTimeout(resolve, waitMs));
      return followDelegation(ctx, { ...data, slotTaken: true }, run, async () => 'slot-taken');
    }, start.known, handed ? start.lease : undefined);
    stopTimer({ outcome: 'completed' });
    ctx.logger.debug({ queue: 'follow', ...ref, jobId: run.id, outcome }, 'local follow ended');
  } catch (error) {
    stopTimer({ outcome: 'failed' });
    ctx.logger.warn({ queue: 'follow', ...ref, jobId: run.id, reason: (error as Error).message }, 'local follow failed; retrying as a follow job');
    // Redis down too: the unfinished index is the backstop (the sweep reattaches it).
    await enqueue(RETRY_DELAY_MS).catch(() => undefined);
  } finally {
    opened();
  }
}
