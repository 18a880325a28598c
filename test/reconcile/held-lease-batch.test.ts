/**
 * A reconcile batch that finds its entries' follow leases held (after a whole-fleet crash, every entry of the start-up
 * sweep's batches: the dead workers' leases run until the dead-worker sweep ends them) moves those index entries to
 * just after each lease's end in one ZADD for the whole batch, not one ZADD per entry, then enqueues the checks at
 * the lease ends; a batch run at its leases' end that finds them held again only moves them, in one ZADD too
 * (docs/performance.md, recovery). Each row is still read once per check, before its lease (the checks that do not
 * wait for a lease's end: finished, attempt deadline, question life).
 */
import { describe, expect, it } from 'vitest';
import { indexMember } from '@durable-a2a/shared';
import type { Fleet } from '@durable-a2a/workers';
import { reconcileBatch } from '../../packages/workers/src/delegation/runs/reconcile-batch.ts';
import { startMonitor, useRedisClient, useRedisServer } from '../harness/redis.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { closeKeptAfterEach } from '../harness/lifecycle.ts';
import { delegateJobs, startLongTasks } from '../harness/long-tasks.ts';

const redisServer = useRedisServer();
const redis = useRedisClient(redisServer);
const keep = closeKeptAfterEach();
/** Longer than the test: no lease renewal, timer sweep or idle cut runs meanwhile (their ZADDs would be counted). */
const LONG_MS = 600_000;
const COUNT = 6;

describe('a reconcile batch whose leases are held', () => {
  it.each([
    { afterLease: false, jobs: 1, checks: 'one delayed check enqueued' },
    { afterLease: true, jobs: 0, checks: 'no delayed check enqueued' },
  ])('afterLease $afterLease: one ZADD moves every entry to just after its lease end; $checks', async ({ afterLease, jobs }) => {
    const prefix = `held-batch-${afterLease}`;
    const { agent, producer } = await startLongTasks(redisServer().url, prefix);
    const options = { redisUrl: redisServer().url, prefix, reconcileIntervalMs: LONG_MS, streamIdleTimeoutMs: LONG_MS, lockDurationMs: LONG_MS };
    const holder: Fleet = await startTestFleet({ ...options, workerId: 'holder', queues: ['send', 'follow'] });
    const checker: Fleet = await startTestFleet({ ...options, workerId: 'checker', queues: ['send'] });
    keep(agent, producer, holder, checker);
    const { refs } = await delegateJobs(producer, agent.cardUrl, COUNT);
    const leaseKey = (ref: (typeof refs)[number]) => producer.journal.keys.followLease(ref.workflowId, ref.delegationId);
    await eventually(async () => (await Promise.all(refs.map((ref) => redis().get(leaseKey(ref))))).every((holderToken) => holderToken?.startsWith('holder/') && !holderToken.includes('/send/')), 'every stream open under the holder', 30_000);

    const unfinished = producer.journal.keys.unfinished();
    // The checker's own journal connection: the holder's commands (a follow's first check sent a turn after it took
    // its lease) are not the batch's.
    const checkerAddress = /addr=(\S+)/.exec(String(await checker.context.journal.redis.call('CLIENT', 'INFO')))?.[1];
    expect(checkerAddress).toBeDefined();
    const monitor = await startMonitor(redisServer().url);
    const moves: string[][] = [];
    const rows = new Set(refs.map((ref) => producer.journal.keys.delegation(ref.workflowId, ref.delegationId)));
    let reads = 0;
    let markerSeen = false;
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      if (args[0]?.toLowerCase() === 'echo' && args[1] === `${prefix}-marker`) markerSeen = true;
      if (!source.endsWith(checkerAddress!)) return;
      if (args[0]?.toLowerCase() === 'zadd' && args[1] === unfinished && !source.includes('lua')) moves.push(args.slice(2));
      if (['hgetall', 'hget', 'hmget'].includes(args[0]?.toLowerCase() ?? '') && rows.has(args[1] ?? '') && !source.includes('lua')) reads++;
    });
    const leaseMsBefore = await Promise.all(refs.map((ref) => redis().pttl(leaseKey(ref))));
    const startedAt = Date.now();
    let summary: string;
    try {
      summary = await reconcileBatch(checker.context, refs, 'test-batch', { afterLease, holderDied: false });
      // MONITOR reports commands in the order Redis ran them: once the marker is seen, so is every ZADD before it.
      await redis().echo(`${prefix}-marker`);
      await eventually(async () => markerSeen, 'the monitor saw the marker', 10_000);
    } finally {
      monitor.disconnect();
    }
    const endedAt = Date.now();
    expect(summary).toBe(`batch ${COUNT}: followed ${COUNT}`);
    expect(reads).toBe(COUNT);
    // One ZADD XX for the whole batch, every entry in it.
    expect(moves).toHaveLength(1);
    expect(moves[0]![0]).toBe('XX');
    const members = moves[0]!.slice(1).filter((_, index) => index % 2 === 1);
    expect(members.sort()).toEqual(refs.map((ref) => indexMember(ref.workflowId, ref.delegationId)).sort());
    // Each entry's next check: just after its lease ends (the lease only grows by renewal; jitter under 500 ms).
    for (const [index, ref] of refs.entries()) {
      const score = Number(await redis().zscore(unfinished, indexMember(ref.workflowId, ref.delegationId)));
      expect(score).toBeGreaterThanOrEqual(startedAt + leaseMsBefore[index]! - 1_000);
      expect(score).toBeLessThanOrEqual(endedAt + LONG_MS + 500);
    }
    // The checks at the lease ends: one delayed batch job for leases renewed together (none when run at their end).
    const leaseJobs = await redis().keys(`{${prefix}}:reconcile:reconcile-batch|lease|test-batch|*`);
    expect(leaseJobs.filter((key) => !/:(logs|lock|dependencies|processed)$/.test(key))).toHaveLength(jobs);
  }, 90_000);
});
