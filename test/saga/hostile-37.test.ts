/**
 * Red team round 37: the reconciler's ListTasks search against a lying lister, pushes, and the Agent Card changing
 * mid-flight. Real redis-server, real fleet, raw JSON-RPC agents on loopback (exact bytes), counting SendMessage at
 * each agent. FIXED FINDING marks an attack that broke the promise on main (each verified failing there).
 */
import { createServer } from 'node:http';
import { describe, expect, it } from 'vitest';
import { listenOnLoopback } from '../harness/ports.ts';
import { eventually } from '../harness/fleet.ts';
import { closeKeptAfterEach } from '../harness/lifecycle.ts';
import { holder } from '../harness/holders.ts';
import { getTaskCalls, pushScene } from '../harness/push-scene.ts';
import { delegatePushed, startPushStack } from '../harness/push-stack.ts';
import { taskEvent } from '../harness/scripted-agent.ts';
import { request } from 'undici';
import { useFieldCases, finished, listTasksPage, NOT_FOUND } from '../harness/field-cases.ts';
import { task, userMessage } from '../harness/scripted-agent.ts';

const h = useFieldCases();
const keep = closeKeptAfterEach();
const fast = { reconcileIntervalMs: 300, requestTimeoutMs: 3_000, notFoundWindowMs: 2_000 };

/** `count` tasks of other clients, each in its own context with a user message of theirs (a full-looking history). */
const strangers = (count: number) =>
  Array.from({ length: count }, (_, i) => task(`S${i}`, 'COMPLETED', { contextId: `other-${i}`, history: [userMessage(`theirs-${i}`)] }));

/*
 * FIXED FINDING (kind: a search against a lying lister stays bounded and proves no absence it did not read). Input:
 * crash window 2 at a non-deduplicating agent whose ListTasks answers 1,000 other clients' tasks on every page of 50,
 * each readable by GetTask. Observed on main: every listed task read in full on every search (27,443 GetTask and 116
 * ListTasks in 30 s), a "proven absence" and two resends of our message. Expected: at most a page of GetTask per
 * ListTasks, the listing inconclusive (a person), nothing resent.
 */
describe('hostile 37: a lister that answers more tasks than the page asked for', () => {
  it('ListTasks answers 1,000 tasks on a page of 50, each readable: the candidate reads stay bounded, nothing resent', async () => {
    const listed = strangers(1_000);
    const byId = new Map(listed.map((t) => [t.id as string, t]));
    const agent = await h.agentWith({
      SendMessage: () => ({ error: { code: -32603, message: 'should not be resent' } }),
      ListTasks: () => listTasksPage(listed),
      GetTask: (params) => (byId.has(params.id) ? { result: byId.get(params.id) } : NOT_FOUND),
    });
    const { producer, id } = await h.sentNotRecorded(agent, undefined, fast);
    const record = await finished(producer, id, 30_000).catch(async (error) => {
      console.log('DEBUG', agent.count('GetTask'), agent.count('ListTasks'), agent.count('SendMessage'), JSON.stringify(await producer.journal.getDelegation({ workflowId: id, delegationId: 'main.1' })));
      throw error;
    });
    // Each search may read at most a page's worth of candidates per ListTasks call it is allowed.
    expect(agent.count('GetTask')).toBeLessThanOrEqual(10 * 50);
    expect(record.state).toBe('AMBIGUOUS');
    expect(agent.count('SendMessage')).toBe(0);
  }, 90_000);
});

