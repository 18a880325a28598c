/**
 * Property (attack10, attack12): what a search for our message concludes from the tasks an agent keeps in the context
 * we sent (a fresh one per delegation). A task holding our messageId is found by it. Else the only task in our context,
 * read in full, is found by the context (attack12: our context proves it ours, as it proves a send answer ours,
 * `answerContentProof`); several tasks in our context leave the search inconclusive (a person decides, never a resend),
 * and so does one when the context proves nothing (refused, ignored by the agent's filter, or a listing that may be
 * incomplete: a repeated page token) or whose history holds no user message (trimmed, field case R14). The transport is a plain object answering ListTasks and GetTask from a generated
 * list of tasks (no I/O). More than one listed task holding our messageId is `several` (attack16), never one adopted.
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
  userMessageId: fc.constantFrom('agent-assigned', 'someone-else', 'm-9', OUR_MESSAGE),
  withHistory: fc.boolean(),
  state: fc.constantFrom('TASK_STATE_WORKING', 'TASK_STATE_COMPLETED', 'TASK_STATE_FAILED'),
});

type Generated = typeof taskArbitrary extends fc.Arbitrary<infer Value> ? Value : never;
/** How the agent answers ListTasks: honours the context filter, ignores it (lists every task), or repeats its page token. */
type Behaviour = 'honours' | 'ignores' | 'repeats-token';

const taskOf = (generated: Generated): Task =>
  ({
    id: generated.id,
    contextId: generated.inOurContext ? OUR_CONTEXT : generated.otherContext,
    status: { state: generated.state },
    ...(generated.withHistory ? { history: [{ messageId: generated.userMessageId, role: 'ROLE_USER', parts: [{ text: 'go' }] }] } : {}),
  }) as Task;

/** The tasks a ListTasks `request` shows (a context filter honoured unless `ignores`; a task naming no context passes it). */
const listed = (tasks: Task[], behaviour: Behaviour, contextId: string | undefined) =>
  contextId === undefined || behaviour === 'ignores' ? tasks : tasks.filter((task) => task.contextId === contextId || task.contextId === '');

/** An agent answering ListTasks as `behaviour` says, and GetTask from the same list. */
function transportOf(tasks: Task[], behaviour: Behaviour): A2ATransport {
  return {
    listTasks: async (request: { contextId?: string }) => ({
      tasks: listed(tasks, behaviour, request.contextId),
      nextPageToken: behaviour === 'repeats-token' ? 'again' : '',
      pageSize: 50,
      // The count of the tasks the filter matches, as the spec and @a2a-js/sdk give it (a listing shorter than its own
      // count proves no absence: redteam21).
      totalSize: listed(tasks, behaviour, request.contextId).length,
    }),
    getTask: async ({ id }: { id: string }) => tasks.find((task) => task.id === id)!,
  } as unknown as A2ATransport;
}

const recordOf = (contextRefused: boolean) => ({ messageId: OUR_MESSAGE, requestedContextId: OUR_CONTEXT, contextRefused, createdAt: 1_000_000 }) as DelegationRecord;
const holds = (task: Task) => task.history?.some((message) => message.messageId === OUR_MESSAGE) ?? false;

describe('property: the search over tasks in our context', () => {
  it('our messageId found by it; else the only task in our context (read in full, context honoured) found; several, or a context that proves nothing: never found by context, inconclusive when ours are listed', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(taskArbitrary, { selector: (task) => task.id, maxLength: 4 }),
        fc.boolean(),
        fc.constantFrom<Behaviour>('honours', 'ignores', 'repeats-token'),
        fc.boolean(),
        async (generated, readCandidates, behaviour, contextRefused) => {
          const tasks = generated.map(taskOf);
          const record = recordOf(contextRefused);
          const result = await findTaskByMessageId(transportOf(tasks, behaviour), record, { marginMs: 1000, maxListTasksCalls: 10, now: () => 2_000_000, readCandidates });
          const visible = listed(tasks, behaviour, contextRefused ? undefined : OUR_CONTEXT);
          const ours = tasks.filter((task) => task.contextId === OUR_CONTEXT);
          // The agent shows that it ignores the filter when it lists a task of another context.
          const filterIgnored = behaviour === 'ignores' && tasks.some((task) => task.contextId !== '' && task.contextId !== OUR_CONTEXT);
          const contextProves = !contextRefused && !filterIgnored && behaviour !== 'repeats-token';
          const holders = visible.filter(holds);
          if (holders.length > 1) {
            // attack16: more than one task holds our message: none is adopted, every one is named.
            expect(result.kind).toBe('several');
            expect([...(result as { taskIds: string[] }).taskIds].sort()).toEqual(holders.map((task) => task.id).sort());
          } else if (holders.length === 1) {
            expect(result).toMatchObject({ kind: 'found', by: 'message-id' });
            expect(holds((result as { task: Task }).task)).toBe(true);
          } else if (readCandidates && contextProves && ours.length === 1 && ours[0]!.history?.some((message) => message.role === 'ROLE_USER')) {
            expect(result).toMatchObject({ kind: 'found', by: 'context', complete: true, task: { id: ours[0]!.id, contextId: OUR_CONTEXT } });
          } else {
            expect(result.kind).toBe('not-found');
            if (!contextRefused && ours.length > 0) expect(result).toMatchObject({ inconclusive: true });
          }
        },
      ),
      { numRuns: 400 },
    );
  });
});
