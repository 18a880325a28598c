/**
 * attack16: two tasks at the agent both hold our messageId (the agent got our SendMessage twice: a layer below us
 * replayed it, or an earlier search missed the first task and the same messageId was resent). The reconciler's search
 * must not adopt whichever the agent happens to list first and leave the other running unseen: the work may have been
 * done twice, and which task is "ours" is for a person to decide, with both ids shown. The same kind on the check
 * before LOST: the agent denies our task while its listing shows our message in another task (or cannot rule it out):
 * LOST would re-delegate the step over work that may be done. Real fleet, real Redis, a scripted raw JSON-RPC agent
 * (exact bytes).
 */
import { describe, expect, it } from 'vitest';
import { finished, markSentNotRecorded, metric, NOT_FOUND, useFieldCases, workflowSettled } from '../harness/field-cases.ts';
import { eventually } from '../harness/fleet.ts';
import { agentMessage, task, userMessage, type ScriptedHandler } from '../harness/scripted-agent.ts';

const h = useFieldCases();

type Lister = (contextId: string | undefined, messageId: string, count: number, pageToken: string | undefined) => unknown;

async function twinSetUp(listTasks: Lister, getTask?: (id: string, contextId: string | undefined, messageId: string) => unknown) {
  const prefix = h.newPrefix();
  let contextId: string | undefined;
  let ourMessageId = '';
  const handlers: Record<string, ScriptedHandler> = {
    SendMessage: (params) => ({ result: { task: task('T9', 'COMPLETED', { contextId: params.message.contextId, history: [params.message], artifacts: { a9: 'resent' } }) } }),
    ListTasks: (params, call) => {
      contextId ??= params.contextId;
      return { result: listTasks(contextId, ourMessageId, call.count, params.pageToken) };
    },
    GetTask: (params) => {
      const read = getTask?.(params.id, contextId, ourMessageId) ?? twin(params.id, params.id === 'T1' ? 'COMPLETED' : 'WORKING', contextId, ourMessageId);
      return read === 'gone' ? NOT_FOUND : { result: read };
    },
  };
  const agent = await h.agentWith(handlers);
  const producer = h.producer(prefix);
  const { id, messageId } = await producer.delegate({ agent: agent.cardUrl, text: 'twins', idempotencyKey: `twins-${h.counter()}` });
  ourMessageId = messageId;
  await markSentNotRecorded(producer, id, agent);
  const fleet = await h.fleetFor(prefix, { reconcileIntervalMs: 60_000 });
  return { agent, fleet, id, messageId, p: producer };
}

const twin = (taskId: string, state: 'COMPLETED' | 'WORKING' | 'FAILED', contextId: string | undefined, messageId: string, seconds = 0) =>
  task(taskId, state, {
    contextId,
    timestamp: h.at(seconds),
    history: [userMessage(messageId), agentMessage(`${taskId} on it`)],
    ...(state === 'COMPLETED' ? { artifacts: { [`a-${taskId}`]: `${taskId}'s result` } } : {}),
  });

/** The attempt ends with a person (AMBIGUOUS, no task bound), its message naming both tasks; nothing was resent. */
async function expectPersonNamingBoth(setup: Awaited<ReturnType<typeof twinSetUp>>) {
  const record = await finished(setup.p, setup.id, 30_000);
  expect(record.state).toBe('AMBIGUOUS');
  expect(record.taskId).toBeUndefined();
  expect(record.error?.message).toContain('T1');
  expect(record.error?.message).toContain('T2');
  expect(setup.agent.count('SendMessage')).toBe(0);
}

