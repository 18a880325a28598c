/**
 * Follow and resubscribe (spec §3.1.6 SubscribeToTask): one open stream per
 * task across the fleet (the follow lease), a fleet-wide rate limit on
 * resubscriptions (first subscriptions of new work are not held back), and a
 * reconciler kept away while the stream is healthy, and a per-agent share of
 * this process's follow slots (`followSlotsPerAgent`, RT6: one agent cannot
 * hold all follow capacity). A delegation the progress rule slow-polls is read
 * with one GetTask instead of a stream (`progress.ts`). The stream itself is
 * `stream.ts`; what follows it is `route.ts`.
 */
import { isFinished, lazyChildLogger, type DelegationRecord, type FollowJob, type FollowLease } from '@durable-a2a/shared';
import type { JobRun, WorkerContext } from '../context.ts';
import { jitteredCheckTime } from './backoff.ts';
import { followLater, routeDelegation } from './route.ts';
import { park, shouldPark } from './park.ts';
import { followStream, type StreamLease } from './stream.ts';
import { isSlowPolling } from './progress.ts';
import { renewWhileHeld } from './lease-renewal.ts';
import { readOnce } from './read.ts';
import { leaseHeld } from './recover.ts';

/** Follow slots held per Agent Card URL, per fleet (this process). */
const slotsByFleet = new WeakMap<WorkerContext['options'], Map<string, number>>();

/**
 * Takes one of the agent's follow slots. Within its share (`followSlotsPerAgent`) always; beyond it only
 * while more than a tenth of this process's follow concurrency (at least one slot) stays free for other
 * agents. False when the agent must wait.
 */
export function takeAgentSlot(ctx: WorkerContext, agent: string): boolean {
  let slots = slotsByFleet.get(ctx.options);
  if (!slots) slotsByFleet.set(ctx.options, (slots = new Map()));
  const held = slots.get(agent) ?? 0;
  if (held >= ctx.options.followSlotsPerAgent) {
    const concurrency = ctx.options.concurrency.follow;
    const inUse = [...slots.values()].reduce((sum, count) => sum + count, 0);
    if (concurrency - inUse <= Math.max(1, Math.floor(concurrency / 10))) return false;
  }
  slots.set(agent, held + 1);
  return true;
}

/** Gives back a slot taken with `takeAgentSlot`. */
export function releaseAgentSlot(ctx: WorkerContext, agent: string): void {
  const slots = slotsByFleet.get(ctx.options);
  const held = slots?.get(agent) ?? 0;
  if (held <= 1) slots?.delete(agent);
  else slots?.set(agent, held - 1);
}

/** The follow lease token of a follow job or local follow run `runId` in this process. */
export function followToken(ctx: WorkerContext, runId: string | undefined): string {
  return `${ctx.workerId}/${runId}`;
}

/**
 * Follows a delegation's task for one follow job or local follow (`follow-local.ts`): checks the journal, waits
 * for a resubscription slot (`deferUntilSlot` re-delays the job and throws, or enqueues a follow job delayed by
 * `waitMs` and returns its outcome), takes the follow lease (one stream per task, fleet-wide), then streams (`stream.ts`).
 * `known`: the record as the routing transition just wrote it (a local follow; saves the read). `lease`: the follow
 * lease that transition already took under this run's token (`endsLease: handover`): no `takeFollow`; given back
 * here when the follow ends before its stream.
 */
export async function followDelegation(
  ctx: WorkerContext,
  data: FollowJob,
  job: JobRun,
  deferUntilSlot: (waitMs: number) => Promise<string>,
  known?: DelegationRecord,
  lease?: FollowLease,
): Promise<string> {
  const ref = { workflowId: data.workflowId, delegationId: data.delegationId };
  if (!lease) return followUnleased(ctx, data, job, deferUntilSlot, known);
  if (ctx.shutdownSignal.aborted) {
    // Closing: the lease goes back before the delegation is handed over (the follow job would find it held).
    await ctx.journal.lease(ref, 'release', lease.token).catch(() => undefined);
    return followUnleased(ctx, data, job, deferUntilSlot, known);
  }
  let streamed = false;
  try {
    return await followUnleased(ctx, data, job, deferUntilSlot, known, () => {
      streamed = true;
      return lease;
    });
  } finally {
    if (!streamed) await ctx.journal.lease(ref, 'release', lease.token).catch(() => undefined);
  }
}

