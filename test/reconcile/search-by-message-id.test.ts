/**
 * Field cases end to end — Find by messageId after "sent, not recorded": trimmed history and broken ListTasks pagination (R14, R15).
 * Producer → fleet → a scripted raw JSON-RPC agent → journal; each `describe` names its case id
 * (docs/field-cases.md says what each proves); the case's "Expected" is the assertion.
 */
import { describe, expect, it } from 'vitest';
import {
  counted,
  finished,
  markSentNotRecorded,
  sleep,
  useFieldCases,
  workflowSettled,
  type Setup,
} from '../harness/field-cases.ts';
import {
  agentMessage,
  task,
  userMessage,
  type ScriptedAgentHandle,
  type ScriptedHandler,
} from '../harness/scripted-agent.ts';

const h = useFieldCases();

describe('R14: history trimmed, so our messageId is not visible', () => {
  const noSmallHistoryLength = (agent: ScriptedAgentHandle) => {
    const reads = [...agent.calls('ListTasks'), ...agent.calls('GetTask')];
    expect(reads.length).toBeGreaterThan(0);
    for (const read of reads) {
      const historyLength = read.params.historyLength;
      expect(historyLength === undefined || historyLength >= 10, `historyLength ${historyLength} in ${read.body}`).toBe(true);
    }
  };
  const trimmedT7 = (contextId?: string) =>
    task('T7', 'WORKING', { contextId, timestamp: new Date(Date.now()).toISOString(), history: [agentMessage('working on it', { taskId: 'T7', contextId })] });

  it('SendMessage accepted but the answer never came (request timeout): candidate T7 without our message → AMBIGUOUS, SendMessage count 1', async () => {
    const { producer: p, agent, seen } = await h.setUp(
      (seen) => ({
        SendMessage: (params) => {
          seen.contextId ??= params.message.contextId;
          seen.messageId ??= params.message.messageId;
          return { hang: true };
        },
        ListTasks: () => ({ result: { tasks: [trimmedT7(seen.contextId)], nextPageToken: '', pageSize: 50, totalSize: 1 } }),
        GetTask: () => ({ result: trimmedT7(seen.contextId) }),
      }),
      // V2: a send is held up to the attempt's deadline (not the request timeout); then the search decides.
      { requestTimeoutMs: 1_000, reconcileIntervalMs: 60_000, attemptDeadlineMs: 3_000 },
    );
    const { id, messageId } = await p.delegate({ agent: agent.cardUrl, text: 'r14', idempotencyKey: 'r14' });
    const record = await finished(p, id, 30_000);
    expect(record.state).toBe('AMBIGUOUS');
    expect(agent.count('SendMessage')).toBe(1);
    expect(agent.calls('SendMessage')[0]!.params.message.messageId).toBe(messageId);
    expect(agent.calls('ListTasks')[0]!.params.contextId).toBe(seen.contextId);
    expect(agent.calls('GetTask').some((call) => call.params.id === 'T7')).toBe(true);
    noSmallHistoryLength(agent);
    expect((await workflowSettled(p, id)).state).toBe('NEEDS_ATTENTION');
    await sleep(500);
    expect(agent.count('SendMessage')).toBe(1);
  });

  it('sent, not recorded (journal written directly): same outcome, no SendMessage at all', async () => {
    const prefix = h.newPrefix();
    const seen: Setup['seen'] = {};
    const agent = await h.agentWith({
      SendMessage: h.accept(seen),
      ListTasks: (params) => {
        seen.contextId ??= params.contextId;
        return { result: { tasks: [trimmedT7(seen.contextId)], nextPageToken: '', pageSize: 50, totalSize: 1 } };
      },
      GetTask: () => ({ result: trimmedT7(seen.contextId) }),
    });
    const producer = h.producer(prefix);
    const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'r14b', idempotencyKey: 'r14b' });
    await markSentNotRecorded(producer, id, agent);
    await h.fleetFor(prefix, { reconcileIntervalMs: 60_000 });
    const record = await finished(producer, id, 30_000);
    expect(record.state).toBe('AMBIGUOUS');
    expect(agent.count('SendMessage')).toBe(0);
    noSmallHistoryLength(agent);
  });
});