describe('hostile 37: a task listed but denied by GetTask', () => {
  it('A takes our message and cuts the answer; ListTasks shows T1 COMPLETED holding it, GetTask(T1) is -32001 for ever: never agent B, one SendMessage', async () => {
    let sent: { contextId: string; history: unknown[] } | undefined;
    const a = await h.agentWith({
      SendMessage: (params) => ((sent = { contextId: params.message.contextId, history: [params.message] }), { raw: '' }),
      ListTasks: () => listTasksPage(sent ? [task('T1', 'COMPLETED', sent)] : []),
      GetTask: () => NOT_FOUND,
    });
    const { b, producer, id, view } = await h.stepOverTwo(a.cardUrl, fast, 60_000);
    const first = await producer.journal.getDelegation({ workflowId: id, delegationId: 'hotel.1' });
    expect(first?.state).toBe('AMBIGUOUS');
    expect(view.state).not.toBe('COMPLETED');
    expect(b.count('SendMessage')).toBe(0);
    expect(a.count('SendMessage')).toBe(1);
  }, 90_000);

  /*
   * FIXED FINDING (kind: a read answering another task than asked). Observed on main: GetTask(T1) answered T2 holding
   * our message; T2 adopted, hotel.1 COMPLETED from it, T1 (in the context we sent: our message created it) left
   * running unseen. Expected: no read of T1, the search failed: a person (AMBIGUOUS), nothing adopted, never agent B.
   * The test above (a listed task denied by GetTask) held on main: a person, never LOST and re-delegated.
   */
  it('ListTasks shows T1 in our context without history; GetTask(T1) answers T2 holding our message: no task adopted by an answer to another id', async () => {
    let sent: { contextId: string; history: unknown[] } | undefined;
    const a = await h.agentWith({
      SendMessage: (params) => ((sent = { contextId: params.message.contextId, history: [params.message] }), { raw: '' }),
      ListTasks: () => listTasksPage(sent ? [task('T1', 'WORKING', { contextId: sent.contextId })] : []),
      GetTask: () => (sent ? { result: task('T2', 'COMPLETED', { ...sent, artifacts: { a1: 'T2 result' } }) } : NOT_FOUND),
    });
    const { b, producer, id, view } = await h.stepOverTwo(a.cardUrl, fast, 60_000);
    const first = await producer.journal.getDelegation({ workflowId: id, delegationId: 'hotel.1' });
    expect(first?.state).toBe('AMBIGUOUS');
    expect(first?.taskId).toBeUndefined();
    expect(view.state).not.toBe('COMPLETED');
    expect(b.count('SendMessage')).toBe(0);
    expect(a.count('SendMessage')).toBe(1);
  }, 90_000);
});

/* Held on main (kept: no test pushed a finished Task before the send's answer bound it). */
describe('hostile 37: a push before the send answer binds the task', () => {
  it('the agent pushes T1 COMPLETED (our message, our context, the result) before it answers SendMessage with T1 WORKING: COMPLETED from T1, one SendMessage, no person', async () => {
    const env = await startPushStack(h.redisServer().url, `early-${Date.now()}`);
    keep(env);
    const pushed: number[] = [];
    const done = (sent: { contextId: string; history: unknown[] }) => task('T1', 'COMPLETED', { ...sent, artifacts: { a1: 'booked' } });
    let sent: { contextId: string; history: unknown[] } | undefined;
    const agent = await h.agentWith({
      SendMessage: async (params) => {
        sent = { contextId: params.message.contextId, history: [params.message] };
        const config = params.configuration.taskPushNotificationConfig;
        const answered = await request(config.url, { method: 'POST', body: JSON.stringify({ task: done(sent) }), headers: { authorization: `Bearer ${config.token}`, 'content-type': 'application/a2a+json' } });
        await answered.body.text();
        pushed.push(answered.statusCode);
        return { result: { task: task('T1', 'WORKING', sent) } };
      },
      SubscribeToTask: () => ({ sse: [taskEvent(done(sent!))] }),
      GetTask: () => (sent ? { result: done(sent) } : NOT_FOUND),
      ListTasks: () => listTasksPage(sent ? [done(sent)] : []),
    });
    const workflowId = `early-wf-${Date.now()}`;
    const { record } = await delegatePushed(env, agent.cardUrl, workflowId);
    const settled = await eventually(async () => {
      const row = await record();
      return ['COMPLETED', 'FAILED', 'AMBIGUOUS', 'LOST', 'CANCELED', 'REJECTED'].includes(row.state) ? row : undefined;
    }, 'main.1 finished', 30_000);
    expect(pushed).toHaveLength(1);
    expect(settled).toMatchObject({ state: 'COMPLETED', taskId: 'T1' });
    expect(agent.count('SendMessage')).toBe(1);
  }, 60_000);
});

