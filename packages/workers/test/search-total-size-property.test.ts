/**
 * Property (redteam21; the kind of field case R15, pagination that skips): a search that may conclude "absent" never
 * concludes it from a listing that left out a task it counts (`totalSize`), whatever task was left out (ours or
 * another's) and however (a row the agent cannot read, skipped from every listing: @a2a-js/sdk DatabaseTaskStore; an
 * empty page after the first because the cursor's task moved: InMemoryTaskStore), at any page size, with the context
 * filter honoured or refused. A listing that shows every task it counts, none holding our message and none in our
 * context, still concludes (the resend stays possible). The transport is a plain object (no I/O).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvalidParamsError, TaskNotFoundError, type A2ATransport, type Task } from '@durable-a2a/a2a';
import type { DelegationRecord } from '@durable-a2a/shared';
import { findTaskByMessageId } from '../src/delegation/io/search.ts';

const OUR_CONTEXT = 'ctx-ours';
const OUR_MESSAGE = 'msg-ours';
const CREATED_AT = Date.parse('2026-12-06T10:00:00.000Z');
const NOW = CREATED_AT + 60_000;

/** What the listing does wrong: nothing, skips one task from every page (`index` in the agent's order), or loses its cursor after the first page. */
type Fault = { kind: 'none' } | { kind: 'skip-row'; index: number } | { kind: 'cursor-lost' };

const scenario = fc.record({
  /** Other clients' tasks, then (when `ours`) ours, in the context we sent or one the agent chose. */
  others: fc.integer({ min: 0, max: 6 }),
  ours: fc.constantFrom<'none' | 'our-context' | 'agent-context'>('none', 'our-context', 'agent-context'),
  pageSize: fc.integer({ min: 1, max: 3 }),
  refusesContext: fc.boolean(),
  fault: fc.oneof(fc.constant<Fault>({ kind: 'none' }), fc.nat({ max: 7 }).map((index): Fault => ({ kind: 'skip-row', index })), fc.constant<Fault>({ kind: 'cursor-lost' })),
});
type Scenario = typeof scenario extends fc.Arbitrary<infer Value> ? Value : never;

const taskOf = (id: string, contextId: string, messageId: string, secondsAgo: number): Task =>
  ({ id, contextId, status: { state: 'TASK_STATE_WORKING', timestamp: new Date(NOW - secondsAgo * 1000).toISOString() }, history: [{ messageId, role: 'ROLE_USER', parts: [{ text: 'go' }] }] }) as Task;

function tasksOf(s: Scenario): Task[] {
  // Newest first, as the SDK sorts; ours is the oldest (created before every other since).
  const tasks = Array.from({ length: s.others }, (_, index) => taskOf(`X${index}`, `ctx-X${index}`, `m-X${index}`, index + 1));
  if (s.ours !== 'none') tasks.push(taskOf('T1', s.ours === 'our-context' ? OUR_CONTEXT : 'agent-ctx', OUR_MESSAGE, 50));
  return tasks;
}

/** The listing the scenario's agent gives, and the task it leaves out (if any). */
function transportOf(s: Scenario, tasks: Task[]): { transport: A2ATransport; leftOut: () => Set<string> } {
  const leftOut = new Set<string>();
  const skipped = s.fault.kind === 'skip-row' && tasks.length > 0 ? tasks[s.fault.index % tasks.length]!.id : undefined;
  const transport = {
    listTasks: async (request: { contextId?: string; statusTimestampAfter?: string; pageToken?: string }) => {
      if (request.contextId !== undefined && s.refusesContext) throw new InvalidParamsError('contextId filter not supported');
      const after = request.statusTimestampAfter === undefined ? -Infinity : Date.parse(request.statusTimestampAfter);
      const matching = tasks.filter((task) => (request.contextId === undefined || task.contextId === request.contextId) && Date.parse(task.status.timestamp!) > after);
      const start = request.pageToken === undefined ? 0 : Number(request.pageToken);
      const pageTasks = s.fault.kind === 'cursor-lost' && start > 0 ? [] : matching.slice(start, start + s.pageSize);
      const more = !(s.fault.kind === 'cursor-lost' && start > 0) && start + s.pageSize < matching.length;
      for (const task of matching) if ((s.fault.kind === 'cursor-lost' && start > 0 && matching.indexOf(task) >= start) || task.id === skipped) leftOut.add(task.id);
      return { tasks: pageTasks.filter((task) => task.id !== skipped), nextPageToken: more ? String(start + s.pageSize) : '', pageSize: s.pageSize, totalSize: matching.length };
    },
    getTask: async ({ id }: { id: string }) => {
      if (id === skipped) throw new TaskNotFoundError('unreadable');
      return tasks.find((task) => task.id === id)!;
    },
  } as unknown as A2ATransport;
  return { transport, leftOut: () => leftOut };
}

const record = { messageId: OUR_MESSAGE, requestedContextId: OUR_CONTEXT, contextRefused: false, createdAt: CREATED_AT } as DelegationRecord;

describe('property: a listing shorter than its own count proves no absence', () => {
  it('never a conclusive not-found when a counted task was left out; conclusive when the listing is whole and nothing is ours', async () => {
    const examples: [Scenario][] = [
      [{ others: 0, ours: 'our-context', pageSize: 3, refusesContext: false, fault: { kind: 'skip-row', index: 0 } }],
      [{ others: 2, ours: 'agent-context', pageSize: 2, refusesContext: true, fault: { kind: 'cursor-lost' } }],
      [{ others: 3, ours: 'none', pageSize: 2, refusesContext: false, fault: { kind: 'none' } }],
    ];
    await fc.assert(
      fc.asyncProperty(scenario, async (s) => {
        const tasks = tasksOf(s);
        const { transport, leftOut } = transportOf(s, tasks);
        const result = await findTaskByMessageId(transport, record, { marginMs: 5_000, maxListTasksCalls: 40, now: () => NOW, beyondContext: true });
        const conclusiveAbsence = result.kind === 'not-found' && !result.inconclusive && !result.paginationBroken;
        if (result.kind === 'found') expect(result.task.history?.some((message) => message.messageId === OUR_MESSAGE) || result.task.contextId === OUR_CONTEXT).toBe(true);
        // Ours exists and was left out of some listing: never "absent" (it may be found by another pass).
        if (s.ours !== 'none' && leftOut().has('T1')) expect(conclusiveAbsence).toBe(false);
        // Ours exists and every listing showed it: found.
        if (s.ours !== 'none' && !leftOut().has('T1')) expect(result.kind).toBe('found');
        // Nothing of ours and nothing left out: absent, so the resend stays possible.
        if (s.ours === 'none' && leftOut().size === 0) expect(conclusiveAbsence).toBe(true);
        // Anything left out: never conclusive.
        if (leftOut().size > 0 && result.kind === 'not-found') expect(conclusiveAbsence).toBe(false);
      }),
      { numRuns: 300, examples },
    );
  });
});
