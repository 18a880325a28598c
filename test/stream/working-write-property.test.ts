/**
 * A held WORKING against writing every event as it comes (`workingWriteDelayMs` 0), on real Redis: for any stream of
 * events (statuses and Tasks of every state, with and without stamps and messages, artifact updates, pairs), any
 * moment the window ends between them, a push that finishes the row from elsewhere, and any way the stream ends
 * (its end, a lost lease, closing, an error that ends the run), the row ends the same (every field but the version,
 * and the artifacts; after a lost lease, once the next follower's first snapshot is written), the events that may never wait are applied in the same order, and the hold never sends more
 * status writes. Each mode drives its own row through the journal's scripts (applyStatus-5.lua, applyArtifact-2.lua,
 * the pair script) with the fence a follow holds; the window is a timer the test fires (no sleeps).
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { StreamResponse, TaskState } from '@durable-a2a/a2a';
import { Journal, applyStreamResponse, applyStreamResponsePair, applyTask, type ArtifactThenStatus, type DelegationRecord, type DelegationRef } from '@durable-a2a/shared';
import type { Observation } from '../../packages/workers/src/delegation/core/observation.ts';
import type { SinkResult } from '../../packages/workers/src/delegation/io/stream.ts';
import { holdWorkingWrites, type RowSink } from '../../packages/workers/src/delegation/runs/working-write.ts';
import { runningIntent } from '../harness/journal-rows.ts';
import { useRedisClient, useRedisServer } from '../harness/redis.ts';
import { manualTimer } from '../harness/manual-timer.ts';

const redisServer = useRedisServer();
const redis = useRedisClient(redisServer);
const CARD = 'http://agent.example/.well-known/agent-card.json';
const STAMPS = [undefined, '2026-12-07T01:00:01.000Z', '2026-12-07T01:00:02.000Z', '2026-12-07T01:00:03.000Z'];

/** One event, with `TASK` where the mode's task id goes (each mode's row binds a task id of its own). */
type Event =
  | { kind: 'status'; state: TaskState; stamp?: string; text?: string }
  | { kind: 'task'; state: TaskState; stamp?: string; artifacts?: string[] }
  | { kind: 'artifact'; id: string; text: string }
  | { kind: 'pair'; id: string; state: TaskState; stamp?: string };
type Move = { kind: 'event'; event: Event } | { kind: 'window-ends' } | { kind: 'push'; state: TaskState };

const stamp = fc.constantFrom(...STAMPS);
/** `arbitrary` one time in four, else undefined. */
const rarely = <T>(arbitrary: fc.Arbitrary<T>): fc.Arbitrary<T | undefined> => fc.oneof({ weight: 3, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary });
// Mostly the states a working task shows, so that streams run long enough to hold, flush and drop.
const state: fc.Arbitrary<TaskState> = fc.oneof(
  { weight: 6, arbitrary: fc.constant('TASK_STATE_WORKING' as TaskState) },
  { weight: 2, arbitrary: fc.constant('TASK_STATE_SUBMITTED' as TaskState) },
  { weight: 1, arbitrary: fc.constantFrom('TASK_STATE_INPUT_REQUIRED', 'TASK_STATE_AUTH_REQUIRED') as fc.Arbitrary<TaskState> },
  { weight: 2, arbitrary: fc.constantFrom('TASK_STATE_COMPLETED', 'TASK_STATE_FAILED') as fc.Arbitrary<TaskState> },
);
const eventArb: fc.Arbitrary<Event> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('status' as const), state, stamp, text: rarely(fc.constantFrom('on it', 'which date?')) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('task' as const), state, stamp, artifacts: rarely(fc.subarray(['a1', 'a2'])) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('artifact' as const), id: fc.constantFrom('a1', 'a2'), text: fc.constantFrom('x', 'y') }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('pair' as const), id: fc.constantFrom('a1', 'a2'), state, stamp }) },
);
const stepArb: fc.Arbitrary<Move> = fc.oneof(
  { weight: 2, arbitrary: eventArb.map((event) => ({ kind: 'event' as const, event })) },
  { weight: 1, arbitrary: fc.constant({ kind: 'window-ends' as const }) },
);
/** The moves, with at most one push from elsewhere somewhere among them. */
const movesArb: fc.Arbitrary<Move[]> = fc
  .tuple(fc.array(stepArb, { minLength: 1, maxLength: 10 }), rarely(fc.tuple(fc.nat(10), fc.constantFrom('TASK_STATE_COMPLETED', 'TASK_STATE_CANCELED') as fc.Arbitrary<TaskState>)))
  .map(([steps, push]) => (push ? [...steps.slice(0, push[0]), { kind: 'push' as const, state: push[1] }, ...steps.slice(push[0])] : steps));
