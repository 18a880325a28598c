/**
 * Attack 33a: an agent ends our task REJECTED, FAILED or CANCELED, yet the task carries artifacts ("booked ref 12").
 * Output proves the agent did work: the attempt's effect is unknown, so the step is never re-delegated to a second
 * agent with the skill (before: `hotel.1 REJECTED`, then `hotel.2 COMPLETED` at agent B, the booking made twice).
 * The artifacts count whichever channel journaled them: the SendMessage answer's Task, a stream's artifact update
 * before the terminal status, a GetTask before it; artifacts over the fleet's artifact limit, which cannot be kept,
 * count as well (AMBIGUOUS LIMIT_EXCEEDED; before: FAILED, re-delegated to B); so do artifacts journaled from a task
 * the agent then lost (LOST: every read proves it gone; before: re-delegated to B). A task ended unsuccessfully without
 * artifacts still goes to B.
 * Real redis-server, real fleet (two scripted raw node:http JSON-RPC agents with the same skill), SendMessage counted
 * per agent. Rule: `effectOf` (packages/shared/src/decide-effects.ts), the row's `artifactCount` (record.ts).
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { useFieldCases } from '../harness/field-cases.ts';
import { ev, task, type ScriptedHandlers } from '../harness/scripted-agent.ts';

const h = useFieldCases();
const fast = { reconcileIntervalMs: 300, followBackoff: { baseMs: 200, capMs: 1_000 }, requestTimeoutMs: 3_000, notFoundWindowMs: 2_000 };

type Unsuccessful = 'REJECTED' | 'FAILED' | 'CANCELED';
type Channel = 'send' | 'stream' | 'get';

/** The fleet's artifact limit where a case sends artifacts over it (bytes). */
const SMALL_ARTIFACT_LIMIT = 4_096;
/** `count` artifacts named a1… ("booked ref 12" in the first; `oversize`: each padded past `SMALL_ARTIFACT_LIMIT`). */
const artifactsOf = (count: number, oversize = false) =>
  Array.from({ length: count }, (_, index) => ({ artifactId: `a${index + 1}`, parts: [{ text: (index === 0 ? 'booked ref 12' : `note ${index + 1}`) + (oversize ? ' '.repeat(2 * SMALL_ARTIFACT_LIMIT) : '') }] }));

/**
 * Agent A: ends our task T1 `state` with `count` artifacts, shown on `channel`: `send` the SendMessage answer's Task
 * (finished at once); `stream` SubscribeToTask after a WORKING answer: the artifact updates, then the terminal status
 * update (no Task list after them); `get` GetTask after a WORKING answer (no stream): the artifacts on a WORKING task
 * first, then the finished task without any. Its own ListTasks lists its task as GetTask would show it.
 */
function endsWithArtifacts(state: Unsuccessful, count: number, channel: Channel, oversize = false): ScriptedHandlers {
  let contextId = '';
  let history: unknown[] = [];
  let reads = 0;
  const shown = (taskState: string, artifacts: unknown[]) => task('T1', taskState, { contextId, history, ...(artifacts.length > 0 ? { artifacts } : {}) });
  const last = () => (channel === 'get' ? shown(state, []) : shown(state, artifactsOf(count, oversize)));
  return {
    SendMessage: (params) => {
      contextId = params.message.contextId;
      history = [params.message];
      return { result: { task: channel === 'send' ? shown(state, artifactsOf(count, oversize)) : shown('WORKING', []) } };
    },
    SubscribeToTask: () => {
      if (channel !== 'stream') return { error: { code: -32004, message: 'streaming is not supported' } };
      const frames = [
        { task: shown('WORKING', []) },
        ...artifactsOf(count, oversize).map((artifact) => ({ artifactUpdate: { taskId: 'T1', contextId, artifact, lastChunk: true } })),
        { statusUpdate: { taskId: 'T1', contextId, status: { state: `TASK_STATE_${state}` } } },
      ];
      return { sse: frames.map((result) => ev(JSON.stringify({ jsonrpc: '2.0', id: 1, result }))) };
    },
    GetTask: () => {
      reads += 1;
      if (channel === 'get' && reads === 1) return { result: shown('WORKING', artifactsOf(count, oversize)) };
      return { result: last() };
    },
    ListTasks: () => ({ result: { tasks: contextId ? [last()] : [], nextPageToken: '', pageSize: 50, totalSize: contextId ? 1 : 0 } }),
    CancelTask: () => ({ error: { code: -32002, message: 'Task cannot be canceled' } }),
  };
}

/** A two-agent step whose agent A ends as `endsWithArtifacts` says; the settled workflow and both agents' counts. */
async function overTwo(state: Unsuccessful, count: number, channel: Channel, oversize = false) {
  const a = await h.agentWith(endsWithArtifacts(state, count, channel, oversize));
  const { b, view } = await h.stepOverTwo(a.cardUrl, oversize ? { ...fast, artifactBytesPerDelegation: SMALL_ARTIFACT_LIMIT } : fast, 60_000);
  return { a, b, view };
}

/** The step stayed at A with a person: no SendMessage at B, A's attempt unsuccessful, its artifacts and task named. */
function keptAtA({ a, b, view }: Awaited<ReturnType<typeof overTwo>>, state: Unsuccessful, count: number) {
  expect(b.count('SendMessage')).toBe(0);
  expect(a.count('SendMessage')).toBe(1);
  expect(view.steps[0]!.attempts).toHaveLength(1);
  expect(view.steps[0]!.attempts[0]).toMatchObject({ state, taskId: 'T1' });
  expect(view.state).toBe('NEEDS_ATTENTION');
  expect(view.attention).toMatchObject({ code: 'EFFECT_WITHOUT_COMPENSATION' });
  expect(view.attention!.message).toContain(`task T1 carries ${count} artifact`);
}

