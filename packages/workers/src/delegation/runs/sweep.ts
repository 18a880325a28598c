/**
 * The reconcile sweep: at fleet start-up (every unfinished delegation) and on a
 * jittered timer (a BullMQ job scheduler with a fixed id, so restarts and
 * deploys never multiply it: R22), the due entries of the unfinished index go
 * to reconcile batch jobs (`reconcile-batch.ts`, `REFS_PER_BATCH` entries
 * each); registered Agent Cards are refreshed on the way, and the timer sweep
 * drops the search index entries of workflows whose record expired and
 * rebases the send order's clock when due and the send queue is idle.
 */
import { AgentCardError, isRetryable } from '@durable-a2a/a2a';
import { FairSendQueue, enqueueReconcile, enqueueReconcileBatch, pruneSearchIndex, type DelegationRef } from '@durable-a2a/shared';
import type { WorkerContext } from '../../context.ts';
import { jitteredCheckTime, startupSweepVerdict } from '../core/policy.ts';
import { isSendRunToken } from '../io/send-errors.ts';
import { batchesOf } from './reconcile-batch.ts';

/**
 * Liveness TTLs of lease left for the start-up sweep to leave a delegation to its follower (`SweepChecks`). The holder
 * is on the roster (its key present: it beat less than a TTL ago; or gone: it died and no heartbeat named it yet); if
 * it is dead, a heartbeat names it within about two TTLs (after a fleet-wide silence every roster entry gets one TTL to
 * beat again, and beats come a third of a TTL apart), and its lease must still name it then. With the defaults a
 * renewed lease has 20 to 30 s left, three TTLs 9 s.
 */
const LIVE_FOLLOW_MIN_LEFT_TTLS = 3;

/** Id of the reconcile queue's job scheduler. */
export const SWEEP_SCHEDULER_ID = 'reconcile-sweep';

/** Pages the start-up sweep may read per `reconcileBatchSize` entries of the index (ZSCAN may return sparse pages). */
const PAGES_PER_BATCH = 16;

/**
 * Enqueues the due delegations in reconcile batch jobs and pushes each one's next check out (per-record jitter),
 * page by page of `reconcileBatchSize` until none is due. `all` (start-up): every unfinished delegation, due or
 * not, page by page; the pages are bounded by the index size.
 */
export async function sweep(ctx: WorkerContext, all: boolean): Promise<string> {
  const now = ctx.options.now();
  await refreshAgentCards(ctx).catch((error: unknown) => ctx.logger.warn({ err: error }, 'agent card refresh failed'));
  const batch = ctx.options.reconcileBatchSize;
  const checks = new SweepChecks(ctx, all ? `startup-${now}` : now, now, all);
  if (!all) {
    // Every due entry, a page of `batch` at a time: each page's entries move to their next check, so the next read
    // gets the ones after them. One page per sweep would check `batch` entries an interval, while every running
    // workflow's entry comes due each interval: past that many workflows, an entry due now (a send to search for)
    // waited behind the backlog for several intervals. Bounded by the index size.
    const maxPages = Math.ceil((await ctx.journal.unfinishedCount()) / batch) + 1;
    for (let page = 0; page < maxPages; page++) {
      const due = await ctx.journal.dueDelegationsWithTimes(now, batch);
      const before = checks.count;
      await checks.enqueue(due);
      if (due.length < batch || checks.count === before) break;
    }
    // Every reconcile interval: the count at debug only (a parked delegation is due every poll).
    ctx.logger.debug({ swept: checks.count }, 'sweep');
    // The search index forgets workflows whose record expired (a few hundred per sweep, oldest first).
    await pruneSearchIndex(ctx.journal).catch((error: unknown) => ctx.logger.warn({ err: error }, 'search index prune failed; the next sweep tries again'));
    await rebaseSendOrder(ctx);
    return `swept ${checks.count}`;
  }
  const maxPages = PAGES_PER_BATCH * (Math.ceil((await ctx.journal.unfinishedCount()) / batch) + 1);
  let cursor = '0';
  for (let page = 0; page < maxPages; page++) {
    const result = await ctx.journal.scanUnfinished(cursor, batch);
    await checks.enqueue(result.due);
    cursor = result.cursor;
    if (cursor === '0') {
      ctx.logger.info({ swept: checks.count, leftToLiveFollowers: checks.left, suspectReads: checks.suspectReads }, 'start-up sweep: every unfinished delegation and workflow enqueued for a check');
      return `swept ${checks.count}${checks.summaryOfLeft()}`;
    }
  }
  ctx.logger.warn({ swept: checks.count, leftToLiveFollowers: checks.left, suspectReads: checks.suspectReads, maxPages }, 'start-up sweep stopped at its page bound; the timer sweep finds the rest');
  return `swept ${checks.count}${checks.summaryOfLeft()} (page bound)`;
}

