/**
 * Attack (redteam21; the kind of field case R16: the agent's context for our task is not the one we sent): the
 * crash between "sent" and "recorded" (crash window 2) at an agent that keeps every task in a context of its own (or
 * in none) and whose ListTasks honours the context filter, as the spec says it should. The listing of the context we
 * sent is empty: that proves nothing about our message, which the agent holds in T1 under its own context. Before the
 * fix the search concluded "absent" from the two empty listings of our context and resent: a second SendMessage, a
 * second task (the work done twice). Real redis-server, real fleet, a scripted raw JSON-RPC agent.
 */
import { describe, expect, it } from 'vitest';
import { artifactText, finished, NOT_FOUND, useFieldCases, viewOf } from '../harness/field-cases.ts';
import { task } from '../harness/scripted-agent.ts';

const h = useFieldCases();

/** An agent keeping every task in `agentContext`, its ListTasks filtering by context (and by status time) faithfully. */
function contextOfItsOwn(agentContext: string, holds: () => { messageId: string } | undefined) {
  const history = () => {
    const held = holds();
    return held ? [{ messageId: held.messageId, role: 'ROLE_USER', parts: [{ text: 'go' }] }] : [];
  };
  const tasks = () => (holds() ? [task('T1', 'COMPLETED', { contextId: agentContext, history: history(), timestamp: new Date().toISOString() })] : []);
  return {
    ListTasks: (params: { contextId?: string }) => {
      const listed = params.contextId === undefined || params.contextId === agentContext ? tasks() : [];
      return { result: { tasks: listed, nextPageToken: '', pageSize: 50, totalSize: listed.length } };
    },
    GetTask: (params: { id: string }) =>
      params.id === 'T1' && holds() ? { result: task('T1', 'COMPLETED', { contextId: agentContext, history: history(), artifacts: { a1: 'the booking' } }) } : { error: { code: -32001, message: 'Task not found' } },
  };
}

describe('attack: the crash between send and record at an agent that keeps our task in a context of its own', () => {
  for (const [name, agentContext] of [['a context of its own', 'agent-ctx-1'], ['no context at all (empty contextId)', '']] as const) {
    it(`our message held in T1 in ${name}, ListTasks honouring the filter: T1 adopted with its artifact, never resent`, async () => {
      let messageId = '';
      const agent = await h.agentWith({
        ...contextOfItsOwn(agentContext, () => ({ messageId })),
        SendMessage: (params) => ({ result: { task: task('T2', 'COMPLETED', { contextId: agentContext, history: [params.message], artifacts: { a1: 'a second booking' } }) } }),
      });
      const { producer, id } = await h.sentNotRecorded(agent, (ours) => (messageId = ours));
      const record = await finished(producer, id, 30_000);
      expect(agent.count('SendMessage')).toBe(0);
      expect(record).toMatchObject({ state: 'COMPLETED', taskId: 'T1' });
      expect(artifactText(await viewOf(producer, id), 'a1')).toBe('the booking');
    }, 45_000);
  }

  it('our message never arrived (no task anywhere): proven absent after the listings by time too, resent once, COMPLETED', async () => {
    let sent: { messageId: string } | undefined;
    const agent = await h.agentWith({
      ...contextOfItsOwn('agent-ctx-2', () => sent),
      SendMessage: (params) => {
        sent = params.message;
        return { result: { task: task('T1', 'COMPLETED', { contextId: 'agent-ctx-2', history: [params.message], artifacts: { a1: 'the booking' } }) } };
      },
    });
    const { producer, id } = await h.sentNotRecorded(agent);
    const record = await finished(producer, id, 30_000);
    expect(record).toMatchObject({ state: 'COMPLETED', taskId: 'T1' });
    expect(agent.count('SendMessage')).toBe(1);
    // Our context first (two passes), then by time (three passes): five a search, bounded, no page token ever sent. On
    // a loaded machine the reconcile timer may run the search again before the resend lands (hostile37 saw three
    // searches, 15 calls): bounded by five searches' worth, not by how fast the machine is.
    expect(agent.count('ListTasks')).toBeLessThanOrEqual(25);
    expect(agent.calls('ListTasks').some((call) => call.params.contextId === undefined)).toBe(true);
  }, 45_000);

  it('the check before LOST: T1 (bound, in the agent\'s context) denied over the window, our message held again in T5 in that context: never LOST, a person naming both', async () => {
    let ours: { messageId: string; role: string; parts: unknown[] } | undefined;
    const t5 = () => task('T5', 'WORKING', { contextId: 'agent-ctx-3', history: [ours!], timestamp: new Date().toISOString() });
    const { producer, agent, id } = await h.setUpAndDelegate(() => ({
      SendMessage: (params) => {
        ours = params.message;
        return { result: { task: task('T1', 'WORKING', { contextId: 'agent-ctx-3', history: [params.message] }) } };
      },
      SubscribeToTask: () => NOT_FOUND,
      GetTask: (params) => (params.id === 'T5' ? { result: t5() } : NOT_FOUND),
      ListTasks: (params) => {
        const listed = params.contextId === undefined || params.contextId === 'agent-ctx-3' ? [t5()] : [];
        return { result: { tasks: listed, nextPageToken: '', pageSize: 50, totalSize: listed.length } };
      },
    }), { notFoundWindowMs: 1_000, notFoundThreshold: 3, reconcileIntervalMs: 500 });
    const record = await finished(producer, id, 30_000);
    expect(record.state).toBe('AMBIGUOUS');
    expect(record.error?.message).toContain('T5');
    expect(agent.count('SendMessage')).toBe(1);
  }, 45_000);
});
