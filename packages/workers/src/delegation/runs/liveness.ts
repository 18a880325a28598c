/**
 * Worker liveness (docs/recovery.md): every process keeps a liveness key with
 * a short TTL (`livenessTtlMs`, default 3 s) and its entry in the fleet's
 * roster, set again every third of the TTL by one heartbeat script
 * (heartbeat-2.lua): one command per process per beat, whatever the number of
 * streams it holds. A beat also names the workers whose heartbeat stopped; the
 * one peer that takes each off the roster (forgetWorker-2.lua, which checks
 * that its liveness key is gone) enqueues one sweep job: the leases that dead
 * worker's runs held on unfinished delegations are ended at once (compare-and-
 * delete on the holder read) and those records reconciled now, instead of
 * when their leases' TTL (`lockDurationMs`) runs out.
 *
 * A process stalled longer than the TTL is presumed dead: its streams are
 * taken over, and its late writes are refused by the fence the new follow
 * took, as after a lease that ran out. Its send leases are not ended: a
 * stalled sender's request may still be open at the agent, and a resend
 * before that lease's TTL would make the agent do the work twice. Their
 * delegations are reconciled at once all the same: a search that finds our
 * message adopts the task, and nothing is sent before the lease runs out. A process that restarts under the same
 * worker id (a pod's fixed host name and pid) finds itself on the roster at its
 * first beat: it ends its earlier process's leases itself, before it takes any.
 */
import { DEAD_WORKERS_PER_SWEEP, enqueueDeadWorkerSweep, enqueueReconcileBatch, type DelegationRef } from '@durable-a2a/shared';
import type { WorkerContext } from '../../context.ts';
import { batchesOf } from './reconcile-batch.ts';
import { isSendRunToken } from '../io/send-errors.ts';

/** Shortest heartbeat period (ms), whatever the TTL: a beat is a script call. */
const MIN_BEAT_MS = 100;

/**
 * The extra beat at a peer's silence (`Heartbeat.nextSilentInMs`) runs this long (ms) after it: the peer's liveness key
 * runs out at that moment on Redis's clock (set in the same script as its roster entry), and forgetWorker-2.lua must
 * find it gone. Too early, and the regular beat after it names the peer, as before.
 */
const EARLY_BEAT_MARGIN_MS = 15;

/** Pages of the unfinished index one sweep reads per `reconcileBatchSize` entries (ZSCAN pages may be sparse). */
const PAGES_PER_BATCH = 16;

/** The heartbeat of this process; `stop()` ends it, `leave()` also takes this process off the roster (a graceful close). */
export interface Liveness {
  stop(): void;
  leave(): Promise<void>;
}

/**
 * Starts the heartbeat (nothing when `livenessTtlMs` is 0). The first beat runs before this resolves: a restart
 * under the same worker id ends the earlier process's leases first. Later beats that fail (Redis away) are skipped:
 * the next one tries again.
 */
export async function startLiveness(ctx: WorkerContext): Promise<Liveness> {
  const ttlMs = ctx.options.livenessTtlMs;
  if (ttlMs <= 0) return { stop: () => undefined, leave: async () => undefined };
  const first = await ctx.journal.heartbeat(ctx.workerId, ttlMs);
  if (first.listed) {
    const ended = await endLeasesOfDeadWorkers(ctx, [ctx.workerId]);
    if (ended > 0) ctx.logger.warn({ workerId: ctx.workerId, ended }, 'an earlier process with this worker id left leases behind; ended them');
  }
  await takeOverSilent(ctx, first.silent);
  const periodMs = Math.max(MIN_BEAT_MS, Math.floor(ttlMs / 3));
  let beating = false;
  let stopped = false;
  let early: NodeJS.Timeout | undefined;
  const beatNow = () => {
    if (beating || stopped) return;
    beating = true;
    void beat(ctx, ttlMs).then(
      (nextSilentInMs) => {
        beating = false;
        planEarlyBeat(nextSilentInMs);
      },
      () => (beating = false),
    );
  };
  // A peer that stops beating turns silent between two beats of ours: one extra beat when it does (its key gone by
  // then), not at our next regular beat up to a period later. None while every peer beats (they are a TTL away).
  const planEarlyBeat = (nextSilentInMs: number | undefined) => {
    if (stopped || nextSilentInMs === undefined || nextSilentInMs + EARLY_BEAT_MARGIN_MS >= periodMs) return;
    clearTimeout(early);
    early = setTimeout(beatNow, nextSilentInMs + EARLY_BEAT_MARGIN_MS);
    early.unref();
  };
  const timer = setInterval(beatNow, periodMs);
  timer.unref();
  planEarlyBeat(first.nextSilentInMs);
  const stop = () => {
    stopped = true;
    clearInterval(timer);
    clearTimeout(early);
  };
  return {
    stop,
    async leave() {
      stop();
      await ctx.journal.leaveFleet(ctx.workerId).catch(() => undefined);
    },
  };
}