describe('attack16: two tasks hold our messageId', () => {
  it('both on one ListTasks page (T1 COMPLETED, T2 WORKING): a person decides, both ids named; nothing adopted, nothing resent', async () => {
    const setup = await twinSetUp((contextId, messageId) => ({
      tasks: [twin('T2', 'WORKING', contextId, messageId, 5), twin('T1', 'COMPLETED', contextId, messageId, 4)],
      nextPageToken: '',
      pageSize: 50,
      totalSize: 2,
    }));
    await expectPersonNamingBoth(setup);
    // Settled: the workflow waits for a person, so nothing can resend later (no fixed sleep to watch for one).
    expect((await workflowSettled(setup.p, setup.id)).state).toBe('NEEDS_ATTENTION');
    expect(setup.agent.count('SendMessage')).toBe(0);
  });

  it('on two pages (T2 on page 1, T1 on page 2): the scan goes on past the first holder', async () => {
    await expectPersonNamingBoth(
      await twinSetUp((contextId, messageId, _count, pageToken) =>
        pageToken === 'p2'
          ? { tasks: [twin('T1', 'COMPLETED', contextId, messageId, 4)], nextPageToken: '', pageSize: 1, totalSize: 2 }
          : { tasks: [twin('T2', 'WORKING', contextId, messageId, 5)], nextPageToken: 'p2', pageSize: 1, totalSize: 2 },
      ),
    );
  });

  it('the listing trims history (neither listed task shows our message), the full reads show it in both', async () => {
    const trimmed = (taskId: string, contextId: string | undefined) => task(taskId, 'WORKING', { contextId, timestamp: h.at(3), history: [agentMessage('…')] });
    await expectPersonNamingBoth(await twinSetUp((contextId) => ({ tasks: [trimmed('T2', contextId), trimmed('T1', contextId)], nextPageToken: '', pageSize: 50, totalSize: 2 })));
  });

  it('review16a: the listing trims history, T1\'s full read holds our message, T2 is gone by its read (-32001): T1 adopted, not a failed search for a person', async () => {
    // Before: every candidate was read on past the holder, and T2's TaskNotFound failed the whole search
    // (SEARCH_UNAVAILABLE, a person) though our task had been read in full.
    const trimmed = (taskId: string, contextId: string | undefined) => task(taskId, 'WORKING', { contextId, timestamp: h.at(3), history: [agentMessage('…')] });
    const { agent, id, p } = await twinSetUp(
      (contextId) => ({ tasks: [trimmed('T1', contextId), trimmed('T2', contextId)], nextPageToken: '', pageSize: 50, totalSize: 2 }),
      (taskId, contextId, messageId) => (taskId === 'T1' ? twin('T1', 'COMPLETED', contextId, messageId) : 'gone'),
    );
    const record = await finished(p, id, 30_000);
    expect(record.state).toBe('COMPLETED');
    expect(record.taskId).toBe('T1');
    expect(agent.count('SendMessage')).toBe(0);
  });

  it('review16a: T2 has our messageId on an agent\'s message only (a reply built by copying ours, a quote), T1 holds our message: one holder, T1 adopted, not a person', async () => {
    // Before: any message with our messageId made a holder: T1 and T2 were 'several', a person asked without need.
    const quoting = (contextId: string | undefined, messageId: string) =>
      task('T2', 'WORKING', { contextId, timestamp: h.at(5), history: [userMessage('someone-else'), agentMessage('you said', { messageId })] });
    const { agent, id, p } = await twinSetUp((contextId, messageId) => ({
      tasks: [quoting(contextId, messageId), twin('T1', 'COMPLETED', contextId, messageId, 4)],
      nextPageToken: '',
      pageSize: 50,
      totalSize: 2,
    }));
    const record = await finished(p, id, 30_000);
    expect(record.state).toBe('COMPLETED');
    expect(record.taskId).toBe('T1');
    expect(agent.count('SendMessage')).toBe(0);
  });

  it('one task listed twice (it moved pages while we read) is one task: adopted, not a person', async () => {
    const { agent, id, p } = await twinSetUp((contextId, messageId, _count, pageToken) =>
      pageToken === 'p2'
        ? { tasks: [twin('T1', 'COMPLETED', contextId, messageId, 6)], nextPageToken: '', pageSize: 1, totalSize: 2 }
        : { tasks: [twin('T1', 'COMPLETED', contextId, messageId, 6)], nextPageToken: 'p2', pageSize: 1, totalSize: 2 },
    );
    const record = await finished(p, id, 30_000);
    expect(record.state).toBe('COMPLETED');
    expect(record.taskId).toBe('T1');
    expect(agent.count('SendMessage')).toBe(0);
  });
});

