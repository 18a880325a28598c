/**
 * Property (field case A32, attack 30: a part of the result refused over a limit was forgotten once the one read after
 * it showed WORKING): over any sequence of stream events (WORKING, an artifact over a limit (a1, its id known), a
 * whole event over a limit (no id), an artifact within limits, COMPLETED) and full reads (WORKING, COMPLETED with the
 * result a1, with only another artifact a2, with both, without artifacts, an answer over a limit), driven through the
 * pure table with the rows' writes applied to an in-memory row, the delegation never ends COMPLETED with a refused
 * artifact missing: it ends COMPLETED only with every refused artifact id (and some artifact) read in full since the
 * refusal, or AMBIGUOUS LIMIT_EXCEEDED. Every refusal leaves the row's fact (`refusedResult`, with the refused ids).
 * Without a refusal, nothing changes (never LIMIT_EXCEEDED). The end-to-end cases: test/saga/refused-result.test.ts.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Artifact, StreamResponse, Task } from '@durable-a2a/a2a';
import type { DelegationRecord } from '@durable-a2a/shared';
import { isFinished, journalStateOf, withRefusal } from '@durable-a2a/shared/pure';
import type { Observation } from '../src/delegation/core/observation.ts';
import type { Policy } from '../src/delegation/core/policy.ts';
import { transition, type Write } from '../src/delegation/core/transitions.ts';
import { stepRow } from './step-row.ts';

const policy = { now: () => 5_000_000, random: () => 0.5, sendAttempts: 3, sendSettleMs: 31_000, notFoundThreshold: 3, notFoundWindowMs: 0, reconcileIntervalMs: 1_000, unacceptableAnswerLimit: 3 } as unknown as Policy;

type StreamInput = 'working' | 'over-limit' | 'over-limit-whole' | 'in-limit' | 'completed';
type ReadInput = 'working' | 'completed-with' | 'completed-other' | 'completed-both' | 'completed-without' | 'over-limit';

const byTaskId = { kind: 'proven', by: 'task-id' } as const;
const status = (state: string): StreamResponse => ({ statusUpdate: { taskId: 'T1', contextId: 'C-ours', status: { state: `TASK_STATE_${state}` } } }) as StreamResponse;
const a1: Artifact = { artifactId: 'a1', parts: [{ text: 'the booking' }] } as Artifact;
const a2: Artifact = { artifactId: 'a2', parts: [{ text: 'a note' }] } as Artifact;

function streamObservation(input: StreamInput): Observation {
  switch (input) {
    case 'working':
      return { kind: 'stream-event', responses: [status('WORKING')] };
    case 'over-limit':
      return { kind: 'stream-failed', code: 'LIMIT_EXCEEDED', retryable: false, unacceptable: { code: 'LIMIT_EXCEEDED', message: 'artifact a1 has 1001 parts, over the limit of 1000', limit: 'partsPerMessage', artifactId: 'a1' }, delivered: 1 };
    case 'over-limit-whole':
      return { kind: 'stream-failed', code: 'LIMIT_EXCEEDED', retryable: false, unacceptable: { code: 'LIMIT_EXCEEDED', message: 'SSE event larger than 8 MiB', limit: 'sseEventBytes' }, delivered: 1 };
    case 'in-limit':
      return { kind: 'stream-event', responses: [{ artifactUpdate: { taskId: 'T1', contextId: 'C-ours', artifact: a2, lastChunk: true } } as StreamResponse] };
    case 'completed':
      return { kind: 'stream-event', responses: [status('COMPLETED')] };
  }
}

const READ_ARTIFACTS: Record<Exclude<ReadInput, 'over-limit'>, Artifact[]> = { working: [], 'completed-with': [a1], 'completed-other': [a2], 'completed-both': [a1, a2], 'completed-without': [] };

function readTask(input: Exclude<ReadInput, 'over-limit'>): Task {
  const state = input === 'working' ? 'WORKING' : 'COMPLETED';
  const artifacts = READ_ARTIFACTS[input];
  return { id: 'T1', contextId: 'C-ours', status: { state: `TASK_STATE_${state}` }, ...(artifacts.length ? { artifacts } : {}) } as Task;
}

/** The in-memory row and what the run shows: the table's writes applied as the journal's scripts would. */
interface Model {
  record: DelegationRecord;
  artifacts: string[];
  ended?: { state: string; code?: string };
  refusedSeen: boolean;
  /** The ids of the artifacts refused so far (what a COMPLETED must show). */
  refusedIds: Set<string>;
}

function applyWrite(model: Model, write: Write): void {
  switch (write.kind) {
    case 'note-refused-result':
      model.record = { ...model.record, refusedResult: withRefusal(model.record.refusedResult, write.refusal), version: model.record.version + 1 };
      return;
    case 'snapshot':
      if (write.task.artifacts?.length) model.artifacts = write.task.artifacts.map((artifact) => artifact.artifactId);
      model.record = { ...model.record, state: journalStateOf(write.task.status.state), version: model.record.version + 1 };
      return;
    case 'events':
      for (const response of write.responses) {
        if ('artifactUpdate' in response && !model.artifacts.includes(response.artifactUpdate.artifact.artifactId)) model.artifacts.push(response.artifactUpdate.artifact.artifactId);
        if ('statusUpdate' in response) model.record = { ...model.record, state: journalStateOf(response.statusUpdate.status.state), version: model.record.version + 1 };
      }
      return;
    case 'outcome':
      model.record = { ...model.record, state: write.state, version: model.record.version + 1 };
      return;
    default:
      return;
  }
}

