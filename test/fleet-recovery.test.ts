/**
 * Recovery after the whole fleet is SIGKILLed (issue 16): a dead worker's
 * delegations are reattached right after their follow leases run out, not a
 * reconcile interval later (a reconcile that finds a lease held also enqueues
 * a delayed check at its end), and the start-up sweep reaches every unfinished
 * record, however many batches they fill.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createProducer, type Producer } from '@durable-a2a/producer';
import { Queue } from 'bullmq';
import { createRedisClient, queuePrefix, type DelegationRef, type RedisClient } from '@durable-a2a/shared';
import type { Fleet } from '@durable-a2a/workers';
import { useRedisServer } from './harness/redis.ts';
import { startDemoAgent, type DemoAgentHandle } from './harness/agent.ts';
import { runsSlowly } from './harness/agent-behaviours.ts';
import { eventually, spawnWorkerProcess, startTestFleet, TEST_TIMINGS, type WorkerProcess } from './harness/fleet.ts';

const redisServer = useRedisServer({ appendOnly: true });
/** Longer than the test: only the start-up sweep and the checks at lease end can reattach anything. */
const LONG_INTERVAL_MS = 60_000;
/** Follow leases (and locks) of the first test: long enough that the fresh fleet's start-up sweep finds them held. */
const LEASE_MS = 4_000;
let redis: RedisClient;
let producer: Producer | undefined;
const fleets: Fleet[] = [];
const processes: WorkerProcess[] = [];
const agents: DemoAgentHandle[] = [];
let counter = 0;

beforeAll(() => {
  redis = createRedisClient(redisServer().url);
});
afterAll(async () => {
  await redis.quit();
});
afterEach(async () => {
  await Promise.all(fleets.splice(0).map((fleet) => fleet.close()));
  await Promise.all(processes.splice(0).map((worker) => worker.kill()));
  await Promise.all(agents.splice(0).map((agent) => agent.close()));
  await producer?.close();
  producer = undefined;
});

async function setUp(prefix: string, count: number) {
  const agent = await startDemoAgent({ behaviour: runsSlowly(120_000) });
  agents.push(agent);
  producer = createProducer({ redis: redisServer().url, addressPolicy: { allowLoopback: true }, prefix });
  const sent = await Promise.all(Array.from({ length: count }, (_, index) => producer!.delegate({ agent: agent.cardUrl, text: `job ${index}`, idempotencyKey: `job-${index}` })));
  const refs: DelegationRef[] = sent.map(({ id }) => ({ workflowId: id, delegationId: 'main.1' }));
  return { agent, sent, refs };
}

/** The follow lease holders (`<workerId>/<run id>`, or null) of `refs`, read from Redis. */
const leaseHolders = (refs: readonly DelegationRef[]) => Promise.all(refs.map((ref) => redis.get(producer!.journal.keys.followLease(ref.workflowId, ref.delegationId))));

/** Reconcile runs of `fleet` by outcome. */
async function reconcileOutcomes(fleet: Fleet): Promise<Record<string, number>> {
  const outcomes: Record<string, number> = {};
  for (const value of (await fleet.metrics.reconcileRuns.get()).values) outcomes[String(value.labels.outcome)] = value.value;
  return outcomes;
}

describe('recovery after the whole fleet is SIGKILLed', () => {
  it('a fresh fleet with a long reconcile interval reattaches every delegation right after the dead leases expire; one SendMessage each', async () => {
    const prefix = `fleetrec${++counter}`;
    const first = spawnWorkerProcess({ REDIS_URL: redisServer().url, DA2A_PREFIX: prefix, DA2A_RECONCILE_INTERVAL_MS: String(LONG_INTERVAL_MS), DA2A_LOCK_DURATION_MS: String(LEASE_MS) });
    processes.push(first);
    await first.ready;
    const { agent, sent, refs } = await setUp(prefix, 50);
    await eventually(async () => (await leaseHolders(refs)).every((holder) => holder !== null), 'every stream open under a lease', 30_000);
    await first.kill('SIGKILL');
    const killedAt = Date.now();

    // A batch of 10 index entries: the 100 (50 delegations, 50 workflows) take ten pages of the start-up sweep.
    const fresh = await startTestFleet({ redisUrl: redisServer().url, prefix, reconcileIntervalMs: LONG_INTERVAL_MS, reconcileBatchSize: 10, lockDurationMs: LEASE_MS });
    fleets.push(fresh);
    const ours = `${fresh.context.workerId}/`;
    await eventually(async () => (await leaseHolders(refs)).every((holder) => holder?.startsWith(ours)), 'every delegation reattached by the fresh fleet', 20_000, 100);
    const seconds = (Date.now() - killedAt) / 1000;
    // The dead leases end at most LEASE_MS after the kill; the checks at their end add ≤ 0.5 s of jitter.
    expect(seconds).toBeLessThan(LEASE_MS / 1000 + 4);
    // The start-up sweep found leases still held: the checks at their end did the reattaching.
    expect((await reconcileOutcomes(fresh)).followed ?? 0).toBeGreaterThan(0);
    for (const { messageId } of sent) expect(agent.sendMessageCount(messageId)).toBe(1);
  }, 60_000);

  it('the start-up sweep reaches every unfinished record across many batches, and a check at a renewed lease end enqueues no further job', async () => {
    const prefix = `fleetrec${++counter}`;
    const fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, reconcileIntervalMs: LONG_INTERVAL_MS, reconcileBatchSize: 3 });
    fleets.push(fleet);
    const { agent, sent, refs } = await setUp(prefix, 12);
    // (The streams may be resubscribed on the way: the stream idle timeout is shorter than the agent's work.)
    await eventually(async () => (await leaseHolders(refs)).every((holder) => holder !== null), 'every stream open under a lease', 30_000);
    const before = await reconcileOutcomes(fleet);

    await fleet.sweepAll();
    // 24 index entries (12 delegations, 12 workflows) in batches of 3: every one reconciled; the streams are ours and live.
    await eventually(async () => {
      const after = await reconcileOutcomes(fleet);
      const followed = (after.followed ?? 0) - (before.followed ?? 0);
      const waits = (after['workflow-wait'] ?? 0) - (before['workflow-wait'] ?? 0);
      return followed >= 12 && waits >= 12;
    }, 'every delegation and workflow of the index reconciled', 15_000, 100);
    // Each check enqueued for a lease end finds the lease renewed: it moves the next check and enqueues nothing more.
    const reconcileQueue = new Queue('reconcile', { connection: redis, prefix: queuePrefix(prefix) });
    const pendingChecks = async () => (await reconcileQueue.getJobs(['wait', 'delayed', 'prioritized', 'active'])).filter((job) => job?.name === 'delegation').length;
    await eventually(async () => (await pendingChecks()) === 0, 'every check at a lease end ran', 15_000, 100);
    const settled = await reconcileOutcomes(fleet);
    await new Promise((resolve) => setTimeout(resolve, TEST_TIMINGS.lockDurationMs + 1_000));
    expect(await pendingChecks()).toBe(0);
    expect((await reconcileOutcomes(fleet)).followed).toBe(settled.followed);
    for (const { messageId } of sent) expect(agent.sendMessageCount(messageId)).toBe(1);
  }, 60_000);
});