const ending = fc.constantFrom('stream-ended', 'lease-lost', 'closing', 'error');
const start = fc.record({ state: fc.constantFrom('TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING') as fc.Arbitrary<TaskState>, stamp, text: rarely(fc.constant('queued')) });

const message = (text: string) => ({ messageId: `m-${text}`, role: 'ROLE_AGENT', parts: [{ text }] });
const status = (state: TaskState, stampOf?: string, text?: string) => ({ state, ...(stampOf ? { timestamp: stampOf } : {}), ...(text ? { message: message(text) } : {}) });
const artifact = (id: string, text: string) => ({ artifactId: id, parts: [{ text }] });

/** The wire form of `event` about `taskId`. */
function responsesOf(event: Event, taskId: string): [StreamResponse] | [StreamResponse, StreamResponse] {
  switch (event.kind) {
    case 'status':
      return [{ statusUpdate: { taskId, contextId: 'C1', status: status(event.state, event.stamp, event.text) } } as StreamResponse];
    case 'task':
      return [{ task: { id: taskId, contextId: 'C1', status: status(event.state, event.stamp), history: [], ...(event.artifacts ? { artifacts: event.artifacts.map((id) => artifact(id, `task ${id}`)) } : {}) } } as StreamResponse];
    case 'artifact':
      return [{ artifactUpdate: { taskId, contextId: 'C1', artifact: artifact(event.id, event.text) } } as StreamResponse];
    case 'pair':
      return [{ artifactUpdate: { taskId, contextId: 'C1', artifact: artifact(event.id, 'paired') } } as StreamResponse, { statusUpdate: { taskId, contextId: 'C1', status: status(event.state, event.stamp) } } as StreamResponse];
  }
}

/** An event of the kind that may wait (a lone SUBMITTED or WORKING without message or artifacts): left out of the comparison of applied events. */
const mayWaitKind = (event: Event): boolean =>
  (event.kind === 'status' && event.text === undefined) || (event.kind === 'task' && event.artifacts === undefined) ? ['TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING'].includes(event.state) : false;

/** What one mode did: the events applied (their move's index), the status writes sent. */
interface Trace {
  applied: number[];
  statusWrites: number;
}

/**
 * The follow's sink in small: each stream event written with the follow's fence as `writeEvents` writes it (one
 * script, or the pair's), the row read back; finished: `settle`, a question: `park`, else `continue`. The stream's
 * end, a lost lease and closing write nothing here (a real follow reads the task once: the same in both modes).
 */
function journalSink(journal: Journal, ref: DelegationRef, first: DelegationRecord, trace: Trace, indexOf: Map<Observation, number>): RowSink {
  let current = first;
  const sink = async (observation: Observation): Promise<SinkResult> => {
    if (observation.kind !== 'stream-event') return { next: observation.kind === 'stream-ended' ? 'read-once' : 'nothing' };
    const options = { fence: current.fence, held: current };
    const results =
      observation.responses.length === 2
        ? await applyStreamResponsePair(journal, current, observation.responses as ArtifactThenStatus, options)
        : [await applyStreamResponse(journal, current, observation.responses[0], { ...options, snapshot: 'task' in observation.responses[0] })];
    trace.statusWrites += results.filter((result) => result.status !== undefined).length;
    if (results.some((result) => result.status?.applied || result.artifact === 'applied')) trace.applied.push(indexOf.get(observation)!);
    current = (await journal.getDelegation(ref))!;
    return { next: ['COMPLETED', 'FAILED', 'CANCELED', 'REJECTED', 'AMBIGUOUS', 'LOST'].includes(current.state) ? 'settle' : current.state === 'INPUT_REQUIRED' ? 'park' : 'continue' };
  };
  return Object.assign(sink, { row: () => current });
}

const silent = { warn: () => undefined } as never;
let runs = 0;