/** Drives one observation, and the reads its `read-once` asks for (taken from `reads`, WORKING when none are left; bounded). */
function drive(model: Model, first: Observation, reads: ReadInput[]): void {
  let observation: Observation | undefined = first;
  for (let round = 0; observation && round < 10 && !model.ended; round++) {
    if (isFinished(model.record.state)) {
      model.ended = { state: model.record.state };
      return;
    }
    const unacceptable = observation.kind === 'stream-failed' || observation.kind === 'read-failed' ? observation.unacceptable : undefined;
    if (unacceptable?.limit) {
      model.refusedSeen = true;
      if (unacceptable.artifactId) model.refusedIds.add(unacceptable.artifactId);
    }
    const step = transition(model.record, observation, policy);
    const writes: Write[] = step.write === undefined ? [] : Array.isArray(step.write) ? [...(step.write as readonly Write[])] : [step.write as Write];
    for (const write of writes) applyWrite(model, write);
    const next = step.next;
    // Every refusal leaves the row's fact, with the refused artifact's id.
    if (unacceptable?.limit) expect(model.record.refusedResult?.artifactIds ?? []).toEqual(expect.arrayContaining([...model.refusedIds]));
    if (next.kind === 'needs-person') {
      model.ended = { state: 'AMBIGUOUS', code: next.code };
      return;
    }
    if (isFinished(model.record.state)) {
      model.ended = { state: model.record.state };
      return;
    }
    observation = undefined;
    if (next.kind === 'read-once') {
      const read = reads.shift() ?? 'working';
      observation =
        read === 'over-limit'
          ? { kind: 'read-failed', call: 'get-task', code: 'LIMIT_EXCEEDED', retryable: false, unacceptable: { code: 'LIMIT_EXCEEDED', message: 'artifact a1 has 1001 parts', limit: 'partsPerMessage', artifactId: 'a1' }, why: next.why, cycle: true }
          : { kind: 'task-read', task: readTask(read), call: 'get-task', complete: true, ownership: byTaskId, why: next.why, cycle: true, ...(next.refused ? { afterRefused: next.refused } : {}) };
    }
  }
}

describe('a part of the result refused over a limit, over any sequence of stream events and reads', () => {
  it('never ends COMPLETED with the refused artifact missing; never LIMIT_EXCEEDED without a refusal', () => {
    const input = fc.record({
      events: fc.array(fc.constantFrom<StreamInput>('working', 'over-limit', 'over-limit-whole', 'in-limit', 'completed'), { minLength: 1, maxLength: 12 }),
      reads: fc.array(fc.constantFrom<ReadInput>('working', 'completed-with', 'completed-other', 'completed-both', 'completed-without', 'over-limit'), { maxLength: 12 }),
    });
    const examples: [{ events: StreamInput[]; reads: ReadInput[] }][] = [
      // Attack 30: WORKING, the artifact refused, the read after it WORKING; then WORKING, COMPLETED, a read without artifacts.
      [{ events: ['working', 'over-limit', 'working', 'completed'], reads: ['working', 'completed-without'] }],
      [{ events: ['working', 'over-limit', 'in-limit', 'completed'], reads: ['working', 'completed-without'] }],
      [{ events: ['working', 'over-limit', 'completed'], reads: ['working', 'completed-with'] }],
      [{ events: ['working', 'in-limit', 'completed'], reads: [] }],
      // Judged by the refused artifact's id: a full read with only another artifact is no result.
      [{ events: ['working', 'over-limit', 'completed'], reads: ['working', 'completed-other'] }],
      // A whole event refused (no id): any artifact of the read's own shows the result.
      [{ events: ['working', 'over-limit-whole', 'completed'], reads: ['working', 'completed-other'] }],
      // A read answered over a limit leaves the same fact.
      [{ events: ['working', 'completed'], reads: ['over-limit'] }],
    ];
    fc.assert(
      fc.property(input, ({ events, reads }) => {
        const model: Model = { record: stepRow({ taskId: 'T1', contextId: 'C-ours', state: 'WORKING' }), artifacts: [], refusedSeen: false, refusedIds: new Set() };
        const pending = [...reads];
        for (const event of events) {
          if (model.ended) break;
          drive(model, streamObservation(event), pending);
        }
        const state = model.ended?.state ?? model.record.state;
        if (state === 'COMPLETED' && model.refusedSeen) {
          expect(model.artifacts.length).toBeGreaterThan(0);
          expect(model.artifacts).toEqual(expect.arrayContaining([...model.refusedIds]));
        }
        if (!model.refusedSeen) expect(model.ended?.code).not.toBe('LIMIT_EXCEEDED');
        if (model.refusedSeen && model.ended && model.ended.state !== 'COMPLETED') expect(model.ended).toEqual({ state: 'AMBIGUOUS', code: 'LIMIT_EXCEEDED' });
      }),
      { examples, numRuns: 500 },
    );
  });
});
