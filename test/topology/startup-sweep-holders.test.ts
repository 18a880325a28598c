/**
 * The start-up sweep and the leases of other workers (docs/performance.md, "branch perf-recovery6"): after a
 * whole-fleet SIGKILL the fresh worker's start-up sweep does not reconcile the records under the dead worker's
 * leases (it read each row and lease TTL, found the lease held and scheduled a check at its end, and the dead-worker
 * sweep's batch then read it all again): they wait for that worker's liveness key to end and are left to its
 * dead-worker sweep, which reattaches each once. A live peer's leases are checked as before, never taken.
 * Counted with the reconcile outcome metric, not timed. Leases last 10 minutes: only the liveness path ends them.
 */
import { hostname } from 'node:os';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { createProducer, type Producer } from '@durable-a2a/producer';
import { Journal, journalKeys } from '@durable-a2a/shared';
import type { Fleet } from '@durable-a2a/workers';
import { useRedisClient, useRedisServer } from '../harness/redis.ts';
import { eventually, reconcileOutcomes, spawnWorkerProcess, startTestFleet, type WorkerProcess } from '../harness/fleet.ts';
import { useHeldTasks } from '../harness/long-tasks.ts';

const redisServer = useRedisServer({ appendOnly: true });
const redis = useRedisClient(redisServer);
let counter = 0;
const timings = { lockDurationMs: 600_000, livenessTtlMs: 3_000 };

describe('leasesOfListedWorkers', () => {
  it('keeps the holders on the roster, other than the caller, with their key\'s ms left (0: ran out); groups their refs in order', async () => {
    const journal = new Journal(redis(), { prefix: `holders${++counter}`, retentionMs: 60_000 });
    const refOf = (index: number) => ({ workflowId: `wf${counter}-${index}`, delegationId: 'main.1' });
    await journal.heartbeat('live', 60_000);
    await journal.heartbeat('self', 60_000);
    await journal.heartbeat('gone', 30); // on the roster, its key runs out
    await journal.lease(refOf(0), 'acquire', 'live/1', 600_000);
    await journal.lease(refOf(1), 'acquire', 'self/2', 600_000);
    await journal.lease(refOf(2), 'acquire', 'live/send/3', 600_000);
    await journal.lease(refOf(3), 'acquire', 'never-beat/4', 600_000);
    await journal.lease(refOf(5), 'acquire', 'gone/5', 600_000);
    await journal.heartbeat('left', 60_000);
    await journal.leaveFleet('left'); // a graceful close: off the roster
    await journal.lease(refOf(6), 'acquire', 'left/6', 600_000);
    await eventually(async () => !(await journal.isWorkerLive('gone')), 'gone\'s key ran out');
    const held = await journal.leasesOfListedWorkers([0, 1, 2, 3, 4, 5, 6].map(refOf), 'self');
    expect([...held.keys()]).toEqual(['live', 'gone']);
    expect(held.get('gone')).toEqual({ refs: [refOf(5)], livenessMs: 0 });
    expect(held.get('live')!.refs).toEqual([refOf(0), refOf(2)]);
    expect(held.get('live')!.livenessMs).toBeGreaterThan(0);
    expect(held.get('live')!.livenessMs).toBeLessThanOrEqual(60_000);
  });

  it('property: a ref is returned under worker w exactly when its lease names w, w is not the caller, and w is on the roster', async () => {
    const workers = ['a', 'b', 'c', 'self'];
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.option(fc.constantFrom(...workers), { nil: undefined }), { minLength: 0, maxLength: 12 }),
        fc.subarray(workers),
        async (holders, listed) => {
          const journal = new Journal(redis(), { prefix: `holdersp${++counter}`, retentionMs: 60_000 });
          const refs = holders.map((_, index) => ({ workflowId: `wf${counter}-${index}`, delegationId: 'main.1' }));
          // A listed worker beat once, with a long or a short TTL (its key may have run out: it stays listed).
          for (const [index, worker] of listed.entries()) await journal.heartbeat(worker, index % 2 === 0 ? 60_000 : 1);
          for (const [index, holder] of holders.entries()) if (holder) await journal.lease(refs[index]!, 'acquire', `${holder}/${index}`, 600_000);
          const held = await journal.leasesOfListedWorkers(refs, 'self');
          const expected = new Map<string, typeof refs>();
          holders.forEach((holder, index) => {
            if (!holder || holder === 'self' || !listed.includes(holder)) return;
            expected.set(holder, [...(expected.get(holder) ?? []), refs[index]!]);
          });
          expect(new Map([...held].map(([worker, { refs }]) => [worker, refs]))).toEqual(expected);
        },
      ),
      { numRuns: 40 },
    );
  });
});