/**
 * The checks of one sweep: each page's entries are claimed (one script call: an entry whose next check is still the
 * one read moves out to its next one; one another sweep claimed meanwhile, or that moved or left the index, is not
 * this sweep's), then the claimed ones go to batch jobs; workflow entries' batches run after every delegation's (`later`): a running workflow only waits,
 * its delegation may need reattaching. Batch job ids carry the sweep's occasion (`startup-<now>`, or the
 * timer sweep's `now`) and a running part number; an entry a scan returns twice is checked once.
 *
 * The start-up sweep (`startUp`, with worker liveness on): a delegation a follow run of another worker on the roster
 * holds (`Journal.followedByLiveWorkers`: its liveness key present, or gone and no heartbeat has named it yet) with more
 * than `LIVE_FOLLOW_MIN_LEFT_TTLS` liveness TTLs of its lease left is claimed but not reconciled: its follower keeps
 * its next check moving while the stream is healthy, and should that worker be dead, the dead-worker sweep ends its
 * lease and reconciles it once a heartbeat names it (within about two TTLs), the lease still naming it then. A fresh
 * worker that starts after the dead fleet's liveness keys ran out (any restart slower than `livenessTtlMs`) reconciled
 * every followed delegation here only to find its lease held, then again when the dead-worker sweep ended it. A shorter lease left (short `lockDurationMs`, a
 * renewal late) is reconciled as before: the dead-worker sweep could come after it ran out and pass it over. Its attempt deadline is its follower's
 * (`delegation/deadline.ts`: a stream closes at it), so nothing is decided later for being left here. Reconciling it
 * here only found the lease held, read the row and its workflow's definition and moved its check to the lease end:
 * after a whole-fleet crash, every followed delegation, about a sixth of the fresh worker's CPU before the first
 * reattach (the dead worker's liveness key still present).
 *
 * The start-up sweep (`startUp`) decides each delegation entry with `startupSweepVerdict`: one it leaves (left to a
 * live follower, or its claim lost because its check moved meanwhile: a follow run that took it over, often the follow
 * job a gracefully closed worker handed over, or another sweep) whose row keeps suspect evidence gets a suspect read
 * job (deduplicated per second across workers): a follower reads only its own task and a followed entry never comes
 * due, so a suspect kept by a push route that crashed before its job waited for the follow to end (CI: a restart right
 * after a graceful close left T2 unread for 30 s when the handed-over follow moved the check between scan and claim).
 * The follower's lease renewal tick now asks for that read too (`lease-renewal.ts`), a tick later at most: this job
 * reads it at once.
 */
class SweepChecks {
  count = 0;
  /** Delegations followed by another live worker, left to it (the start-up sweep). */
  left = 0;
  /** Delegations this start-up sweep did not reconcile whose suspects it had read (`startupSweepVerdict`). */
  suspectReads = 0;
  private part = 0;
  private readonly seen = new Set<string>();

  constructor(
    private readonly ctx: WorkerContext,
    private readonly occasion: string | number,
    private readonly now: number,
    private readonly startUp: boolean,
  ) {}

  /** `, N left to live followers` and `, N suspect reads` when some were (the start-up sweep's summary). */
  summaryOfLeft(): string {
    return `${this.left > 0 ? `, ${this.left} left to live followers` : ''}${this.suspectReads > 0 ? `, ${this.suspectReads} suspect reads` : ''}`;
  }

