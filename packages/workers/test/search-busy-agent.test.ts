/**
 * Review of redteam21 (review21b): the search for our messageId at an ordinary busy agent whose ListTasks behaves as
 * @a2a-js/sdk 1.3.0's `InMemoryTaskStore.list` does (filters, then sorts newest status first, counts `totalSize` over
 * the filtered tasks at the time of each call, pages with a (timestamp, id) cursor). Other clients' tasks arrive while
 * the search pages through the listing by time. Our message never arrived (the agent keeps our context: it is empty),
 * so the search must conclude "absent" (the resend), never a person; and it counts what one search costs.
 * The transport is a plain object (no I/O).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { A2ATransport, Task } from '@durable-a2a/a2a';
import type { DelegationRecord } from '@durable-a2a/shared';
import { findTaskByMessageId } from '../src/delegation/io/search.ts';

const OUR_CONTEXT = 'ctx-ours';
const OUR_MESSAGE = 'msg-ours';
const CREATED_AT = Date.parse('2026-12-06T10:00:00.000Z');
const NOW = CREATED_AT + 60_000;
const record = { messageId: OUR_MESSAGE, requestedContextId: OUR_CONTEXT, contextRefused: false, createdAt: CREATED_AT } as DelegationRecord;

const other = (index: number, at: number): Task =>
  ({ id: `X${index}`, contextId: `ctx-X${index}`, status: { state: 'TASK_STATE_COMPLETED', timestamp: new Date(at).toISOString() }, history: [{ messageId: `m-X${index}`, role: 'ROLE_USER', parts: [{ text: 'go' }] }] }) as Task;

/**
 * An agent listing as InMemoryTaskStore does; `arrivals(call)`: tasks other clients create just before ListTasks call
 * number `call` (1-based) is answered; `pageSize`: the page size it honours (at most 50, ours); `ignoresPageSize`: one page.
 */
function agentOf(initial: Task[], arrivals: (call: number) => Task[], ignoresPageSize = false) {
  const tasks = [...initial];
  const count = { listTasks: 0, getTask: 0 };
  const transport = {
    listTasks: async (request: { contextId?: string; statusTimestampAfter?: string; pageToken?: string; pageSize?: number }) => {
      count.listTasks++;
      tasks.push(...arrivals(count.listTasks));
      let listed = tasks.filter((task) => request.contextId === undefined || task.contextId === request.contextId);
      if (request.statusTimestampAfter) listed = listed.filter((task) => Date.parse(task.status.timestamp!) > Date.parse(request.statusTimestampAfter!));
      listed.sort((a, b) => (b.status.timestamp !== a.status.timestamp ? b.status.timestamp!.localeCompare(a.status.timestamp!) : b.id.localeCompare(a.id)));
      const totalSize = listed.length;
      if (request.pageToken) {
        const [timestamp, id] = JSON.parse(request.pageToken) as [string, string];
        const at = listed.findIndex((task) => task.status.timestamp === timestamp && task.id === id);
        listed = at === -1 ? [] : listed.slice(at + 1);
      }
      const size = ignoresPageSize ? listed.length : (request.pageSize ?? 50);
      const page = listed.slice(0, size);
      const last = page.at(-1);
      return { tasks: page, nextPageToken: last && listed.length > page.length ? JSON.stringify([last.status.timestamp, last.id]) : '', pageSize: size, totalSize };
    },
    getTask: async ({ id }: { id: string }) => {
      count.getTask++;
      return tasks.find((task) => task.id === id)!;
    },
  } as unknown as A2ATransport;
  return { transport, count };
}

/** `n` other clients' tasks, their last status spread over the 20 hours before NOW (newest first). */
const lastDay = (n: number, from = 0) => Array.from({ length: n }, (_, index) => other(from + index, NOW - 1_000 - Math.floor((index * 20 * 3600 * 1000) / Math.max(n, 1))));

describe('the search at a busy agent that keeps our context (our message never arrived)', () => {
  it('a task created by another client while the time listing pages: still "absent" (resend), never a short listing', async () => {
    // 120 tasks in the last day (3 pages); one new task of another client on every ListTasks call after the first.
    let next = 10_000;
    const { transport } = agentOf(lastDay(120), (call) => (call > 1 ? [other(next++, NOW - 10)] : []));
    const result = await findTaskByMessageId(transport, record, { marginMs: 5_000, maxListTasksCalls: 10, now: () => NOW, beyondContext: true });
    expect(result).toMatchObject({ kind: 'not-found', inconclusive: false, paginationBroken: false });
  });

  it('property: tasks of other clients arriving during the pages never make a whole listing short', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 160 }), fc.array(fc.integer({ min: 0, max: 3 }), { maxLength: 12 }), async (n, perCall) => {
        let next = 10_000;
        const { transport } = agentOf(lastDay(n), (call) => Array.from({ length: perCall[call - 1] ?? 0 }, () => other(next++, NOW - 10)));
        const result = await findTaskByMessageId(transport, record, { marginMs: 5_000, maxListTasksCalls: 10, now: () => NOW, beyondContext: true });
        expect(result).toMatchObject({ kind: 'not-found', inconclusive: false, paginationBroken: false });
      }),
      { numRuns: 60, examples: [[120, [0, 0, 0, 0, 1, 1, 1, 1]], [51, [0, 0, 0, 0, 0, 2]]] },
    );
  });

  it('cost at 2,000 tasks in the last day: calls bounded (10 ListTasks, at most 10 × 50 GetTask), and a person, not a resend', async () => {
    const { transport, count } = agentOf(lastDay(2_000), () => []);
    const result = await findTaskByMessageId(transport, record, { marginMs: 5_000, maxListTasksCalls: 10, now: () => NOW, beyondContext: true });
    // Measured on redteam21: 10 ListTasks (2 of our context, 1 + 1 by time since the record, 6 pages of the widened pass,
    // capped) and 300 GetTask (every candidate listed), then "pagination broken": AMBIGUOUS for a person where main resent.
    expect(count.listTasks).toBe(10);
    expect(count.getTask).toBeLessThanOrEqual(10 * 50);
    expect(result).toMatchObject({ kind: 'not-found', paginationBroken: true });
    console.log(`2,000 tasks/day, pageSize 50: ${count.listTasks} ListTasks, ${count.getTask} GetTask`);
  });

  it('cost at 2,000 tasks in one page (an agent that ignores pageSize): at most a page of GetTask per ListTasks, and a person, not a resend', async () => {
    const { transport, count } = agentOf(lastDay(2_000), () => [], true);
    const result = await findTaskByMessageId(transport, record, { marginMs: 5_000, maxListTasksCalls: 10, now: () => NOW, beyondContext: true });
    console.log(`2,000 tasks/day, pageSize ignored: ${count.listTasks} ListTasks, ${count.getTask} GetTask, ${result.kind}`);
    // Before hostile37: one GetTask per listed task (2,000), then a conclusive "absent". A page over the size asked for
    // is read in full for its first 50 tasks only, and the listing proves no absence.
    expect(count.listTasks).toBeLessThanOrEqual(10);
    expect(count.getTask).toBeLessThanOrEqual(10 * 50);
    expect(result).toMatchObject({ kind: 'not-found', paginationBroken: true });
  });
});
