/**
 * Property (attack10): a search for our message never concludes "not found" (which resends our message) while the
 * agent lists or reads a task in the context we sent: that context is a fresh one per delegation, so such a task
 * was created by our message, whatever its history says (an agent may store our message under an id of its own).
 * The transport is a plain object answering ListTasks and GetTask from a generated list of tasks (no I/O).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { A2ATransport, Task } from '@durable-a2a/a2a';
import type { DelegationRecord } from '@durable-a2a/shared';
import { findTaskByMessageId } from '../src/delegation/io/search.ts';

const OUR_CONTEXT = 'ctx-ours';
const OUR_MESSAGE = 'msg-ours';

const taskArbitrary = fc.record({
  id: fc.constantFrom('T1', 'T2', 'T3', 'T4'),
  inOurContext: fc.boolean(),
  otherContext: fc.constantFrom('', 'ctx-other'),
  userMessageId: fc.constantFrom('agent-assigned', 'someone-else', 'm-9'),
  withHistory: fc.boolean(),
  state: fc.constantFrom('TASK_STATE_WORKING', 'TASK_STATE_COMPLETED', 'TASK_STATE_FAILED'),
});

type Generated = fc.infer<typeof taskArbitrary>;

const taskOf = (generated: Generated): Task =>
  ({
    id: generated.id,
    contextId: generated.inOurContext ? OUR_CONTEXT : generated.otherContext,
    status: { state: generated.state },
    ...(generated.withHistory ? { history: [{ messageId: generated.userMessageId, role: 'ROLE_USER', parts: [{ text: 'go' }] }] } : {}),
  }) as Task;

/** An agent that honours the context filter when every task names a context, and answers GetTask from the same list. */
function transportOf(tasks: Task[]): A2ATransport {
  return {
    listTasks: async (request: { contextId?: string }) => ({
      tasks: request.contextId === undefined ? tasks : tasks.filter((task) => task.contextId === request.contextId || task.contextId === ''),
      nextPageToken: '',
      pageSize: 50,
      totalSize: tasks.length,
    }),
    getTask: async ({ id }: { id: string }) => tasks.find((task) => task.id === id)!,
  } as unknown as A2ATransport;
}

const record = { messageId: OUR_MESSAGE, requestedContextId: OUR_CONTEXT, contextRefused: false, createdAt: 1_000_000 } as DelegationRecord;

describe('property: a task in our context is never a conclusive "not found"', () => {
  it('over generated listings: a listed task in our context makes the search inconclusive or found', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uniqueArray(taskArbitrary, { selector: (task) => task.id, maxLength: 4 }), fc.boolean(), async (generated, readCandidates) => {
        const tasks = generated.map(taskOf);
        const result = await findTaskByMessageId(transportOf(tasks), record, { marginMs: 1000, maxListTasksCalls: 10, now: () => 2_000_000, readCandidates });
        const ours = tasks.some((task) => task.contextId === OUR_CONTEXT);
        if (ours) expect(result.kind === 'found' || (result.kind === 'not-found' && result.inconclusive)).toBe(true);
      }),
      { numRuns: 200 },
    );
  });
});
