/**
 * The reconcile of a workflow's own index entry (`<workflowId>|*`, one per running workflow in the start-up sweep
 * after a whole-fleet crash) decides from the workflow row it read first: one HGETALL of the row, not a second one
 * in the decision (docs/performance.md, recovery). The decision's write stays compare-and-set on that row's version.
 * The running attempts' steps it read with that row are kept (`AttemptSteps`): a fresh worker's reconcile of the
 * delegation after it reads no definition for the attempt deadline.
 */
import { describe, expect, it } from 'vitest';
import type { Fleet } from '@durable-a2a/workers';
import { reconcileDelegation } from '../../packages/workers/src/delegation/runs/reconcile.ts';
import { useRedisClient, useRedisServer } from '../harness/redis.ts';
import { commandsDuring } from '../harness/commands-during.ts';
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
    const { result: outcome, seen: reads } = await commandsDuring(redisServer().url, redis(), (args) => args[0]?.toLowerCase() === 'hgetall' && args[1] === workflowKey, () =>
      reconcileDelegation(fleet.context, { workflowId: id, delegationId: '*' }, undefined),
    );
    expect(outcome).toBe('workflow-wait');
    expect(reads).toHaveLength(1);
  }, 60_000);

  it("keeps its running attempts' steps: the delegation's reconcile after it in the same process reads no definition", async () => {
    const prefix = 'workflow-steps-kept';
    const { agent, producer } = await startLongTasks(redisServer().url, prefix);
    const follower: Fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, queues: ['send', 'follow'], reconcileIntervalMs: 600_000 });
    // A second process (the fresh worker of a recovery): it has read no attempt of this workflow yet.
    const fresh: Fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, queues: [], reconcileIntervalMs: 600_000 });
    keep(agent, producer, follower, fresh);
    const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'a long job' });
    const ref = { workflowId: id, delegationId: 'main.1' };
    await eventually(async () => (await producer.journal.getDelegation(ref))?.state === 'WORKING', 'the step is followed', 20_000);
    const { messageId } = (await producer.journal.getDelegation(ref))!;
    expect(fresh.context.attemptSteps.has(messageId)).toBe(false);

    expect(await reconcileDelegation(fresh.context, { workflowId: id, delegationId: '*' }, undefined)).toBe('workflow-wait');
    expect(fresh.context.attemptSteps.has(messageId)).toBe(true);

    const workflowKey = producer.journal.keys.workflow(id);
    // The lease is the follower's: the reconcile checks the attempt deadline (its step's) and finds the stream held.
    const { result: outcome, seen: definitionReads } = await commandsDuring(
      redisServer().url,
      redis(),
      (args) => args[0]?.toLowerCase() === 'hget' && args[1] === workflowKey && args[2] === 'definition',
      () => reconcileDelegation(fresh.context, ref, undefined),
    );
    expect(outcome).toBe('followed');
    expect(definitionReads).toHaveLength(0);
  }, 60_000);
});
