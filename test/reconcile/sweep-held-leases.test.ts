/**
 * The sweep and held follow leases: a delegation whose follow lease someone holds (its stream is open, or was until
 * its holder died) is not reconciled at once; it is looked at just after its lease ends (index entry moved there, a
 * delayed batch job), as its reconcile would have decided after reading it. A fresh worker after a whole-fleet crash
 * read and parsed every record only to find each lease held by the dead fleet (docs/performance.md, recovery).
 * Entries without a lease, and those under a send lease, are reconciled at once as before.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createProducer, type Producer } from '@durable-a2a/producer';
import { indexMember, type DelegationRef } from '@durable-a2a/shared';
import type { Fleet } from '@durable-a2a/workers';
import { sweep } from '../../packages/workers/src/delegation/runs/sweep.ts';
import { useRedisClient, useRedisServer } from '../harness/redis.ts';
import { startDemoAgent, type DemoAgentHandle } from '../harness/agent.ts';
import { runsSlowly } from '../harness/agent-behaviours.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';

const redisServer = useRedisServer();
const redis = useRedisClient(redisServer);
/** Longer than the test: no timer sweep, renewal or idle cut runs meanwhile. */
const LONG_MS = 600_000;
const started: { close(): Promise<unknown> }[] = [];

afterEach(async () => {
  for (const resource of started.splice(0).reverse()) await resource.close();
});

const member = (ref: DelegationRef) => `${ref.workflowId}|${ref.delegationId}`;

describe('start-up sweep', () => {
  it('checks a delegation whose follow lease is held when the lease ends, not now; one without a lease or under a send lease now', async () => {
    const prefix = 'sweep-held';
    const agent: DemoAgentHandle = await startDemoAgent({ behaviour: runsSlowly(120_000) });
    const producer: Producer = createProducer({ redis: redisServer().url, addressPolicy: { allowLoopback: true }, prefix });
    // The streams' fleet: sends and follows, no reconcile worker (the sweep's jobs stay in the queue to be looked at).
    const following: Fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, workerId: 'following', queues: ['send', 'follow'], reconcileIntervalMs: LONG_MS, streamIdleTimeoutMs: LONG_MS, lockDurationMs: LONG_MS });
    started.push(agent, producer, following);
    const sent = await Promise.all(Array.from({ length: 4 }, (_, index) => producer.delegate({ agent: agent.cardUrl, text: `job ${index}`, idempotencyKey: `job-${index}` })));
    const refs: DelegationRef[] = sent.map(({ id }) => ({ workflowId: id, delegationId: 'main.1' }));
    const leaseKey = (ref: DelegationRef) => producer.journal.keys.followLease(ref.workflowId, ref.delegationId);
    // Each stream open under its follow lease (not the send lease the answer hands over to the follow).
    const followLease = (holder: string | null) => holder !== null && !holder.includes('/send/');
    await eventually(async () => (await Promise.all(refs.map((ref) => redis().get(leaseKey(ref))))).every(followLease), 'every stream open under a follow lease', 20_000);
    const [followedA, followedB, unleased, sendLeased] = refs as [DelegationRef, DelegationRef, DelegationRef, DelegationRef];
    await redis().del(leaseKey(unleased));
    await redis().set(leaseKey(sendLeased), 'gone-worker/send/7', 'PX', 60_000);

    // The fresh worker's start-up sweep, run here (its own sweep job waits in the queue: no process works on it).
    const fresh: Fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, workerId: 'fresh', queues: ['send'], reconcileIntervalMs: LONG_MS, lockDurationMs: LONG_MS });
    started.push(fresh);
    const sweptAt = Date.now();
    await sweep(fresh.context, true);

    const jobs = await fresh.context.queues.reconcile.getJobs(['wait', 'prioritized', 'delayed']);
    const batches = jobs.filter((job) => Array.isArray(job.data.refs)).map((job) => ({ members: (job.data.refs as DelegationRef[]).map(member), afterLease: job.data.afterLease === true, delayMs: job.opts.delay ?? 0 }));
    const now = batches.filter((batch) => !batch.afterLease).flatMap((batch) => batch.members);
    const atLeaseEnd = batches.filter((batch) => batch.afterLease);
    expect(now).toEqual(expect.arrayContaining([member(unleased), member(sendLeased)]));
    expect(now).not.toContain(member(followedA));
    expect(now).not.toContain(member(followedB));
    expect(atLeaseEnd.flatMap((batch) => batch.members).sort()).toEqual([member(followedA), member(followedB)].sort());
    // Due just after the lease's end (the leases last LONG_MS from their take), not at once.
    for (const batch of atLeaseEnd) expect(batch.delayMs).toBeGreaterThan(LONG_MS / 2);
    for (const ref of [followedA, followedB]) expect(Number(await redis().zscore(producer.journal.keys.unfinished(), indexMember(ref.workflowId, ref.delegationId)))).toBeGreaterThan(sweptAt + LONG_MS / 2);
  }, 60_000);
});