/** Plays `moves` and `end` on a fresh row of its own, holding (`hold`) or writing at once; returns the row, its artifacts and the trace. */
async function play(hold: boolean, initial: { state: TaskState; stamp?: string; text?: string }, moves: Move[], end: string) {
  const journal = new Journal(redis(), { prefix: 'wwp', retentionMs: 60_000, now: () => 5_000 });
  const workflowId = `wf-${++runs}`;
  const taskId = `T-${runs}`;
  const ref = await runningIntent(journal, workflowId, CARD);
  await applyTask(journal, ref, { id: taskId, contextId: 'C1', status: status(initial.state, initial.stamp, initial.text), history: [] } as never, { fence: 1, snapshot: true, agentCardUrl: CARD, bindUntilMs: 0 });
  const trace: Trace = { applied: [], statusWrites: 0 };
  const indexOf = new Map<Observation, number>();
  const inner = journalSink(journal, ref, (await journal.getDelegation(ref))!, trace, indexOf);
  const clock = manualTimer();
  const writes = holdWorkingWrites(inner, { delayMs: hold ? 250 : 0, log: silent, timer: clock.timer });
  // A Message on the stream writes nothing: after the window ends it lets the timer's write finish first.
  const settleTimer = async (): Promise<SinkResult> => writes.sink({ kind: 'stream-event', responses: [{ message: message('note') } as StreamResponse] });
  let stopped = false;
  for (const [index, move] of moves.entries()) {
    if (move.kind === 'push') {
      await applyStreamResponse(journal, { ...ref, taskId, contextId: 'C1' }, { statusUpdate: { taskId, contextId: 'C1', status: status(move.state) } } as StreamResponse);
      continue;
    }
    if (move.kind === 'window-ends') clock.fire();
    const observation: Observation = move.kind === 'event' ? { kind: 'stream-event', responses: responsesOf(move.event, taskId) } : { kind: 'stream-event', responses: [{ message: message('note') } as StreamResponse] };
    indexOf.set(observation, index);
    const result = move.kind === 'event' ? await writes.sink(observation) : await settleTimer();
    if (result.next !== 'continue') {
      stopped = true;
      break;
    }
  }
  if (!stopped && end !== 'error') await writes.sink(end === 'stream-ended' ? { kind: 'stream-ended', how: 'closed' } : end === 'lease-lost' ? { kind: 'lease-lost' } : { kind: 'closing' });
  await writes.end();
  // A lost lease drops a waiting write: the follower that holds the lease now writes its subscription's first
  // snapshot, the task as the agent last showed it (its last status on this stream), which makes it moot.
  const last = moves.findLast((move): move is Extract<Move, { kind: 'event' }> => move.kind === 'event' && move.event.kind !== 'artifact');
  if (!stopped && end === 'lease-lost' && last && last.event.kind !== 'artifact') {
    await applyTask(journal, ref, { id: taskId, contextId: 'C1', status: status(last.event.state, last.event.stamp), history: [] } as never, { snapshot: true });
  }
  const row = (await journal.getDelegation(ref))!;
  const view = (await journal.getDelegationView(ref))!;
  const { version: _version, workflowId: _w, messageId: _m, requestedContextId: _c, taskId: _t, createdAt: _created, ...fields } = row;
  return { row: fields, version: row.version, artifacts: view.artifacts, trace };
}

describe('a held WORKING against writing at once', () => {
  it('the same row, the same events that never wait applied in the same order, never more status writes', async () => {
    await fc.assert(
      fc.asyncProperty(start, movesArb, ending, async (initial, moves, end) => {
        const once = await play(false, initial, moves, end);
        const held = await play(true, initial, moves, end);
        expect(held.row).toEqual(once.row);
        expect(held.artifacts).toEqual(once.artifacts);
        const neverWait = (trace: Trace) => trace.applied.filter((index) => { const move = moves[index]!; return move.kind !== 'event' || !mayWaitKind(move.event); });
        expect(neverWait(held.trace)).toEqual(neverWait(once.trace));
        expect(held.trace.statusWrites).toBeLessThanOrEqual(once.trace.statusWrites);
        expect(held.version).toBeLessThanOrEqual(once.version);
      }),
      { numRuns: 150 },
    );
  }, 240_000);

  it('the listed cases: WORKING then COMPLETED is one status write fewer; WORKING, artifact, window end, COMPLETED is not', async () => {
    const working: Move = { kind: 'event', event: { kind: 'task', state: 'TASK_STATE_WORKING', stamp: STAMPS[1] } };
    const completed: Move = { kind: 'event', event: { kind: 'pair', id: 'a1', state: 'TASK_STATE_COMPLETED', stamp: STAMPS[2] } };
    const initial = { state: 'TASK_STATE_SUBMITTED' as TaskState, stamp: STAMPS[1] };
    const once = await play(false, initial, [working, completed], 'stream-ended');
    const held = await play(true, initial, [working, completed], 'stream-ended');
    expect([once.trace.statusWrites, held.trace.statusWrites]).toEqual([2, 1]);
    expect(held.row).toEqual(once.row);
    const late = await play(true, initial, [working, { kind: 'event', event: { kind: 'artifact', id: 'a1', text: 'x' } }, { kind: 'window-ends' }, completed], 'stream-ended');
    expect(late.trace.statusWrites).toBe(2);
  });
});
