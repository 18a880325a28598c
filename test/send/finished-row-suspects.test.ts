/**
 * A row's pending suspects (tasks refused pushes showed holding our message, noteSuspect-1.lua) are read even when the
 * row finishes before the reconciler's job runs (attack 24): the workflow waits for the reads (settle.ts), a holder is
 * surfaced (AMBIGUOUS naming it when read before the finish, else the finished row's `protocolError` DUPLICATE_TASK
 * naming both tasks), and a finished state never changes. Evidence counted lost (`suspectsLost`: never readable) is not
 * waited for: the settle waits only for pending suspects (`suspectsPending`), since the lost count never goes down and a
 * finished state stands (finished-suspects.ts says it for a person). Real redis-server, real fleet and push route, raw agent.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { eventually } from '../harness/fleet.ts';
import { useRedisServer } from '../harness/redis.ts';
import { closeKeptAfterEach } from '../harness/lifecycle.ts';
import { getTaskCalls, pushScene } from '../harness/push-scene.ts';
import { finishedAttempt, holder } from '../harness/holders.ts';
import { SUSPECT_TASK_ID_MAX } from '@durable-a2a/shared';

describe('the suspects of a row that finishes meanwhile', () => {
  const redisServer = useRedisServer();
  const keep = closeKeptAfterEach();

  it('property: any order of the holder T2 and decoys pushed before T1\'s finishing push, any finished state: every suspect read, T2 surfaced, the state kept', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 2 }).chain((decoys) => fc.tuple(fc.constant(decoys), fc.integer({ min: 0, max: decoys }))),
        fc.constantFrom('COMPLETED', 'CANCELED') as fc.Arbitrary<'COMPLETED' | 'CANCELED'>,
        async ([decoys, holderAt], finalState) => {
          let t1Done = false;
          const { env, workflowId, agent, push, holding, record } = await pushScene({ redisUrl: redisServer().url, keep }, (taskId, received) =>
            taskId === 'T1' ? holder('T1', t1Done ? finalState : 'WORKING', received) : taskId === 'T2' ? holder('T2', 'WORKING', received) : holder(taskId, 'WORKING', { ...received, messageId: 'M-other' }),
          );
          const order = Array.from({ length: decoys }, (_, n) => `D${n}`);
          order.splice(holderAt, 0, 'T2');
          for (const id of order) expect(await push(holding(id))).toBe(403);
          t1Done = true;
          const r = (await record()) as any;
          await push({ task: holder('T1', finalState, { messageId: r.messageId, contextId: r.contextId ?? r.requestedContextId }) });
          await finishedAttempt(env.producer, workflowId, 30_000);
          // Settled: the workflow decided (it waits for the suspects' reads).
          await eventually(async () => !['RUNNING'].includes((await env.producer.get(workflowId)).state), 'the workflow decided', 30_000);
          const row = (await env.producer.journal.getDelegation({ workflowId, delegationId: 'main.1' }))!;
          for (const id of order) expect(getTaskCalls(agent, id), `GetTask ${id}`).toBeGreaterThan(0);
          if (row.state === 'AMBIGUOUS') expect(row.error?.message).toContain('T2');
          else {
            expect(row.state).toBe(finalState);
            expect(row.protocolError?.code).toBe('DUPLICATE_TASK');
            expect(row.protocolError?.message).toMatch(/T2.*T1/);
          }
        },
      ),
      { numRuns: 4, examples: [[[0, 0], 'COMPLETED'], [[2, 2], 'CANCELED'], [[2, 0], 'COMPLETED']] },
    );
  }, 240_000);

  it('evidence counted lost only (an id too long to keep) when T1 finishes COMPLETED: the workflow decides (the settle waits only for suspects it can still read), the row stays COMPLETED', async () => {
    const { env, workflowId, ref, push, record } = await pushScene({ redisUrl: redisServer().url, keep }, (taskId, received) => holder(taskId, 'WORKING', received));
    // No reconcile runs until T1 finished: one before it would take the lost evidence to a person (AMBIGUOUS, unfinished row).
    const reconcile = env.fleet!.context.queues.reconcile;
    await reconcile.pause();
    expect(await env.producer.journal.noteSuspect(ref, 'x'.repeat(SUSPECT_TASK_ID_MAX + 1))).toBe('too-long');
    expect(await env.producer.journal.keepSuspects([ref])).toEqual([true]);
    const r = (await record()) as any;
    expect(await push({ task: holder('T1', 'COMPLETED', { messageId: r.messageId, contextId: r.contextId ?? r.requestedContextId }) })).toBe(204);
    expect((await record()).state).toBe('COMPLETED');
    await reconcile.resume();
    await eventually(async () => (await env.producer.get(workflowId)).state === 'COMPLETED', 'the workflow decided', 30_000);
    const row = await env.producer.journal.getDelegation(ref);
    expect(row === undefined || row.state === 'COMPLETED').toBe(true);
  }, 60_000);
});
