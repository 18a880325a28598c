/**
 * Which stream status writes may wait (`core/working-write.ts`) and what a waiting one becomes when the next
 * observation arrives, without Redis; and the run side (`runs/working-write.ts`) against a recording sink and a timer
 * the test fires: the order the inner sink sees, the timer taken and cancelled, the end of a run.
 */
import { describe, expect, it } from 'vitest';
import type { StreamResponse, TaskState } from '@durable-a2a/a2a';
import type { DelegationRecord, JournalState } from '@durable-a2a/shared';
import type { Observation } from '../src/delegation/core/observation.ts';
import { mayWait, whenNextArrives } from '../src/delegation/core/working-write.ts';
import type { SinkResult } from '../src/delegation/io/stream.ts';
import { holdWorkingWrites, type RowSink } from '../src/delegation/runs/working-write.ts';
import { manualTimer } from '../../../test/harness/manual-timer.ts';

const row = (state: JournalState, extra: Partial<DelegationRecord> = {}): DelegationRecord =>
  ({ workflowId: 'wf', delegationId: 'main.1', state, taskId: 'T1', contextId: 'C1', namedTaskUnread: false, notFoundCount: 0, push: false, version: 3, fence: 2, ...extra }) as DelegationRecord;

const su = (state: TaskState, extra: { taskId?: string; contextId?: string; text?: string } = {}): StreamResponse => ({
  statusUpdate: {
    taskId: extra.taskId ?? 'T1',
    contextId: extra.contextId ?? 'C1',
    status: { state, ...(extra.text ? { message: { messageId: 'm1', role: 'ROLE_AGENT', parts: [{ text: extra.text }] } } : {}) },
  },
}) as StreamResponse;
const taskOf = (state: TaskState, artifacts?: unknown[]): StreamResponse => ({ task: { id: 'T1', contextId: 'C1', status: { state }, ...(artifacts ? { artifacts } : {}), history: [] } }) as StreamResponse;
const au = (taskId = 'T1'): StreamResponse => ({ artifactUpdate: { taskId, contextId: 'C1', artifact: { artifactId: 'a1', parts: [{ text: 'x' }] } } }) as StreamResponse;
const event = (...responses: StreamResponse[]): Observation => ({ kind: 'stream-event', responses: responses as [StreamResponse] });

describe('mayWait: only a WORKING (or SUBMITTED) that moves nothing else', () => {
  it('a status update or a Task without artifacts, SUBMITTED or WORKING over SUBMITTED or WORKING, waits', () => {
    for (const state of ['SUBMITTED', 'WORKING'] as const) {
      expect(mayWait(row(state), event(su('TASK_STATE_WORKING')))).toBe(true);
      expect(mayWait(row(state), event(taskOf('TASK_STATE_WORKING')))).toBe(true);
      expect(mayWait(row(state), event(su('TASK_STATE_SUBMITTED')))).toBe(true);
    }
  });
  it('a question, a finished state, an artifact, a pair, a message, a list of artifacts, another task never wait', () => {
    const submitted = row('SUBMITTED');
    for (const state of ['TASK_STATE_INPUT_REQUIRED', 'TASK_STATE_AUTH_REQUIRED', 'TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED'] as const) {
      expect(mayWait(submitted, event(su(state)))).toBe(false);
    }
    expect(mayWait(submitted, event(au()))).toBe(false);
    expect(mayWait(submitted, event(au(), su('TASK_STATE_WORKING')))).toBe(false);
    expect(mayWait(submitted, event(taskOf('TASK_STATE_WORKING', [])))).toBe(false);
    expect(mayWait(submitted, event({ message: { messageId: 'm', role: 'ROLE_AGENT', parts: [{ text: 'hi' }] } } as StreamResponse))).toBe(false);
    expect(mayWait(submitted, event(su('TASK_STATE_WORKING', { taskId: 'T2' })))).toBe(false);
    expect(mayWait(submitted, { kind: 'push-received', responses: [su('TASK_STATE_WORKING')] })).toBe(false);
    expect(mayWait(submitted, { kind: 'stream-ended', how: 'closed' })).toBe(false);
  });
  it('nothing else may change: a status message (the event\'s or the row\'s), a new context, an unread named task, a not-found count, a push config to register, an unbound task', () => {
    const working = event(su('TASK_STATE_WORKING'));
    expect(mayWait(row('SUBMITTED'), event(su('TASK_STATE_WORKING', { text: 'thinking' })))).toBe(false);
    expect(mayWait(row('SUBMITTED', { statusMessage: { messageId: 'm0', role: 'ROLE_AGENT', parts: [{ text: 'queued' }] } as never }), working)).toBe(false);
    expect(mayWait(row('SUBMITTED', { contextId: undefined }), working)).toBe(false);
    expect(mayWait(row('SUBMITTED'), event(su('TASK_STATE_WORKING', { contextId: 'C2' })))).toBe(false);
    expect(mayWait(row('SUBMITTED'), event(su('TASK_STATE_WORKING', { contextId: '' })))).toBe(true);
    expect(mayWait(row('SUBMITTED', { namedTaskUnread: true }), working)).toBe(false);
    expect(mayWait(row('SUBMITTED', { notFoundCount: 1, firstNotFoundAt: 5 }), working)).toBe(false);
    expect(mayWait(row('SUBMITTED', { push: true }), working)).toBe(false);
    expect(mayWait(row('SUBMITTED', { push: true, pushConfigState: 'created' } as never), working)).toBe(true);
    expect(mayWait(row('SUBMITTED', { taskId: undefined }), working)).toBe(false);
    for (const state of ['INTENT', 'INPUT_REQUIRED', 'AUTH_REQUIRED', 'COMPLETED', 'AMBIGUOUS'] as const) expect(mayWait(row(state), working)).toBe(false);
  });
});

