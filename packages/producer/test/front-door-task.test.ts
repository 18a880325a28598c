/**
 * The front door's pure parts: task ids from (principal, messageId), and the front task a caller sees of
 * a workflow view in each state.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { TaskState, type StreamResponse } from '@a2a-js/sdk';
import { ID_PATTERN } from '@durable-a2a/shared';
import { frontTaskId, isTaskOf, principalOf } from '../src/server/a2a/caller.ts';
import { frontTask } from '../src/server/a2a/task.ts';
import { streamEndsAt, taskEvents } from '../src/server/a2a/events.ts';
import type { AttemptSummary, OpenQuestion, WorkflowView } from '../src/view.ts';

describe('front task ids', () => {
  it('any messageId of any caller gives a journal-valid id, the same every time, owned by that caller only', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1 }), fc.string({ minLength: 1 }), fc.string({ minLength: 1 }), fc.string({ unit: 'grapheme' }), (token, otherToken, messageId, otherMessageId) => {
        const principal = principalOf(token);
        const id = frontTaskId(principal, messageId);
        expect(id).toMatch(ID_PATTERN);
        expect(frontTaskId(principal, messageId)).toBe(id);
        expect(isTaskOf(principal, id)).toBe(true);
        if (otherToken !== token) expect(isTaskOf(principalOf(otherToken), id)).toBe(false);
        if (otherMessageId !== messageId) expect(frontTaskId(principal, otherMessageId)).not.toBe(id);
      }),
    );
  });

  it('ids that only start like a task of the caller are not theirs', () => {
    const principal = principalOf('token');
    expect(isTaskOf(principal, `${frontTaskId(principal, 'm')}x`)).toBe(false);
    expect(isTaskOf(principal, `a2a-${principal}-`)).toBe(false);
    expect(isTaskOf(principal, 'some-workflow')).toBe(false);
  });
});

const attempt = (fields: Partial<AttemptSummary>): AttemptSummary => ({ delegationId: 'main.1', state: 'WORKING', artifacts: [], finished: false, ...fields }) as AttemptSummary;

function view(state: string, fields: { attempts?: AttemptSummary[]; question?: OpenQuestion; cancelRequested?: boolean; failure?: string[] } = {}): WorkflowView {
  return {
    workflowId: 'a2a-0123456789abcdef-0123456789abcdef0123456789abcdef',
    tenant: 'default',
    state,
    cancelRequested: fields.cancelRequested ?? false,
    failure: fields.failure,
    createdAt: '1970-01-01T00:00:01.000Z',
    updatedAt: '1970-01-01T00:00:02.000Z',
    definition: {
      workflowId: 'w',
      steps: [{ name: 'main', skill: 'book', message: { parts: [{ text: 'book it' }] } }],
      maxAttemptsPerStep: 3,
      metadata: { frontDoor: { principal: '0123456789abcdef', messageId: 'caller-message', contextId: 'caller-context' } },
    } as WorkflowView['definition'],
    steps: [{ name: 'main', attempts: fields.attempts ?? [], compensations: [] }],
    openQuestions: fields.question ? [fields.question] : [],
    history: [],
  };
}

describe('the front task of a workflow view', () => {
  it.each([
    ['RUNNING before any agent has it', view('RUNNING', { attempts: [attempt({ state: 'INTENT' })] }), TaskState.TASK_STATE_SUBMITTED],
    ['RUNNING at the agent', view('RUNNING', { attempts: [attempt({ taskId: 'remote' })] }), TaskState.TASK_STATE_WORKING],
    ['waiting for a person (the caller waits)', view('NEEDS_ATTENTION', { attempts: [attempt({ state: 'AMBIGUOUS' })] }), TaskState.TASK_STATE_WORKING],
    ['COMPLETED', view('COMPLETED', { attempts: [attempt({ state: 'COMPLETED', finished: true })] }), TaskState.TASK_STATE_COMPLETED],
    ['FAILED with the agent rejecting', view('FAILED', { attempts: [attempt({ state: 'REJECTED', finished: true })], failure: ['no rooms'] }), TaskState.TASK_STATE_REJECTED],
    ['FAILED', view('FAILED', { attempts: [attempt({ state: 'FAILED', finished: true })] }), TaskState.TASK_STATE_FAILED],
    ['COMPENSATED after a cancel', view('COMPENSATED', { cancelRequested: true }), TaskState.TASK_STATE_CANCELED],
    ['COMPENSATED after a failure', view('COMPENSATED'), TaskState.TASK_STATE_FAILED],
    ['CANCELED', view('CANCELED', { cancelRequested: true }), TaskState.TASK_STATE_CANCELED],
  ])('%s', (_name, workflow, expected) => {
    expect(frontTask(workflow).status?.state).toBe(expected);
  });

  it("an open question is the task's state and status message; the caller's message and the question are the history", () => {
    const question: OpenQuestion = { step: 'main', delegationId: 'main.1', taskId: 'remote', state: 'AUTH_REQUIRED', text: 'Sign in', question: { messageId: 'q1', role: 'ROLE_AGENT', parts: [{ text: 'Sign in' }] } };
    const task = frontTask(view('RUNNING', { attempts: [attempt({ state: 'AUTH_REQUIRED', taskId: 'remote' })], question }));
    expect(task.status?.state).toBe(TaskState.TASK_STATE_AUTH_REQUIRED);
    expect(task.status?.message?.parts[0]?.content).toEqual({ $case: 'text', value: 'Sign in' });
    expect(task.contextId).toBe('caller-context');
    expect(task.history.map((message) => message.messageId)).toEqual(['caller-message', 'q1']);
    expect(frontTask(view('RUNNING', { question }), 1).history.map((message) => message.messageId)).toEqual(['q1']);
    expect(frontTask(view('RUNNING', { question }), 0).history).toEqual([]);
    expect(streamEndsAt(task)).toBe(true);
  });

  it('artifacts are the last attempt’s, keyed by artifactId', () => {
    const artifacts = [{ artifactId: 'a1', parts: [{ text: 'first' }] }, { artifactId: 'a2', name: 'receipt', parts: [{ data: { total: 3 } }] }];
    const task = frontTask(view('COMPLETED', { attempts: [attempt({ state: 'FAILED', finished: true, artifacts: [{ artifactId: 'old', parts: [{ text: 'x' }] }] }), attempt({ delegationId: 'main.2', state: 'COMPLETED', finished: true, artifacts })] }));
    expect(task.artifacts.map((artifact) => artifact.artifactId)).toEqual(['a1', 'a2']);
    expect(task.artifacts[1]!.parts[0]!.content).toEqual({ $case: 'data', value: { total: 3 } });
  });
});

describe('a stream to a caller that reads slowly (property)', () => {
  // Kind: the front door's event streams ignored backpressure: every view's updates were written whatever the
  // connection held, so a client that never reads made the server hold each update of a growing artifact.
  const HIGH_WATER = 1_000;
  const growing = (length: number, finished: boolean) =>
    view(finished ? 'COMPLETED' : 'RUNNING', { attempts: [attempt({ taskId: 'remote', state: finished ? 'COMPLETED' : 'WORKING', finished, artifacts: [{ artifactId: 'a1', parts: [{ text: 'x'.repeat(length) }] }] } as Partial<AttemptSummary>)] });
  const bytesOf = (event: StreamResponse) => JSON.stringify(event, (_key, value: unknown) => (typeof value === 'bigint' ? String(value) : value)).length;

  it('the next view is read only once the connection holds at most its high-water mark; the last event is the final state with the whole artifact', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.integer({ min: 1, max: 4_000 }), { minLength: 1, maxLength: 12 }), fc.array(fc.integer({ min: 0, max: 3_000 }), { minLength: 1, maxLength: 6 }), async (growth, readRates) => {
        const lengths = growth.reduce<number[]>((all, add) => [...all, (all.at(-1) ?? 0) + add], []);
        const views = [...lengths.map((length) => growing(length, false)), growing(lengths.at(-1)!, true)];
        let index = 0;
        let pending = 0;
        let mostPendingAtRead = 0;
        let drains = 0;
        const reader = {
          get: async () => views[0]!,
          waitFor: async () => {
            mostPendingAtRead = Math.max(mostPendingAtRead, pending);
            index = Math.min(index + 1, views.length - 1);
            return views[index]!;
          },
        };
        // The caller reads `readRates` bytes per turn (in turn, at least one byte: it never stops for good).
        const drained = async () => {
          while (pending > HIGH_WATER) pending = Math.max(0, pending - Math.max(1, readRates[drains++ % readRates.length]!));
        };
        const events: StreamResponse[] = [];
        for await (const event of taskEvents(reader, views[0]!.workflowId, new AbortController().signal, 0, drained)) {
          events.push(event);
          pending += bytesOf(event);
        }
        expect(mostPendingAtRead).toBeLessThanOrEqual(HIGH_WATER);
        const last = events.at(-1)!;
        expect(last.payload?.$case).toBe('statusUpdate');
        // The whole final artifact reached the caller: in the last artifact update, else in the first snapshot.
        const texts = events.flatMap((event) => {
          const artifacts = event.payload?.$case === 'artifactUpdate' ? [event.payload.value.artifact] : event.payload?.$case === 'task' ? event.payload.value.artifacts : [];
          return artifacts.map((artifact) => (artifact?.parts ?? []).map((part) => (part.content?.$case === 'text' ? part.content.value : '')).join(''));
        });
        expect(texts.at(-1)?.length).toBe(lengths.at(-1));
      }),
      { numRuns: 100, examples: [[[4_000, 4_000, 4_000, 4_000], [0]], [[10, 10, 10], [3_000]], [[3_999], [1]]] },
    );
  });
});
