/**
 * Property (redteam21, the kind of field case R16: an agent whose context for our task is not the one we sent): a
 * search that may conclude "absent" (`beyondContext`: the reconciler's, the check before LOST) never concludes it while
 * a task at the agent holds our message, whatever context the agent put that task in (the one we sent, one of its own,
 * none) and however its ListTasks treats our context filter (honours it, ignores it, refuses it with -32602). And it
 * still concludes when no task holds our message and every listed task is another client's, read in full (the resend
 * stays possible). The transport is a plain object answering ListTasks (the context filter and `statusTimestampAfter`
 * as `behaviour` says) and GetTask from a generated list of tasks (no I/O).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvalidParamsError, type A2ATransport, type Task } from '@durable-a2a/a2a';
import type { DelegationRecord } from '@durable-a2a/shared';
import { findTaskByMessageId } from '../src/delegation/io/search.ts';

const OUR_CONTEXT = 'ctx-ours';
const OUR_MESSAGE = 'msg-ours';
const CREATED_AT = Date.parse('2026-12-06T10:00:00.000Z');
const NOW = CREATED_AT + 60_000;

/** Where the agent keeps a task: the context we sent, one of its own (R16), none. */
const contextArbitrary = fc.constantFrom(OUR_CONTEXT, 'agent-own', '');
const taskArbitrary = fc.record({
  id: fc.constantFrom('T1', 'T2', 'T3', 'T4'),
  contextId: contextArbitrary,
  userMessageId: fc.constantFrom('someone-else', 'm-9', OUR_MESSAGE),
  /** Seconds the agent's status clock lags ours (a time filter must still see it: R27). */
  lagSeconds: fc.constantFrom(0, 30, 3_600, 20 * 3_600),
});
type Generated = typeof taskArbitrary extends fc.Arbitrary<infer Value> ? Value : never;
/** How the agent answers ListTasks' context filter. */
type Behaviour = 'honours' | 'ignores' | 'refuses';

const taskOf = (generated: Generated): Task =>
  ({
    id: generated.id,
    contextId: generated.contextId,
    status: { state: 'TASK_STATE_COMPLETED', timestamp: new Date(NOW - generated.lagSeconds * 1000).toISOString() },
    history: [{ messageId: generated.userMessageId, role: 'ROLE_USER', parts: [{ text: 'go' }] }],
  }) as Task;

function transportOf(tasks: Task[], behaviour: Behaviour): A2ATransport {
  return {
    listTasks: async (request: { contextId?: string; statusTimestampAfter?: string }) => {
      if (request.contextId !== undefined && behaviour === 'refuses') throw new InvalidParamsError('contextId not supported');
      const byContext = request.contextId === undefined || behaviour === 'ignores' ? tasks : tasks.filter((task) => task.contextId === request.contextId);
      const after = request.statusTimestampAfter === undefined ? -Infinity : Date.parse(request.statusTimestampAfter);
      return { tasks: byContext.filter((task) => Date.parse(task.status.timestamp!) >= after), nextPageToken: '', pageSize: 50, totalSize: byContext.length };
    },
    getTask: async ({ id }: { id: string }) => tasks.find((task) => task.id === id)!,
  } as unknown as A2ATransport;
}

const record = { messageId: OUR_MESSAGE, requestedContextId: OUR_CONTEXT, contextRefused: false, createdAt: CREATED_AT } as DelegationRecord;
const holds = (task: Task) => task.history?.some((message) => message.messageId === OUR_MESSAGE) ?? false;

describe('property: a search that may conclude "absent" looks beyond the context we sent', () => {
  it('never a conclusive not-found while a task holds our message, in whatever context; conclusive when none does and every task is another client\'s', async () => {
    const substituted: [Generated[], Behaviour] = [[{ id: 'T1', contextId: 'agent-own', userMessageId: OUR_MESSAGE, lagSeconds: 0 }], 'honours'];
    const noContext: [Generated[], Behaviour] = [[{ id: 'T1', contextId: '', userMessageId: OUR_MESSAGE, lagSeconds: 3_600 }, { id: 'T2', contextId: 'agent-own', userMessageId: 'm-9', lagSeconds: 0 }], 'honours'];
    const othersOnly: [Generated[], Behaviour] = [[{ id: 'T2', contextId: 'agent-own', userMessageId: 'm-9', lagSeconds: 0 }], 'honours'];
    await fc.assert(
      fc.asyncProperty(fc.uniqueArray(taskArbitrary, { selector: (task) => task.id, maxLength: 4 }), fc.constantFrom<Behaviour>('honours', 'ignores', 'refuses'), async (generated, behaviour) => {
        const tasks = generated.map(taskOf);
        const result = await findTaskByMessageId(transportOf(tasks, behaviour), record, { marginMs: 5_000, maxListTasksCalls: 10, now: () => NOW, beyondContext: true });
        const holders = tasks.filter(holds);
        const conclusiveAbsence = result.kind === 'not-found' && !result.inconclusive && !result.paginationBroken;
        // Several holders: never "absent" (a second holder outside our context is not looked for once our context shows
        // a task: found there, or inconclusive).
        if (holders.length > 1) expect(conclusiveAbsence).toBe(false);
        else if (holders.length === 1) {
          // Never "absent" (a resend, LOST); found by our messageId unless the only task in our context was taken first.
          expect(conclusiveAbsence).toBe(false);
          if (!tasks.some((task) => task.contextId === OUR_CONTEXT)) expect(result).toMatchObject({ kind: 'found', task: { id: holders[0]!.id } });
        } else if (tasks.every((task) => task.contextId !== OUR_CONTEXT)) expect(result).toMatchObject({ kind: 'not-found', inconclusive: false, paginationBroken: false });
        else expect(result.kind === 'not-found' ? result.inconclusive || result.paginationBroken : result.kind === 'found').toBe(true);
      }),
      { numRuns: 300, examples: [substituted, noContext, othersOnly] },
    );
  });
});