describe('whenNextArrives', () => {
  const submitted = row('SUBMITTED');
  it('a finished status of our task written as it came drops the waiting write; held back for a full read, it goes first', () => {
    expect(whenNextArrives(submitted, event(su('TASK_STATE_COMPLETED')))).toBe('drop');
    expect(whenNextArrives(submitted, event(au(), su('TASK_STATE_COMPLETED')))).toBe('drop');
    expect(whenNextArrives(submitted, event(taskOf('TASK_STATE_FAILED')))).toBe('drop');
    expect(whenNextArrives(submitted, { ...event(su('TASK_STATE_COMPLETED')), partialArtifacts: 'appended' } as Observation)).toBe('flush');
    expect(whenNextArrives(submitted, { ...event(taskOf('TASK_STATE_COMPLETED')), partialArtifacts: 'resubscribed' } as Observation)).toBe('drop');
    expect(whenNextArrives(submitted, event(su('TASK_STATE_COMPLETED', { taskId: 'T2' })))).toBe('flush');
    expect(whenNextArrives(submitted, event(au('T2'), su('TASK_STATE_COMPLETED')))).toBe('flush');
  });
  it('a full read of the task finished drops it; any other read goes after it', () => {
    const read = (state: TaskState, complete = true, id = 'T1'): Observation => ({ kind: 'task-read', task: { id, status: { state }, history: [] } as never, call: 'get-task', complete, ownership: { kind: 'proven', by: 'task-id' }, why: 'collect', cycle: true });
    expect(whenNextArrives(submitted, read('TASK_STATE_COMPLETED'))).toBe('drop');
    expect(whenNextArrives(submitted, read('TASK_STATE_COMPLETED', false))).toBe('flush');
    expect(whenNextArrives(submitted, read('TASK_STATE_COMPLETED', true, 'T2'))).toBe('flush');
    expect(whenNextArrives(submitted, read('TASK_STATE_WORKING'))).toBe('flush');
  });
  it('an artifact update or a Message alone keeps it waiting; another status, a question, the stream\'s end go after it; a lost lease drops it', () => {
    expect(whenNextArrives(submitted, event(au()))).toBe('keep');
    expect(whenNextArrives(submitted, event({ message: { messageId: 'm', role: 'ROLE_AGENT', parts: [] } } as StreamResponse))).toBe('keep');
    for (const state of ['TASK_STATE_WORKING', 'TASK_STATE_SUBMITTED', 'TASK_STATE_INPUT_REQUIRED', 'TASK_STATE_AUTH_REQUIRED'] as const) expect(whenNextArrives(submitted, event(su(state)))).toBe('flush');
    expect(whenNextArrives(submitted, event(au(), su('TASK_STATE_INPUT_REQUIRED')))).toBe('flush');
    for (const observation of [{ kind: 'stream-ended', how: 'closed' }, { kind: 'stream-failed', code: 'STREAM_DROPPED', retryable: true }, { kind: 'closing' }, { kind: 'deadline-passed', deadlineAt: 1 }, { kind: 'read-failed', call: 'get-task', code: 'X', retryable: true, why: 'w', cycle: true }] as Observation[]) {
      expect(whenNextArrives(submitted, observation)).toBe('flush');
    }
    expect(whenNextArrives(submitted, { kind: 'lease-lost' })).toBe('drop');
  });
});

/** A recording sink over a row whose state follows the statuses written (finished: `settle`; INPUT_REQUIRED: `park`). */
function recordingSink(): RowSink & { written: Observation[] } {
  let current = row('SUBMITTED');
  const written: Observation[] = [];
  const sink = async (observation: Observation): Promise<SinkResult> => {
    written.push(observation);
    if (observation.kind !== 'stream-event') return { next: 'read-once' };
    const last = observation.responses[observation.responses.length - 1]!;
    const state = 'statusUpdate' in last ? last.statusUpdate.status.state : 'task' in last ? last.task.status.state : undefined;
    if (state) current = { ...current, state: state.slice('TASK_STATE_'.length) as JournalState };
    return { next: ['COMPLETED', 'FAILED'].includes(current.state) ? 'settle' : current.state === 'INPUT_REQUIRED' ? 'park' : 'continue' };
  };
  return Object.assign(sink, { row: () => current, written });
}

const silent = { warn: () => undefined } as never;

