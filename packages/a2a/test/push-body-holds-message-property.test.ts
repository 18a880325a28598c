/**
 * Property (review35): `pushBodyHoldsMessage` reads an unvalidated push body as the push route's `suspectOf` reads a
 * validated one: our messageId in the task's conversation (a Task's history or status message, a status update's
 * message, a pushed Message; 1.0 and 0.3 shapes) under a role that is not the agent's holds ours; an agent's echo of
 * the id, another id, or a quote of ours elsewhere (an artifact's text, metadata) does not.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { pushBodyHoldsMessage } from '../src/push.ts';

const OURS = 'M-ours';
type Shape = 'task-history' | 'task-status' | 'status-update' | 'message' | 'v03-task-history' | 'v03-status-update' | 'v03-message' | 'artifact-text' | 'metadata';

function bodyOf(shape: Shape, entry: Record<string, unknown>): unknown {
  const status = { state: 'TASK_STATE_WORKING' };
  switch (shape) {
    case 'task-history': return { task: { id: 'T9', status, history: [entry] } };
    case 'task-status': return { task: { id: 'T9', status: { ...status, message: entry } } };
    case 'status-update': return { statusUpdate: { taskId: 'T9', status: { ...status, message: entry } } };
    case 'message': return { message: { ...entry, taskId: 'T9' } };
    case 'v03-task-history': return { kind: 'task', id: 'T9', status: { state: 'working' }, history: [entry] };
    case 'v03-status-update': return { kind: 'status-update', taskId: 'T9', status: { state: 'working', message: entry } };
    case 'v03-message': return { kind: 'message', taskId: 'T9', ...entry };
    case 'artifact-text': return { task: { id: 'T9', status, artifacts: [{ artifactId: 'a', parts: [{ text: JSON.stringify(entry) }] }] } };
    case 'metadata': return { task: { id: 'T9', status, metadata: { quoted: entry } } };
  }
}

describe('property: pushBodyHoldsMessage', () => {
  it('holds ours exactly for our id under a role not the agent’s, in the conversation', () => {
    fc.assert(
      fc.property(
        fc.constantFrom<Shape>('task-history', 'task-status', 'status-update', 'message', 'v03-task-history', 'v03-status-update', 'v03-message', 'artifact-text', 'metadata'),
        fc.constantFrom('ROLE_USER', 'user', 'ROLE_AGENT', 'agent'),
        fc.constantFrom(OURS, 'M-other'),
        (shape, role, messageId) => {
          const holds = pushBodyHoldsMessage(bodyOf(shape, { messageId, role, parts: [{ text: 'go' }] }), [OURS]);
          const inConversation = shape !== 'artifact-text' && shape !== 'metadata';
          expect(holds).toBe(inConversation && messageId === OURS && role !== 'ROLE_AGENT' && role !== 'agent');
        },
      ),
    );
  });
});
