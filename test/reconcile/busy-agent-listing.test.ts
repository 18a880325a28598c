/**
 * Review of redteam21 (review21b; the kind of field case R15): the crash between "sent" and "recorded" at a busy
 * agent that keeps our context (ListTasks honours the filter) and lists as @a2a-js/sdk 1.3.0's InMemoryTaskStore does
 * (newest status first, a (timestamp, id) cursor, `totalSize` counted over the filtered tasks at each call, here five
 * to a page). Our message never arrived. Other clients create a task on every ListTasks call after the first: the
 * later pages of the listing by time count tasks that arrived before our cursor. Before the fix the search took that
 * for a listing shorter than its count and a person was asked where the resend was due. Real redis-server, real fleet,
 * a scripted raw JSON-RPC agent.
 */
import { describe, expect, it } from 'vitest';
import { finished, useFieldCases } from '../harness/field-cases.ts';
import { task, userMessage } from '../harness/scripted-agent.ts';

const h = useFieldCases();

describe('the crash between send and record at a busy agent whose listing by time spans pages', () => {
  it('our message never arrived; a task of another client arrives during every listing: proven absent, resent once, COMPLETED', async () => {
    const hoursAgo = (hours: number) => new Date(Date.now() - hours * 3600_000).toISOString();
    const tasks: Record<string, any>[] = Array.from({ length: 8 }, (_, index) => task(`X${index}`, 'COMPLETED', { contextId: `ctx-X${index}`, timestamp: hoursAgo(1 + index), history: [userMessage(`m-X${index}`)] }));
    let listings = 0;
    const agent = await h.agentWith({
      ListTasks: (params) => {
        if (++listings > 1) tasks.push(task(`N${listings}`, 'WORKING', { contextId: `ctx-N${listings}`, timestamp: new Date().toISOString(), history: [userMessage(`m-N${listings}`)] }));
        let listed = tasks.filter((t) => params.contextId === undefined || t.contextId === params.contextId);
        if (params.statusTimestampAfter) listed = listed.filter((t) => Date.parse(t.status.timestamp) > Date.parse(params.statusTimestampAfter));
        listed.sort((a, b) => (b.status.timestamp !== a.status.timestamp ? b.status.timestamp.localeCompare(a.status.timestamp) : b.id.localeCompare(a.id)));
        const totalSize = listed.length;
        if (params.pageToken) {
          const at = listed.findIndex((t) => t.id === params.pageToken);
          listed = at === -1 ? [] : listed.slice(at + 1);
        }
        const page = listed.slice(0, 5);
        return { result: { tasks: page, nextPageToken: listed.length > page.length ? page.at(-1)!.id : '', pageSize: 5, totalSize } };
      },
      GetTask: (params) => ({ result: tasks.find((t) => t.id === params.id) }),
      SendMessage: (params) => ({ result: { task: task('T1', 'COMPLETED', { contextId: params.message.contextId, history: [params.message], artifacts: { a1: 'the booking' } }) } }),
    });
    const { producer, id } = await h.sentNotRecorded(agent);
    const record = await finished(producer, id, 30_000);
    // Resent once, with the same messageId (the work done once).
    expect(agent.calls('SendMessage').map((call) => call.params.message.messageId)).toEqual([record.messageId]);
    expect(record).toMatchObject({ state: 'COMPLETED', taskId: 'T1' });
    // The listing by time did span pages (a page token was sent).
    expect(agent.calls('ListTasks').some((call) => call.params.pageToken !== undefined)).toBe(true);
  }, 45_000);
});