describe('holdWorkingWrites', () => {
  it('0 ms: the sink itself', () => {
    const inner = recordingSink();
    expect(holdWorkingWrites(inner, { delayMs: 0, log: silent }).sink).toBe(inner);
  });
  it('a WORKING then COMPLETED within the window: only COMPLETED reaches the sink, and the timer is cancelled', async () => {
    const inner = recordingSink();
    const clock = manualTimer();
    const { sink, end } = holdWorkingWrites(inner, { delayMs: 250, log: silent, timer: clock.timer });
    const working = event(taskOf('TASK_STATE_WORKING'));
    const completed = event(au(), su('TASK_STATE_COMPLETED'));
    expect((await sink(working)).next).toBe('continue');
    expect(clock.pending()).toBe(true);
    expect((await sink(completed)).next).toBe('settle');
    expect(clock.pending()).toBe(false);
    await end();
    expect(inner.written).toEqual([completed]);
  });
  it('the window ends: the WORKING is written; an artifact meanwhile keeps it waiting; the stream\'s end writes it first', async () => {
    const inner = recordingSink();
    const clock = manualTimer();
    const { sink, end } = holdWorkingWrites(inner, { delayMs: 250, log: silent, timer: clock.timer });
    const working = event(su('TASK_STATE_WORKING'));
    const artifact = event(au());
    await sink(working);
    await sink(artifact);
    expect(inner.written).toEqual([artifact]);
    clock.fire();
    await sink(event(au()));
    expect(inner.written.slice(0, 2)).toEqual([artifact, working]);
    const again = event(su('TASK_STATE_WORKING'));
    await sink(again);
    const ended: Observation = { kind: 'stream-ended', how: 'closed' };
    expect((await sink(ended)).next).toBe('read-once');
    expect(inner.written.slice(-2)).toEqual([again, ended]);
    expect(clock.pending()).toBe(false);
    await end();
  });
  it('a question writes the waiting WORKING first; a run that ends on an error writes it at its end; a lost lease drops it', async () => {
    const question = recordingSink();
    const clock = manualTimer();
    const held = holdWorkingWrites(question, { delayMs: 250, log: silent, timer: clock.timer });
    const working = event(su('TASK_STATE_WORKING'));
    const asked = event(su('TASK_STATE_INPUT_REQUIRED', { text: 'which date?' }));
    await held.sink(working);
    expect((await held.sink(asked)).next).toBe('park');
    expect(question.written).toEqual([working, asked]);

    const cut = recordingSink();
    const ending = holdWorkingWrites(cut, { delayMs: 250, log: silent, timer: clock.timer });
    await ending.sink(working);
    await ending.end();
    expect(cut.written).toEqual([working]);
    expect(clock.pending()).toBe(false);

    const lost = recordingSink();
    const losing = holdWorkingWrites(lost, { delayMs: 250, log: silent, timer: clock.timer });
    await losing.sink(working);
    await losing.sink({ kind: 'lease-lost' });
    await losing.end();
    expect(lost.written).toEqual([{ kind: 'lease-lost' }]);
  });
  it('a timer\'s write that throws is thrown to the next observation, which is not applied', async () => {
    const clock = manualTimer();
    let calls = 0;
    const failing = Object.assign(async (): Promise<SinkResult> => {
      calls++;
      throw new Error('redis down');
    }, { row: () => row('SUBMITTED') });
    const { sink, end } = holdWorkingWrites(failing, { delayMs: 250, log: silent, timer: clock.timer });
    await sink(event(su('TASK_STATE_WORKING')));
    clock.fire();
    await expect(sink(event(su('TASK_STATE_COMPLETED')))).rejects.toThrow('redis down');
    expect(calls).toBe(1);
    await end();
  });
});

describe('workingWriteDelayMs', () => {
  it('default 250; whole ms from 0 to 60,000, from startFleet options and the environment alike', async () => {
    const { compileFleetOptions, WorkingWriteDelayMsSchema } = await import('../src/options.ts');
    const { parseWorkerEnvironment } = await import('../src/config.ts');
    expect(compileFleetOptions({ redis: 'redis://x' }).workingWriteDelayMs).toBe(250);
    for (const value of [0, 1, 60_000]) expect(compileFleetOptions({ redis: 'redis://x', workingWriteDelayMs: value }).workingWriteDelayMs).toBe(value);
    for (const value of [-1, 1.5, 60_001, Number.NaN, '250' as never]) expect(() => compileFleetOptions({ redis: 'redis://x', workingWriteDelayMs: value })).toThrow(/workingWriteDelayMs must be a whole number of ms from 0 to 60000/);
    expect(parseWorkerEnvironment({ DA2A_WORKING_WRITE_DELAY_MS: '0' }).DA2A_WORKING_WRITE_DELAY_MS).toBe(0);
    expect(() => parseWorkerEnvironment({ DA2A_WORKING_WRITE_DELAY_MS: '90000' })).toThrow(/from 0 to 60000/);
    expect(WorkingWriteDelayMsSchema.safeParse('x').success).toBe(false);
  });
});