describe('R15: ListTasks pagination skips or loops', () => {
  const other = (taskId: string, contextId?: string, seconds = 0) =>
    task(taskId, 'WORKING', { contextId, timestamp: h.at(seconds), history: [userMessage(`someone-else-${taskId}`), agentMessage('ok')] });

  async function searchSetUp(listTasks: (seen: Setup['seen'], messageId: () => string) => ScriptedHandler) {
    const prefix = h.newPrefix();
    const seen: Setup['seen'] = {};
    let ourMessageId = '';
    const agent = await h.agentWith({
      SendMessage: (params, call) => {
        seen.messageId ??= params.message.messageId;
        return { result: { task: task('T1', 'COMPLETED', { contextId: params.message.contextId, history: [params.message], artifacts: { a1: 'resent' } }) } };
      },
      ListTasks: (params, call) => {
        seen.contextId ??= params.contextId;
        return listTasks(seen, () => ourMessageId)(params, call);
      },
      GetTask: (params) => {
        if (params.id === 'T1') return { result: task('T1', 'COMPLETED', { contextId: seen.contextId, history: [userMessage(ourMessageId), agentMessage('done')], timestamp: h.at(6) }) };
        // Another client's task read in full names no context of ours (one in our context would prove delivery).
        return { result: other(params.id, '') };
      },
    });
    const producer = h.producer(prefix);
    const { id, messageId } = await producer.delegate({ agent: agent.cardUrl, text: 'r15', idempotencyKey: `r15-${h.counter()}` });
    ourMessageId = messageId;
    await markSentNotRecorded(producer, id, agent);
    const fleet = await h.fleetFor(prefix, { reconcileIntervalMs: 60_000 });
    return { agent, fleet, id, messageId, p: producer };
  }

  it('T1 (holds M1) moves to the top between pages: found by the second pass and adopted, not resent', async () => {
    const { agent, fleet, id, p } = await searchSetUp((seen, messageId) => (params, call) => {
      const T1 = task('T1', 'COMPLETED', { contextId: seen.contextId, timestamp: h.at(6), history: [userMessage(messageId()), agentMessage('done')] });
      if (call.count === 1) return { result: { tasks: [other('T3', seen.contextId, 5), other('T2', seen.contextId, 4)], nextPageToken: 'p2', pageSize: 2, totalSize: 3 } };
      if (params.pageToken === 'p2') return { result: { tasks: call.count === 2 ? [] : [other('T2', seen.contextId, 4)], nextPageToken: '', pageSize: 2, totalSize: 3 } };
      // T1 was updated (10:06) while we read: it now leads page 1.
      return { result: { tasks: [T1, other('T3', seen.contextId, 5)], nextPageToken: 'p2', pageSize: 2, totalSize: 3 } };
    });
    const record = await finished(p, id, 30_000);
    expect(record.state).toBe('COMPLETED');
    expect(record.taskId).toBe('T1');
    expect(agent.count('SendMessage')).toBe(0);
    expect(agent.count('ListTasks')).toBeGreaterThanOrEqual(3);
    expect(agent.count('ListTasks')).toBeLessThanOrEqual(10);
    // Counted just after the adopting write, which `finished` may have read first.
    expect(await counted(fleet.metrics.adoptions)).toBe(1);
  });

  it('page "p2" repeats page 1 with nextPageToken "p2": the scan stops (≤ 10 calls), AMBIGUOUS, not resent', async () => {
    const { agent, id, p } = await searchSetUp((seen) => () => ({
      result: { tasks: [other('T3', seen.contextId, 5), other('T2', seen.contextId, 4)], nextPageToken: 'p2', pageSize: 2, totalSize: 3 },
    }));
    const record = await finished(p, id, 30_000);
    expect(record.state).toBe('AMBIGUOUS');
    expect(record.error?.message).toMatch(/pagination/i);
    expect(agent.count('ListTasks')).toBeLessThanOrEqual(10);
    expect(agent.count('SendMessage')).toBe(0);
  });

  it('a fresh token on every page, forever: capped at 10 ListTasks calls, AMBIGUOUS, not resent', async () => {
    const { agent, id, p } = await searchSetUp((seen) => (_params, call) => ({
      result: { tasks: [other(`X${call.count}a`, seen.contextId, 3), other(`X${call.count}b`, seen.contextId, 3)], nextPageToken: `p${call.count + 1}`, pageSize: 2, totalSize: 1000 },
    }));
    const record = await finished(p, id, 30_000);
    expect(record.state).toBe('AMBIGUOUS');
    expect(agent.count('ListTasks')).toBeLessThanOrEqual(10);
    expect(agent.count('SendMessage')).toBe(0);
  });

  it('a page without nextPageToken is the last page: one call per pass, no pageToken ever sent; proven absent → resent once', async () => {
    const { agent, id, p, messageId } = await searchSetUp((seen) => () => ({
      // Tasks naming no context (a task in our own context would prove delivery: never resent, attack10).
      result: { tasks: [other('T3', '', 5), other('T2', '', 4)], pageSize: 2, totalSize: 2 },
    }));
    const record = await finished(p, id, 30_000);
    // Two passes by our context, then (nothing in it: the agent may have put our message in a context of its own,
    // redteam21) the three by time.
    expect(agent.count('ListTasks')).toBe(5);
    expect(agent.calls('ListTasks').every((call) => call.params.pageToken === undefined)).toBe(true);
    expect(agent.count('SendMessage')).toBe(1);
    expect(agent.calls('SendMessage')[0]!.params.message.messageId).toBe(messageId);
    expect(record.state).toBe('COMPLETED');
  });
});
