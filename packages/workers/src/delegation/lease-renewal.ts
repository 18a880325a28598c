/**
 * Renewal of the follow leases this process holds: one timer per fleet, every
 * `lockDurationMs / 3`, renews them all with one journal call (`renewLeases`:
 * one pipelined round trip) and moves the reconciler's next check of each
 * forward (a healthy stream keeps the reconciler away). A lease found lost
 * aborts its stream (someone else follows the task now). One timer and one
 * batch instead of a timer and two round trips per open stream: the cost of
 * 10,000 open streams is one pipeline per tick.
 */
import type { DelegationRef } from '@durable-a2a/shared';
import type { WorkerContext } from '../context.ts';
import { jitteredCheckTime } from './backoff.ts';

interface HeldLease {
  ref: DelegationRef;
  token: string;
  lost: AbortController;
}

interface Renewal {
  held: Map<string, HeldLease>;
  timer: NodeJS.Timeout | undefined;
}

const renewalsByFleet = new WeakMap<WorkerContext['options'], Renewal>();

/**
 * Registers a follow lease (just acquired with `token`) for renewal until `release()`.
 * `lost` aborts when a renewal finds the lease no longer ours.
 */
export function renewWhileHeld(ctx: WorkerContext, ref: DelegationRef, token: string): { lost: AbortSignal; release(): void } {
  let renewal = renewalsByFleet.get(ctx.options);
  if (!renewal) renewalsByFleet.set(ctx.options, (renewal = { held: new Map(), timer: undefined }));
  const lease: HeldLease = { ref, token, lost: new AbortController() };
  renewal.held.set(token, lease);
  const active = renewal;
  active.timer ??= setInterval(() => void renewAll(ctx, active), ctx.options.lockDurationMs / 3);
  return {
    lost: lease.lost.signal,
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
  try {
    const held = await ctx.journal.renewLeases(leases, ctx.options.lockDurationMs, () => jitteredCheckTime(ctx.options.now(), ctx.options.reconcileIntervalMs));
    held.forEach((ours, index) => {
      if (!ours) leases[index]!.lost.abort(); // someone else follows it now: stop this stream
    });
  } catch {
    // Redis unreachable for this tick: the next one tries again (as the per-stream timers did).
  }
}