/**
 * Agent A answers our SendMessage with T1 WORKING carrying `count` artifacts, then forgets it: SubscribeToTask,
 * GetTask and CancelTask answer the spec's TaskNotFoundError (-32001), ListTasks lists nothing: the attempt ends LOST.
 */
async function lostAfterArtifacts(count: number) {
  const gone = () => ({ error: { code: -32001, message: 'Task not found' } });
  const a = await h.agentWith({
    SendMessage: (params) => ({ result: { task: task('T1', 'WORKING', { contextId: params.message.contextId, history: [params.message], ...(count > 0 ? { artifacts: artifactsOf(count) } : {}) }) } }),
    SubscribeToTask: gone,
    GetTask: gone,
    CancelTask: gone,
    ListTasks: () => ({ result: { tasks: [], nextPageToken: '', pageSize: 50, totalSize: 0 } }),
  });
  const { b, view } = await h.stepOverTwo(a.cardUrl, fast, 60_000);
  return { a, b, view };
}

/** The step stayed at A with a person, its attempt AMBIGUOUS for the artifacts over the limit it could not keep. */
function keptOverLimit({ a, b, view }: Awaited<ReturnType<typeof overTwo>>) {
  expect(b.count('SendMessage')).toBe(0);
  expect(a.count('SendMessage')).toBe(1);
  expect(view.steps[0]!.attempts).toHaveLength(1);
  expect(view.steps[0]!.attempts[0]).toMatchObject({ state: 'AMBIGUOUS', error: { code: 'LIMIT_EXCEEDED' } });
  expect(view.state).toBe('NEEDS_ATTENTION');
}

describe('attack 33a: a task ended unsuccessfully that carries artifacts', () => {
  it('REJECTED with an artifact on the SendMessage answer: never re-delegated to B; a person, the artifact count and the task named', async () => {
    keptAtA(await overTwo('REJECTED', 1, 'send'), 'REJECTED', 1);
  }, 90_000);

  it('FAILED after a streamed artifact update (SubscribeToTask): never re-delegated to B; a person', async () => {
    keptAtA(await overTwo('FAILED', 1, 'stream'), 'FAILED', 1);
  }, 90_000);

  // The same kind over the artifact limit: nothing of the artifacts can be kept (RT5), yet they prove work. Before:
  // FAILED LIMIT_EXCEEDED, re-delegated to B (booked twice); now AMBIGUOUS LIMIT_EXCEEDED, a person decides.
  it('FAILED with an artifact over the artifact limit on the SendMessage answer: never re-delegated to B; AMBIGUOUS LIMIT_EXCEEDED, a person', async () => {
    keptOverLimit(await overTwo('FAILED', 1, 'send', true));
  }, 90_000);

  // The same kind on a task the agent lost: its artifacts were journaled while it ran, then every read proves it gone
  // (-32001 over the not-found window). Before: LOST, re-delegated to B (booked twice); now effect unknown, a person.
  it('LOST after its artifacts were journaled (the agent forgot the task): never re-delegated to B; a person', async () => {
    const run = await lostAfterArtifacts(1);
    expect(run.b.count('SendMessage')).toBe(0);
    expect(run.a.count('SendMessage')).toBe(1);
    expect(run.view.steps[0]!.attempts).toHaveLength(1);
    expect(run.view.steps[0]!.attempts[0]).toMatchObject({ state: 'LOST', taskId: 'T1' });
    expect(run.view.state).toBe('NEEDS_ATTENTION');
  }, 90_000);

  it('control: LOST without artifacts is re-delegated (one SendMessage at each agent), B completes', async () => {
    const run = await lostAfterArtifacts(0);
    expect(run.a.count('SendMessage')).toBe(1);
    expect(run.b.count('SendMessage')).toBe(1);
    expect(run.view.state).toBe('COMPLETED');
  }, 90_000);

  it('control: REJECTED without artifacts is re-delegated (one SendMessage at each agent), B completes', async () => {
    const { a, b, view } = await overTwo('REJECTED', 0, 'send');
    expect(a.count('SendMessage')).toBe(1);
    expect(b.count('SendMessage')).toBe(1);
    expect(view.state).toBe('COMPLETED');
    expect(view.steps[0]!.attempts.map((attempt) => attempt.state)).toEqual(['REJECTED', 'COMPLETED']);
  }, 90_000);

  it('property: terminal state × artifacts (0..3) × channel: never a SendMessage at B with artifacts, re-delegated without', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom<Unsuccessful>('REJECTED', 'FAILED', 'CANCELED'), fc.integer({ min: 0, max: 3 }), fc.constantFrom<Channel>('send', 'stream', 'get'), fc.boolean(), async (state, count, channel, oversize) => {
        const run = await overTwo(state, count, channel, oversize);
        expect(run.a.count('SendMessage')).toBe(1);
        if (count === 0) expect(run.b.count('SendMessage')).toBe(1);
        else if (oversize) expect(run.b.count('SendMessage')).toBe(0);
        else keptAtA(run, state, count);
      }),
      {
        numRuns: 16,
        examples: [
          ['CANCELED', 3, 'get', false],
          ['FAILED', 0, 'stream', false],
          ['REJECTED', 2, 'stream', false],
          ['FAILED', 1, 'get', false],
          ['REJECTED', 1, 'send', true],
          ['FAILED', 2, 'stream', true],
          ['CANCELED', 1, 'get', true],
        ],
      },
    );
  }, 600_000);
});
