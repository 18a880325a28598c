/**
 * The push webhook's suspect (`suspectOf`): which refused push names another task for the workers to read. Pure.
 * Real pushes through the webhook are in test/send/foreign-holder.test.ts.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { Message, StreamResponse } from '@durable-a2a/a2a';
import { JOURNAL_STATES, SUSPECT_TASK_ID_MAX, type DelegationRecord, type JournalState } from '@durable-a2a/shared';
import { suspectOf } from '../src/server/routes/push.ts';

const OURS = 'M-ours';
const REPLY = 'R-ours';

/** Who wrote the carried message with an id of ours, if any. */
type Carried = 'ours-user' | 'reply-user' | 'ours-agent' | 'none';

const carried = (what: Carried): Message[] =>
  what === 'none'
    ? [{ messageId: 'M-else', role: 'ROLE_USER', parts: [{ text: 'x' }] } as Message]
    : [{ messageId: what === 'reply-user' ? REPLY : OURS, role: what === 'ours-agent' ? 'ROLE_AGENT' : 'ROLE_USER', parts: [{ text: 'x' }] } as Message];

/** The pushed event: a Task (history or status message), a status update's message, a Message, an artifact update. */
type Shape = 'task-history' | 'task-status' | 'status-update' | 'message' | 'artifact';

function pushed(shape: Shape, taskId: string, messages: Message[]): StreamResponse {
  switch (shape) {
    case 'task-history':
      return { task: { id: taskId, contextId: 'C-other', status: { state: 'TASK_STATE_WORKING' }, history: messages } } as StreamResponse;
    case 'task-status':
      return { task: { id: taskId, contextId: 'C-other', status: { state: 'TASK_STATE_WORKING', message: messages[0] } } } as StreamResponse;
    case 'status-update':
      return { statusUpdate: { taskId, contextId: 'C-other', status: { state: 'TASK_STATE_WORKING', message: messages[0] } } } as StreamResponse;
    case 'message':
      return { message: { ...messages[0]!, taskId } } as StreamResponse;
    case 'artifact':
      return { artifactUpdate: { taskId, contextId: 'C-other', artifact: { artifactId: 'a', parts: [{ text: OURS }] } } } as StreamResponse;
  }
}

const recordOf = (state: JournalState, taskId: string | undefined, replied: boolean): DelegationRecord =>
  ({ workflowId: 'wf', delegationId: 'main.1', messageId: OURS, state, ...(taskId ? { taskId } : {}), ...(replied ? { replyMessageId: REPLY } : {}) }) as unknown as DelegationRecord;

describe('property: the suspect of a refused push', () => {
  it('another task whose pushed body carries a message of ours (not an agent\'s echo), of any id length, on a finished row too (read after the finish: a DUPLICATE_TASK reaches a person)', () => {
    const shapes = fc.constantFrom<Shape>('task-history', 'task-status', 'status-update', 'message', 'artifact');
    const carriedArbitrary = fc.constantFrom<Carried>('ours-user', 'reply-user', 'ours-agent', 'none');
    const taskIds = fc.oneof(fc.constantFrom('T1', 'T2', ''), fc.string({ minLength: 1, maxLength: 1_100 }));
    fc.assert(
      fc.property(fc.constantFrom(...JOURNAL_STATES), fc.constantFrom<string | undefined>(undefined, 'T1'), fc.boolean(), shapes, carriedArbitrary, taskIds, (state, boundTaskId, replied, shape, what, taskId) => {
        const record = recordOf(state, boundTaskId, replied);
        const suspect = suspectOf(record, pushed(shape, taskId, carried(what)));
        const shows = shape !== 'artifact' && (what === 'ours-user' || (what === 'reply-user' && replied));
        // Any length: an id the journal cannot keep is still its suspect (counted lost there: a person decides).
        const named = taskId !== '' && taskId !== boundTaskId;
        expect(suspect).toBe(named && shows ? taskId : undefined);
      }),
      {
        numRuns: 500,
        examples: [
          ['WORKING', 'T1', false, 'task-history', 'ours-user', 'T2'],
          ['INTENT', undefined, false, 'status-update', 'ours-user', 'T1'],
          ['INPUT_REQUIRED', 'T1', true, 'message', 'reply-user', 'T2'],
          ['WORKING', 'T1', false, 'task-status', 'ours-agent', 'T2'],
          ['WORKING', 'T1', false, 'task-history', 'ours-user', 'T1'],
          // A finished row: read after the finish (the journal keeps the id once while it waits).
          ['COMPLETED', 'T1', false, 'task-history', 'ours-user', 'T2'],
          ['AMBIGUOUS', 'T1', false, 'task-history', 'ours-user', 'T2'],
          // An id over SUSPECT_TASK_ID_MAX is still a suspect (attack22: it was dropped, never read).
          ['WORKING', 'T1', false, 'task-history', 'ours-user', 'x'.repeat(SUSPECT_TASK_ID_MAX + 1)],
        ],
      },
    );
  });
});
