/**
 * A Task whose "artifacts" is [] while the task runs (a stale snapshot: the agent's store behind its stream) proves
 * nothing about the result: the journal keeps the artifacts it holds, so the workflow's view (GET, waitFor) still
 * shows them. The same for a running Task that lists only SOME of them (mend15: a stale snapshot taken between two
 * artifact updates, or before a push): its list is merged in, what it leaves out kept and named (`leftOut`, read in the
 * same script). A finished Task's list, [] included, is the agent's last word and replaces them. Real redis-server.
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

  // mend15 (b): a running Task listing a1 only replaced the journal's list: GET and waitFor showed a1 without a2 until
  // the full read before COMPLETED (or for good, had that read failed).
  it('a1 and a2 journaled, then a Task WORKING listing a1 only (stale): the view still shows a1 and a2, and the change names a2 left out', async () => {
    const ref = await runningRow();
    await apply(ref, { kind: 'artifact', id: 'a1' });
    await apply(ref, { kind: 'artifact', id: 'a2' });
    const result = await applyTask(producer.journal, ref, taskWith(ref.taskId, 'WORKING', ['a1']), { snapshot: true });
    expect(result).toMatchObject({ applied: true, leftOut: ['a2'] });
    expect(await heldIds(ref)).toEqual(['a1', 'a2']);
    const view = await producer.get(ref.workflowId);
    expect(view.steps[0]!.attempts[0]!.artifacts?.map((each) => each.artifactId).sort()).toEqual(['a1', 'a2']);
  });

  // mend15 (a): the stream read the journal's ids (HKEYS), then applied the Task; a push landing between the two was
  // replaced away, and the stream, which had not seen it, counted the Task as taking nothing back. Driven here as the
  // stream drives the journal: the ids the script names are read with the write, so the push is among them.
  it('a push lands between what the stream knew and the Task it applies: the pushed artifact is kept and named left out', async () => {
    const ref = await runningRow();
    await apply(ref, { kind: 'snapshot', ids: ['a1'] });
    const knownBefore = await producer.journal.heldArtifactIds(ref);
    await apply(ref, { kind: 'artifact', id: 'a2' });
    const result = await applyTask(producer.journal, ref, taskWith(ref.taskId, 'WORKING', ['a1']), { snapshot: true });
    expect(knownBefore).toEqual(['a1']);
    expect(result).toMatchObject({ applied: true, leftOut: ['a2'] });
    expect(await heldIds(ref)).toEqual(['a1', 'a2']);
  });

  // review16m: the merge wrote a stale Task's copy over the journal's newer one and said nothing of it (the stream took
  // the Task as whole: COMPLETED settled with the older copy).
  it('a1 journaled in two chunks, then a Task WORKING holding its first chunk alone: the change names a1 rewritten; the same Task again names none', async () => {
    const ref = await runningRow();
    const chunk = (text: string, append: boolean) =>
      applyStreamResponse(producer.journal, { ...ref, contextId: 'C1' }, { artifactUpdate: { taskId: ref.taskId, contextId: 'C1', artifact: { artifactId: 'a1', parts: [{ text }] }, append, lastChunk: append } });
    await chunk('one ', false);
    await chunk('two', true);
    const stale = { ...taskWith(ref.taskId, 'WORKING', []), artifacts: [{ artifactId: 'a1', parts: [{ text: 'one ' }] }] } as Task;
    expect(await applyTask(producer.journal, ref, stale, { snapshot: true })).toMatchObject({ applied: true, leftOut: [], rewritten: ['a1'] });
    expect(await applyTask(producer.journal, ref, stale, { snapshot: true })).toMatchObject({ applied: true, leftOut: [], rewritten: [] });
  });

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
  it.each([false, true])('property (finished at the end: %s): artifacts streamed and Task snapshots in any order, every snapshot with "artifacts": [] among them: a running row holds what it held before each snapshot and what the snapshot lists, a finished Task with [] holds none', async (finishEmpty) => {
    await fc.assert(
      fc.asyncProperty(fc.array(operation, { maxLength: 6 }), fc.array(operation, { maxLength: 6 }), async (before, after) => {
        const ref = await runningRow();
        // At least one artifact held before an empty snapshot (the fault's shape), then anything.
        const operations: Operation[] = [{ kind: 'artifact', id: 'a1' }, ...before, { kind: 'snapshot', ids: [] }, ...after];
        let held = new Set<string>();
        for (const each of operations) {
          await apply(ref, each);
          // A running Task's list is merged in (mend15): nothing held goes.
          if (each.kind === 'artifact') held.add(each.id);
          else for (const id of each.ids) held.add(id);
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

  /**
   * What happens to a running task's row (mend15): the agent makes or remakes artifact `id` and shows it (a stream's
   * update or a push: one script either way), the agent pushes its Task as it holds it now, or a stale snapshot comes:
   * the Task as the agent held it `age` changes ago.
   */
  type Step = { kind: 'show'; id: string } | { kind: 'pushed-task' } | { kind: 'stale'; age: number };
  const step: fc.Arbitrary<Step> = fc.oneof(
    fc.constantFrom('a1', 'a2', 'a3', 'a4').map((id) => ({ kind: 'show' as const, id })),
    fc.constant({ kind: 'pushed-task' as const }),
    fc.integer({ min: 0, max: 6 }).map((age) => ({ kind: 'stale' as const, age })),
  );
  it('property (mend15): snapshots (stale or not), pushes and artifact updates in any order: a running row never shows fewer artifacts than the agent showed, each change names exactly the held ones its list left out, the finished Task decides', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 10 }), fc.subarray(['a1', 'a2', 'a3', 'a4']), async (steps, takenBack) => {
        const ref = await runningRow();
        // The agent's artifacts (id -> text) after each of its changes; [0] none.
        const history: Map<string, string>[] = [new Map()];
        const shown = new Set<string>();
        const taskOf = (state: 'WORKING' | 'COMPLETED', held: Map<string, string>): Task =>
          ({ id: ref.taskId, contextId: 'C1', status: { state: `TASK_STATE_${state}` }, artifacts: [...held].map(([id, text]) => ({ artifactId: id, parts: [{ text }] })) }) as Task;
        for (const each of steps) {
          if (each.kind === 'show') {
            const now = new Map(history.at(-1)!);
            now.set(each.id, `v${history.length} of ${each.id}`);
            history.push(now);
            shown.add(each.id);
            await applyStreamResponse(producer.journal, { ...ref, contextId: 'C1' }, { artifactUpdate: { taskId: ref.taskId, contextId: 'C1', artifact: { artifactId: each.id, parts: [{ text: now.get(each.id)! }] }, lastChunk: true } });
            continue;
          }
          const held = each.kind === 'pushed-task' ? history.at(-1)! : history[Math.max(0, history.length - 1 - each.age)]!;
          const before = await heldIds(ref);
          const stored = new Map((await producer.journal.getDelegationView(ref))!.artifacts.map((artifact) => [artifact.artifactId, artifact.parts[0]?.text]));
          const result = await applyTask(producer.journal, ref, taskOf('WORKING', held), { snapshot: each.kind === 'stale' });
          // review16m: and, written, exactly the held ones it wrote over with another copy (a stale one's older text).
          if (result.applied) expect(result.rewritten).toEqual([...held].filter(([id, text]) => stored.has(id) && stored.get(id) !== text).map(([id]) => id));
          for (const id of held.keys()) shown.add(id);
          // What the change names: the ids held before it that its list leaves out (nothing else wrote meanwhile).
          expect(result.leftOut?.slice().sort()).toEqual(before.filter((id) => !held.has(id)));
          expect(await heldIds(ref)).toEqual([...new Set([...before, ...held.keys()])].sort());
          expect((await heldIds(ref)).filter((id) => shown.has(id)).length).toBe(shown.size);
        }
        // The agent's last word: what it made, less what it took back.
        const last = new Map([...history.at(-1)!].filter(([id]) => !takenBack.includes(id)));
        await applyTask(producer.journal, ref, taskOf('COMPLETED', last), { snapshot: true });
        const view = (await producer.journal.getDelegationView(ref))!;
        expect(view.state).toBe('COMPLETED');
        expect(view.artifacts.map((each) => [each.artifactId, each.parts[0]?.text])).toEqual([...last]);
      }),
      {
        numRuns: 40,
        // Reached whatever the seed: a stale snapshot leaving out a shown artifact, one after a push of the Task, and one
        // holding an older copy of a remade artifact (rewritten, review16m).
        examples: [
          [[{ kind: 'show', id: 'a1' }, { kind: 'show', id: 'a1' }, { kind: 'stale', age: 1 }], []],
          [[{ kind: 'show', id: 'a1' }, { kind: 'show', id: 'a2' }, { kind: 'stale', age: 1 }], []],
          [[{ kind: 'show', id: 'a1' }, { kind: 'pushed-task' }, { kind: 'show', id: 'a2' }, { kind: 'stale', age: 1 }, { kind: 'stale', age: 2 }], ['a1']],
        ],
      },
    );
  }, 180_000);
});
