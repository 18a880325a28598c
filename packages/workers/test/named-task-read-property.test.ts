/**
 * Property (attack 25, a whole Task applied to a task a Message answer named without the ownership judgement): for a
 * row bound to T9 by an agent Message naming it and nothing of T9 read since (`namedTaskUnread`), whatever path brings
 * the first full read of T9 (CancelTask's answer, the GetTask after a refused CancelTask, a reconcile re-read, a follow
 * cycle's GetTask, ListTasks read in full, the check before LOST, a stream's or a push's Task, the reply's answer),
 * whatever state it shows and whoever it belongs to:
 *   - another client's (another context, no message of ours in its history): nothing of it is written (no snapshot or
 *     Task event of T9, no outcome from it, never "their booking"); when the row judges it, FOREIGN_TASK is noted and a
 *     person decides (AMBIGUOUS);
 *   - ours (the context we sent, or our messageId in its history): applied as any read of our task.
 * The end-to-end cases are in test/send/attacks-25.test.ts.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Message, Task } from '@durable-a2a/a2a';
import type { DelegationRecord } from '@durable-a2a/shared';
import type { Observation } from '../src/delegation/core/observation.ts';
import type { Policy } from '../src/delegation/core/policy.ts';
import { transition, type Write } from '../src/delegation/core/transitions.ts';
import { stepRow } from './step-row.ts';

const policy = { now: () => 5_000_000, random: () => 0.5, sendAttempts: 3, sendSettleMs: 31_000, notFoundThreshold: 3, notFoundWindowMs: 0, reconcileIntervalMs: 1_000, unacceptableAnswerLimit: 3 } as unknown as Policy;

/** How the first full read of T9 arrives. */
const PATHS = ['cancel-answer', 'cancel-refused-get-task', 'reconcile-read', 'follow-read', 'list-tasks-read', 'lost-check', 'stream-task', 'push-task', 'reply-answer'] as const;
type Path = (typeof PATHS)[number];

/** Whose T9 is: ours by the context we sent, ours by our messageId in its history, or another client's. */
type Owner = 'context' | 'history' | 'foreign';

const STATES = ['COMPLETED', 'CANCELED', 'FAILED', 'WORKING', 'INPUT_REQUIRED'] as const;

/** The agent's Message naming T9 in our context (the answer to our SendMessage), kept on the row. */
const answer: Message = { messageId: 'agent-1', role: 'ROLE_AGENT', parts: [{ text: 'working on it in T9' }], taskId: 'T9', contextId: 'C-ours' } as Message;

/** The row bound to T9 by that Message, nothing of T9 read since. */
const flaggedRow = (): DelegationRecord => stepRow({ taskId: 'T9', state: 'SUBMITTED', statusMessage: answer, namedTaskUnread: true, notFoundCount: 0 });

function t9(owner: Owner, state: (typeof STATES)[number]): Task {
  return {
    id: 'T9',
    contextId: owner === 'context' ? 'C-ours' : 'C-someone-else',
    status: { state: `TASK_STATE_${state}` },
    history: [{ messageId: owner === 'history' ? 'M-ours' : 'someone-else', role: 'ROLE_USER', parts: [{ text: 'book' }] } as Message],
    ...(state === 'COMPLETED' ? { artifacts: [{ artifactId: 'a1', parts: [{ text: owner === 'foreign' ? 'their booking' : 'booked' }] }] } : {}),
  } as Task;
}

const byTaskId = { kind: 'proven', by: 'task-id' } as const;

function observationOf(path: Path, task: Task): Observation {
  switch (path) {
    case 'cancel-answer':
      return { kind: 'cancel-answered', task, ownership: byTaskId };
    case 'cancel-refused-get-task':
      return { kind: 'cancel-answered', task, ownership: byTaskId, refused: 'Task cannot be canceled' };
    case 'reconcile-read':
      return { kind: 'task-read', task, call: 'get-task', complete: true, ownership: byTaskId, why: 'reconcile', cycle: false };
    case 'follow-read':
      return { kind: 'task-read', task, call: 'get-task', complete: true, ownership: byTaskId, why: 'follow', cycle: true };
    case 'list-tasks-read':
      return { kind: 'search-result', purpose: 'read', finding: { kind: 'found', task, complete: true, ownership: byTaskId }, deduplicates: false, why: 'GetTask unusable' };
    case 'lost-check':
      return { kind: 'search-result', purpose: 'lost-check', finding: { kind: 'found', task, complete: true, ownership: byTaskId }, deduplicates: false };
    case 'stream-task':
      return { kind: 'stream-event', responses: [{ task }] };
    case 'push-task':
      return { kind: 'push-received', responses: [{ task }] };
    case 'reply-answer':
      return { kind: 'reply-delivered', replyMessageId: 'R-ours', task, ownership: byTaskId };
  }
}

