/**
 * Records left with no follow lease and no job (the stall seen at 10,000 in flight): a worker whose
 * event loop stalls past `lockDurationMs` loses the leases of its open streams, and a follow that finds a
 * lease held by a dead holder stops. Each must be looked at again within a bounded time (its lease's end, or
 * at once), never only at the index's next check a reconcile interval later (60 s here, longer than each test).
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { Producer } from '@durable-a2a/producer';
import type { DelegationRef } from '@durable-a2a/shared';
import { followDelegation } from '../../packages/workers/src/delegation/runs/follow.ts';
import { useRedisClient, useRedisServer } from '../harness/redis.ts';
import { eventually, reconcileOutcomes, startTestFleet, TEST_TIMINGS } from '../harness/fleet.ts';
import { closeKeptAfterEach } from '../harness/lifecycle.ts';
import { delegateJobs, startLongTasks } from '../harness/long-tasks.ts';

const redisServer = useRedisServer();
/** Longer than each test: the index's next check never comes within it. */
const LONG_INTERVAL_MS = 60_000;
/** Bound on "looked at again": the lease's end plus a few renewal ticks and reconcile hops, far below the interval. */
const PICKED_UP_WITHIN_MS = TEST_TIMINGS.lockDurationMs + 6_000;
const redis = useRedisClient(redisServer);
let producer: Producer;
/** What each test started, closed after it (last first). */
const keep = closeKeptAfterEach();
let counter = 0;

/** An agent whose tasks stay WORKING past the test, a fleet with a long reconcile interval, and `count` delegations. */
async function setUp(count: number, fleetOptions: Parameters<typeof startTestFleet>[0] extends infer O ? Partial<O> : never = {}) {
  const prefix = `lease${++counter}`;
  const started = await startLongTasks(redisServer().url, prefix);
  const agent = started.agent;
  producer = started.producer;
  // Streams stay open past each test (no idle cut and resubscription that would re-follow them by another way).
  const fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, reconcileIntervalMs: LONG_INTERVAL_MS, streamIdleTimeoutMs: LONG_INTERVAL_MS, ...fleetOptions });
  keep(agent, producer, fleet);
  const { sent, refs } = await delegateJobs(producer, agent.cardUrl, count);
  return { prefix, agent, fleet, sent, refs };
}

const leaseKey = (ref: DelegationRef) => producer.journal.keys.followLease(ref.workflowId, ref.delegationId);
const leaseHolders = (refs: readonly DelegationRef[]) => Promise.all(refs.map((ref) => redis().get(leaseKey(ref))));
const allFollowed = async (refs: readonly DelegationRef[]) => (await leaseHolders(refs)).every((holder) => holder !== null);

/** Blocks this process's event loop (the in-process fleet's and agent's too) for `ms`: no timer, no lease renewal runs. */
const stallEventLoop = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

describe('records left with no lease and no job are looked at again within a bounded time', () => {
  it('an event loop stalled past the follow leases: every delegation is followed again at once, not a reconcile interval later', async () => {
    const { agent, fleet, sent, refs } = await setUp(20);
    await eventually(() => allFollowed(refs), 'every stream open under a lease', 20_000);

    stallEventLoop(TEST_TIMINGS.lockDurationMs + 1_500);
    // The leases ran out during the stall and nobody took them: the next renewal takes them back.
    await eventually(() => allFollowed(refs), 'every delegation followed again', PICKED_UP_WITHIN_MS, 100);
    await new Promise((resolve) => setTimeout(resolve, TEST_TIMINGS.lockDurationMs));
    expect((await leaseHolders(refs)).every((holder) => holder?.startsWith(`${fleet.context.workerId}/`))).toBe(true);
    for (const { messageId } of sent) expect(agent.sendMessageCount(messageId)).toBe(1);
  }, 60_000);

  it('leases taken over by a holder that then dies: those streams stop, and each delegation is reattached when that lease ends', async () => {
    const { agent, fleet, sent, refs } = await setUp(10);
    await eventually(() => allFollowed(refs), 'every stream open under a lease', 20_000);
    const subscriptionsBefore = agent.requestCount('SubscribeToTask');

    // Another worker took each lease (as after its reconciler saw them run out), then died without following.
    for (const ref of refs) await redis().set(leaseKey(ref), 'dead-worker/follow-1', 'PX', 1_500);
    const ours = `${fleet.context.workerId}/`;
    await eventually(async () => (await leaseHolders(refs)).every((holder) => holder?.startsWith(ours)), 'every delegation reattached by this fleet', PICKED_UP_WITHIN_MS, 100);
    // A lease is taken before its SubscribeToTask reaches the agent: the count is waited for, not read at once (a CI run
    // saw 10 of 11 read the moment the last lease was ours).
    await eventually(async () => agent.requestCount('SubscribeToTask') >= subscriptionsBefore + refs.length, 'every reattached delegation subscribed again', PICKED_UP_WITHIN_MS, 100);
    for (const { messageId } of sent) expect(agent.sendMessageCount(messageId)).toBe(1);
  }, 60_000);

  it('property: whatever the stall, every delegation is followed again within the bound, each sent once', async () => {
    const { agent, sent, refs } = await setUp(10);
    await eventually(() => allFollowed(refs), 'every stream open under a lease', 20_000);
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 200, max: 2.5 * TEST_TIMINGS.lockDurationMs }), async (stallMs) => {
        stallEventLoop(stallMs);
        await eventually(() => allFollowed(refs), `every delegation followed again after a ${stallMs} ms stall`, PICKED_UP_WITHIN_MS, 100);
        // Followed, and stays followed (not a lease about to be found lost again).
        await new Promise((resolve) => setTimeout(resolve, TEST_TIMINGS.lockDurationMs));
        expect(await allFollowed(refs)).toBe(true);
      }),
      { numRuns: 4, seed: 16_007, endOnFailure: true },
    );
    for (const { messageId } of sent) expect(agent.sendMessageCount(messageId)).toBe(1);
  }, 120_000);

  it('a follow that finds the lease of a dead holder looks again when that lease ends', async () => {
    // No follow queue here: the follow job the send routed to waits, and this test runs it by hand.
    const { fleet, refs } = await setUp(1, { queues: ['send', 'reconcile'] });
    const [ref] = refs as [DelegationRef];
    await eventually(async () => (await producer.journal.getDelegation(ref))?.taskId !== undefined, 'the task id journaled');
    await redis().set(leaseKey(ref), 'dead-worker/follow-1', 'PX', 1_500);
    const before = await reconcileOutcomes(fleet);

    const run = { id: 'by-hand', attemptsMade: 0, attempts: 1 };
    const outcome = await followDelegation(fleet.context, { ...ref, resubscription: 0, again: true, slotTaken: false }, run, async () => 'deferred');
    expect(outcome).toBe('already-followed');
    // At the dead lease's end the reconciler finds it free and reattaches it (a follow job: no follow queue here).
    await eventually(async () => ((await reconcileOutcomes(fleet)).reattached ?? 0) > (before.reattached ?? 0), 'reattached after the dead lease ended', PICKED_UP_WITHIN_MS, 100);
  }, 60_000);
});
