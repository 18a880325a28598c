/**
 * Attack: what each answer proves (delivery, ownership, effect), tried with inputs of the kinds of field cases A31–A38
 * and P31–P37 (../shared/cases/field-reports-3.md) that the case tests do not use. Real redis-server, real fleet,
 * scripted raw JSON-RPC agents (exact bytes); the push webhook through the real HTTP service. The kinds' unit rows
 * are in packages/workers/test/transitions.test.ts and packages/shared/test.
 */
import http2 from 'node:http2';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { A2AError, sendEffectOf } from '../../packages/a2a/src/index.ts';
import { GrpcTransport } from '../../packages/a2a/src/grpc/transport.ts';
import { artifactText, finished, useFieldCases, viewOf, workflowSettled, type Setup } from '../harness/field-cases.ts';
import { SU, ev, task, taskEvent, type ScriptedHandler, type ScriptedHandlers } from '../harness/scripted-agent.ts';
import { eventually } from '../harness/fleet.ts';
import { startTestServer } from '../harness/api-server.ts';

const h = useFieldCases();

/** A task that holds our message in its history (content proof of ownership). */
const ours = (params: { message: { messageId: string; contextId?: string } }, state: string, extra: Parameters<typeof task>[2] = {}) =>
  task('T1', state, { contextId: params.message.contextId, history: [params.message], ...extra });

const start = h.setUpAndDelegate;

const sentNotRecorded = h.sentNotRecorded;

describe('attack: a refusal that does not prove nothing was created', () => {
  const conflicts: [string, (bookings: string[]) => ScriptedHandler][] = [
    ['HTTP 409 with a plain JSON body', (bookings) => (params) => (bookings.push(params.message.messageId), { http: { status: 409, body: JSON.stringify({ error: 'a task for this message already exists' }) } })],
    [
      'HTTP 409 with a google.rpc.Status body (ALREADY_EXISTS)',
      (bookings) => (params) => (bookings.push(params.message.messageId), { http: { status: 409, body: JSON.stringify({ error: { code: 409, status: 'ALREADY_EXISTS', message: 'duplicate message' } }) } }),
    ],
  ];
  for (const [name, answer] of conflicts) {
    it(`${name} after the agent took the message: never FAILED and re-delegated (one booking); the search adopts the task`, async () => {
      const prefix = h.newPrefix();
      const bookings: string[] = [];
      // Two agents with the skill, each taking the message, then answering the conflict; each lists the task it made.
      const agentTakingTheMessage = () => {
        let messageId = '';
        const history = () => [{ messageId, role: 'ROLE_USER', parts: [{ text: 'book' }] }];
        return h.agentWith({
          SendMessage: (params, call) => ((messageId = params.message.messageId), answer(bookings)(params, call)),
          ListTasks: (params) => ({ result: { tasks: messageId ? [task('T1', 'COMPLETED', { contextId: params.contextId, history: history(), artifacts: { a1: 'booked' } })] : [], nextPageToken: '', pageSize: 50, totalSize: messageId ? 1 : 0 } }),
          GetTask: () => ({ result: task('T1', 'COMPLETED', { history: history(), artifacts: { a1: 'booked' } }) }),
          SubscribeToTask: () => ({ sse: [taskEvent(task('T1', 'COMPLETED', { history: history(), artifacts: { a1: 'booked' } }))] }),
        });
      };
      const first = await agentTakingTheMessage();
      const second = await agentTakingTheMessage();
      const producer = h.producer(prefix);
      await producer.registerAgent(first.cardUrl);
      await producer.registerAgent(second.cardUrl);
      await h.fleetFor(prefix, { reconcileIntervalMs: 300 });
      await producer.startWorkflow({ workflowId: `conflict-${prefix}`, maxAttemptsPerStep: 2, steps: [{ name: 'hotel', skill: 'scripted', message: { text: 'book' } }] });
      const view = await workflowSettled(producer, `conflict-${prefix}`, 30_000);
      expect(bookings).toHaveLength(1);
      expect(first.count('SendMessage') + second.count('SendMessage')).toBe(1);
      expect(view.steps[0]!.attempts).toHaveLength(1);
      expect(view.steps[0]!.attempts[0]).toMatchObject({ state: 'COMPLETED' });
    }, 45_000);
  }
});

