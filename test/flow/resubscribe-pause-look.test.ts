/**
 * Resubscriptions to an agent without a resubscribe rate read its pause the way its sends do: one look (agentFlow-2.lua)
 * per worker and `pauseCheckMs`, shared by the resubscriptions that ask meanwhile, not one script call per
 * resubscription (a fresh worker reattaching 10,000 streams asked 10,000 times; docs/performance.md, recovery).
 */
import { describe, expect, it } from 'vitest';
import type { DelegationRef } from '@durable-a2a/shared';
import type { Fleet } from '@durable-a2a/workers';
import { useRedisClient, useRedisServer, startMonitor } from '../harness/redis.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { closeKeptAfterEach } from '../harness/lifecycle.ts';
import { delegateJobs, startLongTasks } from '../harness/long-tasks.ts';

const redisServer = useRedisServer();
const redis = useRedisClient(redisServer);
/** Longer than the test: no timer sweep, renewal, idle cut or lapse of a look runs meanwhile. */
const LONG_MS = 600_000;
const keep = closeKeptAfterEach();

describe('resubscriptions to an agent without limits', () => {
  it('five resubscriptions (streams handed over by a closing worker) ask agentFlow once between them', async () => {
    const prefix = 'resubscribe-look';
    const { agent, producer } = await startLongTasks(redisServer().url, prefix);
    keep(agent, producer);
    const options = { redisUrl: redisServer().url, prefix, reconcileIntervalMs: LONG_MS, streamIdleTimeoutMs: LONG_MS, lockDurationMs: LONG_MS, pauseCheckMs: LONG_MS };
    const closing: Fleet = await startTestFleet({ ...options, workerId: 'closing', queues: ['send', 'follow'] });
    const { refs } = await delegateJobs(producer, agent.cardUrl, 5);
    const leaseKey = (ref: DelegationRef) => producer.journal.keys.followLease(ref.workflowId, ref.delegationId);
    const holders = () => Promise.all(refs.map((ref) => redis().get(leaseKey(ref))));
    await eventually(async () => (await holders()).every((holder) => holder?.startsWith('closing/') && !holder.includes('/send/')), 'every stream open under the closing worker', 20_000);
    // A graceful close hands each stream over: a follow job each, a resubscription (`again`) for the next worker.
    await closing.close();

    const monitor = await startMonitor(redisServer().url);
    const flowCalls: string[] = [];
    monitor.on('monitor', (_time: string, args: string[]) => {
      if (args[0]?.toLowerCase().startsWith('eval') && args.some((arg) => arg.includes(':agents:flow:'))) flowCalls.push(args[0]);
    });
    try {
      const fresh: Fleet = await startTestFleet({ ...options, workerId: 'fresh', queues: ['follow'] });
      keep(fresh);
      await eventually(async () => (await holders()).every((holder) => holder?.startsWith('fresh/')), 'every stream open again under the fresh worker', 30_000);
    } finally {
      monitor.disconnect();
    }
    expect(flowCalls).toHaveLength(1);
  }, 90_000);
});
