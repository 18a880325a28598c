/**
 * Property (redteam21; the kind "absence of evidence is not evidence of absence" in the search for our message): a
 * search whose miss decides (`beyondContext`: the reconciler's, the check before LOST) never concludes "absent" while
 * the agent holds a task with our message, over agents that differ in every way the search depends on: where the
 * agent keeps our task (the context we sent, one of its own: R16, none), what its ListTasks does with our context
 * filter (honours it, ignores it, refuses it, matches it loosely), whether it reports totalSize (the filtered count,
 * none, 0), its page size and sort order, the history it lists and the history GetTask returns (whole, none, its own
 * messages only, the newest user message only: R14), its clock lag within the search's widening (R27), and a GetTask
 * that denies ours or the others'. A search that throws (an agent error) is a failed search, never an absence. Known
 * limits outside it: a clock lag past the widening (24 h), a task without a status timestamp under a time filter
 * (test/reconcile/untimed-task.test.ts, it.fails). Fails on c9e32d7 (our task in a context of its own). No I/O.
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

const agentArb = fc.record({
  others: fc.integer({ min: 0, max: 5 }),
  ourContext: fc.constantFrom('ours', 'substituted', 'none'),
  filter: fc.constantFrom('honours', 'ignores', 'refuses', 'prefix'),
  total: fc.constantFrom('filtered', 'absent', 'zero'),
  pageSize: fc.integer({ min: 1, max: 4 }),
  historyInList: fc.constantFrom('full', 'none', 'agent-only'),
  historyInGet: fc.constantFrom('full', 'agent-only', 'newest-user-only'),
  lag: fc.constantFrom(0, 60, 3600, 20 * 3600),
  sortAsc: fc.boolean(),
  getFails: fc.constantFrom('never', 'ours-404', 'others-404'),
});

describe('property: a search whose miss decides never concludes absence while the agent holds our message', () => {
  it('over agents differing in context, filter, totalSize, pages, order, histories, clock lag and denied reads', async () => {
    await fc.assert(
      fc.asyncProperty(agentArb, async (a) => {
        const mk = (id: string, ctx: string, mid: string, secsAgo: number): Task => ({ id, contextId: ctx, status: { state: 'TASK_STATE_WORKING', timestamp: new Date(NOW - secsAgo * 1000).toISOString() }, history: [{ messageId: mid, role: 'ROLE_USER', parts: [{ text: 'x' }] }, { messageId: `a-${id}`, role: 'ROLE_AGENT', parts: [{ text: 'ok' }] }] }) as Task;
        const tasks = Array.from({ length: a.others }, (_, i) => mk(`X${i}`, `ctx-X${i}`, `m${i}`, i));
        tasks.push(mk('T1', a.ourContext === 'ours' ? OUR_CONTEXT : a.ourContext === 'substituted' ? 'agent-ctx' : '', OUR_MESSAGE, 40 + a.lag));
        const view = (t: Task, h: string) => (h === 'full' ? t : h === 'none' ? { ...t, history: undefined } : h === 'agent-only' ? { ...t, history: t.history!.filter((m) => m.role === 'ROLE_AGENT') } : { ...t, history: t.history!.filter((m) => m.role === 'ROLE_USER').slice(-1) });
        const transport = {
          listTasks: async (r: { contextId?: string; statusTimestampAfter?: string; pageToken?: string }) => {
            if (r.contextId !== undefined && a.filter === 'refuses') throw new InvalidParamsError('no');
            const after = r.statusTimestampAfter ? Date.parse(r.statusTimestampAfter) : -Infinity;
            let m = tasks.filter((t) => (r.contextId === undefined || a.filter === 'ignores' || (a.filter === 'prefix' ? t.contextId!.startsWith(r.contextId.slice(0, 3)) : t.contextId === r.contextId)) && Date.parse(t.status.timestamp!) > after);
            m = [...m].sort((x, y) => (a.sortAsc ? 1 : -1) * x.status.timestamp!.localeCompare(y.status.timestamp!));
            const start = r.pageToken ? Number(r.pageToken) : 0;
            const page = m.slice(start, start + a.pageSize).map((t) => view(t, a.historyInList));
            const next = start + a.pageSize < m.length ? String(start + a.pageSize) : '';
            return { tasks: page, nextPageToken: next, pageSize: a.pageSize, ...(a.total === 'filtered' ? { totalSize: m.length } : a.total === 'zero' ? { totalSize: 0 } : {}) };
          },
          getTask: async ({ id }: { id: string }) => {
            if ((a.getFails === 'ours-404' && id === 'T1') || (a.getFails === 'others-404' && id !== 'T1')) throw new TaskNotFoundError('gone');
            return view(tasks.find((t) => t.id === id)!, a.historyInGet);
          },
        } as unknown as A2ATransport;
        const record = { messageId: OUR_MESSAGE, requestedContextId: OUR_CONTEXT, contextRefused: false, createdAt: CREATED_AT } as DelegationRecord;
        let result: Awaited<ReturnType<typeof findTaskByMessageId>>;
        try {
          result = await findTaskByMessageId(transport, record, { marginMs: 5_000, maxListTasksCalls: 40, now: () => NOW, beyondContext: true });
        } catch {
          return; // a failed search (searchForMessage makes it a `failed` finding): never an absence
        }
        const conclusive = result.kind === 'not-found' && !result.inconclusive && !result.paginationBroken;
        expect(conclusive).toBe(false);
      }),
      {
        numRuns: 500,
        examples: [[{ others: 0, ourContext: 'substituted', filter: 'honours', total: 'filtered', pageSize: 1, historyInList: 'full', historyInGet: 'full', lag: 0, sortAsc: false, getFails: 'never' }]],
      },
    );
  });
});
