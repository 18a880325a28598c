/**
 * Follow and resubscribe (spec §3.1.6 SubscribeToTask): one open stream per
 * task across the fleet (the follow lease), a fleet-wide rate limit on
 * resubscriptions (first subscriptions of new work are not held back), and a
 * reconciler kept away while the stream is healthy, and a per-agent share of
 * this process's follow slots (`followSlotsPerAgent`, RT6: one agent cannot
 * hold all follow capacity). A delegation the progress rule slow-polls is read
 * with one GetTask instead of a stream (`core/policy.ts` isSlowPolling). The
 * stream itself is `io/stream.ts`; every observation goes to `apply.ts`.
 */
import { isFinished, isParked, keepsSuspects, lazyChildLogger, type DelegationRecord, type FlowAcquired, type FollowJob, type FollowLease } from '@durable-a2a/shared';
import type { JobRun, WorkerContext } from '../../context.ts';
import { apply, type Scope, type StreamLease } from '../apply.ts';
import { isSlowPolling, jitteredCheckTime, questionOpen } from '../core/policy.ts';
import type { Observation } from '../core/observation.ts';
import { readTask } from '../io/read.ts';
import { readStream, type SinkResult } from '../io/stream.ts';
import { checkAttemptDeadline } from '../deadline.ts';
import { scheduleQuestionMoment } from '../question-schedule.ts';
import { enqueueSuspectReads, renewWhileHeld } from './lease-renewal.ts';
import { holdWorkingWrites, type RowSink } from './working-write.ts';
import { leaseHeld } from './reconcile.ts';

/**
 * A resubscription slot at most this far away (ms) is waited for here, as the round trip that reserved it was: no
 * index move and no second read of the row, which a farther slot pays (`deferUntilSlot`). Slots reserved together
 * (`ResubscribeTokens`) at a high rate land a few ms apart: at 10,000 per second, the 11th to 20th of one call 1 ms out.
 */
const SLOT_WAIT_INLINE_MS = 5;

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
    await apply(ctx, record, { kind: 'row-checked' });
    return 'finished';
  }
  if (!record.taskId) return 'no-task';
  if (record.state === 'INPUT_REQUIRED' && questionOpen(record)) {
    await apply(ctx, record, { kind: 'row-checked' });
    return 'parked';
  }
  // Past the attempt deadline, no stream and no poll: the attempt ends here (a follow job's or a resubscription's
  // next check keeps the reconciler's check ahead of it, as a healthy stream's renewals do).
  const deadline = await checkAttemptDeadline(ctx, record, lazyChildLogger(ctx.logger, { queue: 'follow', ...ref, taskId: record.taskId, jobId: job.id }));
  if (deadline === 'passed') return 'deadline-exceeded';
  // A question streamed on (AUTH_REQUIRED): its next moment on a job of its own, as the stream keeps the index away.
  if (isParked(record.state)) await scheduleQuestionMoment(ctx, record);
  const token = followToken(ctx, job.id);
  if (ctx.shutdownSignal.aborted) {
    // This worker is closing: leave the delegation to another one.
    await apply(ctx, record, { kind: 'follow-deferred', delayMs: 0, resubscription: data.resubscription, reason: 'closing' });
    return 'handed-over';
  }
  if (data.again && !data.slotTaken) {
    // Fleet-wide limit on resubscriptions only (a restarted agent is not stormed); first subscriptions of new
    // work are not held back. The slot is reserved once: the job sleeps until it and then runs without asking again.
    // And the agent's own turn (its `rate.resubscribesPerSecond`, a pause it asked for), fleet-wide too.
    const [fleetWaitMs, agentWaitMs] = await Promise.all([
      ctx.resubscribeTokens.take(),
      agentResubscribeWaitMs(ctx, record.agentCardUrl),
    ]);
    const waitMs = Math.max(fleetWaitMs, agentWaitMs);
    if (waitMs > SLOT_WAIT_INLINE_MS) {
      // Keep the reconciler from reattaching (and reserving again) while this job waits for its slot.
      await ctx.journal.scheduleCheck(ref, ctx.options.now() + waitMs + ctx.options.lockDurationMs);
      return deferUntilSlot(waitMs);
    }
    if (waitMs > 0) await new Promise((resolve) => setTimeout(resolve, waitMs));
  }
  const slowPoll = isSlowPolling(record, data.resubscription, ctx.policy);
  if (!slowPoll && !ctx.followSlots.take(record.agentCardUrl)) {
    // This agent holds its whole share of follow slots: try again later (other agents' work goes first).
    const delayMs = ctx.options.followBackoff.baseMs + Math.floor(Math.random() * Math.min(ctx.options.followBackoff.capMs, 5_000));
    await apply(ctx, record, { kind: 'follow-deferred', delayMs, resubscription: data.resubscription, reason: 'agent-share-full' });
    return 'agent-share-full';
  }
  try {
    // The lease and the claim in one script: a follow turned away by the lease fences nobody out.
    const taken = handed?.();
    const fence = taken ? taken.fence : await ctx.journal.takeFollow(ref, token, ctx.options.lockDurationMs);
    if (fence === 0) {
      // Another holder follows it, or did until it died: look again when that lease ends (not only at the index's next check).
      const leaseMs = await ctx.journal.followLeaseRemainingMs(ref);
      if (leaseMs > 0) await leaseHeld(ctx, ref, leaseMs);
      else await apply(ctx, record, { kind: 'follow-deferred', delayMs: ctx.options.followBackoff.baseMs, resubscription: data.resubscription, reason: 'lease-taken' });
      return 'already-followed';
    }
    return await followLeased(ctx, record, token, job, { slowPoll, fence, checkScheduled: taken?.checkScheduled === true, resubscribed: data.again, deadlineAt: deadline });
  } finally {
    if (!slowPoll) ctx.followSlots.release(record.agentCardUrl);
  }
}

