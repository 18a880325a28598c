/**
 * Property (attack35): an event on our task's own stream (SubscribeToTask's, or the rest of a streaming send's) that
 * names another task than the one we bound is the agent holding our message twice exactly when it carries a message
 * of ours (our messageId, or the reply journaled for a question: written by us, not an agent's echo): a Task's history
 * or status message, a status update's message, a Message event itself. Then: AMBIGUOUS for a person naming both tasks
 * (`severalHolders`, on any unfinished row), nothing of the stream written, whatever rides with it (an artifact update
 * paired before it) and wherever in the observation it comes. Otherwise the stream-event row keeps its rule (the events
 * are written; the journal refuses the foreign one, a protocol error: one read of our task). The same rule as a GetTask,
 * CancelTask, reply or push read of that task (foreign-holder-property.test.ts). Pure: the table alone.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Message, StreamResponse, TaskState } from '@durable-a2a/a2a';
import type { DelegationRecord, JournalState } from '@durable-a2a/shared';
import { transition } from '../src/delegation/core/transitions.ts';
import { OURS, REPLY, holderPolicy, stepRow } from './step-row.ts';


/** What the event carries: our message, the reply, an agent's echo of our messageId, another client's message, nothing. */
type Carries = 'ours' | 'reply' | 'agent-echo' | 'other' | 'none';
/** The event's shape and where the carried message sits in it. */
type Shape = 'task-history' | 'task-status' | 'status-update' | 'message' | 'artifact-update';

const messageOf = (carries: Exclude<Carries, 'none'>, taskId: string): Message =>
  ({
    messageId: carries === 'ours' || carries === 'agent-echo' ? OURS : carries === 'reply' ? REPLY : 'M-someone-else',
    role: carries === 'agent-echo' ? 'ROLE_AGENT' : 'ROLE_USER',
    taskId,
    parts: [{ text: 'book it' }],
  }) as Message;

function eventOf(shape: Shape, taskId: string, carries: Carries, state: TaskState): StreamResponse {
  const carried = carries === 'none' ? undefined : messageOf(carries, taskId);
  const agentSays = { messageId: 'agent-1', role: 'ROLE_AGENT', parts: [{ text: 'on it' }] } as Message;
  // A Task's or a status update's status, with the carried message when there is one.
  const status = { state, ...(carried ? { message: carried } : {}) };
  switch (shape) {
    case 'task-history':
      return { task: { id: taskId, contextId: 'C-x', status: { state }, history: [...(carried ? [carried] : []), agentSays] } } as StreamResponse;
    case 'task-status':
      return { task: { id: taskId, contextId: 'C-x', status } } as StreamResponse;
    case 'status-update':
      return { statusUpdate: { taskId, contextId: 'C-x', status } } as StreamResponse;
    case 'message':
      return { message: carried ?? { ...agentSays, taskId } } as StreamResponse;
    case 'artifact-update':
      return { artifactUpdate: { taskId, contextId: 'C-x', artifact: { artifactId: 'a1', parts: [{ text: 'x' }] } } } as StreamResponse;
  }
}

/** Our row bound to T1 in `state`; `replied`: a reply to the agent's question journaled sent (`REPLY`). */
const recordOf = (state: JournalState, replied: boolean): DelegationRecord =>
  stepRow({ taskId: 'T1', contextId: 'C-ours', state, ...(replied ? { questionKey: 'q1', replyForQuestion: 'q1', replyMessageId: REPLY, replyState: 'sent' } : {}) });

