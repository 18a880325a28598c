/**
 * Local follows (docs/concepts.md "Local follows and recovery"): "follow now" runs in the process that routed it,
 * with no follow job; the journal is its backstop (a SIGKILLed worker's
 * delegation is reattached by the reconciler), a graceful close hands it over
 * as a follow job, and busy local slots fall back to follow jobs. And recovery
 * after the whole fleet is SIGKILLed (below).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Queue } from 'bullmq';
import { createProducer, type Producer } from '@durable-a2a/producer';
import { queuePrefix, type DelegationRef } from '@durable-a2a/shared';
import type { Fleet } from '@durable-a2a/workers';
import { useRedisClient, useRedisServer } from '../harness/redis.ts';
import { startDemoAgent, type DemoAgentHandle } from '../harness/agent.ts';
import { completesWith, runsSlowly } from '../harness/agent-behaviours.ts';
import { eventually, reconcileOutcomes, spawnWorkerProcess, startTestFleet, TEST_TIMINGS, type WorkerProcess } from '../harness/fleet.ts';
import { delegateJobs, startLongTasks } from '../harness/long-tasks.ts';

const redisServer = useRedisServer({ appendOnly: true });
/** Longer than the test: only the start-up sweep and the checks at lease end can reattach anything. */
const LONG_INTERVAL_MS = 60_000;
/** Follow leases (and locks) of the first test: long enough that the fresh fleet's start-up sweep finds them held. */
const LEASE_MS = 4_000;
const redis = useRedisClient(redisServer);
let producer: Producer | undefined;
const fleets: Fleet[] = [];
const processes: WorkerProcess[] = [];
const agents: DemoAgentHandle[] = [];
let counter = 0;

afterEach(async () => {
  await Promise.all(fleets.splice(0).map((fleet) => fleet.close()));
  await Promise.all(processes.splice(0).map((worker) => worker.kill()));
  await Promise.all(agents.splice(0).map((agent) => agent.close()));
  await producer?.close();
  producer = undefined;
});

async function setUp(behaviour: Parameters<typeof startDemoAgent>[0]) {
  const prefix = `local${++counter}`;
  const agent = await startDemoAgent(behaviour);
  agents.push(agent);
  producer = createProducer({ redis: redisServer().url, addressPolicy: { allowLoopback: true }, prefix });
  const followQueue = new Queue('follow', { connection: redis(), prefix: queuePrefix(prefix) });
  /** Every follow job ever added under this prefix: BullMQ's job counter (completed jobs are removed at once). */
  const followJobs = async () => Number((await redis().get(`${queuePrefix(prefix)}:follow:id`)) ?? 0);
  /** Follow jobs waiting to run. */
  const pendingFollowJobs = async () => followQueue.getJobCountByTypes('wait', 'delayed', 'prioritized');
  return { prefix, agent, producer, followJobs, pendingFollowJobs };
}

const startFleet = async (prefix: string, options: Parameters<typeof startTestFleet>[0] extends infer O ? Partial<O> : never = {}) => {
  const fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, ...options });
  fleets.push(fleet);
  return fleet;
};

const completed = (id: string) =>
  eventually(async () => (await producer!.get(id)).state === 'COMPLETED', `workflow ${id} COMPLETED`, 30_000);