describe('attack: an informational field that does not parse (A37 kind)', () => {
  const variants: [string, (params: any) => Record<string, unknown>][] = [
    ['status.timestamp as epoch seconds (a number)', (params) => ({ ...ours(params, 'COMPLETED', { artifacts: { a1: 'booked' } }), status: { state: 'TASK_STATE_COMPLETED', timestamp: 1_767_225_600 } })],
    ['a history entry without parts', (params) => ours(params, 'COMPLETED', { artifacts: { a1: 'booked' }, history: [params.message, { messageId: 'agent-1', role: 'ROLE_AGENT', content: 'thinking' }] })],
    ['status.message as a number', (params) => ({ ...ours(params, 'COMPLETED', { artifacts: { a1: 'booked' } }), status: { state: 'TASK_STATE_COMPLETED', message: 42 } })],
    ['status.message as an object without parts', (params) => ({ ...ours(params, 'COMPLETED', { artifacts: { a1: 'booked' } }), status: { state: 'TASK_STATE_COMPLETED', message: { messageId: 'm', role: 'ROLE_AGENT' } } })],
    ['status.message as an array', (params) => ({ ...ours(params, 'COMPLETED', { artifacts: { a1: 'booked' } }), status: { state: 'TASK_STATE_COMPLETED', message: ['done'] } })],
  ];
  for (const [name, answer] of variants) {
    it(`SendMessage answers COMPLETED with ${name}: COMPLETED with the artifact, one SendMessage`, async () => {
      const { producer: p, agent, id } = await start(() => ({ SendMessage: (params) => ({ result: { task: answer(params) } }) }));
      const record = await finished(p, id, 20_000);
      expect(record.state).toBe('COMPLETED');
      expect(artifactText(await viewOf(p, id), 'a1')).toBe('booked');
      expect(agent.count('SendMessage')).toBe(1);
    });
  }
});

