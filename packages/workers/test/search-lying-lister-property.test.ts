/**
 * Property (hostile37; the kind: a search against a lying lister): however ListTasks pages (more tasks than the page
 * asked for, a token cycle, a fresh token for ever, a `totalSize` that disagrees) and however GetTask answers a listed
 * candidate (truthfully, TaskNotFound, or another task than asked), the search stays bounded in calls
 * (`maxListTasksCalls` ListTasks, at most `PAGE_SIZE` GetTasks per ListTasks), never concludes "absent" unless the
 * listing was whole and every candidate read was a read of that candidate without our message, and never finds a task
 * by a read that answered another id. The transport is a plain object (no I/O).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TaskNotFoundError, type A2ATransport, type Task } from '@durable-a2a/a2a';
import type { DelegationRecord } from '@durable-a2a/shared';
import { findTaskByMessageId, PAGE_SIZE } from '../src/delegation/io/search.ts';

const OUR_CONTEXT = 'ctx-ours';
const OUR_MESSAGE = 'msg-ours';
const CREATED_AT = Date.parse('2026-12-06T10:00:00.000Z');
const NOW = CREATED_AT + 60_000;
const MAX_CALLS = 6;

const scenario = fc.record({
  /** Other clients' tasks on each page (the agent's page size, whatever we asked). */
  perPage: fc.integer({ min: 0, max: 3 * PAGE_SIZE }),
  /** How the pages end: the last page after `pages`, a token cycle, a fresh token each time. */
  tokens: fc.constantFrom<'end' | 'cycle' | 'fresh'>('end', 'cycle', 'fresh'),
  pages: fc.integer({ min: 1, max: 3 }),
  /** `totalSize` the agent gives: the true count, or more. */
  countsMore: fc.boolean(),
  /** Where our task is: absent, listed with our message at `at` on the first page, or listed without history (only a full read shows it). */
  ours: fc.constantFrom<'none' | 'listed' | 'trimmed'>('none', 'listed', 'trimmed'),
  at: fc.nat({ max: 3 * PAGE_SIZE }),
  /** How GetTask answers a candidate. */
  read: fc.constantFrom<'truth' | 'not-found' | 'other-id'>('truth', 'not-found', 'other-id'),
});
type Scenario = typeof scenario extends fc.Arbitrary<infer Value> ? Value : never;

const taskOf = (id: string, contextId: string, messageId?: string): Task =>
  ({ id, contextId, status: { state: 'TASK_STATE_COMPLETED', timestamp: new Date(NOW - 1000).toISOString() }, ...(messageId ? { history: [{ messageId, role: 'ROLE_USER', parts: [{ text: 'go' }] }] } : {}) }) as Task;

function agentOf(s: Scenario) {
  const calls = { list: 0, get: 0 };
  const ours = taskOf('T-ours', 'agent-ctx', OUR_MESSAGE);
  const page = (index: number): Task[] => {
    const tasks = Array.from({ length: s.perPage }, (_, i) => taskOf(`X${index}-${i}`, `ctx-${index}-${i}`, `m-${index}-${i}`));
    if (index === 0 && s.ours !== 'none') tasks.splice(Math.min(s.at, tasks.length), 0, s.ours === 'listed' ? ours : { ...ours, history: undefined });
    return tasks;
  };
  const total = s.pages * s.perPage + (s.ours === 'none' ? 0 : 1);
  const transport = {
    listTasks: async (request: { pageToken?: string }) => {
      calls.list++;
      const index = request.pageToken === undefined ? 0 : Number(request.pageToken.split('-')[0]);
      const next = index + 1 < s.pages ? String(index + 1) : s.tokens === 'end' ? '' : s.tokens === 'cycle' ? '0' : `${index + 1}-${calls.list}`;
      return { tasks: page(Math.min(index, s.pages - 1)), nextPageToken: next, pageSize: s.perPage, totalSize: total + (s.countsMore ? 1 : 0) };
    },
    getTask: async ({ id }: { id: string }) => {
      calls.get++;
      if (s.read === 'not-found') throw new TaskNotFoundError('gone');
      if (s.read === 'other-id') return { ...ours, id: `${id}-other` };
      return id === ours.id ? ours : taskOf(id, `ctx-${id}`, `m-${id}`);
    },
  } as unknown as A2ATransport;
  return { transport, calls };
}

const record = { messageId: OUR_MESSAGE, requestedContextId: OUR_CONTEXT, contextRefused: false, createdAt: CREATED_AT } as DelegationRecord;

describe('property: a search against a lying lister', () => {
  it('bounded calls; absence concluded only from a whole listing read truthfully; nothing found by a read of another id', async () => {
    const examples: [Scenario][] = [
      [{ perPage: 3 * PAGE_SIZE, tokens: 'end', pages: 1, countsMore: false, ours: 'none', at: 0, read: 'truth' }],
      [{ perPage: 2, tokens: 'fresh', pages: 1, countsMore: false, ours: 'none', at: 0, read: 'truth' }],
      [{ perPage: 1, tokens: 'end', pages: 1, countsMore: false, ours: 'none', at: 0, read: 'other-id' }],
      [{ perPage: 2 * PAGE_SIZE, tokens: 'end', pages: 1, countsMore: false, ours: 'trimmed', at: PAGE_SIZE + 3, read: 'truth' }],
    ];
    await fc.assert(
      fc.asyncProperty(scenario, async (s) => {
        const { transport, calls } = agentOf(s);
        const outcome = await findTaskByMessageId(transport, record, { marginMs: 5_000, maxListTasksCalls: MAX_CALLS, now: () => NOW, beyondContext: true }).then(
          (result) => result,
          (error: unknown) => ({ kind: 'failed' as const, error }),
        );
        expect(calls.list).toBeLessThanOrEqual(MAX_CALLS);
        expect(calls.get).toBeLessThanOrEqual(MAX_CALLS * PAGE_SIZE);
        const honestListing = s.perPage + (s.ours === 'none' ? 0 : 1) <= PAGE_SIZE && s.tokens === 'end' && !s.countsMore && s.pages * 2 <= MAX_CALLS;
        if (outcome.kind === 'not-found' && !outcome.inconclusive && !outcome.paginationBroken) {
          expect(honestListing && s.read === 'truth' && s.ours === 'none').toBe(true);
        }
        if (outcome.kind === 'found') expect(outcome.task.id).toBe('T-ours');
        if (s.read === 'other-id' && outcome.kind === 'found') expect(s.ours).toBe('listed');
      }),
      { numRuns: 200, examples },
    );
  });
});