describe('local follows', () => {
  it('a happy-path delegation is followed in the process that sent it: no follow job, one SendMessage, one SubscribeToTask', async () => {
    const { prefix, agent, followJobs } = await setUp({ behaviour: completesWith('done', { delayMs: 300 }) });
    const fleet = await startFleet(prefix);
    const { id, messageId } = await producer!.delegate({ agent: agent.cardUrl, text: 'book', idempotencyKey: 'happy' });
    await completed(id);
    expect(await followJobs()).toBe(0);
    expect(agent.sendMessageCount(messageId)).toBe(1);
    expect(agent.requestCount('SubscribeToTask')).toBe(1);
    // The local follow ends (timed, then counted out) only after its settle has completed the workflow.
    await eventually(async () => (await fleet.metrics.localFollows.get()).values[0]!.value === 0, 'the local follow ended', 5_000);
    // Timed as the follow job was (durable_a2a_job_duration_seconds{queue="follow"}).
    const followTimings = (await fleet.metrics.jobDuration.get()).values.find((value) => value.metricName?.endsWith('_count') && value.labels.queue === 'follow');
    expect(followTimings?.value).toBeGreaterThanOrEqual(1);
  });

  it('a worker SIGKILLed while following locally: the reconciler of another worker reattaches, one SendMessage', async () => {
    const { prefix, agent, followJobs } = await setUp({ behaviour: runsSlowly(4_000) });
    const worker = spawnWorkerProcess({ REDIS_URL: redisServer().url, DA2A_PREFIX: prefix });
    processes.push(worker);
    await worker.ready;
    const { id, messageId } = await producer!.delegate({ agent: agent.cardUrl, text: 'book', idempotencyKey: 'killed' });
    const ref = { workflowId: id, delegationId: 'main.1' };
    await eventually(async () => agent.requestCount('SubscribeToTask') >= 1 && (await producer!.journal.followLeaseRemainingMs(ref)) > 0, 'the stream is open under the lease');
    // Followed in the worker itself: no follow job exists to be found stalled.
    expect(await followJobs()).toBe(0);
    await worker.kill();
    expect(['SUBMITTED', 'WORKING']).toContain((await producer!.journal.getDelegation(ref))!.state);

    await startFleet(prefix);
    await completed(id);
    expect(agent.sendMessageCount(messageId)).toBe(1);
    expect(agent.requestCount('SubscribeToTask')).toBeGreaterThanOrEqual(2);
  });

  it('a graceful close while following locally hands over: a follow job, the lease released, a second fleet finishes it', async () => {
    const { prefix, agent, followJobs, pendingFollowJobs } = await setUp({ behaviour: runsSlowly(3_000) });
    const first = await startFleet(prefix);
    const { id, messageId } = await producer!.delegate({ agent: agent.cardUrl, text: 'book', idempotencyKey: 'closed' });
    const ref = { workflowId: id, delegationId: 'main.1' };
    await eventually(async () => agent.requestCount('SubscribeToTask') >= 1 && (await producer!.journal.followLeaseRemainingMs(ref)) > 0, 'the stream is open under the lease');
    expect(await followJobs()).toBe(0);
    expect((await first.metrics.localFollows.get()).values[0]!.value).toBe(1);
    fleets.splice(fleets.indexOf(first), 1);
    await first.close();
    // close() waited for the local follow: it enqueued a follow job (which a closing fleet's follow worker may
    // have fetched once more and handed over again, as for any follow job) and released the lease.
    expect(await followJobs()).toBeGreaterThanOrEqual(1);
    expect(await pendingFollowJobs()).toBe(1);
    expect(await producer!.journal.followLeaseRemainingMs(ref)).toBe(0);

    await startFleet(prefix);
    await completed(id);
    expect(agent.sendMessageCount(messageId)).toBe(1);
  });

  it('a send lease handed over to a local follow that then cannot start goes back before the follow job runs', async () => {
    const { prefix, agent, followJobs } = await setUp({ behaviour: completesWith('done', { delayMs: 200 }) });
    // Leases far longer than the wait below: a lease left held would keep the follow job away for a minute.
    const fleet = await startFleet(prefix, { lockDurationMs: 60_000 });
    const context = fleet.context;
    const tokens: string[] = [];
    const issue = context.localFollowToken!.bind(context);
    // A free slot when the answer is journaled (the lease is handed over), none when the router starts the follow.
    context.localFollowToken = () => {
      const token = issue();
      if (token) tokens.push(token);
      return token;
    };
    context.followHere = () => false;
    const { id, messageId } = await producer!.delegate({ agent: agent.cardUrl, text: 'book', idempotencyKey: 'handed-back' });
    await eventually(async () => (await producer!.get(id)).state === 'COMPLETED', `workflow ${id} COMPLETED`, 10_000);
    expect(tokens).toHaveLength(1);
    // At least the router's follow job (a sweep may reattach the delegation as well while no lease is held).
    expect(await followJobs()).toBeGreaterThanOrEqual(1);
    expect(agent.sendMessageCount(messageId)).toBe(1);
    expect(await producer!.journal.followLeaseRemainingMs({ workflowId: id, delegationId: 'main.1' })).toBe(0);
  });

  it('with every local follow slot busy, the follow falls back to a follow job', async () => {
    const { prefix, agent, followJobs } = await setUp({ behaviour: runsSlowly(1_500) });
    const fleet = await startFleet(prefix, { localFollowSlots: 1 });
    const sent = await Promise.all([1, 2, 3].map((n) => producer!.delegate({ agent: agent.cardUrl, text: `book ${n}`, idempotencyKey: `busy-${n}` })));
    await Promise.all(sent.map(({ id }) => completed(id)));
    for (const { messageId } of sent) expect(agent.sendMessageCount(messageId)).toBe(1);
    // One local slot for three streams that overlap: at least two went through the follow queue.
    expect(await followJobs()).toBeGreaterThanOrEqual(2);
    expect(fleet.context.options.localFollowSlots).toBe(1);
  });
});

async function setUpInFlight(prefix: string, count: number) {
  const { agent, producer: started } = await startLongTasks(redisServer().url, prefix);
  agents.push(agent);
  producer = started;
  return { agent, ...(await delegateJobs(started, agent.cardUrl, count)) };
}

/** The follow lease holders (`<workerId>/<run id>`, or null) of `refs`, read from Redis. */
const leaseHolders = (refs: readonly DelegationRef[]) => Promise.all(refs.map((ref) => redis().get(producer!.journal.keys.followLease(ref.workflowId, ref.delegationId))));

