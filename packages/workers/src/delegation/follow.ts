/**
 * Follow and resubscribe (spec §3.1.6 SubscribeToTask): one open stream per
 * task across the fleet (the follow lease), a fleet-wide rate limit on
 * resubscriptions (first subscriptions of new work are not held back), and a
 * reconciler kept away while the stream is healthy. The stream itself is
 * `stream.ts`; what follows it is `route.ts`.
 */
import { isFinished, type FollowJob } from '@durable-a2a/shared';
import type { JobRun, WorkerContext } from '../context.ts';
import { jitteredCheckTime } from './backoff.ts';
import { followLater, routeDelegation } from './route.ts';
import { park, shouldPark } from './park.ts';
import { followStream } from './stream.ts';

/**
 * Follows a delegation's task for one follow job: checks the journal, waits for a resubscription slot
 * (`deferUntilSlot` re-delays the job and throws), takes the follow lease (one stream per task, fleet-wide),
 * then streams (`stream.ts`).
 */
export async function followDelegation(ctx: WorkerContext, data: FollowJob, job: JobRun, deferUntilSlot: (waitMs: number) => Promise<never>): Promise<string> {
  const ref = { workflowId: data.workflowId, delegationId: data.delegationId };
  const record = await ctx.journal.getDelegation(ref);
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
  const token = `${ctx.workerId}/${job.id}`;
  const leaseMs = ctx.options.lockDurationMs;
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
  if (!(await ctx.journal.lease(ref, 'acquire', token, leaseMs))) return 'already-followed';
  // While the stream is healthy, the lease and the reconciler's next check move forward together.
  const lost = new AbortController();
  const renew = setInterval(() => {
    void ctx.journal.lease(ref, 'renew', token, leaseMs).then(
      (held) => {
        if (!held) return lost.abort(); // someone else follows it now: stop this stream
        return ctx.journal.scheduleCheck(ref, jitteredCheckTime(ctx.options.now(), ctx.options.reconcileIntervalMs));
      },
      () => undefined,
    );
  }, leaseMs / 3);
  try {
    // Keep the reconciler away while the stream is healthy.
    await ctx.journal.scheduleCheck(ref, jitteredCheckTime(ctx.options.now(), ctx.options.reconcileIntervalMs));
    const fence = await ctx.journal.claim(ref, token);
    return await followStream(ctx, record, fence, data.resubscription, job, lost.signal);
  } finally {
    clearInterval(renew);
    await ctx.journal.lease(ref, 'release', token).catch(() => undefined);
  }
}