describe('attack: "id": null on every method (A33 kind)', () => {
  it('SendMessage answers a direct Message in our context with "id": null: COMPLETED with its text, one SendMessage', async () => {
    const { producer: p, agent, id } = await start(() => ({
      SendMessage: (params) => ({ envelopeId: null, result: { message: { messageId: 'r1', role: 'ROLE_AGENT', contextId: params.message.contextId, parts: [{ text: 'hello back' }] } } }),
    }));
    const record = await finished(p, id, 30_000);
    expect(record.state).toBe('COMPLETED');
    expect(JSON.stringify(await viewOf(p, id))).toContain('hello back');
    expect(agent.count('SendMessage')).toBe(1);
  }, 45_000);

  it('SendMessage answers a COMPLETED Task in our context without history (spec §3.7 allows it) with "id": null: COMPLETED with its artifact, one SendMessage', async () => {
    const { producer: p, agent, id } = await start(() => ({
      SendMessage: (params) => ({ envelopeId: null, result: { task: task('T1', 'COMPLETED', { contextId: params.message.contextId, artifacts: { a1: 'booked' } }) } }),
      GetTask: (params) => ({ envelopeId: null, result: task('T1', 'COMPLETED', { contextId: params.contextId, artifacts: { a1: 'booked' } }) }),
    }));
    const record = await finished(p, id, 30_000);
    expect(record.state).toBe('COMPLETED');
    expect(artifactText(await viewOf(p, id), 'a1')).toBe('booked');
    expect(agent.count('SendMessage')).toBe(1);
  }, 45_000);

  it('SendMessage answers a Message naming another context with "id": null: nothing adopted (never COMPLETED from it)', async () => {
    const { producer: p, agent, id } = await start(() => ({
      SendMessage: () => ({ envelopeId: null, result: { message: { messageId: 'r1', role: 'ROLE_AGENT', contextId: 'someone-else', parts: [{ text: 'not yours' }] } } }),
    }));
    const record = await finished(p, id, 30_000);
    expect(record.state).not.toBe('COMPLETED');
    expect(agent.count('SendMessage')).toBe(1);
  }, 45_000);

  it('ListTasks answers with "id": null after a crash between send and record: the task holding our message is adopted, never SEARCH_UNAVAILABLE', async () => {
    let messageId = '';
    const history = () => [{ messageId, role: 'ROLE_USER', parts: [{ text: 'go' }] }];
    const agent = await h.agentWith({
      ListTasks: (params) => ({ envelopeId: null, result: { tasks: [task('T1', 'WORKING', { contextId: params.contextId, history: history() })], nextPageToken: '', pageSize: 50, totalSize: 1 } }),
      GetTask: () => ({ envelopeId: null, result: task('T1', 'COMPLETED', { history: history(), artifacts: { a1: 'the booking' } }) }),
      SubscribeToTask: () => ({ sse: [taskEvent(task('T1', 'COMPLETED', { history: history(), artifacts: { a1: 'the booking' } }))] }),
    });
    const { producer, id } = await sentNotRecorded(agent, (ours) => (messageId = ours));
    const record = await finished(producer, id, 30_000);
    expect(record).toMatchObject({ state: 'COMPLETED', taskId: 'T1' });
    expect(artifactText(await viewOf(producer, id), 'a1')).toBe('the booking');
    expect(agent.count('SendMessage')).toBe(0);
  }, 45_000);

  it('SubscribeToTask frames with "id": null naming our task (GetTask lags at WORKING): the events are applied, COMPLETED with the artifact from the stream', async () => {
    const nullId = (payload: string) => ev(payload.replace('"id":1,', '"id":null,'));
    const { producer: p, id } = await start((seen) => ({
      SubscribeToTask: () => ({
        sse: [
          nullId(JSON.stringify({ jsonrpc: '2.0', id: 1, result: { task: task('T1', 'WORKING', { contextId: seen.contextId }) } })),
          nullId(JSON.stringify({ jsonrpc: '2.0', id: 1, result: { artifactUpdate: { taskId: 'T1', contextId: seen.contextId, artifact: { artifactId: 'a1', parts: [{ text: 'streamed' }] }, lastChunk: true } } })),
          nullId(SU('COMPLETED', { contextId: seen.contextId })),
        ],
      }),
      GetTask: () => ({ result: task('T1', 'WORKING', { contextId: seen.contextId }) }),
    }), { followBackoff: { baseMs: 200, capMs: 1_000 }, slowPollAfterMs: 60_000, slowPollMs: 60_000 });
    const record = await finished(p, id, 20_000);
    expect(record.state).toBe('COMPLETED');
    expect(artifactText(await viewOf(p, id), 'a1')).toBe('streamed');
  }, 30_000);

  it('ListTasks answers with another request\'s id: nothing adopted from it (refused, a person decides), never resent', async () => {
    let messageId = '';
    const agent = await h.agentWith({
      ListTasks: (params) => ({ envelopeId: 987_654, result: { tasks: [task('T1', 'WORKING', { contextId: params.contextId, history: [{ messageId, role: 'ROLE_USER', parts: [{ text: 'go' }] }] })], nextPageToken: '', pageSize: 50, totalSize: 1 } }),
    });
    const { producer, id } = await sentNotRecorded(agent, (ours) => (messageId = ours));
    const record = await finished(producer, id, 30_000);
    expect(record.state).toBe('AMBIGUOUS');
    expect(record.taskId).toBeUndefined();
    expect(agent.count('SendMessage')).toBe(0);
  }, 45_000);
});

