/**
 * The timer sweep checks every due entry of the unfinished index, a page of `reconcileBatchSize` at a time, not one
 * page per interval: every running workflow's entry comes due each interval, so with more running workflows than a
 * page an entry due now (a send to search for) waited behind them for several intervals (seen with 10,000 in flight:
 * eight sends left in INTENT for minutes behind 8,500 due workflow entries).
 * Two sweeps that read the same due entries at once check each entry once: a timer sweep whose job came due while no
 * worker ran (a whole-fleet crash), run by the fresh worker beside its start-up sweep, read every due workflow entry
 * too, and both enqueued it (every running workflow decided twice, docs/performance.md, recovery). Each sweep now
 * claims what it read with compare-and-set on the entry's next check (claimChecks-1.lua).
 */
import { describe, expect, it } from 'vitest';
import { indexMember, type DelegationRef } from '@durable-a2a/shared';
import type { Fleet } from '@durable-a2a/workers';
import { sweep } from '../../packages/workers/src/delegation/runs/sweep.ts';
import { useRedisClient, useRedisServer } from '../harness/redis.ts';
import { eventually, startTestFleet, startupSweepDone } from '../harness/fleet.ts';
import { closeKeptAfterEach } from '../harness/lifecycle.ts';
import { delegateJobs, startLongTasks } from '../harness/long-tasks.ts';

const redisServer = useRedisServer();
const redis = useRedisClient(redisServer);
/** Longer than the test: only the sweep called here runs. */
const LONG_INTERVAL_MS = 600_000;
const keep = closeKeptAfterEach();

describe('timer sweep', () => {
  it('checks every due entry across pages of reconcileBatchSize', async () => {
    const prefix = 'sweep-backlog';
    const { agent, producer } = await startLongTasks(redisServer().url, prefix);
    const fleet: Fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, reconcileIntervalMs: LONG_INTERVAL_MS, streamIdleTimeoutMs: LONG_INTERVAL_MS, reconcileBatchSize: 3 });
    keep(agent, producer, fleet);
    const { sent } = await delegateJobs(producer, agent.cardUrl, 10);
    const refs: DelegationRef[] = sent.flatMap(({ id }) => [{ workflowId: id, delegationId: 'main.1' }, { workflowId: id, delegationId: '*' }]);
    const unfinished = producer.journal.keys.unfinished();
    const leaseHeld = async () => (await Promise.all(sent.map(({ id }) => redis().exists(producer.journal.keys.followLease(id, 'main.1'))))).every((held) => held === 1);
    await eventually(leaseHeld, 'every stream open under a lease', 20_000);
    // Only the sweep called here may claim the due entries: the fleet's start-up sweep, paging the index while the
    // delegations were made, would claim the ones it reaches after they are made due (each entry is still checked once).
    await startupSweepDone(fleet);

    // Every entry due a second ago: seven pages of three (the lease renewals move the delegations' entries out again
    // meanwhile; the ten workflow entries stay due until checked).
    const dueAt = Date.now() - 1_000;
    await redis().zadd(unfinished, ...refs.flatMap((ref) => [dueAt, indexMember(ref.workflowId, ref.delegationId)]));
    const sweptAt = Date.now();
    const summary = await sweep(fleet.context, false);

    expect(Number(/swept (\d+)/.exec(summary)?.[1])).toBeGreaterThanOrEqual(10);
    expect(await redis().zcount(unfinished, '-inf', sweptAt)).toBe(0);
    // Each workflow entry moved to its next check (0.5 to 1.5 intervals from the sweep).
    for (const { id } of sent) expect(Number(await redis().zscore(unfinished, indexMember(id, '*')))).toBeGreaterThan(sweptAt + LONG_INTERVAL_MS / 2 - 1_000);
  }, 60_000);
});

describe('sweeps at once', () => {
  it('a timer sweep and a start-up sweep that read the same due entries enqueue each for one check', async () => {
    const prefix = 'sweep-claims';
    const { agent, producer } = await startLongTasks(redisServer().url, prefix);
    // No reconcile worker: the sweeps' batch jobs stay in the queue, to be counted.
    const fleet: Fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, queues: ['send', 'follow'], reconcileIntervalMs: LONG_INTERVAL_MS, streamIdleTimeoutMs: LONG_INTERVAL_MS });
    keep(agent, producer, fleet);
    const { sent } = await delegateJobs(producer, agent.cardUrl, 12);
    const leaseHeld = async () => (await Promise.all(sent.map(({ id }) => redis().exists(producer.journal.keys.followLease(id, 'main.1'))))).every((held) => held === 1);
    await eventually(leaseHeld, 'every stream open under a lease', 20_000);
    // Every workflow entry due, as after a crash that outlasted their next checks.
    const dueAt = Date.now() - 1_000;
    await redis().zadd(producer.journal.keys.unfinished(), ...sent.flatMap(({ id }) => [dueAt, indexMember(id, '*')]));

    await Promise.all([sweep(fleet.context, false), sweep(fleet.context, true)]);

    const jobs = await fleet.context.queues.reconcile.getJobs(['waiting', 'prioritized', 'delayed']);
    const checks = new Map<string, number>();
    for (const job of jobs) for (const ref of (job.data as { refs?: DelegationRef[] }).refs ?? []) checks.set(indexMember(ref.workflowId, ref.delegationId), (checks.get(indexMember(ref.workflowId, ref.delegationId)) ?? 0) + 1);
    // Each workflow entry (due, moved by nobody else) once.
    expect(sent.map(({ id }) => checks.get(indexMember(id, '*')) ?? 0)).toEqual(sent.map(() => 1));
    // Each followed delegation (not due: only the start-up sweep read it) at most once: not at all when its stream's
    // lease renewal moved its next check between the sweep's read and its claim (its follow is alive).
    expect(sent.map(({ id }) => checks.get(indexMember(id, 'main.1')) ?? 0).every((count) => count <= 1)).toBe(true);
  }, 60_000);
});
