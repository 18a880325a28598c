/**
 * The timer sweep checks every due entry of the unfinished index, a page of `reconcileBatchSize` at a time, not one
 * page per interval: every running workflow's entry comes due each interval, so with more running workflows than a
 * page an entry due now (a send to search for) waited behind them for several intervals (seen with 10,000 in flight:
 * eight sends left in INTENT for minutes behind 8,500 due workflow entries).
 */
import { describe, expect, it } from 'vitest';
import { indexMember, type DelegationRef } from '@durable-a2a/shared';
import type { Fleet } from '@durable-a2a/workers';
import { sweep } from '../../packages/workers/src/delegation/runs/sweep.ts';
import { useRedisClient, useRedisServer } from '../harness/redis.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
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