describe('attack: a status-only finish without a full read (A35 kind)', () => {
  it('a push of a status-only COMPLETED (the artifact push was lost): the task is read in full, never settled without its result', async () => {
    const prefix = h.newPrefix();
    const seen: Setup['seen'] = {};
    let done = false;
    const finishedTask = () => task('T1', 'COMPLETED', { contextId: seen.contextId, artifacts: { a1: 'the booking' } });
    const agent = await h.agentWith({
      SendMessage: h.accept(seen),
      SubscribeToTask: () => ({ sse: [taskEvent(task('T1', 'WORKING', { contextId: seen.contextId }))], endAfter: 'hang' }),
      GetTask: () => ({ result: done ? finishedTask() : task('T1', 'WORKING', { contextId: seen.contextId }) }),
    });
    const producer = h.producer(prefix);
    const app = startTestServer({ redisUrl: h.redisServer().url, prefix });
    try {
      await app.ready();
      // The stream stays silent: the push is the first word of the finish; polling reads it after the quiet window.
      await h.fleetFor(prefix, { streamQuietMs: 3_000 });
      await producer.startWorkflow({ workflowId: 'push-status', steps: [{ name: 'main', agent: agent.cardUrl, message: { text: 'go' }, push: true }] });
      const ref = { workflowId: 'push-status', delegationId: 'main.1' };
      await eventually(async () => agent.count('SubscribeToTask') > 0 && (await producer.journal.getDelegation(ref))?.taskId === 'T1', 'followed');
      const secret = (await producer.journal.pushToken(ref))!;
      done = true;
      const push = await app.inject({
        method: 'POST',
        url: '/v1/push/push-status/main.1',
        headers: { 'content-type': 'application/a2a+json', authorization: `Bearer ${secret}` },
        payload: JSON.stringify({ statusUpdate: { taskId: 'T1', contextId: seen.contextId, status: { state: 'TASK_STATE_COMPLETED', timestamp: new Date().toISOString() } } }),
      });
      expect(push.statusCode).toBe(204);
      const record = await finished(producer, 'push-status', 30_000);
      expect(record.state).toBe('COMPLETED');
      expect(artifactText(await viewOf(producer, 'push-status'), 'a1')).toBe('the booking');
    } finally {
      await app.close();
    }
  }, 45_000);

  it('SubscribeToTask: WORKING, then a status-only COMPLETED; the GetTask that collects the artifacts answers 503 once: read again, never settled without its result', async () => {
    const { producer: p, agent, id } = await start((seen) => {
      const finishedTask = () => task('T1', 'COMPLETED', { contextId: seen.contextId, artifacts: { a1: 'the result' } });
      return {
        SubscribeToTask: (_params, call) => ({ sse: call.count === 1 ? [taskEvent(task('T1', 'WORKING', { contextId: seen.contextId })), ev(SU('COMPLETED', { contextId: seen.contextId }))] : [taskEvent(finishedTask())] }),
        GetTask: (_params, call) => (call.count === 1 ? { http: { status: 503, body: '<html>busy</html>', headers: { 'content-type': 'text/html' } } } : { result: finishedTask() }),
      };
    }, { followBackoff: { baseMs: 100, capMs: 400 } });
    const record = await finished(p, id, 20_000);
    expect(record.state).toBe('COMPLETED');
    expect(artifactText(await viewOf(p, id), 'a1')).toBe('the result');
    expect(agent.count('SendMessage')).toBe(1);
  });

  it('SendStreamingMessage answers only a status-only COMPLETED and ends (no Task, no artifact events): read in full before it settles', async () => {
    const { producer: p, agent, id } = await start(
      (seen) => ({
        SendStreamingMessage: (params: { message: { contextId?: string } }) => ((seen.contextId = params.message.contextId), { sse: [ev(SU('COMPLETED', { contextId: params.message.contextId }))] }),
        GetTask: () => ({ result: task('T1', 'COMPLETED', { contextId: seen.contextId, artifacts: { a1: 'the result' } }) }),
      }),
      { streamingSends: true },
    );
    const record = await finished(p, id, 20_000);
    expect(record.state).toBe('COMPLETED');
    expect(artifactText(await viewOf(p, id), 'a1')).toBe('the result');
    expect(agent.count('SendStreamingMessage') + agent.count('SendMessage')).toBe(1);
  });
});

describe('attack: credential refusals in other shapes (P34 kind)', () => {
  it('SendMessage answered HTTP 403 with an ErrorInfo body: never FAILED; asked again, then AMBIGUOUS AUTH; no other agent', async () => {
    const { producer: p, agent, id } = await start(() => ({
      SendMessage: () => ({ http: { status: 403, body: JSON.stringify({ error: { code: 403, status: 'PERMISSION_DENIED', message: 'token expired', details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'TOKEN_EXPIRED', domain: 'a2a' }] } }) } }),
    }), { followBackoff: { baseMs: 50, capMs: 200 } });
    const record = await finished(p, id, 30_000);
    expect(record).toMatchObject({ state: 'AMBIGUOUS', error: { code: 'AUTH' } });
    expect(agent.count('SendMessage')).toBeGreaterThan(1);
  }, 45_000);
});