/* Held on main (kept: earlier tests repeat one completion; here each push has its own timestamp): one GetTask. */
describe('hostile 37: a push storm for one task', () => {
  it('200 pushes of a COMPLETED status without the result, each with its own timestamp, while GetTask says WORKING: the reads stay bounded', async () => {
    const { push, record, agent, env, contextId } = await pushScene({ redisUrl: h.redisServer().url, keep }, (taskId, received) => holder(taskId, 'WORKING', received));
    const before = getTaskCalls(agent, 'T1');
    const base = Date.UTC(2026, 0, 1);
    for (let i = 0; i < 200; i++) {
      const status = await push({ statusUpdate: { taskId: 'T1', contextId: contextId(), status: { state: 'TASK_STATE_COMPLETED', timestamp: new Date(base + i * 1000).toISOString() } } });
      expect(status).toBe(204);
    }
    // Every job the pushes asked for has run.
    await eventually(async () => {
      const counts = await env.fleet!.context.queues.reconcile.getJobCounts('waiting', 'active', 'prioritized');
      return Object.values(counts).every((count) => count === 0);
    }, 'the reconcile jobs drained', 60_000, 50);
    const reads = getTaskCalls(agent, 'T1') - before;
    expect(reads).toBeLessThanOrEqual(20);
    expect((await record()).state).toBe('WORKING');
  }, 90_000);
});

/** An Agent Card server whose card (A2A 1.0, JSON-RPC at `rpcUrl()`, skill `scripted`) or raw answer the test changes. */
async function movingCard(rpcUrl: string) {
  const state: { rpcUrl: string; answer?: { status: number; body: string } } = { rpcUrl };
  let fetched = 0;
  const server = createServer((_request, response) => {
    fetched++;
    const body = state.answer?.body ?? JSON.stringify({
      name: 'Moving agent', description: 'a card that changes', version: '1.0.0',
      supportedInterfaces: [{ url: state.rpcUrl, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' }],
      capabilities: { streaming: false, pushNotifications: false, extensions: [], extendedAgentCard: false },
      defaultInputModes: ['text/plain'], defaultOutputModes: ['text/plain'],
      skills: [{ id: 'scripted', name: 'Scripted', description: 'books', tags: ['scripted'] }],
    });
    response.writeHead(state.answer?.status ?? 200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    response.end(body);
  });
  const port = await listenOnLoopback(server);
  keep({ close: () => new Promise((resolve) => (server.closeAllConnections(), server.close(resolve))) });
  return { cardUrl: `http://127.0.0.1:${port}/.well-known/agent-card.json`, state, fetched: () => fetched };
}

/* Held on main (kept: the card turning into a 500 or 10 MB after the send was not covered): the journaled interface is used. */
describe('hostile 37: the Agent Card changes mid-flight', () => {
  for (const change of ['moved to agent C', 'a 500', 'a 10 MB body'] as const) {
    it(`A takes our message and cuts the answer; A's card then becomes ${change}: the search runs at A's journaled address, T1 adopted, C never called`, async () => {
      let sent: { contextId: string; history: unknown[] } | undefined;
      const a = await h.agentWith({
        SendMessage: (params) => {
          sent = { contextId: params.message.contextId, history: [params.message] };
          if (change === 'moved to agent C') card.state.rpcUrl = c.rpcUrl;
          else if (change === 'a 500') card.state.answer = { status: 500, body: '{"error":"down"}' };
          else card.state.answer = { status: 200, body: `{"name":"${'x'.repeat(10 * 1024 * 1024)}"}` };
          return { raw: '' };
        },
        ListTasks: () => listTasksPage(sent ? [task('T1', 'COMPLETED', { ...sent, artifacts: { a1: 'booked at A' } })] : []),
        GetTask: (params) => (sent && params.id === 'T1' ? { result: task('T1', 'COMPLETED', { ...sent, artifacts: { a1: 'booked at A' } }) } : NOT_FOUND),
      });
      const c = await h.agentWith({ SendMessage: (params) => ({ result: { task: task('TC', 'COMPLETED', { contextId: params.message.contextId, history: [params.message], artifacts: { a1: 'C did it' } }) } }) });
      const card = await movingCard(a.rpcUrl);
      const prefix = h.newPrefix();
      const producer = h.producer(prefix);
      await h.fleetFor(prefix, fast);
      const { id } = await producer.delegate({ agent: card.cardUrl, text: 'book', idempotencyKey: `moving-${prefix}` });
      const record = await finished(producer, id, 30_000);
      expect(record).toMatchObject({ state: 'COMPLETED', taskId: 'T1' });
      expect(a.count('SendMessage')).toBe(1);
      expect(c.requests).toHaveLength(0);
    }, 60_000);
  }
});
