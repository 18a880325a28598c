/**
 * The start-up sweep reads the suspects of every delegation it does not reconcile itself: one a follow run of another
 * live worker holds (left to it since 2539a08), and one whose claim it lost because its check moved between its scan
 * and its claim (the follow job a gracefully closed worker handed over, taken by the successor at once). No follower
 * reads suspects and a followed entry never comes due, so a suspect a push route kept just before it crashed (no
 * reconcile job) waited for the follow to end: CI, test/send/foreign-holder-unread.test.ts, 30 s. Real fleets, raw
 * JSON-RPC agent, real Redis.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { createProducer } from '@durable-a2a/producer';
import { indexMember, type DelegationRef } from '@durable-a2a/shared';
import { startupSweepVerdict } from '../../packages/workers/src/delegation/core/policy.ts';
import { sweep } from '../../packages/workers/src/delegation/runs/sweep.ts';
import { useRedisClient, useRedisServer } from '../harness/redis.ts';
import { closeKeptAfterEach } from '../harness/lifecycle.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { getTaskCalls, pushScene } from '../harness/push-scene.ts';
import { holder, personNaming, type Received } from '../harness/holders.ts';

const redisServer = useRedisServer();
const redis = useRedisClient(redisServer);
const keep = closeKeptAfterEach();
let counter = 0;
const host = () => ({ redisUrl: redisServer().url, keep });

/** The agent's GetTask: T1 and T2 hold our message. */
const t2Holds = (taskId: string, received: Received) => holder(taskId, 'WORKING', received);

/** Long leases (more than three liveness TTLs left: the start-up sweep leaves such a follow to its live worker), no timer sweep. */
const FOLLOWER = { lockDurationMs: 30_000, livenessTtlMs: 3_000, reconcileIntervalMs: 600_000 } as const;

describe('start-up sweep: suspects of a delegation it leaves to a live follower', () => {
  it('a graceful close, a live peer takes the follow over, the route keeps T2 and crashes; a successor starts: its start-up sweep reads T2 at once, AMBIGUOUS naming T1 and T2 (before: left to the follower, T2 never read)', async () => {
    const scene = await pushScene(host(), t2Holds);
    const first = scene.env.fleet!;
    const firstId = first.context.workerId;
    await first.close();
    // The graceful close gave its lease back and dropped its liveness key (nothing of it looks live).
    expect(await scene.env.producer.journal.isWorkerLive(firstId)).toBe(false);
    expect((await scene.env.producer.journal.leaseHolder(scene.ref))?.startsWith(`${firstId}/`) ?? false).toBe(false);
    const follower = await startTestFleet({ redisUrl: redisServer().url, prefix: scene.prefix, webhookUrl: scene.env.webhookUrl, workerId: 'follower', queues: ['follow'], ...FOLLOWER });
    keep(follower);
    // The handed-over follow job taken by the live peer (it follows only: the successor runs the start-up sweeps), its
    // lease renewed for 30 s.
    await eventually(async () => (await scene.env.producer.journal.leaseHolder(scene.ref))?.startsWith('follower/') === true, 'the peer follows T1', 20_000);
    // What the push route did before it crashed: the suspect kept in the journal, no reconcile job.
    expect(await scene.env.producer.journal.noteSuspect(scene.ref, 'T2')).toBe('kept');
    keep(await startTestFleet({ redisUrl: redisServer().url, prefix: scene.prefix, webhookUrl: scene.env.webhookUrl, workerId: 'successor', ...FOLLOWER }));
    const row = await personNaming(scene.env.producer, scene.workflowId, ['T1', 'T2'], 20_000);
    expect(row.taskId).toBe('T1');
    expect(getTaskCalls(scene.agent, 'T2')).toBeGreaterThanOrEqual(1);
  }, 60_000);
});

/** Who holds a row's follow lease when the start-up sweep runs (60 s left: a live peer's follow is left to it). */
type Holder = 'none' | 'live-follow' | 'dead-follow' | 'live-send';
const LIVE = 'live-peer';
const tokenOf = (holder: Holder, index: number): string | undefined =>
  ({ none: undefined, 'live-follow': `${LIVE}/follow-${index}`, 'dead-follow': `gone-peer/follow-${index}`, 'live-send': `${LIVE}/send/${index}` })[holder];

