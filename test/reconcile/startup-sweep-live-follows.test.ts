/**
 * The start-up sweep leaves a delegation a follow run of another LIVE worker holds (its liveness key present) to that
 * worker: the follower keeps its next check moving and ends it at its attempt deadline itself
 * (`test/stream/follow-deadline.test.ts`); reconciling it here only found the lease held (a sixth of a fresh worker's
 * CPU after a whole-fleet crash, docs/performance.md). Every other holder is reconciled as before: a follow run of a
 * worker whose liveness key is gone (dead: the start-up sweep is its recovery too), a send run (its sender may have
 * stalled: the search decides), an earlier process under this worker's own id, no lease at all, and a live worker's
 * follow lease with three liveness TTLs or less left (were that worker dead, its lease could run out before a heartbeat
 * names it, and the dead-worker sweep, which ends only leases still naming it, would pass the delegation over).
 * A follow run of a dead worker still on the roster (its key gone, no heartbeat has named it yet: a fresh worker started
 * after a whole-fleet crash, once the dead workers' keys ran out) is left too: the dead-worker sweep ends its lease once
 * a heartbeat names it, within about two TTLs; a dead worker off the roster is reconciled as before.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { createProducer } from '@durable-a2a/producer';
import { Journal, indexMember, type DelegationRef } from '@durable-a2a/shared';
import type { Fleet } from '@durable-a2a/workers';
import { sweep } from '../../packages/workers/src/delegation/runs/sweep.ts';
import { isSendRunToken } from '../../packages/workers/src/delegation/io/send-errors.ts';
import { useRedisClient, useRedisServer } from '../harness/redis.ts';
import { startTestFleet } from '../harness/fleet.ts';
import { closeKeptAfterEach } from '../harness/lifecycle.ts';

const redisServer = useRedisServer();
const redis = useRedisClient(redisServer);
const keep = closeKeptAfterEach();
let counter = 0;

/** Lease left (ms) of every holder but `live-follow-ending` (less than three liveness TTLs left: `MIN_LEFT_MS`). */
const LEASE_MS = 60_000;
const MIN_LEFT_MS = 9_000;
const leaseMsOf = (holder: Holder): number => (holder === 'live-follow-ending' ? 5_000 : LEASE_MS);
/** Who holds a delegation's follow lease. */
type Holder = 'none' | 'live-follow' | 'live-follow-ending' | 'dead-follow' | 'listed-follow' | 'listed-send' | 'live-send' | 'self-follow' | 'no-worker';
const LIVE = 'live-peer';
/** A dead worker no heartbeat named yet: its liveness key gone, still on the roster (the dead-worker sweep will end its leases). */
const LISTED = 'listed-peer';
/** A dead worker off the roster (forgotten: its sweep was another worker's), or one that never beat. */
const DEAD = 'gone-peer';
const tokenOf = (holder: Holder, self: string, index: number): string | undefined =>
  ({
    none: undefined,
    'live-follow': `${LIVE}/follow-${index}`,
    'live-follow-ending': `${LIVE}/follow-${index}`,
    'dead-follow': `${DEAD}/follow-${index}`,
    'listed-follow': `${LISTED}/follow-${index}`,
    'listed-send': `${LISTED}/send/${index}`,
    'live-send': `${LIVE}/send/${index}`,
    'self-follow': `${self}/follow-${index}`,
    'no-worker': `/follow-${index}`,
  })[holder];

/**
 * Puts `LISTED` on the roster with no liveness key: a worker that died and that no heartbeat has named yet. Its entry
 * is stamped ten minutes ahead, so no heartbeat of the test's fleet names it (and forgets it) while the test runs.
 */
async function listDeadWorker(journal: Journal): Promise<void> {
  await journal.redis.zadd(journal.keys.fleetWorkers(), Date.now() + 600_000, LISTED);
  await journal.redis.del(journal.keys.workerLiveness(LISTED));
}

