/**
 * Review of attack12: a stream whose Task snapshot with "artifacts": [] (stale, or an agent taking its result back), or
 * (review14) listing only some of the artifacts streamed,
 * comes between artifact updates. Real redis-server, real fleet, scripted raw JSON-RPC agent (exact bytes).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { artifactText, finished, recordOf, useFieldCases, viewOf } from '../harness/field-cases.ts';
import { eventually } from '../harness/fleet.ts';
import { AU, SU, agentMessage, ev, task, taskEvent, userMessage } from '../harness/scripted-agent.ts';

const h = useFieldCases();

describe('review12: artifacts streamed after a Task snapshot that held none', () => {
  it('a1, a Task WORKING with "artifacts": [], a2 (whole), COMPLETED: the record holds a1 and a2 (read in full), one send', async () => {
    const { producer, agent, id } = await h.setUpAndDelegate(
      () => ({
        SendStreamingMessage: (params) => {
          const contextId = params.message.contextId;
          return {
            sse: [
              taskEvent(task('T1', 'SUBMITTED', { contextId, history: [params.message] })),
              ev(AU('a1', false, true, 'booked', { contextId })),
              taskEvent(task('T1', 'WORKING', { contextId, artifacts: [] })),
              ev(AU('a2', false, true, 'receipt', { contextId })),
              ev(SU('COMPLETED', { contextId })),
            ],
            endAfter: 'close',
          };
        },
        GetTask: () => ({ result: task('T1', 'COMPLETED', { artifacts: { a1: 'booked', a2: 'receipt' } }) }),
      }),
      { streamingSends: true },
    );
    const record = await finished(producer, id, 30_000);
    expect(record.state).toBe('COMPLETED');
    const view = await viewOf(producer, id);
    expect(artifactText(view, 'a2')).toBe('receipt');
    expect(artifactText(view, 'a1')).toBe('booked');
    expect(agent.count('SendStreamingMessage') + agent.count('SendMessage')).toBe(1);
  }, 45_000);

  it('property: artifacts streamed whole, Task snapshots with "artifacts": [] anywhere between them, COMPLETED: the record holds what the agent holds (its GetTask)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.boolean(), { minLength: 1, maxLength: 4 }), fc.boolean(), async (snapshotAfter, workingBetween) => {
        const names = snapshotAfter.map((_, index) => `a${index + 1}`);
        await expectWhole(names, (contextId, message) => {
          const frames = [taskEvent(task('T1', 'SUBMITTED', { contextId, history: [message], artifacts: [] }))];
          snapshotAfter.forEach((snapshot, index) => {
            frames.push(ev(AU(names[index]!, false, true, `text ${index + 1}`, { contextId })));
            if (workingBetween) frames.push(ev(SU('WORKING', { contextId })));
            if (snapshot) frames.push(taskEvent(task('T1', 'WORKING', { contextId, artifacts: [] })));
          });
          return frames;
        }, { snapshotAfter, workingBetween });
      }),
      { numRuns: 12 },
    );
  }, 300_000);
});

/**
 * A streaming send answered by `frames` (then COMPLETED) whose agent's GetTask holds `names` (`text <n>`): the record
 * must hold every one of them, with one send (`label` names the case in a failure).
 */
async function expectWhole(names: string[], frames: (contextId: string | undefined, message: unknown) => string[], label: unknown): Promise<void> {
  const { producer, agent, id } = await h.setUpAndDelegate(
    () => ({
      SendStreamingMessage: (params) => ({ sse: [...frames(params.message.contextId, params.message), ev(SU('COMPLETED', { contextId: params.message.contextId }))], endAfter: 'close' }),
      GetTask: () => ({ result: task('T1', 'COMPLETED', { artifacts: Object.fromEntries(names.map((name, index) => [name, `text ${index + 1}`])) }) }),
    }),
    { streamingSends: true },
  );
  const record = await finished(producer, id, 30_000);
  expect(record.state).toBe('COMPLETED');
  const view = await viewOf(producer, id);
  for (const [index, name] of names.entries()) expect(artifactText(view, name), JSON.stringify({ label, name })).toBe(`text ${index + 1}`);
  expect(agent.count('SendStreamingMessage') + agent.count('SendMessage')).toBe(1);
}

