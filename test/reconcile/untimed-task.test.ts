/**
 * Attack (redteam21; the kind of field case R27, trusting an agent's clock): the searches by time send
 * `statusTimestampAfter`, and an agent's filter decides what that means for a task whose status carries no timestamp
 * (the field is optional; @a2a-js/sdk 1.3.0 stamps only the statuses it writes itself, and its InMemoryTaskStore drops
 * every task without a timestamp from a filtered listing: `task.status?.timestamp && … > filterTime`). An agent that
 * refuses our context filter (so the search can only list by time) and keeps our task unstamped shows it to no pass:
 * after a crash between send and record the search concludes "absent" and resends (a second booking).
 *
 * LEFT AS A DESIGN CALL (it.fails): the fix is one more pass with no time bound before concluding (within
 * `maxListTasksCalls`; the cap reached is broken pagination, so inconclusive). That turns every crash-window-2
 * recovery at a busy agent that refuses the context filter (more tasks than the cap's pages) from a resend into a
 * person. Which of the two the product wants is for its owners; see the redteam21 report.
 */
import { describe, expect, it } from 'vitest';
import { finished, useFieldCases } from '../harness/field-cases.ts';
import { task } from '../harness/scripted-agent.ts';

const h = useFieldCases();

describe('attack: our task without a status timestamp, the context filter refused', () => {
  it.fails('the time filter drops the unstamped task from every pass: never resent (today: resent, a second booking)', async () => {
    let messageId = '';
    const t1 = () => task('T1', 'COMPLETED', { contextId: 'agent-ctx', history: [{ messageId, role: 'ROLE_USER', parts: [{ text: 'go' }] }], artifacts: { a1: 'the booking' } });
    const agent = await h.agentWith({
      ListTasks: (params) => {
        if (params.contextId !== undefined) return { error: { code: -32602, message: 'contextId filter not supported' } };
        // InMemoryTaskStore: a task without a status timestamp never passes a statusTimestampAfter filter.
        const tasks = params.statusTimestampAfter ? [] : [t1()];
        return { result: { tasks, nextPageToken: '', pageSize: 50, totalSize: tasks.length } };
      },
      GetTask: () => ({ result: t1() }),
      SendMessage: (params) => ({ result: { task: task('T2', 'COMPLETED', { contextId: params.message.contextId, history: [params.message], artifacts: { a1: 'a second booking' } }) } }),
    });
    const { producer, id } = await h.sentNotRecorded(agent, (ours) => (messageId = ours));
    const record = await finished(producer, id, 30_000);
    expect(agent.count('SendMessage')).toBe(0);
    expect(record).toMatchObject({ state: 'COMPLETED', taskId: 'T1' });
  }, 45_000);
});