describe('start-up sweep and live followers', () => {
  it('leaves the delegation a live peer follows; reconciles a dead peer\'s follow, a live send, its own id\'s, an unheld one and a live peer\'s lease about to run out', async () => {
    const prefix = `startup-live${++counter}`;
    const producer = createProducer({ redis: redisServer().url, addressPolicy: { allowLoopback: true }, prefix });
    // No reconcile worker: the sweep's batch jobs stay in the queue, to be counted.
    const fleet: Fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, queues: ['follow'], reconcileIntervalMs: 600_000, livenessTtlMs: 3_000 });
    keep(producer, fleet);
    const holders: Holder[] = ['live-follow', 'dead-follow', 'live-send', 'self-follow', 'none', 'live-follow-ending'];
    const refs: DelegationRef[] = [];
    for (const [index, holder] of holders.entries()) {
      const { id } = await producer.delegate({ agent: 'http://127.0.0.1:9/.well-known/agent-card.json', text: `job ${index}`, idempotencyKey: `k${index}` });
      refs.push({ workflowId: id, delegationId: 'main.1' });
      const token = tokenOf(holder, fleet.context.workerId, index);
      if (token) await redis().set(producer.journal.keys.followLease(id, 'main.1'), token, 'PX', leaseMsOf(holder));
    }
    await producer.journal.heartbeat(LIVE, 60_000);
    await fleet.context.queues.reconcile.obliterate({ force: true });

    const summary = await sweep(fleet.context, true);

    expect(summary).toMatch(/, 1 left to live followers$/);
    const jobs = await fleet.context.queues.reconcile.getJobs(['waiting', 'prioritized', 'delayed']);
    const checked = new Set(jobs.flatMap((job) => ((job.data as { refs?: DelegationRef[] }).refs ?? []).map((ref) => indexMember(ref.workflowId, ref.delegationId))));
    expect(holders.filter((_, index) => checked.has(indexMember(refs[index]!.workflowId, 'main.1')))).toEqual(['dead-follow', 'live-send', 'self-follow', 'none', 'live-follow-ending']);
    // Claimed all the same: the live one's next check moved on like the others' (its follower moves it again).
    expect(Number(await redis().zscore(producer.journal.keys.unfinished(), indexMember(refs[0]!.workflowId, 'main.1')))).toBeGreaterThan(Date.now());
  }, 60_000);

  it('leaves the delegation a dead peer still on the roster follows to the dead-worker sweep (a restart after its liveness key ran out)', async () => {
    const prefix = `startup-listed${++counter}`;
    const producer = createProducer({ redis: redisServer().url, addressPolicy: { allowLoopback: true }, prefix });
    // No reconcile worker: the sweep's batch jobs stay in the queue, to be counted.
    const fleet: Fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, queues: ['follow'], reconcileIntervalMs: 600_000, livenessTtlMs: 3_000 });
    keep(producer, fleet);
    await listDeadWorker(producer.journal);
    const holders: Holder[] = ['listed-follow', 'listed-send', 'dead-follow'];
    const refs: DelegationRef[] = [];
    for (const [index, holder] of holders.entries()) {
      const { id } = await producer.delegate({ agent: 'http://127.0.0.1:9/.well-known/agent-card.json', text: `job ${index}`, idempotencyKey: `k${index}` });
      refs.push({ workflowId: id, delegationId: 'main.1' });
      await redis().set(producer.journal.keys.followLease(id, 'main.1'), tokenOf(holder, fleet.context.workerId, index)!, 'PX', LEASE_MS);
    }
    await fleet.context.queues.reconcile.obliterate({ force: true });

    const summary = await sweep(fleet.context, true);

    expect(summary).toMatch(/, 1 left to live followers$/);
    const jobs = await fleet.context.queues.reconcile.getJobs(['waiting', 'prioritized', 'delayed']);
    const checked = new Set(jobs.flatMap((job) => ((job.data as { refs?: DelegationRef[] }).refs ?? []).map((ref) => indexMember(ref.workflowId, ref.delegationId))));
    // The listed peer's send lease is reconciled (its sender may only have stalled: the search decides), as is the
    // follow of a peer off the roster (no sweep of this process's fleet will end it).
    expect(holders.filter((_, index) => checked.has(indexMember(refs[index]!.workflowId, 'main.1')))).toEqual(['listed-send', 'dead-follow']);
  }, 60_000);

  it('property: followedByLiveWorkers is true exactly for a follow run of a live or listed worker other than this one with enough lease left', async () => {
    const journal = new Journal(redis(), { prefix: `startup-live-prop${++counter}` });
    await journal.heartbeat(LIVE, 600_000);
    await listDeadWorker(journal);
    const holder = fc.constantFrom<Holder>('none', 'live-follow', 'live-follow-ending', 'dead-follow', 'listed-follow', 'listed-send', 'live-send', 'self-follow', 'no-worker');
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(holder, { minLength: 0, maxLength: 12 }), async (drawn) => {
        const refs = drawn.map((_, index) => ({ workflowId: `w${++run}`, delegationId: `main.${index}` }));
        for (const [index, each] of drawn.entries()) {
          const token = tokenOf(each, 'self', index);
          if (token) await redis().set(journal.keys.followLease(refs[index]!.workflowId, refs[index]!.delegationId), token, 'PX', leaseMsOf(each));
        }
        const followed = await journal.followedByLiveWorkers(refs, 'self', (token) => !isSendRunToken(token), MIN_LEFT_MS);
        expect(followed).toEqual(drawn.map((each) => each === 'live-follow' || each === 'listed-follow'));
      }),
      { numRuns: 60, examples: [[['live-follow', 'live-follow-ending', 'live-send', 'self-follow', 'dead-follow', 'listed-follow', 'listed-send', 'none', 'no-worker']], [[]]] },
    );
  });
});