/**
 * Review14: a Task snapshot of an unfinished task that lists only SOME of the artifacts already streamed (a stale
 * snapshot taken between two artifact updates, or an agent taking one back). Its list replaced the journal's and the
 * stream took its view as whole: the COMPLETED after it settled with the listed artifacts alone, without a full read.
 */
describe('review14: a Task snapshot listing some of the streamed artifacts while the task runs', () => {
  /** `names` streamed whole, then a Task WORKING listing those of `listed` (by index). */
  const someListed = (names: string[], listed: number[]) => (contextId: string | undefined, message: unknown) => [
    taskEvent(task('T1', 'SUBMITTED', { contextId, history: [message] })),
    ...names.map((name, index) => ev(AU(name, false, true, `text ${index + 1}`, { contextId }))),
    taskEvent(task('T1', 'WORKING', { contextId, artifacts: Object.fromEntries(listed.map((index) => [names[index]!, `text ${index + 1}`])) })),
  ];

  it('a1, a2, a Task WORKING listing a1 alone, COMPLETED: the record holds a1 and a2 (read in full; fails on fix14: a2 lost)', async () => {
    await expectWhole(['a1', 'a2'], someListed(['a1', 'a2'], [0]), 'a1 of a1, a2');
  }, 45_000);

  it('property: 2..4 artifacts streamed, a snapshot listing a proper non-empty subset of them, COMPLETED: the record holds what the agent holds', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 2, max: 4 }).chain((count) => fc.tuple(fc.constant(count), fc.subarray([...Array(count).keys()], { minLength: 1, maxLength: count - 1 }))),
        async ([count, listed]) => {
          const names = [...Array(count).keys()].map((index) => `a${index + 1}`);
          await expectWhole(names, someListed(names, listed), { names, listed });
        },
      ),
      { numRuns: 8 },
    );
  }, 300_000);
});

describe('review13: a stream whose first snapshot holds "artifacts": [] while the journal holds artifacts from before it', () => {
  /**
   * The send's answer holds `held` artifacts (a plain send: its Task; a streaming send: its stream, cut); the resubscription's first snapshot has
   * "artifacts": [] (wiping what the journal holds), then `streamed` artifacts arrive whole, then COMPLETED. GetTask
   * shows every one of them: the record must hold them all.
   */
  const cutThenResubscribed = async (held: number, streamed: number, workingFirst: boolean, streamingSend = true) => {
    const names = Array.from({ length: held + streamed }, (_, index) => `a${index + 1}`);
    const texts = Object.fromEntries(names.map((name, index) => [name, `text ${index + 1}`]));
    const { producer, agent, id } = await h.setUpAndDelegate(
      () => ({
        SendStreamingMessage: (params) => {
          const contextId = params.message.contextId;
          const frames = [taskEvent(task('T1', 'SUBMITTED', { contextId, history: [params.message] }))];
          for (const name of names.slice(0, held)) frames.push(ev(AU(name, false, true, texts[name]!, { contextId })));
          return { sse: frames, endAfter: 'destroy' };
        },
        // A plain send: its answer, a Task WORKING, holds the first artifacts (the follow's stream is its first).
        SendMessage: (params) => ({ result: { task: task('T1', 'WORKING', { contextId: params.message.contextId, history: [params.message], artifacts: Object.fromEntries(names.slice(0, held).map((name) => [name, texts[name]!])) }) } }),
        // The read after the cut sees the task working (no artifacts field: the journal keeps what was streamed).
        GetTask: (_params, call) => ({ result: call.count === 1 ? task('T1', 'WORKING') : task('T1', 'COMPLETED', { artifacts: texts }) }),
        SubscribeToTask: () => {
          const frames = [taskEvent(task('T1', 'WORKING', { artifacts: [] }))];
          if (workingFirst) frames.push(ev(SU('WORKING')));
          for (const name of names.slice(held)) frames.push(ev(AU(name, false, true, texts[name]!)));
          frames.push(ev(SU('COMPLETED')));
          return { sse: frames, endAfter: 'close' };
        },
      }),
      { streamingSends: streamingSend },
    );
    const record = await finished(producer, id, 30_000);
    expect(record.state).toBe('COMPLETED');
    const view = await viewOf(producer, id);
    for (const name of names) expect(artifactText(view, name), JSON.stringify({ held, streamed, workingFirst, streamingSend, name })).toBe(texts[name]);
    expect(agent.count('SendStreamingMessage') + agent.count('SendMessage')).toBe(1);
  };

  it('a1 streamed, the stream cut; the resubscription: Task "artifacts": [], a2, COMPLETED: the record holds a1 and a2 (read in full)', async () => {
    await cutThenResubscribed(1, 1, false);
  }, 45_000);

  it('a send answered by a Task WORKING holding a1; the first subscription: Task "artifacts": [], a2, COMPLETED: the record holds a1 and a2 (read in full)', async () => {
    await cutThenResubscribed(1, 1, false, false);
  }, 45_000);

  it('property: any number of artifacts held from the cut stream and streamed after the empty snapshot: the record holds what the agent holds', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 3 }), fc.integer({ min: 1, max: 3 }), fc.boolean(), fc.boolean(), async (held, streamed, workingFirst, streamingSend) => cutThenResubscribed(held, streamed, workingFirst, streamingSend)),
      { numRuns: 8 },
    );
  }, 300_000);
});