/**
 * The agent's own resubscription turn (ms to wait; 0: now): its `rate.resubscribesPerSecond` when it has one (one
 * script call each); otherwise only a pause it asked for, which this process looks up at most once per `pauseCheckMs`
 * (`pause-checks.ts`, shared with the sends to an agent without limits): a fresh worker reattaching thousands of
 * streams asked the script once per stream to learn that nothing was paused.
 */
async function agentResubscribeWaitMs(ctx: WorkerContext, agentCardUrl: string): Promise<number> {
  const perSecond = ctx.agentLimits.of(agentCardUrl).rate?.resubscribesPerSecond ?? 0;
  if (perSecond > 0) return ctx.flow.resubscribeTurn(agentCardUrl, perSecond);
  const look = async (): Promise<FlowAcquired> => {
    const waitMs = await ctx.flow.resubscribeTurn(agentCardUrl, 0);
    return waitMs > 0 ? { go: false, reason: 'paused', waitMs } : { go: true };
  };
  const turn = await ctx.pauseChecks.ask(agentCardUrl, look);
  return turn.go ? 0 : turn.waitMs;
}

/** How a leased follow runs (`followLeased`). */
interface LeasedFollow {
  /** Read once with GetTask instead of a stream (the progress rule's slow poll). */
  slowPoll: boolean;
  /** The run's fencing token. */
  fence: number;
  /** The handover that gave this follow its lease already moved the reconciler's next check. */
  checkScheduled: boolean;
  /** Not the first subscription of the task (an earlier stream ended before its finished status). */
  resubscribed: boolean;
  /** The attempt's deadline (epoch ms): the stream closes there and the attempt ends (undefined: none applies). */
  deadlineAt: number | undefined;
}

/** Follows (or, when slow-polled, reads once) under the follow lease, renewing it while the stream is healthy. */
async function followLeased(ctx: WorkerContext, record: DelegationRecord, token: string, job: JobRun, { slowPoll, fence, checkScheduled, resubscribed, deadlineAt }: LeasedFollow): Promise<string> {
  const ref = { workflowId: record.workflowId, delegationId: record.delegationId };
  // Suspects the row keeps (a push route that kept one and crashed before its job): the reconciler reads them now,
  // not when this follow ends (its renewals keep the periodic check away). From the row in hand: no Redis call when
  // there are none. Those kept while it streams are found by the renewal tick (`lease-renewal.ts`).
  if (keepsSuspects(record)) await enqueueSuspectReads(ctx, [{ ref, suspectReadRounds: record.suspectReadRounds, suspectReadRoundAt: record.suspectReadRoundAt }], 'start');
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
    const log = lazyChildLogger(ctx.logger, { queue: 'follow', ...ref, taskId: record.taskId, jobId: job.id });
    const scope: Scope = { fence, lease, log, source: 'stream' };
    if (slowPoll) return (await apply(ctx, record, await readTask(ctx, record, { why: 'slow poll', log }), { ...scope, source: 'get-task' })).next;
    // Keep the reconciler away while the stream is healthy. Sent beside the stream's opening, not before it, with the
    // other streams' opening in this turn (one ZADD XX for all of them: a fresh worker opens thousands at once); it
    // is a ZADD XX, so one that reaches Redis after anything the stream writes (a settle's index removal) puts nothing back.
    // A lease handed over by the send's answer came with that check, written in the same script.
    ctx.crashPoint('follow.before-stream', record.step);
    const checked = checkScheduled ? undefined : ctx.journal.scheduleCheckSoon(ref, jitteredCheckTime(ctx.options.now(), ctx.options.reconcileIntervalMs)).catch(() => undefined);
    // A WORKING that moves nothing else waits a moment for the status that replaces it (`working-write.ts`); a write
    // still waiting when the stream ends goes before the lease is given back (below).
    const writes = holdWorkingWrites(streamSink(ctx, record, scope), { delayMs: ctx.options.workingWriteDelayMs, log });
    try {
      return await readStream(ctx, record, job, renewal.lost, writes.sink, { resubscribed, ...(deadlineAt !== undefined ? { deadlineAt } : {}) });
    } finally {
      await writes.end();
      await checked;
    }
  } finally {
    renewal.release();
    if (!leaseEnded) await ctx.journal.lease(ref, 'release', token).catch(() => undefined);
  }
}

/**
 * The sink of a stream this run reads: each observation is applied to the row as the last step left it (the row as
 * the last applied event wrote it; a stream's end reads it again, since another writer may have moved it); `row()`
 * gives that row.
 */
export function streamSink(ctx: WorkerContext, record: DelegationRecord, scope: Scope): RowSink {
  let current = record;
  const sink = async (observation: Observation): Promise<SinkResult> => {
    if (observation.kind === 'stream-ended' && !isFinished(current.state)) current = (await ctx.journal.getDelegation(current)) ?? current;
    const applied = await apply(ctx, current, observation, observation.kind === 'stream-event' ? scope : { ...scope, source: 'get-task' });
    if (applied.record) current = applied.record;
    return applied;
  };
  return Object.assign(sink, { row: () => current });
}
