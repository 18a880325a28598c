/**
 * Attack (redteam21; the kind of field case R15, pagination that skips): a ListTasks listing that shows fewer tasks
 * than its own `totalSize` is no proof that our message is absent. Both stores of @a2a-js/sdk 1.3.0 answer such
 * listings: `DatabaseTaskStore` skips a row it cannot read (logged "Skipping task … it could not be read", the count
 * kept), and `InMemoryTaskStore` answers an empty last page when the cursor's task moved since the page before (its
 * status timestamp changed), the count kept. Before the fix the search took the short listing for the whole and
 * resent the same messageId after a crash between send and record: a second SendMessage, a second task (the work
 * done twice). Real redis-server, real fleet, a scripted raw JSON-RPC agent.
 */
import { describe, expect, it } from 'vitest';
import { finished, useFieldCases } from '../harness/field-cases.ts';
import { task, userMessage } from '../harness/scripted-agent.ts';

const h = useFieldCases();

/** A SendMessage that would do the work again (a second task). */
const secondTask = (params: any) => ({ result: { task: task('T2', 'COMPLETED', { contextId: params.message.contextId, history: [params.message], artifacts: { a1: 'a second booking' } }) } });
/** Another client's task, in a context of its own. */
const other = (id: string) => task(id, 'WORKING', { contextId: `ctx-${id}`, timestamp: new Date().toISOString(), history: [userMessage(`m-${id}`)] });

describe('attack: a ListTasks listing shorter than its own totalSize, after a crash between send and record', () => {
  it('the row of our task unreadable (DatabaseTaskStore): our context lists no task but counts one; never resent, a person decides', async () => {
    const agent = await h.agentWith({
      ListTasks: () => ({ result: { tasks: [], nextPageToken: '', pageSize: 50, totalSize: 1 } }),
      GetTask: () => ({ error: { code: -32603, message: 'row unreadable' } }),
      SendMessage: secondTask,
    });
    const { producer, id } = await h.sentNotRecorded(agent);
    const record = await finished(producer, id, 30_000);
    expect(agent.count('SendMessage')).toBe(0);
    expect(record.state).toBe('AMBIGUOUS');
    expect(record.error?.message).toMatch(/fewer tasks than it counts/);
  }, 45_000);

  it('the context filter refused; the cursor of page 1 lost (InMemoryTaskStore): page 2 empty, totalSize 3, two shown; never resent', async () => {
    const agent = await h.agentWith({
      ListTasks: (params) => {
        if (params.contextId !== undefined) return { error: { code: -32602, message: 'contextId filter not supported' } };
        if (params.pageToken) return { result: { tasks: [], nextPageToken: '', pageSize: 2, totalSize: 3 } };
        return { result: { tasks: [other('X1'), other('X2')], nextPageToken: 'cursor-X2', pageSize: 2, totalSize: 3 } };
      },
      GetTask: (params) => ({ result: other(params.id) }),
      SendMessage: secondTask,
    });
    const { producer, id } = await h.sentNotRecorded(agent);
    const record = await finished(producer, id, 30_000);
    expect(agent.count('SendMessage')).toBe(0);
    expect(record.state).toBe('AMBIGUOUS');
    // Bounded: at most `maxListTasksCalls` (10) per search, the early search while the send may be in flight and the deciding one.
    expect(agent.count('ListTasks')).toBeLessThanOrEqual(20);
  }, 45_000);

  it('a whole listing (every counted task shown, none holding our message): proven absent, resent once', async () => {
    let sent: { messageId: string } | undefined;
    const agent = await h.agentWith({
      ListTasks: (params) => {
        if (params.contextId !== undefined) return { error: { code: -32602, message: 'contextId filter not supported' } };
        if (params.pageToken) return { result: { tasks: [other('X3')], nextPageToken: '', pageSize: 2, totalSize: 3 } };
        return { result: { tasks: [other('X1'), other('X2')], nextPageToken: 'cursor-X2', pageSize: 2, totalSize: 3 } };
      },
      GetTask: (params) => ({ result: other(params.id) }),
      SendMessage: (params) => {
        sent = params.message;
        return { result: { task: task('T1', 'COMPLETED', { contextId: params.message.contextId, history: [params.message], artifacts: { a1: 'the booking' } }) } };
      },
    });
    const { producer, id } = await h.sentNotRecorded(agent);
    const record = await finished(producer, id, 30_000);
    expect(record).toMatchObject({ state: 'COMPLETED', taskId: 'T1' });
    expect(agent.count('SendMessage')).toBe(1);
    expect(sent?.messageId).toBe(record.messageId);
  }, 45_000);
});