const writesOf = (write: Write | readonly [Write, Write] | undefined): Write[] => (write === undefined ? [] : Array.isArray(write) ? [...write] : [write as Write]);

/** Whether a write applies a Task of T9 whole (a snapshot, or a stream or push Task event). */
const appliesT9 = (write: Write): boolean =>
  (write.kind === 'snapshot' && write.task.id === 'T9') || (write.kind === 'events' && write.responses.some((response) => 'task' in response && response.task.id === 'T9'));

describe('the first full read of a task a Message answer named, whatever path brings it', () => {
  it('another client\'s task is never applied (FOREIGN_TASK, a person); ours is applied', () => {
    const examples: [Path, Owner, (typeof STATES)[number]][] = PATHS.flatMap((path) => [
      [path, 'foreign', 'COMPLETED'] as [Path, Owner, (typeof STATES)[number]],
      [path, 'context', 'COMPLETED'] as [Path, Owner, (typeof STATES)[number]],
      [path, 'history', 'CANCELED'] as [Path, Owner, (typeof STATES)[number]],
    ]);
    fc.assert(
      fc.property(fc.constantFrom(...PATHS), fc.constantFrom<Owner>('context', 'history', 'foreign'), fc.constantFrom(...STATES), (path, owner, state) => {
        const step = transition(flaggedRow(), observationOf(path, t9(owner, state)), policy);
        const writes = writesOf(step.write);
        if (owner === 'foreign') {
          expect(JSON.stringify(writes)).not.toContain('their booking');
          expect(writes.some(appliesT9)).toBe(false);
          expect(writes.some((write) => write.kind === 'outcome')).toBe(false);
          // A person decides (a cancel refused while the task waits for an answer says so, nothing of it applied).
          expect(step.next.kind).toBe('needs-person');
          const waitsOnCancel = path === 'cancel-refused-get-task' && state === 'INPUT_REQUIRED';
          if (!waitsOnCancel) {
            expect(step.next).toMatchObject({ code: 'AMBIGUOUS', delivery: 'received' });
            expect(writes).toContainEqual({ kind: 'note-protocol-error', error: expect.objectContaining({ code: 'FOREIGN_TASK' }) });
          }
          // The reply stays journaled sent (the agent has it).
          if (path === 'reply-answer') expect(writes[0]).toMatchObject({ kind: 'mark-reply', replyState: 'sent' });
        } else {
          // Ours: applied as any read of our task (but a cancel refused while it waits for an answer: a person, CANCEL_REFUSED).
          if (path === 'cancel-refused-get-task' && state === 'INPUT_REQUIRED') expect(step.next).toMatchObject({ kind: 'needs-person', code: 'CANCEL_REFUSED' });
          else expect(writes.some(appliesT9)).toBe(true);
          expect(writes.some((write) => write.kind === 'note-protocol-error')).toBe(false);
        }
      }),
      { examples },
    );
  });

  it('a ListTasks summary of the named task is no full read: read once, nothing of it applied', () => {
    fc.assert(
      fc.property(fc.constantFrom<Owner>('context', 'history', 'foreign'), fc.constantFrom(...STATES), (owner, state) => {
        const observation: Observation = { kind: 'search-result', purpose: 'read', finding: { kind: 'found', task: t9(owner, state), complete: false, ownership: byTaskId }, deduplicates: false, why: 'GetTask unusable' };
        const step = transition(flaggedRow(), observation, policy);
        expect(writesOf(step.write).some(appliesT9)).toBe(false);
      }),
    );
  });
});
