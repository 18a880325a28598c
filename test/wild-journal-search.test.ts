/**
 * Issue 12, kind "clocks", in the search for a task by messageId: the window must not depend on the
 * agent's clock agreeing with ours. The agent here is an in-process A2ATransport whose ListTasks filters
 * by its own (lagging) clock, as a real agent would; it records every request.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { InvalidParamsError, type A2ATransport, type ListTasksRequest, type Task } from '@durable-a2a/a2a';
import type { DelegationRecord } from '@durable-a2a/shared';
import { findTaskByMessageId } from '../packages/workers/src/delegation/io/search.ts';

const NOW = Date.UTC(2026, 0, 1, 12);
const record = { messageId: 'M1', requestedContextId: 'C1', contextRefused: false, createdAt: NOW - 1_000 } as DelegationRecord;

/** An agent whose clock lags ours by `lagMs`; `contextFilter`: honoured, refused (-32602) or ignored. */
function agent(lagMs: number, contextFilter: 'honoured' | 'refused' | 'ignored') {
  const stamp = new Date(NOW - lagMs).toISOString();
  const tasks: Task[] = [
    { id: 'T0', contextId: 'C0', status: { state: 'TASK_STATE_COMPLETED', timestamp: stamp }, history: [{ messageId: 'other', role: 'ROLE_USER', parts: [{ text: 'x' }] }] },
    { id: 'T1', contextId: 'C1', status: { state: 'TASK_STATE_WORKING', timestamp: stamp }, history: [{ messageId: 'M1', role: 'ROLE_USER', parts: [{ text: 'go' }] }] },
  ];
  const requests: ListTasksRequest[] = [];
  const transport = {
    async listTasks(request: ListTasksRequest) {
      requests.push(request);
      if (request.contextId && contextFilter === 'refused') throw new InvalidParamsError('contextId not supported');
      const after = request.statusTimestampAfter ? Date.parse(request.statusTimestampAfter) : Number.NEGATIVE_INFINITY;
      const byContext = request.contextId && contextFilter === 'honoured' ? tasks.filter((task) => task.contextId === request.contextId) : tasks;
      return { tasks: byContext.filter((task) => Date.parse(task.status.timestamp!) > after), nextPageToken: '', pageSize: 50, totalSize: byContext.length };
    },
    async getTask({ id }: { id: string }) {
      return tasks.find((task) => task.id === id)!;
    },
  } as unknown as A2ATransport;
  return { transport, requests };
}

const search = (transport: A2ATransport) => findTaskByMessageId(transport, record, { marginMs: 5_000, maxListTasksCalls: 10, now: () => NOW });

describe('searching by messageId does not trust the agent clock', () => {
  it('context filter honoured: no time bound at all; found although the agent clock lags 2 h', async () => {
    const { transport, requests } = agent(2 * 3600_000, 'honoured');
    expect(await search(transport)).toMatchObject({ kind: 'found', task: { id: 'T1' } });
    expect(requests.every((request) => request.statusTimestampAfter === undefined && request.contextId === 'C1')).toBe(true);
  });

  it('context filter refused or ignored: the time-bounded search widens before concluding "not found"', async () => {
    for (const filter of ['refused', 'ignored'] as const) {
      const { transport, requests } = agent(2 * 3600_000, filter);
      expect(await search(transport)).toMatchObject({ kind: 'found', task: { id: 'T1' } });
      if (filter === 'refused') expect(requests.some((request) => request.statusTimestampAfter !== undefined)).toBe(true);
      expect(requests.length).toBeLessThanOrEqual(10);
    }
  });

  it('property: any lag up to 12 h, any context behaviour: our task is found, within the call cap', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: -3600_000, max: 12 * 3600_000 }), fc.constantFrom('honoured', 'refused', 'ignored' as const), async (lagMs, filter) => {
        const { transport, requests } = agent(lagMs, filter as 'honoured' | 'refused' | 'ignored');
        expect(await search(transport)).toMatchObject({ kind: 'found', task: { id: 'T1' } });
        expect(requests.length).toBeLessThanOrEqual(10);
      }),
      { numRuns: 50, seed: 27 },
    );
  });
});