describe('attack: credentials refused in other shapes and on other calls (P34 kind)', () => {
  it('SendMessage answered by a JSON-RPC error carrying HTTP 401 as its code (HTTP 200): never FAILED; AMBIGUOUS AUTH after the rounds', async () => {
    const { producer: p, agent, id } = await start(() => ({ SendMessage: () => ({ error: { code: 401, message: 'Unauthorized' } }) }), { followBackoff: { baseMs: 50, capMs: 200 } });
    const record = await finished(p, id, 30_000);
    expect(record).toMatchObject({ state: 'AMBIGUOUS', error: { code: 'AUTH' } });
    expect(agent.count('SendMessage')).toBeGreaterThan(1);
  }, 45_000);

  it('GetTask answers 401 mid-follow (the stream closes without a finish): AMBIGUOUS AUTH in bounded calls, not the no-progress window', async () => {
    const { producer: p, agent, id } = await start(
      (seen) => ({
        SubscribeToTask: () => ({ sse: [taskEvent(task('T1', 'WORKING', { contextId: seen.contextId }))] }),
        GetTask: () => ({ http: { status: 401, body: JSON.stringify({ error: 'invalid_token' }), headers: { 'www-authenticate': 'Bearer error="invalid_token"' } } }),
      }),
      { followBackoff: { baseMs: 50, capMs: 200 }, slowPollMs: 500, slowPollAfterMs: 1_000 },
    );
    const record = await finished(p, id, 30_000);
    expect(record).toMatchObject({ state: 'AMBIGUOUS', error: { code: 'AUTH' } });
    expect(agent.count('GetTask')).toBeLessThanOrEqual(6);
  }, 45_000);

  it('SubscribeToTask answers 401, GetTask works and shows COMPLETED: COMPLETED with the artifact', async () => {
    const { producer: p, id } = await start((seen) => ({
      SubscribeToTask: () => ({ http: { status: 401, body: JSON.stringify({ error: 'invalid_token' }) } }),
      GetTask: () => ({ result: task('T1', 'COMPLETED', { contextId: seen.contextId, artifacts: { a1: 'done' } }) }),
    }));
    const record = await finished(p, id, 20_000);
    expect(record.state).toBe('COMPLETED');
    expect(artifactText(await viewOf(p, id), 'a1')).toBe('done');
  });
});

describe('attack: a search that cannot be read (P32 kind)', () => {
  const listings: [string, ScriptedHandler][] = [
    ['HTTP 502 (an HTML page)', () => ({ http: { status: 502, body: '<html>Bad Gateway</html>', headers: { 'content-type': 'text/html' } } })],
    ['HTTP 503 with a JSON-RPC envelope', () => ({ http: { status: 503, body: JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32603, message: 'overloaded' } }) } })],
    ['HTTP 504, no body', () => ({ http: { status: 504, body: '' } })],
    ['HTTP 200 with garbage', () => ({ http: { status: 200, body: 'tasks: none' } })],
    ['a page whose task history is over the parts limit', (params) => ({ result: { tasks: [task('T1', 'WORKING', { contextId: params.contextId, history: [{ messageId: 'x', role: 'ROLE_USER', parts: Array.from({ length: 1_001 }, (_, index) => ({ text: `p${index}` })) }] })], nextPageToken: '', pageSize: 50, totalSize: 1 } })],
  ];
  for (const [name, listTasks] of listings) {
    it(`ListTasks answers ${name} after a crash between send and record: AMBIGUOUS in bounded rounds, never resent`, async () => {
      const agent = await h.agentWith({ ListTasks: listTasks });
      const { producer, id } = await sentNotRecorded(agent);
      const record = await finished(producer, id, 40_000);
      expect(record.state).toBe('AMBIGUOUS');
      expect(agent.count('SendMessage')).toBe(0);
      expect(agent.count('ListTasks')).toBeLessThanOrEqual(12);
    }, 60_000);
  }
});

