/**
 * The reconcile of a workflow's own index entry (`<workflowId>|*`, one per running workflow in the start-up sweep
 * after a whole-fleet crash) decides from the workflow row it read first: one HGETALL of the row, not a second one
 * in the decision (docs/performance.md, recovery). The decision's write stays compare-and-set on that row's version.
 */
import { describe, expect, it } from 'vitest';
import type { Fleet } from '@durable-a2a/workers';
import { reconcileDelegation } from '../../packages/workers/src/delegation/runs/reconcile.ts';
import { startMonitor, useRedisClient, useRedisServer } from '../harness/redis.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { closeKeptAfterEach } from '../harness/lifecycle.ts';
import { startLongTasks } from '../harness/long-tasks.ts';

const redisServer = useRedisServer();
const redis = useRedisClient(redisServer);
const keep = closeKeptAfterEach();

describe("a workflow's own reconcile", () => {
  it('of a running workflow waiting on its followed step: reads the workflow row once and decides to wait', async () => {
    const prefix = 'workflow-reads';
    const { agent, producer } = await startLongTasks(redisServer().url, prefix);
    const fleet: Fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, queues: ['send', 'follow'], reconcileIntervalMs: 600_000 });
    keep(agent, producer, fleet);
    const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'a long job' });
    await eventually(async () => (await producer.journal.getDelegation({ workflowId: id, delegationId: 'main.1' }))?.state === 'WORKING', 'the step is followed', 20_000);

    const workflowKey = producer.journal.keys.workflow(id);
    const monitor = await startMonitor(redisServer().url);
    const reads: string[] = [];
    let markerSeen = false;
    monitor.on('monitor', (_time: string, args: string[]) => {
      if (args[0]?.toLowerCase() === 'hgetall' && args[1] === workflowKey) reads.push(args[1]);
      if (args[0]?.toLowerCase() === 'echo' && args[1] === 'workflow-reads-marker') markerSeen = true;
    });
    let outcome: string;
    try {
      outcome = await reconcileDelegation(fleet.context, { workflowId: id, delegationId: '*' }, undefined);
      // MONITOR reports commands in the order Redis ran them: once the marker is seen, so is every read before it.
      await redis().echo('workflow-reads-marker');
      await eventually(async () => markerSeen, 'the monitor saw the marker', 10_000);
    } finally {
      monitor.disconnect();
    }
    expect(outcome).toBe('workflow-wait');
    expect(reads).toHaveLength(1);
  }, 60_000);
});