describe('a start-up sweep after a whole-fleet SIGKILL', () => {
  const held = useHeldTasks();
  let producer: Producer | undefined;
  const fleets: Fleet[] = [];
  const processes: WorkerProcess[] = [];

  afterEach(async () => {
    held.release();
    await Promise.all(fleets.splice(0).map((fleet) => fleet.close()));
    await Promise.all(processes.splice(0).map((worker) => worker.kill()));
    await producer?.close();
  });

  /** `count` delegations to held tasks, followed by `holderId` (a worker of `holder`'s leases); each stream open. */
  const followedBy = async (prefix: string, count: number, holderId: () => string) => {
    const agent = held.agent();
    held.hold();
    producer = createProducer({ redis: redisServer().url, addressPolicy: { allowLoopback: true }, prefix });
    const started = await Promise.all(Array.from({ length: count }, (_, index) => producer!.delegate({ agent: agent.cardUrl, text: `job ${index}`, idempotencyKey: `${prefix}-${index}` })));
    const refs = started.map(({ id }) => ({ workflowId: id, delegationId: 'main.1' }));
    const keys = journalKeys(prefix);
    const owners = async () => Promise.all(refs.map(async (ref) => (await redis().get(keys.followLease(ref.workflowId, ref.delegationId))) ?? ''));
    // Follow leases (`<workerId>/<run>`), not the send's (`<workerId>/send/…`): every task WORKING and streamed.
    await eventually(async () => (await owners()).every((owner) => owner.startsWith(`${holderId()}/`) && !owner.startsWith(`${holderId()}/send/`)), `all ${count} followed by ${holderId()}`, 60_000);
    return { agent, started, owners };
  };
  // A production reconcile interval: the timer sweep and the lease renewals' next checks stay out of the way.
  const fleetOptions = (prefix: string) => ({ redisUrl: redisServer().url, prefix, ...timings, reconcileIntervalMs: 30_000, concurrency: { follow: 100 }, followSlotsPerAgent: 100 });

  it('the dead worker\'s records are reconciled once each, by its dead-worker sweep; the start-up sweep reads none of them', async () => {
    const prefix = `fleetkill${++counter}`;
    const victim = spawnWorkerProcess({
      ...{ REDIS_URL: redisServer().url, DA2A_PREFIX: prefix, DA2A_LOCK_DURATION_MS: String(timings.lockDurationMs), DA2A_LIVENESS_TTL_MS: String(timings.livenessTtlMs) },
      ...{ DA2A_RECONCILE_INTERVAL_MS: '30000', DA2A_CONCURRENCY: 'follow=100', DA2A_FOLLOW_SLOTS_PER_AGENT: '100' },
    });
    processes.push(victim);
    await victim.ready;
    const { agent, started, owners } = await followedBy(prefix, 20, () => `${hostname()}-${victim.child.pid}`);
    await victim.kill('SIGKILL');
    const fresh = await startTestFleet({ ...fleetOptions(prefix), workerId: 'fresh' });
    fleets.push(fresh);
    await eventually(async () => (await owners()).every((owner) => owner.startsWith('fresh/')), 'all 20 followed by the fresh worker', 60_000);
    // The start-up sweep's batch of the dead worker's records ran (just past its liveness key's end) and read nothing.
    const outcomes = await eventually(async () => {
      const seen = await reconcileOutcomes(fresh);
      return (seen['holder-dead'] ?? 0) + (seen.followed ?? 0) >= 20 && seen;
    }, 'the start-up sweep\'s checks of the dead worker\'s records', 60_000);
    // On the code before: followed 20 (the start-up sweep found each lease held and read each row), then reattached 20.
    expect({ reattached: outcomes.reattached, followed: outcomes.followed ?? 0, 'holder-dead': outcomes['holder-dead'] ?? 0 }).toEqual({ reattached: 20, followed: 0, 'holder-dead': 20 });
    expect((await fresh.metrics.leasesTakenOver.get()).values[0]!.value).toBe(20);
    held.release();
    for (const { id } of started) await eventually(async () => (await producer!.get(id)).state === 'COMPLETED', `workflow ${id} completed`, 60_000);
    expect(started.map(({ messageId }) => agent.sendMessageCount(messageId))).toEqual(started.map(() => 1));
  }, 180_000);

  it('a live peer\'s records: checked after its liveness key\'s end, found held, never taken', async () => {
    const prefix = `livepeer${++counter}`;
    // The peer runs no reconcile jobs: the fresh worker's start-up sweep and its batches are the fresh worker's.
    const peer = await startTestFleet({ ...fleetOptions(prefix), workerId: 'peer', queues: ['send', 'follow', 'verify', 'compensate', 'notify'] });
    fleets.push(peer);
    const { agent, started, owners } = await followedBy(prefix, 10, () => 'peer');
    const fresh = await startTestFleet({ ...fleetOptions(prefix), workerId: 'fresh' });
    fleets.push(fresh);
    const outcomes = await eventually(async () => {
      const seen = await reconcileOutcomes(fresh);
      return (seen.followed ?? 0) + (seen['holder-dead'] ?? 0) >= 10 && seen;
    }, 'the peer\'s records checked', 60_000);
    expect({ followed: outcomes.followed, 'holder-dead': outcomes['holder-dead'] ?? 0, reattached: outcomes.reattached ?? 0 }).toEqual({ followed: 10, 'holder-dead': 0, reattached: 0 });
    expect((await owners()).every((owner) => owner.startsWith('peer/') && !owner.startsWith('peer/send/'))).toBe(true);
    held.release();
    for (const { id } of started) await eventually(async () => (await producer!.get(id)).state === 'COMPLETED', `workflow ${id} completed`, 60_000);
    expect(started.map(({ messageId }) => agent.sendMessageCount(messageId))).toEqual(started.map(() => 1));
  }, 180_000);
});