describe('attack: answers over a limit on the other paths (A31/A32 kind)', () => {
  it('SendStreamingMessage whose first event is over sseEventBytes (9 MiB): AMBIGUOUS LIMIT_EXCEEDED, one send, the step not re-delegated', async () => {
    const huge = 'x'.repeat(9 * 1024 * 1024);
    const setup = await h.setUp(() => ({
      SendStreamingMessage: (params: { message: { messageId: string; contextId?: string } }) => ({ sse: [ev(JSON.stringify({ jsonrpc: '2.0', id: 1, result: { task: ours(params, 'COMPLETED', { artifacts: { a1: huge } }) } }))] }),
    }), { streamingSends: true });
    await setup.producer.startWorkflow({ workflowId: 'stream-big', maxAttemptsPerStep: 2, steps: [{ name: 'main', agent: setup.agent.cardUrl, message: { text: 'go' } }] });
    const view = await workflowSettled(setup.producer, 'stream-big', 30_000);
    expect(view.steps[0]!.attempts).toHaveLength(1);
    expect(view.steps[0]!.attempts[0]).toMatchObject({ state: 'AMBIGUOUS', error: { code: 'LIMIT_EXCEEDED' } });
    expect(setup.agent.count('SendStreamingMessage') + setup.agent.count('SendMessage')).toBe(1);
  }, 45_000);

  it('GetTask after a stream closed answers a finished task whose artifact is over the parts limit: AMBIGUOUS LIMIT_EXCEEDED at once', async () => {
    const parts = Array.from({ length: 1_001 }, (_, index) => ({ text: `p${index}` }));
    const { producer: p, agent, id } = await start((seen) => ({
      SubscribeToTask: () => ({ sse: [taskEvent(task('T1', 'WORKING', { contextId: seen.contextId }))] }),
      GetTask: () => ({ result: task('T1', 'COMPLETED', { contextId: seen.contextId, artifacts: [{ artifactId: 'big', parts }] }) }),
    }));
    const record = await finished(p, id, 20_000);
    expect(record).toMatchObject({ state: 'AMBIGUOUS', error: { code: 'LIMIT_EXCEEDED', limit: 'partsPerMessage' } });
    expect(agent.count('GetTask')).toBe(1);
  });
});

describe('attack: the follow rate of an agent that recycles after one update (P36 kind)', () => {
  it('each stream delivers one identical WORKING and closes, for ever: past slowPollAfterMs it is resubscribed within the backoff cap, not at once (bounded calls), then COMPLETED when it finishes', async () => {
    let done = false;
    const { producer: p, agent, id } = await start(
      (seen) => ({
        SubscribeToTask: () => ({ sse: done ? [taskEvent(task('T1', 'COMPLETED', { contextId: seen.contextId, artifacts: { a1: 'done' } }))] : [ev(SU('WORKING', { contextId: seen.contextId }))] }),
        GetTask: () => ({ result: task('T1', done ? 'COMPLETED' : 'WORKING', { contextId: seen.contextId, ...(done ? { artifacts: { a1: 'done' } } : {}) }) }),
      }),
      { followBackoff: { baseMs: 100, capMs: 2_000 }, slowPollAfterMs: 2_000 },
    );
    await eventually(async () => agent.count('SubscribeToTask') > 0, 'followed');
    // Past slowPollAfterMs (2 s) of nothing new, then 8 s counted: at most ~one cycle (a SubscribeToTask and a GetTask) per second.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const before = agent.count('SubscribeToTask') + agent.count('GetTask');
    const startedAt = Date.now();
    await new Promise((resolve) => setTimeout(resolve, 8_000));
    const calls = agent.count('SubscribeToTask') + agent.count('GetTask') - before;
    const seconds = (Date.now() - startedAt) / 1_000;
    expect(calls).toBeGreaterThan(0);
    // Before the bound, 150 calls in 8 s (18.75 a second: a resubscription at once after every close). A cycle is a
    // SubscribeToTask and at most one GetTask, waiting within the backoff cap: 3.2–3.5 calls a second on an idle
    // machine, 5.5 seen on a loaded 2-core CI machine (a late stream read adds a GetTask). Bounded is under 8.
    expect(calls / seconds).toBeLessThanOrEqual(8);
    done = true;
    expect((await finished(p, id, 20_000)).state).toBe('COMPLETED');
  }, 45_000);
});