describe('property: another task holding our message, shown on our own stream', () => {
  it('AMBIGUOUS naming both tasks iff the event names another task and carries a message of ours; nothing of the stream written then', () => {
    const shapes = fc.constantFrom<Shape>('task-history', 'task-status', 'status-update', 'message', 'artifact-update');
    const carries = fc.constantFrom<Carries>('ours', 'reply', 'agent-echo', 'other', 'none');
    const names = fc.oneof(fc.constant('T1'), fc.constantFrom('T2', 't1', 'T1 '), fc.string({ minLength: 1, maxLength: 2_000 }).map((text) => `T-${text}`));
    const unfinished = fc.constantFrom<JournalState>('SUBMITTED', 'WORKING', 'INPUT_REQUIRED', 'AUTH_REQUIRED');
    const states = fc.constantFrom<TaskState>('TASK_STATE_WORKING', 'TASK_STATE_COMPLETED', 'TASK_STATE_INPUT_REQUIRED', 'TASK_STATE_FAILED');
    fc.assert(
      fc.property(shapes, carries, names, unfinished, states, fc.boolean(), fc.constantFrom('alone', 'paired', 'ordered'), (shape, carried, named, state, taskState, replied, how) => {
        const record = recordOf(state, replied);
        const event = eventOf(shape, named, carried, taskState);
        // Alone, after an artifact update of our task (the pair the stream applies in one script), with or without a stream id.
        const pairable = how === 'paired' && 'statusUpdate' in event;
        const responses = (pairable ? [eventOf('artifact-update', 'T1', 'none', taskState), event] : [event]) as [StreamResponse] | [StreamResponse, StreamResponse];
        const step = transition(record, { kind: 'stream-event', responses, ...(how === 'ordered' ? { stream: 's1' } : {}) }, holderPolicy);
        const foreign = named !== 'T1' && shape !== 'artifact-update';
        const ofOurs = carried === 'ours' || (carried === 'reply' && replied);
        if (foreign && ofOurs) {
          expect(step.next).toMatchObject({ kind: 'needs-person', code: 'AMBIGUOUS', anyRow: true });
          const message = (step.next as { message: string }).message;
          expect(message).toContain('T1');
          expect(message).toContain(named.slice(0, 100));
          expect(message.length).toBeLessThan(1_500);
          expect(step.write).toBeUndefined();
          return;
        }
        // Not this kind: the stream-event row as it was (the events written, the stream read on).
        expect(step.next.kind).not.toBe('needs-person');
      }),
      {
        numRuns: 1_000,
        examples: [
          ['task-history', 'ours', 'T2', 'WORKING', 'TASK_STATE_COMPLETED', false, 'alone'],
          ['task-history', 'other', 'T2', 'WORKING', 'TASK_STATE_COMPLETED', false, 'alone'],
          ['task-history', 'agent-echo', 'T2', 'WORKING', 'TASK_STATE_COMPLETED', false, 'alone'],
          ['task-history', 'ours', 'T1', 'WORKING', 'TASK_STATE_COMPLETED', false, 'alone'],
          ['task-status', 'ours', 'T2', 'WORKING', 'TASK_STATE_INPUT_REQUIRED', false, 'ordered'],
          ['status-update', 'ours', 'T2', 'WORKING', 'TASK_STATE_INPUT_REQUIRED', false, 'paired'],
          ['status-update', 'reply', 'T2', 'INPUT_REQUIRED', 'TASK_STATE_WORKING', true, 'ordered'],
          ['status-update', 'reply', 'T2', 'WORKING', 'TASK_STATE_WORKING', false, 'ordered'],
          ['message', 'ours', 'T2', 'WORKING', 'TASK_STATE_WORKING', false, 'alone'],
          ['message', 'agent-echo', 'T2', 'WORKING', 'TASK_STATE_WORKING', false, 'alone'],
          ['artifact-update', 'ours', 'T2', 'WORKING', 'TASK_STATE_WORKING', false, 'alone'],
          // Ids that differ from ours by case or a space are other tasks.
          ['task-history', 'ours', 't1', 'WORKING', 'TASK_STATE_WORKING', false, 'alone'],
          ['task-history', 'ours', 'T1 ', 'WORKING', 'TASK_STATE_WORKING', false, 'alone'],
        ],
      },
    );
  });
});
