/**
 * A Task whose "artifacts" is [] while the task runs (a stale snapshot: the agent's store behind its stream) proves
 * nothing about the result: the journal keeps the artifacts it holds, so the workflow's view (GET, waitFor) still
 * shows them. A finished Task's list, [] included, is the agent's last word and replaces them. Real redis-server.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyStreamResponse, applyTask } from '@durable-a2a/shared';
import type { Task } from '@durable-a2a/a2a';
import { createProducer, type Producer } from '@durable-a2a/producer';
import { useRedisServer } from '../harness/redis.ts';

const redisServer = useRedisServer();

/** An operation on a running task's row: a whole artifact streamed, or a Task snapshot WORKING with these artifacts. */
type Operation = { kind: 'artifact'; id: string } | { kind: 'snapshot'; ids: string[] };

const artifact = (id: string) => ({ artifactId: id, parts: [{ text: `text of ${id}` }] });
const taskWith = (taskId: string, state: 'WORKING' | 'COMPLETED', ids: string[]): Task => ({ id: taskId, contextId: 'C1', status: { state: `TASK_STATE_${state}` }, artifacts: ids.map(artifact) }) as Task;

describe('a Task with "artifacts": [] while the task runs', () => {
  let producer: Producer;
  let run = 0;
  beforeAll(() => {
    producer = createProducer({ addressPolicy: { allowLoopback: true }, redis: redisServer().url, prefix: 'wj-empty' });
  });
  afterAll(async () => {
    await producer?.close();
  });
  /** A new running row (task T1) of a new workflow. */
  const runningRow = async () => {
    const workflowId = `empty-${++run}`;
    await producer.startWorkflow({ workflowId, steps: [{ name: 'main', agent: 'http://127.0.0.1:9/empty', message: { text: 'go' } }] });
    // A task id belongs to one delegation: each row its own.
    const ref = { workflowId, delegationId: 'main.1', taskId: `T${run}` };
    await applyTask(producer.journal, ref, taskWith(ref.taskId, 'WORKING', []), { snapshot: true });
    return ref;
  };
  type Ref = Awaited<ReturnType<typeof runningRow>>;
  const apply = async (ref: Ref, operation: Operation) => {
    if (operation.kind === 'snapshot') return void (await applyTask(producer.journal, ref, taskWith(ref.taskId, 'WORKING', operation.ids), { snapshot: true }));
    await applyStreamResponse(producer.journal, { ...ref, contextId: 'C1' }, { artifactUpdate: { taskId: ref.taskId, contextId: 'C1', artifact: artifact(operation.id), lastChunk: true } });
  };
  const heldIds = async (ref: Ref) => (await producer.journal.getDelegationView(ref))!.artifacts.map((each) => each.artifactId).sort();

  it('a1 journaled, then a Task WORKING with "artifacts": []: the view of the workflow still shows a1', async () => {
    const ref = await runningRow();
    await apply(ref, { kind: 'snapshot', ids: ['a1'] });
    await apply(ref, { kind: 'snapshot', ids: [] });
    expect(await heldIds(ref)).toEqual(['a1']);
    const view = await producer.get(ref.workflowId);
    expect(view.steps[0]!.attempts[0]!.artifacts?.map((each) => each.artifactId)).toEqual(['a1']);
  });

  const operation: fc.Arbitrary<Operation> = fc.oneof(
    fc.constantFrom('a1', 'a2', 'a3').map((id) => ({ kind: 'artifact' as const, id })),
    fc.subarray(['a1', 'a2', 'a3']).map((ids) => ({ kind: 'snapshot' as const, ids })),
  );
  // One run per ending, so both are reached whatever the seed.
  it.each([false, true])('property (finished at the end: %s): artifacts streamed and Task snapshots in any order, every snapshot with "artifacts": [] among them: a running row holds what it held before each [], a finished Task with [] holds none', async (finishEmpty) => {
    await fc.assert(
      fc.asyncProperty(fc.array(operation, { maxLength: 6 }), fc.array(operation, { maxLength: 6 }), async (before, after) => {
        const ref = await runningRow();
        // At least one artifact held before an empty snapshot (the fault's shape), then anything.
        const operations: Operation[] = [{ kind: 'artifact', id: 'a1' }, ...before, { kind: 'snapshot', ids: [] }, ...after];
        let held = new Set<string>();
        for (const each of operations) {
          await apply(ref, each);
          if (each.kind === 'artifact') held.add(each.id);
          else if (each.ids.length > 0) held = new Set(each.ids);
          expect(await heldIds(ref)).toEqual([...held].sort());
        }
        if (!finishEmpty) return;
        await applyTask(producer.journal, ref, taskWith(ref.taskId, 'COMPLETED', []), { snapshot: true });
        expect(await heldIds(ref)).toEqual([]);
        expect((await producer.journal.getDelegation(ref))!.state).toBe('COMPLETED');
      }),
      { numRuns: 25 },
    );
  }, 120_000);
});
