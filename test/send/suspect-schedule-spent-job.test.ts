/**
 * The kind "a schedule waiting on a job id that can no longer run": after a round of suspect reads that could not read
 * some, only the job the round's ender asked for reads (policy.ts `suspectReadTurn`: `suspectReadJob`'s id at the
 * backoff's end), and every other asker asks for that same id. A job of that id that failed all its attempts before it
 * claimed its round stays in the failed set (a week or 10,000 jobs), so each add of that id was a no-op and the row's
 * suspects were never read until BullMQ evicted it. `enqueueReconcile` now removes a failed (or completed) job of that
 * id once its due time passed, before the add. Real redis-server, real BullMQ, a real fleet and a scripted agent.
 */
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { Queue, Worker } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { createProducer } from '@durable-a2a/producer';
import { DEFAULT_JOB_OPTIONS, createRedisClient, enqueueReconcile, queuePrefix, suspectReadJob } from '@durable-a2a/shared';
import { reconcileDelegation } from '../../packages/workers/src/delegation/runs/reconcile.ts';
import { useRedisServer, useRedisClient } from '../harness/redis.ts';
import { closeKeptAfterEach } from '../harness/lifecycle.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { intentRow } from '../harness/journal-rows.ts';
import { getTaskCalls } from '../harness/push-scene.ts';
import { startScriptedAgent, task } from '../harness/scripted-agent.ts';

const redisServer = useRedisServer();
const redis = useRedisClient(redisServer);
const keep = closeKeptAfterEach();
let counter = 0;

describe('the suspect read schedule and a spent job of the id it names', () => {
  it('the case: the job due after a failed round failed all its attempts before claiming; the next asker still gets T2 read', async () => {
    const prefix = `spent-job${++counter}-${Date.now()}`;
    const agent = await startScriptedAgent({
      GetTask: (params) => (String(params.id) === 'T1' ? { result: task('T1', 'WORKING') } : { error: { code: -32001, message: 'Task not found' } }),
      SubscribeToTask: () => ({ sse: [], endAfter: 'hang' }),
    });
    const producer = createProducer({ redis: redisServer().url, addressPolicy: { allowLoopback: true }, prefix });
    const fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, queues: ['reconcile'], reconcileIntervalMs: 600_000 });
    const reconcile = new Queue('reconcile', { connection: redis(), prefix: queuePrefix(prefix) });
    keep(fleet, producer, agent, reconcile);
    const journal = producer.journal;
    const ref = { workflowId: `wf-${prefix}`, delegationId: 'main.1' };
    // A round that could not read T2 (a 503), ended ten seconds ago: the next read is the job due at its backoff's end.
    const roundAt = Date.now() - 10_000;
    const { id } = suspectReadJob(ref, roundAt + DEFAULT_JOB_OPTIONS.reconcile.backoff.delay);
    // That job failed all its attempts before it claimed its round (here: job data the processor refuses), before
    // anything else asked for it.
    await reconcile.add('delegation', { workflowId: 5 } as never, { jobId: id, attempts: 1 });
    await eventually(async () => (await reconcile.getJobState(id)) === 'failed' || undefined, 'the due job failed', 30_000);
    const definition = JSON.stringify({ workflowId: ref.workflowId, steps: [{ name: 'main', agent: agent.cardUrl, message: { text: 'go' } }] });
    await journal.createWorkflow(ref.workflowId, { state: 'RUNNING', definition, createdAt: String(Date.now()) }, { ...intentRow(ref.workflowId), agentCardUrl: agent.cardUrl, createdAt: String(Date.now()) });
    await journal.applyStatus(ref, { mode: 'event', state: 'WORKING', taskId: 'T1', statusTimestamp: new Date().toISOString() });
    expect(await journal.noteSuspect(ref, 'T2')).toBe('kept');
    expect(await journal.clearSuspects(ref, { unread: ['T2'] }, DEFAULT_JOB_OPTIONS.reconcile.attempts, roundAt)).toEqual({ pending: 1, lost: 0, rounds: 1 });

    // Another asker (a renewal tick's or a push's job): not the job the schedule names, so it asks for that one.
    await reconcileDelegation(fleet.context, ref, 'tick-1');
    expect(await reconcile.getJobState(id)).not.toBe('failed');
    await eventually(async () => ((await journal.getDelegation(ref))?.suspects === undefined ? true : undefined), 'T2 read', 30_000);
    expect(getTaskCalls(agent, 'T2')).toBe(1);
  }, 90_000);

  it('property: asked for once its due time passed, the id is a job that will run, whatever a job of that id did before; a job not yet due, waiting or running is left as it is', async () => {
    const states = ['none', 'delayed', 'waiting', 'active', 'failed', 'completed'] as const;
    const seen = new Set<string>();
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...states), fc.boolean(), async (state, duePassed) => {
        const prefix = `spent-prop${++counter}`;
        const queue = new Queue('reconcile', { connection: redis(), prefix });
        const workerRedis = createRedisClient(redisServer().url);
        const worker = new Worker('reconcile', null, { connection: workerRedis, prefix });
        try {
          const ref = { workflowId: `wf${counter}`, delegationId: 'main.1' };
          const at = duePassed ? Date.now() - 5_000 : Date.now() + 60_000;
          const { id } = suspectReadJob(ref, at);
          if (state !== 'none') {
            await queue.add('delegation', ref, { jobId: id, delay: state === 'delayed' ? 60_000 : 0, removeOnComplete: false, removeOnFail: false });
            if (state === 'active' || state === 'failed' || state === 'completed') {
              const token = randomUUID();
              const job = (await worker.getNextJob(token, { block: false }))!;
              expect(job.id).toBe(id);
              if (state === 'failed') await job.moveToFailed(new Error('gave up before claiming'), token, false);
              if (state === 'completed') await job.moveToCompleted('wait', token, false);
            }
          }
          expect(await queue.getJobState(id)).toBe(state === 'none' ? 'unknown' : state);
          const before = (await queue.getJob(id))?.timestamp;
          await enqueueReconcile({ reconcile: queue }, ref, { suspect: undefined, at, now: Date.now() });
          const after = await queue.getJobState(id);
          seen.add(`${state}/${duePassed}/${after}`);
          if (state === 'none') expect(after).toBe(duePassed ? 'waiting' : 'delayed');
          else if (state === 'failed' || state === 'completed') expect(after).toBe(duePassed ? 'waiting' : state);
          else {
            // Waiting or running: the same job, untouched (removal would refuse a running one anyway).
            expect(after).toBe(state);
            expect((await queue.getJob(id))?.timestamp).toBe(before);
          }
        } finally {
          await worker.close(true);
          await queue.obliterate({ force: true });
          await queue.close();
          await workerRedis.quit();
        }
      }),
      { numRuns: 40, examples: states.flatMap((state) => [[state, true] as [(typeof states)[number], boolean], [state, false] as [(typeof states)[number], boolean]]) },
    );
    // Every prior state was met, due and not.
    expect(seen.size).toBe(states.length * 2);
  }, 120_000);
});
