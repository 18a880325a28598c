/**
 * Field cases round 3, §F (../shared/cases/field-reports-3.md): public reports P32–P37 against the delegation core.
 * Real redis-server, real fleet, scripted raw JSON-RPC agents (exact bytes). P35 (gRPC transparent retries) is in
 * test/interop/grpc-no-replay.test.ts; the kinds' properties are in packages/workers/test/transitions.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { finished, markSentNotRecorded, recordOf, useFieldCases, viewOf, type Setup } from '../harness/field-cases.ts';
import { SU, ev, task, type ScriptedHandlers } from '../harness/scripted-agent.ts';
import { createServer } from 'node:http';
import { eventually } from '../harness/fleet.ts';
import { closeServer, listenOnLoopback } from '../harness/ports.ts';

const h = useFieldCases();

async function start(handlers: (seen: Setup['seen']) => ScriptedHandlers, fleetOptions: Parameters<typeof h.setUp>[1] = {}) {
  const setup = await h.setUp(handlers, fleetOptions);
  const { id } = await setup.producer.delegate({ agent: setup.agent.cardUrl, text: 'go', idempotencyKey: `${setup.prefix}-1` });
  await eventually(async () => (await recordOf(setup.producer, id)) !== undefined, 'journaled');
  return { ...setup, id };
}

describe('P36: routine connection recycling is not "no progress"', () => {
  it('eight streams each cut after one identical WORKING event, then COMPLETED: the follow keeps resubscribing at once, never drops to slow polling', async () => {
    const cuts = 8;
    const { producer: p, agent, id } = await start(
      (seen) => {
        let subscribes = 0;
        const done = () => subscribes > cuts;
        const finishedTask = () => task('T1', 'COMPLETED', { contextId: seen.contextId, artifacts: { a1: 'booked' } });
        return {
          SubscribeToTask: (_params, call) =>
            (subscribes = call.count) <= cuts ? { sse: [ev(SU('WORKING', { contextId: seen.contextId }))], endAfter: 'close' } : { sse: [ev(JSON.stringify({ jsonrpc: '2.0', id: 1, result: { task: finishedTask() } }))] },
          GetTask: () => ({ result: done() ? finishedTask() : task('T1', 'WORKING', { contextId: seen.contextId }) }),
        };
      },
      // The backoff reaches its cap after two cycles without progress; slow polling would then read once a minute.
      { followBackoff: { baseMs: 100, capMs: 400 }, slowPollMs: 60_000, slowPollAfterMs: 60_000, streamQuietMs: 60_000 },
    );
    const record = await finished(p, id, 30_000);
    expect(record.state).toBe('COMPLETED');
    expect(agent.count('SubscribeToTask')).toBe(cuts + 1);
    expect((await viewOf(p, id)).artifacts.map((artifact) => artifact.artifactId)).toEqual(['a1']);
    expect(agent.count('SendMessage')).toBe(1);
  }, 60_000);
});

describe('P32: a ListTasks that always answers HTTP 500', () => {
  it('the crash between send and record: the search is retried in bounded rounds, then AMBIGUOUS SEARCH_UNAVAILABLE; never resent', async () => {
    const agent = await h.agentWith({
      ListTasks: () => ({ http: { status: 500, body: JSON.stringify({ error: { code: 500, status: 'INTERNAL', message: 'list tasks not implemented' } }) } }),
    });
    const prefix = h.newPrefix();
    const producer = h.producer(prefix);
    const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'go', idempotencyKey: 'p32' });
    await markSentNotRecorded(producer, id, agent);
    await h.fleetFor(prefix, { reconcileIntervalMs: 300 });
    const record = await finished(producer, id, 40_000);
    expect(record).toMatchObject({ state: 'AMBIGUOUS', error: { code: 'SEARCH_UNAVAILABLE' } });
    expect(record.error?.message).toMatch(/3 searches for our message in a row failed .*UPSTREAM_ERROR: list tasks not implemented/);
    expect(agent.count('SendMessage')).toBe(0);
    // Bounded: three rounds in a row (each one search's passes), not a retry for ever.
    const listed = agent.count('ListTasks');
    expect(listed).toBeGreaterThanOrEqual(3);
    expect(listed).toBeLessThanOrEqual(12);
  }, 60_000);
});

describe('P33: an agent that re-issues AUTH_REQUIRED for ever', () => {
  it('the stream repeats AUTH_REQUIRED with a fresh timestamp: the auth handler runs 3 times, then AMBIGUOUS AUTH with the challenge (workflow NEEDS_ATTENTION AUTH), never FAILED, never re-delegated', async () => {
    const challenge = 'sign in at https://idp.example/device';
    const seen: Setup['seen'] = {};
    const askAgain = (index: number) =>
      ev(SU('AUTH_REQUIRED', { contextId: seen.contextId, timestamp: new Date(Date.UTC(2026, 0, 1, 10, 0, index)).toISOString(), message: { messageId: `auth-${index}`, role: 'ROLE_AGENT', parts: [{ text: challenge }] } }));
    const agent = await h.agentWith({
      SendMessage: h.accept(seen),
      SubscribeToTask: () => ({ sse: Array.from({ length: 60 }, (_, index) => [askAgain(index), { waitMs: 150 }]).flat(), endAfter: 'hang' }),
      GetTask: () => ({ result: task('T1', 'AUTH_REQUIRED', { contextId: seen.contextId, message: { messageId: 'auth-x', role: 'ROLE_AGENT', parts: [{ text: challenge }] } }) }),
    });
    const prefix = h.newPrefix();
    const producer = h.producer(prefix);
    const runs: string[] = [];
    await h.fleetFor(prefix, { authHandlers: { [agent.cardUrl]: async (input) => void runs.push(input.challenge) } });
    const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'pay', idempotencyKey: 'p33' });
    const record = await finished(producer, id, 30_000);
    expect(record).toMatchObject({ state: 'AMBIGUOUS', error: { code: 'AUTH' } });
    expect(record.error?.message).toContain(challenge);
    expect(runs).toEqual([challenge, challenge, challenge]);
    const view = await eventually(async () => {
      const workflow = await producer.get(id);
      return workflow.state === 'NEEDS_ATTENTION' && workflow;
    }, 'NEEDS_ATTENTION');
    expect(view.attention).toMatchObject({ code: 'AUTH' });
    expect(agent.count('SendMessage')).toBe(1);
    expect(agent.count('CancelTask')).toBe(0);
  }, 60_000);
});

describe('P34: our token rotates while a task runs', () => {
  const refuse = { http: { status: 401, body: JSON.stringify({ error: 'invalid_token' }), headers: { 'www-authenticate': 'Bearer error="invalid_token"' } } };

  async function run(tokens: (call: number) => string, sendAttempts: number) {
    const seen: Setup['seen'] = {};
    const accept = h.accept(seen);
    const agent = await h.agentWith({
      SendMessage: (params, call) => (call.headers.authorization === 'Bearer tok-2' ? accept(params, call) : refuse),
      GetTask: () => ({ result: task('T1', 'COMPLETED', { contextId: seen.contextId, artifacts: { a1: 'booked' } }) }),
      SubscribeToTask: () => ({ sse: [ev(JSON.stringify({ jsonrpc: '2.0', id: 1, result: { task: task('T1', 'COMPLETED', { contextId: seen.contextId, artifacts: { a1: 'booked' } }) } }))] }),
    });
    const prefix = h.newPrefix();
    const producer = h.producer(prefix);
    let asked = 0;
    await h.fleetFor(prefix, { sendAttempts, followBackoff: { baseMs: 50, capMs: 200 }, credentials: () => async () => ({ authorization: `Bearer ${tokens(++asked)}` }) });
    const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'book', idempotencyKey: `p34-${prefix}` });
    const record = await finished(producer, id, 30_000);
    const messageIds = new Set(agent.calls('SendMessage').map((request) => request.params.message.messageId));
    return { agent, producer, id, record, messageIds };
  }

  it("(b') a SendMessage made with the stale token gets 401: the provider is asked again and the same messageId resent; COMPLETED", async () => {
    const { agent, record, messageIds } = await run((call) => (call === 1 ? 'tok-1' : 'tok-2'), 6);
    expect(record).toMatchObject({ state: 'COMPLETED', taskId: 'T1' });
    expect(agent.count('SendMessage')).toBe(2);
    expect(messageIds.size).toBe(1);
  }, 60_000);

  it('(c) the provider keeps returning the refused token: bounded rounds, then AMBIGUOUS AUTH (NEEDS_ATTENTION AUTH); one messageId, no other agent', async () => {
    const { agent, producer, id, record, messageIds } = await run(() => 'tok-1', 3);
    expect(record).toMatchObject({ state: 'AMBIGUOUS', error: { code: 'AUTH' } });
    expect(record.error?.message).toContain('refused our credentials on 3 SendMessage attempts');
    expect(agent.count('SendMessage')).toBe(3);
    expect(messageIds.size).toBe(1);
    const view = await eventually(async () => {
      const workflow = await producer.get(id);
      return workflow.state === 'NEEDS_ATTENTION' && workflow;
    }, 'NEEDS_ATTENTION');
    expect(view.attention).toMatchObject({ code: 'AUTH' });
    expect(view.steps[0]!.attempts).toHaveLength(1);
  }, 60_000);
});

describe('P37: a 1.0 interface that answers -32009', () => {
  it('the card lists it first and another interface we speak second: one SendMessage on each, the same messageId, COMPLETED on the second', async () => {
    const seen: Setup['seen'] = {};
    const refusing = await h.agentWith({ SendMessage: () => ({ error: { code: -32009, message: 'Version not supported' } }), GetTask: () => ({ error: { code: -32009, message: 'Version not supported' } }) });
    const accept = h.accept(seen);
    const finishedTask = () => task('T1', 'COMPLETED', { contextId: seen.contextId, artifacts: { a1: 'booked' } });
    const working = await h.agentWith({ SendMessage: (params, call) => (accept(params, call), { result: { task: { ...finishedTask(), history: [params.message] } } }), GetTask: () => ({ result: finishedTask() }) });
    const cards = createServer((_request, response) => {
      const card = {
        name: 'two interfaces', description: 'the first refuses our version', version: '1',
        supportedInterfaces: [
          { url: refusing.rpcUrl, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
          { url: working.rpcUrl, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
        ],
        capabilities: { streaming: false }, defaultInputModes: ['text/plain'], defaultOutputModes: ['text/plain'],
        skills: [{ id: 's', name: 's', description: 's', tags: [] }],
      };
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify(card));
    });
    const port = await listenOnLoopback(cards);
    try {
      const prefix = h.newPrefix();
      const producer = h.producer(prefix);
      await h.fleetFor(prefix);
      const { id } = await producer.delegate({ agent: `http://127.0.0.1:${port}/.well-known/agent-card.json`, text: 'book', idempotencyKey: 'p37' });
      const record = await finished(producer, id, 30_000);
      expect(record).toMatchObject({ state: 'COMPLETED', taskId: 'T1' });
      expect(record.agentInterface?.url).toBe(working.rpcUrl);
      expect(refusing.count('SendMessage')).toBe(1);
      expect(working.count('SendMessage')).toBe(1);
      expect(working.calls('SendMessage')[0]!.params.message.messageId).toBe(refusing.calls('SendMessage')[0]!.params.message.messageId);
    } finally {
      await closeServer(cards);
    }
  }, 60_000);
});