describe('attack: TaskNotFound in other shapes (one row from any call)', () => {
  const shapes: [string, ScriptedHandler][] = [
    ['HTTP 404 with a google.rpc.Status body (ErrorInfo TASK_NOT_FOUND)', () => ({ http: { status: 404, body: JSON.stringify({ error: { code: 404, status: 'NOT_FOUND', message: 'no such task', details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'TASK_NOT_FOUND', domain: 'a2a-protocol.org' }] } }) } })],
    ['-32001 with "id": null', () => ({ error: { code: -32001, message: 'Task not found' } })],
    ['-32001 carried in an HTTP 404 JSON-RPC envelope', () => ({ http: { status: 404, body: JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Task not found' } }) } })],
  ];
  for (const [name, notFound] of shapes) {
    it(`GetTask and SubscribeToTask answer ${name}: noted over the window, one ListTasks check, then LOST (never the no-progress window)`, async () => {
      const { producer: p, agent, id } = await start(() => ({
        SubscribeToTask: notFound,
        GetTask: notFound,
        ListTasks: () => ({ result: { tasks: [], nextPageToken: '', pageSize: 50, totalSize: 0 } }),
      }), { notFoundWindowMs: 1_000, notFoundThreshold: 3, reconcileIntervalMs: 500 });
      const record = await finished(p, id, 30_000);
      expect(record).toMatchObject({ state: 'LOST', error: { code: 'TASK_LOST' } });
      expect(agent.count('ListTasks')).toBeGreaterThanOrEqual(1);
      expect(agent.count('SendMessage')).toBe(1);
    }, 45_000);
  }
});

describe('attack: a reply answered over a limit (A31 kind on the reply path)', () => {
  it('the reply\'s answer is a 17 MiB task and GetTask shows it too: one reply sent, AMBIGUOUS LIMIT_EXCEEDED in bounded time, never the question reopened', async () => {
    const huge = 'x'.repeat(17 * 1024 * 1024);
    const question = { messageId: 'q1', role: 'ROLE_AGENT', parts: [{ text: 'two rooms or one?' }] };
    const replies: string[] = [];
    const { producer: p, agent, id } = await start((seen) => ({
      SendMessage: (params) => {
        if (params.message.taskId !== 'T1') return h.accept(seen)(params, { count: 1, id: 1, headers: {} });
        replies.push(params.message.messageId);
        return { result: { task: task('T1', 'COMPLETED', { contextId: seen.contextId, history: [params.message], artifacts: { a1: huge } }) } };
      },
      SubscribeToTask: () => ({ sse: [taskEvent(task('T1', 'INPUT_REQUIRED', { contextId: seen.contextId, message: question }))], endAfter: 'hang' }),
      GetTask: () => ({ result: replies.length > 0 ? task('T1', 'COMPLETED', { contextId: seen.contextId, artifacts: { a1: huge } }) : task('T1', 'INPUT_REQUIRED', { contextId: seen.contextId, message: question }) }),
    }));
    await eventually(async () => (await p.get(id)).openQuestions.length === 1, 'parked on the question', 15_000);
    await p.reply(id, 'one');
    const record = await finished(p, id, 40_000);
    expect(record).toMatchObject({ state: 'AMBIGUOUS', error: { code: 'LIMIT_EXCEEDED' } });
    expect(replies).toHaveLength(1);
    expect(agent.count('GetTask')).toBeLessThanOrEqual(6);
  }, 60_000);
});

describe('attack: gRPC statuses on SendMessage (raw node:http2 agent)', () => {
  /** An h2c agent that reads the request, then ends the call with `grpc-status` and no message. */
  async function grpcAgentAnswering(status: number) {
    const server = http2.createServer();
    const paths: string[] = [];
    server.on('stream', (stream, headers) => {
      paths.push(String(headers[':path']));
      stream.on('error', () => undefined);
      stream.on('data', () => undefined);
      stream.on('end', () => {
        stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
        stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': String(status), 'grpc-message': 'refused' }));
        stream.end();
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, paths, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
  }

  it.each([
    ['UNAUTHENTICATED', 16, 'AUTHENTICATION_ERROR', 'none'],
    ['PERMISSION_DENIED', 7, 'AUTHENTICATION_ERROR', 'none'],
    ['ALREADY_EXISTS (a task for our message may exist)', 6, 'CONFLICT', 'maybe'],
    ['UNAVAILABLE', 14, 'UPSTREAM_ERROR', 'maybe'],
  ] as const)('%s: one request, typed %s, effect %s', async (_name, status, code, effect) => {
    const agent = await grpcAgentAnswering(status);
    const transport = new GrpcTransport({ url: agent.url, protocolBinding: 'GRPC', protocolVersion: '1.0' }, { requestTimeoutMs: 5_000 });
    try {
      const error = await transport.sendMessage({ message: { messageId: 'M1', role: 'ROLE_USER', parts: [{ text: 'book' }] } }).then(() => undefined, (caught: unknown) => caught);
      expect(error).toBeInstanceOf(A2AError);
      expect((error as A2AError).code).toBe(code);
      expect(sendEffectOf(error)).toBe(effect);
      expect(agent.paths.filter((path) => path.endsWith('/SendMessage'))).toHaveLength(1);
    } finally {
      transport.close();
      await agent.close();
    }
  });
});