  async enqueue(due: readonly { ref: DelegationRef; dueAt: number }[]): Promise<void> {
    const { ctx, now } = this;
    const fresh = due.filter(({ ref }) => {
      const key = `${ref.workflowId}|${ref.delegationId}`;
      return !this.seen.has(key) && this.seen.add(key);
    });
    // Claimed with compare-and-set on the next check read: an entry two sweeps read at once (a timer sweep that came
    // due while no worker ran, beside a fresh worker's start-up sweep) is checked by one of them.
    const claims = await ctx.journal.claimChecks(fresh.map(({ ref, dueAt }) => ({ ref, seenAt: dueAt, atMs: jitteredCheckTime(now, ctx.options.reconcileIntervalMs) })));
    const claimed = fresh.filter((_, index) => claims[index]);
    for (const { dueAt } of claimed) ctx.metrics.reconcileLag.observe(Math.max(0, now - dueAt) / 1000);
    const entries = fresh.flatMap(({ ref }, index) => (ref.delegationId === '*' ? [] : [{ ref, claimed: claims[index] === true }]));
    const delegations = this.startUp ? await this.startupVerdicts(entries) : entries.filter((entry) => entry.claimed).map(({ ref }) => ref);
    const workflows = claimed.filter(({ ref }) => ref.delegationId === '*').map(({ ref }) => ref);
    const jobs = [...batchesOf(delegations).map((refs) => ({ refs, later: false })), ...batchesOf(workflows).map((refs) => ({ refs, later: true }))];
    await Promise.all(jobs.map(({ refs, later }) => enqueueReconcileBatch(ctx.queues, refs, { sweep: this.occasion, part: this.part++, later })));
    this.count += claimed.length;
  }

  /**
   * The start-up sweep's delegations to reconcile among `entries` (`startupSweepVerdict`): the claimed ones a follow run
   * of another live worker holds (with worker liveness on) are left to it; the ones it leaves that keep suspects get a
   * suspect read job each (`enqueueReconcile`, its second's job: one per second across workers).
   */
  private async startupVerdicts(entries: readonly { ref: DelegationRef; claimed: boolean }[]): Promise<DelegationRef[]> {
    const { ctx } = this;
    const claimed = entries.filter((entry) => entry.claimed).map(({ ref }) => ref);
    const followed = ctx.options.livenessTtlMs > 0 ? await ctx.journal.followedByLiveWorkers(claimed, ctx.workerId, (holder) => !isSendRunToken(holder), LIVE_FOLLOW_MIN_LEFT_TTLS * ctx.options.livenessTtlMs) : [];
    const live = new Set(claimed.filter((_, index) => followed[index] === true));
    this.left += live.size;
    const notReconciled = entries.filter((entry) => !entry.claimed || live.has(entry.ref));
    const keeps = await ctx.journal.keepSuspects(notReconciled.map(({ ref }) => ref));
    const withSuspects = new Set(notReconciled.filter((_, index) => keeps[index] === true).map(({ ref }) => ref));
    const verdicts = entries.map((entry) => ({ ref: entry.ref, verdict: startupSweepVerdict({ claimed: entry.claimed, followedByLive: live.has(entry.ref), keepsSuspects: withSuspects.has(entry.ref) }) }));
    const toRead = verdicts.filter(({ verdict }) => verdict === 'read-suspects').map(({ ref }) => ref);
    const now = ctx.options.now();
    await Promise.all(toRead.map((ref) => enqueueReconcile(ctx.queues, ref, { suspect: undefined, at: now, now })));
    this.suspectReads += toRead.length;
    return verdicts.filter(({ verdict }) => verdict === 'reconcile').map(({ ref }) => ref);
  }
}

/**
 * The send order's clock back to place 0 when it is due (a quarter of a priority's band run: about monthly at the
 * 60 s default) and the send queue holds no job (`FairSendQueue.rebaseOrderWhenIdle`), so its places never reach the
 * band's end, where the fairness between tenants is lost (docs/flow-control.md). Once per timer sweep: the sweep is
 * one fleet-wide job scheduler, and a rebase is a compare-and-set, so workers sweeping at once rebase once. A failure
 * is logged; the next sweep tries again.
 */
async function rebaseSendOrder(ctx: WorkerContext): Promise<void> {
  const queue = ctx.queues.send;
  if (!(queue instanceof FairSendQueue)) return;
  try {
    if ((await queue.rebaseOrderWhenIdle()) === 'rebased') ctx.logger.info('send order rebased: its clock is back at place 0');
  } catch (error) {
    ctx.logger.warn({ err: error }, 'send order rebase failed; the next sweep tries again');
  }
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