describe('a stale Task snapshot with "artifacts": [] while the task runs', () => {
  it('a1 streamed, a Task WORKING with "artifacts": [], then the task asks a question (the stream ends there): the view shows a1 while the question waits', async () => {
    const stream = (contextId: string, history: unknown[]) => [
      taskEvent(task('T1', 'SUBMITTED', { contextId, history })),
      ev(AU('a1', false, true, 'booked', { contextId })),
      taskEvent(task('T1', 'WORKING', { contextId, artifacts: [] })),
      ev(SU('INPUT_REQUIRED', { contextId, message: agentMessage('how many?', { taskId: 'T1', contextId }) })),
    ];
    const { producer, id } = await h.setUpAndDelegate(
      () => ({
        SendStreamingMessage: (params) => ({ sse: stream(params.message.contextId, [params.message]), endAfter: 'hang' }),
        // The agent's store stays behind: any read shows the question with no artifacts (no proof they were taken back).
        GetTask: () => ({ result: task('T1', 'INPUT_REQUIRED', { artifacts: [] }) }),
      }),
      { streamingSends: true },
    );
    await eventually(async () => (await recordOf(producer, id))?.state === 'INPUT_REQUIRED', 'the question journaled', 30_000);
    expect(artifactText(await viewOf(producer, id), 'a1')).toBe('booked');
  }, 45_000);
});

describe('review12: adoption by context never takes a task the listing only claims is in our context', () => {
  it('an agent stamping the ListTasks filter\'s contextId on its one task (another client\'s, its own context when read): never adopted', async () => {
    let contextId = '';
    const theirs = (stamp: boolean) => task('T9', 'COMPLETED', { contextId: stamp ? contextId : 'someone-elses', history: [userMessage('their-message', 'theirs')], artifacts: { a1: 'their result' } });
    const agent = await h.agentWith({
      SendMessage: () => ({ result: { task: task('T1', 'COMPLETED', { contextId, artifacts: { a1: 'ours' } }) } }),
      ListTasks: (params) => ({ result: { tasks: [theirs(params.contextId === contextId)], nextPageToken: '', pageSize: 50, totalSize: 1 } }),
      GetTask: () => ({ result: theirs(false) }),
    });
    const { producer, id } = await h.sentNotRecorded(agent, () => undefined);
    contextId = (await recordOf(producer, id))!.requestedContextId!;
    await eventually(async () => {
      const record = await recordOf(producer, id);
      return record?.state === 'AMBIGUOUS' || record?.state === 'COMPLETED' || record?.taskId !== undefined;
    }, 'a verdict', 30_000);
    const record = await recordOf(producer, id);
    expect(record?.taskId).not.toBe('T9');
    if (record?.state === 'COMPLETED') expect(artifactText(await viewOf(producer, id), 'a1')).toBe('ours');
  }, 45_000);
});