/*
 * Recovery after the whole fleet is SIGKILLed: a dead worker's delegations are reattached right after
 * their follow leases run out, not a reconcile interval later (a reconcile that finds a lease held also enqueues a
 * delayed check at its end), and the start-up sweep reaches every unfinished record, however many batches they fill.
 */
describe('recovery after the whole fleet is SIGKILLed', () => {
  it('a fresh fleet with a long reconcile interval reattaches every delegation right after the dead leases expire; one SendMessage each', async () => {
    const prefix = `local${++counter}`;
    const first = spawnWorkerProcess({ REDIS_URL: redisServer().url, DA2A_PREFIX: prefix, DA2A_RECONCILE_INTERVAL_MS: String(LONG_INTERVAL_MS), DA2A_LOCK_DURATION_MS: String(LEASE_MS) });
    processes.push(first);
    await first.ready;
    const { agent, sent, refs } = await setUpInFlight(prefix, 50);
    // Every message received and every row under a lease. A lease alone is no proof of a stream: markSending takes the
    // same key before its SendMessage goes out, so a kill then leaves a send in flight, resent (one SendMessage all
    // the same) only once the fresh fleet's search settles, later than this test's look (CI under load: a count of 0).
    await eventually(async () => sent.every(({ messageId }) => agent.sendMessageCount(messageId) === 1) && (await leaseHolders(refs)).every((holder) => holder !== null), 'every message received and every stream open under a lease', 30_000);
    await first.kill('SIGKILL');

    // A batch of 10 index entries: the 100 (50 delegations, 50 workflows) take ten pages of the start-up sweep.
    const fresh = await startFleet(prefix, { reconcileIntervalMs: LONG_INTERVAL_MS, reconcileBatchSize: 10, lockDurationMs: LEASE_MS });
    const ours = `${fresh.context.workerId}/`;
    // Within a third of the reconcile interval (no periodic sweep ran): the checks at the dead leases' ends did it. A
    // bound on the wait, not a timing claim (a loaded machine takes longer than the leases' 4 s; it passes all the same).
    await eventually(async () => (await leaseHolders(refs)).every((holder) => holder?.startsWith(ours)), 'every delegation reattached by the fresh fleet', LONG_INTERVAL_MS / 3, 100);
    // The start-up sweep found leases still held: the checks at their end did the reattaching.
    expect((await reconcileOutcomes(fresh)).followed ?? 0).toBeGreaterThan(0);
    for (const { messageId } of sent) expect(agent.sendMessageCount(messageId)).toBe(1);
  }, 60_000);

  it('the start-up sweep reaches every unfinished record across many batches, and a check at a renewed lease end enqueues no further job', async () => {
    const prefix = `local${++counter}`;
    const fleet = await startFleet(prefix, { reconcileIntervalMs: LONG_INTERVAL_MS, reconcileBatchSize: 3 });
    const { agent, sent, refs } = await setUpInFlight(prefix, 12);
    // (The streams may be resubscribed on the way: the stream idle timeout is shorter than the agent's work.)
    await eventually(async () => (await leaseHolders(refs)).every((holder) => holder !== null), 'every stream open under a lease', 30_000);
    const before = await reconcileOutcomes(fleet);

    await fleet.sweepAll();
    // 24 index entries (12 delegations, 12 workflows) in batches of 3: every one reconciled (the streams are live).
    await eventually(async () => {
      const after = await reconcileOutcomes(fleet);
      const followed = (after.followed ?? 0) - (before.followed ?? 0);
      // A workflow decided "wait" here before, at the same versions, waits again from its versions alone (wait-memory.ts).
      const waitsOf = (outcomes: Record<string, number | undefined>) => (outcomes['workflow-wait'] ?? 0) + (outcomes['workflow-wait-unchanged'] ?? 0);
      const waits = waitsOf(after) - waitsOf(before);
      return followed >= 12 && waits >= 12;
    }, 'every delegation and workflow of the index reconciled', 15_000, 100);
    // Each check enqueued for a lease end finds the lease renewed: it moves the next check and enqueues nothing more.
    const reconcileQueue = new Queue('reconcile', { connection: redis(), prefix: queuePrefix(prefix) });
    // A check is a job of its own ('delegation') or a batch of them ('batch': the sweeps' and the lease ends').
    const pendingChecks = async () => (await reconcileQueue.getJobs(['wait', 'delayed', 'prioritized', 'active'])).filter((job) => job?.name === 'delegation' || job?.name === 'batch').length;
    await eventually(async () => (await pendingChecks()) === 0, 'every check at a lease end ran', 15_000, 100);
    const settled = await reconcileOutcomes(fleet);
    await new Promise((resolve) => setTimeout(resolve, TEST_TIMINGS.lockDurationMs + 1_000));
    expect(await pendingChecks()).toBe(0);
    expect((await reconcileOutcomes(fleet)).followed).toBe(settled.followed);
    for (const { messageId } of sent) expect(agent.sendMessageCount(messageId)).toBe(1);
  }, 60_000);
});