/** `followDelegation`'s checks and lease; `handed`: the lease is already ours (no `takeFollow`). */
async function followUnleased(
  ctx: WorkerContext,
  data: FollowJob,
  job: JobRun,
  deferUntilSlot: (waitMs: number) => Promise<string>,
  known: DelegationRecord | undefined,
  handed?: () => FollowLease,
): Promise<string> {
  const ref = { workflowId: data.workflowId, delegationId: data.delegationId };
  const record = known ?? (await ctx.journal.getDelegation(ref));
  if (!record) return 'missing';
  if (isFinished(record.state)) {
    await routeDelegation(ctx, ref, { known: record });
    return 'finished';
  }
  if (!record.taskId) return 'no-task';
  if (record.state === 'INPUT_REQUIRED' && shouldPark(record)) {
    await park(ctx, record);
    return 'parked';
  }
  const token = followToken(ctx, job.id);
  if (ctx.shutdownSignal.aborted) {
    // This worker is closing: leave the delegation to another one.
    await followLater(ctx, ref, data.resubscription);
    return 'handed-over';
  }
  if (data.again && !data.slotTaken) {
    // Fleet-wide limit on resubscriptions only (a restarted agent is not stormed); first subscriptions of new
    // work are not held back. The slot is reserved once: the job sleeps until it and then runs without asking again.
    const waitMs = await ctx.journal.takeToken('resubscribe', ctx.options.subscribeRateLimit.max, ctx.options.subscribeRateLimit.durationMs);
    if (waitMs > 0) {
      // Keep the reconciler from reattaching (and reserving again) while this job waits for its slot.
      await ctx.journal.scheduleCheck(ref, ctx.options.now() + waitMs + ctx.options.lockDurationMs);
      return deferUntilSlot(waitMs);
    }
  }
  const slowPoll = isSlowPolling(record, data.resubscription, ctx.options);
  if (!slowPoll && !takeAgentSlot(ctx, record.agentCardUrl)) {
    // This agent holds its whole share of follow slots: try again later (other agents' work goes first).
    const delayMs = ctx.options.followBackoff.baseMs + Math.floor(Math.random() * Math.min(ctx.options.followBackoff.capMs, 5_000));
    await ctx.journal.scheduleCheck(ref, ctx.options.now() + delayMs + ctx.options.reconcileIntervalMs);
    await followLater(ctx, ref, data.resubscription, delayMs);
    return 'agent-share-full';
  }
  try {
    // The lease and the claim in one script: a follow turned away by the lease fences nobody out.
    const taken = handed?.();
    const fence = taken ? taken.fence : await ctx.journal.takeFollow(ref, token, ctx.options.lockDurationMs);
    if (fence === 0) {
      // Another holder follows it, or did until it died: look again when that lease ends (not only at the index's next check).
      const leaseMs = await ctx.journal.followLeaseRemainingMs(ref);
      await (leaseMs > 0 ? leaseHeld(ctx, ref, leaseMs) : followLater(ctx, ref, data.resubscription, ctx.options.followBackoff.baseMs));
      return 'already-followed';
    }
    return await followLeased(ctx, record, token, job, slowPoll, fence, taken?.checkScheduled === true);
  } finally {
    if (!slowPoll) releaseAgentSlot(ctx, record.agentCardUrl);
  }
}

/**
 * Follows (or, when slow-polled, reads once) under the follow lease, renewing it while the stream is healthy.
 * `checkScheduled`: the handover that gave this follow its lease already moved the reconciler's next check.
 */
async function followLeased(ctx: WorkerContext, record: DelegationRecord, token: string, job: JobRun, slowPoll: boolean, fence: number, checkScheduled: boolean): Promise<string> {
  const ref = { workflowId: record.workflowId, delegationId: record.delegationId };
  // While the stream is healthy, the lease and the reconciler's next check move forward together (one batch per tick).
  const renewal = renewWhileHeld(ctx, ref, token);
  // The stream's finishing status change releases the lease in its own script: then it is no longer renewed, and
  // released here only when a renewal was issued behind that change (its `keep` may have taken the lease back).
  let leaseEnded = false;
  const lease: StreamLease = {
    ending() {
      const issuedBefore = renewal.issued();
      return {
        endsLease: { token, when: 'finished' },
        ended() {
          renewal.release();
          leaseEnded = renewal.issued() === issuedBefore;
        },
      };
    },
  };
  try {
    if (slowPoll) {
      const log = lazyChildLogger(ctx.logger, { queue: 'follow', ...ref, taskId: record.taskId, jobId: job.id });
      return await readOnce(ctx, record, fence, 'slow poll', log, { lease });
    }
    // Keep the reconciler away while the stream is healthy. Sent beside the stream's opening, not before it: on the
    // journal's one connection it still reaches Redis before anything the stream writes (a settle's index removal).
    // A lease handed over by the send's answer came with that check, written in the same script.
    ctx.crashPoint('follow.before-stream', record.step);
    const checked = checkScheduled ? undefined : ctx.journal.scheduleCheck(ref, jitteredCheckTime(ctx.options.now(), ctx.options.reconcileIntervalMs)).catch(() => undefined);
    try {
      return await followStream(ctx, record, fence, job, renewal.lost, undefined, lease);
    } finally {
      await checked;
    }
  } finally {
    renewal.release();
    if (!leaseEnded) await ctx.journal.lease(ref, 'release', token).catch(() => undefined);
  }
}