/**
 * One beat: refreshes this process's liveness and takes over the workers found silent. Never rejects.
 * @returns ms until the next peer turns silent should it not beat (`Heartbeat.nextSilentInMs`), undefined when none is due or the beat failed
 */
async function beat(ctx: WorkerContext, ttlMs: number): Promise<number | undefined> {
  try {
    const { lapsed, silent, nextSilentInMs } = await ctx.journal.heartbeat(ctx.workerId, ttlMs);
    if (lapsed) ctx.logger.warn({ workerId: ctx.workerId, livenessTtlMs: ttlMs }, 'this worker\'s liveness key ran out (a stall longer than livenessTtlMs); peers may have taken over its streams');
    await takeOverSilent(ctx, silent);
    return nextSilentInMs;
  } catch (error) {
    ctx.logger.debug({ err: error }, 'heartbeat failed; the next beat tries again');
    return undefined;
  }
}

/** Takes each silent worker off the roster (one peer wins each) and enqueues one sweep of the ones this process won. */
async function takeOverSilent(ctx: WorkerContext, silent: readonly string[]): Promise<void> {
  const won: string[] = [];
  for (const workerId of silent) if (await ctx.journal.forgetWorker(workerId)) won.push(workerId);
  if (won.length === 0) return;
  ctx.metrics.deadWorkers.inc(won.length);
  ctx.logger.warn({ deadWorkers: won }, 'workers found dead (liveness key gone); ending their leases now');
  const at = ctx.options.now();
  for (const part of batchesOf(won, DEAD_WORKERS_PER_SWEEP)) await enqueueDeadWorkerSweep(ctx.queues, part, at);
}

/**
 * The sweep job of dead workers: reads the unfinished index page by page (bounded like the start-up sweep), ends
 * the leases their runs hold, and reconciles those delegations now (batch jobs).
 * @returns a short summary, e.g. `dead workers 1: ended 50 leases`
 */
export async function sweepDeadWorkers(ctx: WorkerContext, workerIds: readonly string[]): Promise<string> {
  const ended = await endLeasesOfDeadWorkers(ctx, workerIds);
  return `dead workers ${workerIds.length}: ended ${ended} leases`;
}

/** Ends the leases of `workerIds` over the whole unfinished index and enqueues their reconcile batches; the count ended. */
async function endLeasesOfDeadWorkers(ctx: WorkerContext, workerIds: readonly string[]): Promise<number> {
  const batch = ctx.options.reconcileBatchSize;
  const maxPages = PAGES_PER_BATCH * (Math.ceil((await ctx.journal.unfinishedCount()) / batch) + 1);
  const at = ctx.options.now();
  const seen = new Set<string>();
  let cursor = '0';
  let ended = 0;
  let part = 0;
  for (let page = 0; page < maxPages; page++) {
    const result = await ctx.journal.scanUnfinished(cursor, batch);
    const refs: DelegationRef[] = result.due.map(({ ref }) => ref).filter((ref) => ref.delegationId !== '*' && !seen.has(`${ref.workflowId}|${ref.delegationId}`) && seen.add(`${ref.workflowId}|${ref.delegationId}`));
    // A send lease is left to its TTL (the sender may only have stalled, its request still open at the agent); its
    // delegation is still reconciled now: a search that finds our message adopts the task, nothing is sent before the TTL.
    const leases = await ctx.journal.endLeasesOf(workerIds, refs, isSendRunToken);
    const taken = [...leases.ended, ...leases.left].map(({ ref }) => ref);
    ended += leases.ended.length;
    ctx.metrics.leasesTakenOver.inc(leases.ended.length);
    for (const refsOfBatch of batchesOf(taken)) await enqueueReconcileBatch(ctx.queues, refsOfBatch, { deadWorker: workerIds[0]!, at, part: part++ });
    cursor = result.cursor;
    if (cursor === '0') return ended;
  }
  ctx.logger.warn({ deadWorkers: workerIds, ended, maxPages }, 'dead-worker sweep stopped at its page bound; the rest end at their lease TTL');
  return ended;
}