describe('start-up sweep over rows with and without suspects', () => {
  it('property: every row that keeps suspects gets a check (a batch, or a suspect read when left to a live follower); a live follower\'s row without suspects gets none; every other row is reconciled', async () => {
    const prefix = `startup-suspects${++counter}`;
    const producer = createProducer({ redis: redisServer().url, addressPolicy: { allowLoopback: true }, prefix });
    // No reconcile worker: the sweep's jobs stay in the queue, to be counted.
    const fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, queues: ['follow'], reconcileIntervalMs: 600_000, livenessTtlMs: 3_000 });
    keep(producer, fleet);
    await producer.journal.heartbeat(LIVE, 600_000);
    const row = fc.record({ holder: fc.constantFrom<Holder>('none', 'live-follow', 'dead-follow', 'live-send'), suspect: fc.constantFrom('none', 'pending', 'lost') });
    let made = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(row, { minLength: 1, maxLength: 6 }), async (rows) => {
        const refs: DelegationRef[] = [];
        for (const [index, drawn] of rows.entries()) {
          const { id } = await producer.delegate({ agent: 'http://127.0.0.1:9/.well-known/agent-card.json', text: `job ${index}`, idempotencyKey: `k${++made}` });
          const ref = { workflowId: id, delegationId: 'main.1' };
          refs.push(ref);
          const token = tokenOf(drawn.holder, index);
          if (token) await redis().set(producer.journal.keys.followLease(id, 'main.1'), token, 'PX', 60_000);
          if (drawn.suspect === 'pending') expect(await producer.journal.noteSuspect(ref, 'T2')).toBe('kept');
          if (drawn.suspect === 'lost') expect(await producer.journal.noteSuspect(ref, 'T'.repeat(2_000))).toBe('too-long');
        }
        await fleet.context.queues.reconcile.obliterate({ force: true });
        await sweep(fleet.context, true);
        const jobs = await fleet.context.queues.reconcile.getJobs(['waiting', 'prioritized', 'delayed']);
        const batched = new Set(jobs.flatMap((job) => ((job.data as { refs?: DelegationRef[] }).refs ?? []).map((each) => indexMember(each.workflowId, each.delegationId))));
        const suspectReads = new Set(jobs.filter((job) => job.id?.includes('suspect')).map((job) => indexMember((job.data as DelegationRef).workflowId, (job.data as DelegationRef).delegationId)));
        for (const [index, drawn] of rows.entries()) {
          const member = indexMember(refs[index]!.workflowId, 'main.1');
          const left = drawn.holder === 'live-follow';
          expect(batched.has(member)).toBe(!left);
          expect(suspectReads.has(member)).toBe(left && drawn.suspect !== 'none');
        }
        // Done with: out of the index, so the next run's sweep reads its own rows only.
        for (const ref of refs) await producer.journal.removeFromIndex(ref);
      }),
      {
        numRuns: 15,
        examples: [
          [[{ holder: 'live-follow', suspect: 'pending' }, { holder: 'live-follow', suspect: 'none' }, { holder: 'live-follow', suspect: 'lost' }]],
          [[{ holder: 'dead-follow', suspect: 'pending' }, { holder: 'live-send', suspect: 'pending' }, { holder: 'none', suspect: 'lost' }]],
        ],
      },
    );
  }, 120_000);
});

describe('startupSweepVerdict', () => {
  it('property: an entry whose row keeps suspects is never left; one claimed and not followed by a live peer is reconciled; one claimed by another sweep or left to a live follower is not reconciled again', () => {
    const entry = fc.record({ claimed: fc.boolean(), followedByLive: fc.boolean(), keepsSuspects: fc.boolean() });
    fc.assert(
      fc.property(entry, (drawn) => {
        const verdict = startupSweepVerdict(drawn);
        if (drawn.keepsSuspects) expect(verdict).not.toBe('leave');
        expect(verdict === 'reconcile').toBe(drawn.claimed && !drawn.followedByLive);
        if (!drawn.keepsSuspects) expect(verdict === 'leave').toBe(!drawn.claimed || drawn.followedByLive);
      }),
      {
        examples: [
          // The CI case: the claim lost to the handed-over follow, T2 pending.
          [{ claimed: false, followedByLive: false, keepsSuspects: true }],
          // Left to a live follower, T2 pending.
          [{ claimed: true, followedByLive: true, keepsSuspects: true }],
          [{ claimed: true, followedByLive: true, keepsSuspects: false }],
          [{ claimed: false, followedByLive: false, keepsSuspects: false }],
          [{ claimed: true, followedByLive: false, keepsSuspects: true }],
        ],
      },
    );
  });
});
