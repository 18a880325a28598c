/**
 * retrygive35, fault 1 across processes (the kind "a rerun of the same send job gives back, or sends again under, a
 * mark an earlier run wrote"): a worker process's send run marks and stalls (a real event-loop stall, DA2A_STALL_AT,
 * longer than its BullMQ lock and its liveness TTL) either right after its mark (nothing sent) or once the agent took
 * its SendMessage (a NON-deduplicating agent: each SendMessage books anew) before the answer is journaled. A peer fleet
 * that runs sends takes the stalled job over (BullMQ's stalled-job check) and reruns the SAME job, while the stalled
 * run is still alive and wakes up later. Neither may give the other's mark back or send beside it: the rerun hands the
 * marked row to the reconciler (adopt by our messageId, or resend the same messageId once it is shown absent), the
 * woken run's give-back compares its own mark (fence, sendStartedAt, version). One SendMessage per messageId.
 * Found on main: no fault (kept as a regression). Real worker process, redis-server, BullMQ, raw JSON-RPC agent.
 */
import { QueueEvents } from 'bullmq';
import { afterEach, describe, expect, it } from 'vitest';
import { queuePrefix } from '@durable-a2a/shared';
import { useCrashScene } from '../harness/crash-scene.ts';
import { bookingSendHandlers } from '../harness/holding-agent.ts';
import { startScriptedAgent, type ScriptedAgentHandle } from '../harness/scripted-agent.ts';
import { eventually } from '../harness/fleet.ts';

interface Booking {
  agent: ScriptedAgentHandle;
  booking: ReturnType<typeof bookingSendHandlers>;
}

async function startBookingAgent(): Promise<Booking> {
  const booking = bookingSendHandlers();
  return { agent: await startScriptedAgent(booking.handlers), booking };
}

const scene = useCrashScene<Booking>({ prefix: 'rerun-', startAgents: startBookingAgent, stopAgents: ({ agent }) => agent.close() });
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

describe.each([
  { point: 'send.after-mark', sentBeforeStall: false },
  { point: 'send.after-request', sentBeforeStall: true },
])('a send run stalled at $point, its job rerun by a peer while it lives', ({ point, sentBeforeStall }) => {
  it('one SendMessage per messageId; the stalled run wakes and sends nothing more', async () => {
    const { producer, prefix } = scene.setUp();
    const { agent, booking } = scene.agents();
    const before = booking.tasks.length;
    const victim = scene.spawn({ DA2A_STALL_AT: `${point}:8000` });
    await victim.ready;
    const { id, messageId } = await producer.delegate({ agent: agent.cardUrl, text: 'book', idempotencyKey: `rerun-${point}` });
    const ref = { workflowId: id, delegationId: 'main.1' };
    // The victim's run is marked (and, at send.after-request, the agent has our message) before the peer starts.
    await eventually(async () => (await producer.journal.getDelegation(ref))?.sendStartedAt !== undefined, 'the victim marked');
    if (sentBeforeStall) await eventually(async () => booking.sends.get(messageId) === 1 || undefined, 'the agent took the SendMessage');
    // BullMQ's stalled-job check (the peer's send worker) moves the victim's job back to run it again.
    const { hostname, port } = new URL(scene.redisServer().url);
    const events = new QueueEvents('send', { connection: { host: hostname, port: Number(port) }, prefix: queuePrefix(prefix) });
    const stalledJobs: string[] = [];
    events.on('stalled', ({ jobId }) => stalledJobs.push(jobId));
    closers.push(() => events.close());
    await events.waitUntilReady();
    await scene.startFleet({ workerId: 'peer', reconcileIntervalMs: 300 });
    const view = await scene.reached(id, (seen) => seen.state === 'COMPLETED' || seen.state === 'NEEDS_ATTENTION' || seen.state === 'FAILED', 60_000);
    expect(view.state).toBe('COMPLETED');
    // The peer took the stalled job over and ran it again while the victim lived.
    await eventually(async () => stalledJobs.length > 0 || undefined, 'the stalled send job taken over by the peer', 30_000);
    // The victim lived through its stall: a graceful close (SIGTERM, handled only once its event loop runs again) lets
    // its woken send run end first, so whatever it does after waking is in the counts below.
    expect(victim.child.exitCode).toBeNull();
    await victim.kill('SIGTERM');
    expect((await victim.exited).signal).toBeNull();
    expect(booking.sends.get(messageId)).toBe(1);
    expect(booking.tasks.length - before).toBe(1);
    const record = (await producer.journal.getDelegation(ref))!;
    expect(record.resendCount).toBe(sentBeforeStall ? 0 : 1);
  }, 120_000);
});