describe('attack16: the agent denies our task while another task holds our message (the check before LOST)', () => {
  it('T1 denied over the window, ListTasks shows T2 WORKING in the context we sent (a fresh one per delegation) whose history is trimmed: never LOST and re-delegated; a person', async () => {
    const trimmed = (contextId: string | undefined) => task('T2', 'WORKING', { contextId, timestamp: h.at(2), history: [agentMessage('working on it')] });
    const { producer: p, agent, fleet, seen } = await h.setUp(
      (seen) => ({
        GetTask: (params) => (params.id === 'T1' ? NOT_FOUND : { result: trimmed(seen.contextId) }),
        SubscribeToTask: () => NOT_FOUND,
        ListTasks: () => ({ result: { tasks: [trimmed(seen.contextId)], nextPageToken: '', pageSize: 50, totalSize: 1 } }),
      }),
      { notFoundWindowMs: 1_000, notFoundThreshold: 3, reconcileIntervalMs: 500 },
    );
    const { id } = await p.startWorkflow({ workflowId: `lost-ctx-${h.counter()}`, steps: [{ name: 'main', agent: agent.cardUrl, message: { text: 'lost ctx' } }], maxAttemptsPerStep: 2 });
    const record = await finished(p, id, 30_000);
    expect(seen.contextId).toBeDefined();
    expect(record.state).toBe('AMBIGUOUS');
    expect(record.error?.message).toContain('T2');
    expect(await metric(fleet.metrics.redelegations)).toBe(0);
    expect(agent.count('SendMessage')).toBe(1);
  });

  it('T1 denied (-32001) over the window, ListTasks shows T2 COMPLETED holding our messageId: never LOST and re-delegated (the work done twice, T2\'s result dropped); a person, both ids named', async () => {
    let messageId = '';
    const { producer: p, agent, fleet, seen } = await h.setUp(
      (seen) => ({
        GetTask: (params) => (params.id === 'T1' ? NOT_FOUND : { result: twin('T2', 'COMPLETED', seen.contextId, messageId) }),
        SubscribeToTask: (params) => (params.id === 'T1' ? NOT_FOUND : { error: { code: -32004, message: 'terminal' } }),
        ListTasks: () => ({ result: { tasks: [twin('T2', 'COMPLETED', seen.contextId, messageId, 2)], nextPageToken: '', pageSize: 50, totalSize: 1 } }),
      }),
      { notFoundWindowMs: 1_000, notFoundThreshold: 3, reconcileIntervalMs: 500 },
    );
    const { id } = await p.startWorkflow({ workflowId: `lost-twin-${h.counter()}`, steps: [{ name: 'main', agent: agent.cardUrl, message: { text: 'lost twin' } }], maxAttemptsPerStep: 2 });
    await eventually(async () => (messageId = seen.messageId ?? '') !== '', 'sent');
    const record = await finished(p, id, 30_000);
    expect(agent.count('ListTasks')).toBeGreaterThanOrEqual(1);
    expect(record.state).not.toBe('LOST');
    expect(record.state).toBe('AMBIGUOUS');
    expect(record.error?.message).toContain('T1');
    expect(record.error?.message).toContain('T2');
    expect((await workflowSettled(p, id)).state).toBe('NEEDS_ATTENTION');
    expect(await metric(fleet.metrics.redelegations)).toBe(0);
    expect(agent.count('SendMessage')).toBe(1);
  });
});
