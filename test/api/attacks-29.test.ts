/**
 * Attack round 29 on the A2A front door (the fleet as an A2A server) with hostile JSON-RPC clients written by hand:
 * a messageId reused by another caller, another caller's task named in every method, JSON-RPC envelopes the SDK's
 * clients never send (`"id": null`, batches), ProtoJSON proto field names, huge and deep bodies, push notification
 * configs aimed at private addresses. Real redis-server, real HTTP, a real fleet and agents. Passing `it`: the product
 * holds; `it.fails`: a finding, named by its kind.
 */
import { connect } from 'node:net';
import type { ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiServer } from '@durable-a2a/producer/server';
import type { Fleet } from '@durable-a2a/workers';
import { useRedisServer } from '../harness/redis.ts';
import { startDemoAgent, type DemoAgentHandle } from '../harness/agent.ts';
import { asksForInput, completesWith, completionSteps } from '../harness/agent-behaviours.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { listenOnLoopback, startTestServer } from '../harness/api-server.ts';
import { useFieldCases } from '../harness/field-cases.ts';
import { agentMessage, task } from '../harness/scripted-agent.ts';
import { startTaskAgent } from '../harness/task-agent.ts';

const redisServer = useRedisServer();
const PREFIX = 'attack29';
/** Two callers of one tenant (the default), and one of another tenant. */
const TOKENS = { alice: 'alice-token-0123456789abcdef', bob: 'bob-token-0123456789abcdef', carol: 'carol-token-0123456789abcdef' } as const;
const TENANTS = { tokens: { alice: { tenant: 'default', role: 'service' as const }, bob: { tenant: 'default', role: 'service' as const }, carol: { tenant: 'green', role: 'service' as const } } };
const OPERATOR = 'operator-token-0123456789abcdef';

let app: ApiServer;
let baseUrl: string;
let fleet: Fleet;
let booking: DemoAgentHandle;
let asking: DemoAgentHandle;
let twice: DemoAgentHandle;
let grower: DemoAgentHandle;
/** The artifact the grower streams: 3 MiB in 60 appended chunks, 200 ms apart (12 s of growth). */
const GROWN = 'g'.repeat(3 * 1024 * 1024);

const skill = (id: string) => [{ id, name: id, description: `does ${id}`, tags: ['test'] }];

beforeAll(async () => {
  booking = await startDemoAgent({ name: 'Booking agent', skills: skill('book'), behaviour: completesWith('booked') });
  asking = await startDemoAgent({ name: 'Asking agent', skills: skill('ask'), behaviour: asksForInput('Which city?', (answer) => completionSteps(`booked in ${answer}`)) });
  twice = await startDemoAgent({
    name: 'Twice agent',
    skills: skill('ask-twice'),
    behaviour: asksForInput('Which city?', (answer) => (answer === 'Paris' ? [{ state: 'INPUT_REQUIRED', text: 'Which date?' }] : completionSteps(`booked on ${answer}`))),
  });
  grower = await startDemoAgent({ name: 'Growing agent', skills: skill('grow'), behaviour: completesWith(GROWN, { chunks: 60, delayMs: 200 }) });
  app = startTestServer({
    redisUrl: redisServer().url,
    prefix: PREFIX,
    apiTokens: [OPERATOR, ...Object.entries(TOKENS).map(([name, token]) => `${name}:${token}`)],
    tenants: TENANTS,
    // Push configs pass the default address policy (public addresses only); the agents are registered by the operator.
    addressPolicy: {},
  });
  baseUrl = await listenOnLoopback(app);
  fleet = await startTestFleet({ redisUrl: redisServer().url, prefix: PREFIX });
}, 60_000);
afterAll(async () => {
  await fleet?.close();
  await app?.close();
  await Promise.all([booking?.close(), asking?.close(), twice?.close(), grower?.close()]);
});

type Envelope = { jsonrpc?: string; id?: unknown; result?: any; error?: { code: number; message: string } };

/** POSTs `body` (any JSON, or raw text) to the front door as `token`; returns the HTTP status and the parsed answer. */
async function rpcRaw(token: string, body: unknown, path = '/a2a'): Promise<{ status: number; body: any; text: string }> {
  const response = await fetch(`${baseUrl}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'a2a-version': '1.0' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: response.status, body: parsed, text };
}
const rpc = async (token: string, method: string, params: unknown): Promise<Envelope> => (await rpcRaw(token, { jsonrpc: '2.0', id: 1, method, params })).body as Envelope;
const message = (messageId: string, text: string, extra: Record<string, unknown> = {}) => ({ messageId, role: 'ROLE_USER', parts: [{ text }], ...extra });

describe('the operator registers the agents', () => {
  it('registers both agents (loopback agents need the operator: the server runs the public-only address policy)', async () => {
    // The agents listen on loopback; the registry refuses them under the public-only policy, so they are registered
    // through a second server with loopback allowed, on the same journal.
    const admin = startTestServer({ redisUrl: redisServer().url, prefix: PREFIX, apiTokens: [OPERATOR] });
    try {
      for (const agent of [booking, asking, twice, grower]) {
        const answer = await admin.inject({ method: 'POST', url: '/v1/agents', payload: { cardUrl: agent.cardUrl }, headers: { authorization: `Bearer ${OPERATOR}` } });
        expect(answer.statusCode).toBeLessThan(300);
      }
    } finally {
      await admin.close();
    }
  });
});

describe('attack 29: another caller reuses a messageId, or names another caller\'s task', () => {
  it("bob's SendMessage with alice's messageId is bob's own task; bob's GetTask, CancelTask, follow-up, SubscribeToTask and push configs on alice's task are TaskNotFound and change nothing", async () => {
    const aliceTask = await rpc(TOKENS.alice, 'SendMessage', { message: message('shared-id-1', 'a trip for alice'), metadata: { skill: 'ask' }, configuration: { returnImmediately: true } });
    const aliceId = aliceTask.result.task.id as string;
    const bobTask = await rpc(TOKENS.bob, 'SendMessage', { message: message('shared-id-1', 'a trip for bob'), metadata: { skill: 'ask' }, configuration: { returnImmediately: true } });
    const bobId = bobTask.result.task.id as string;
    expect(bobId).not.toBe(aliceId);
    await eventually(async () => (await rpc(TOKENS.alice, 'GetTask', { id: aliceId })).result?.status?.state === 'TASK_STATE_INPUT_REQUIRED', 'alice asked');
    for (const [method, params] of [
      ['GetTask', { id: aliceId }],
      ['CancelTask', { id: aliceId }],
      ['SendMessage', { message: message('bob-follow-up', 'Paris', { taskId: aliceId }) }],
      ['CreateTaskPushNotificationConfig', { taskId: aliceId, url: 'https://push.example/hook', token: 't' }],
      ['ListTaskPushNotificationConfigs', { taskId: aliceId }],
    ] as const) {
      expect((await rpc(TOKENS.bob, method, params)).error?.code, method).toBe(-32001);
    }
    const subscribe = await rpcRaw(TOKENS.bob, { jsonrpc: '2.0', id: 7, method: 'SubscribeToTask', params: { id: aliceId } });
    expect(subscribe.text).toContain('-32001');
    const listed = await rpc(TOKENS.bob, 'ListTasks', {});
    expect(listed.result.tasks.map((task: { id: string }) => task.id)).toEqual([bobId]);
    // Another tenant's caller with alice's task id, bare and tenant-prefixed.
    for (const id of [aliceId, `default~${aliceId}`, `green~${aliceId}`]) expect((await rpc(TOKENS.carol, 'GetTask', { id })).error?.code).toBe(-32001);
    const alice = await rpc(TOKENS.alice, 'GetTask', { id: aliceId });
    expect(alice.result.status.state).toBe('TASK_STATE_INPUT_REQUIRED');
    expect(asking.receivedMessages.filter((received) => received.text === 'Paris')).toHaveLength(0);
    expect(asking.receivedMessages.filter((received) => received.text.startsWith('a trip for'))).toHaveLength(2);
  }, 60_000);
});

describe('attack 29: JSON-RPC envelopes no SDK client sends', () => {
  it('`"id": null`: a SendMessage is answered (id null) and makes one task; the same again is the same task', async () => {
    const before = booking.receivedMessages.length;
    const first = await rpcRaw(TOKENS.alice, { jsonrpc: '2.0', id: null, method: 'SendMessage', params: { message: message('null-id-1', 'null id'), metadata: { skill: 'book' } } });
    expect(first.status).toBe(200);
    expect(first.body.id).toBeNull();
    const again = await rpcRaw(TOKENS.alice, { jsonrpc: '2.0', id: null, method: 'SendMessage', params: { message: message('null-id-1', 'null id'), metadata: { skill: 'book' } } });
    expect(again.body.result?.task?.id ?? again.body.result?.id).toBe(first.body.result?.task?.id ?? first.body.result?.id);
    await eventually(async () => booking.receivedMessages.length > before, 'the agent got the task');
    expect(booking.receivedMessages.filter((received) => received.text === 'null id')).toHaveLength(1);
  }, 60_000);

  it('a batch of two SendMessages is refused as one invalid request and sends nothing', async () => {
    const batch = [
      { jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: message('batch-1', 'batched one'), metadata: { skill: 'book' } } },
      { jsonrpc: '2.0', id: 2, method: 'SendMessage', params: { message: message('batch-2', 'batched two'), metadata: { skill: 'book' } } },
    ];
    const answer = await rpcRaw(TOKENS.alice, batch);
    expect(answer.status).toBeLessThan(500);
    const errorCode = Array.isArray(answer.body) ? answer.body[0]?.error?.code : answer.body?.error?.code ?? answer.status;
    expect(errorCode).toBeDefined();
    const listed = await rpc(TOKENS.alice, 'ListTasks', {});
    const texts = JSON.stringify(listed.result.tasks);
    expect(texts).not.toContain('batched');
    expect(booking.receivedMessages.filter((received) => received.text.startsWith('batched'))).toHaveLength(0);
  });

  it('a body nested 10,000 levels deep, and one of 8 MiB: refused before anything is written', async () => {
    const deep = `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"deep-1","role":"ROLE_USER","parts":[{"data":${'['.repeat(10_000)}${']'.repeat(10_000)}}]}}}`;
    const refusedDeep = await rpcRaw(TOKENS.alice, deep);
    expect(refusedDeep.status).toBeGreaterThanOrEqual(400);
    expect(refusedDeep.status).toBeLessThan(500);
    const huge = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: message('huge-1', 'x'.repeat(8 * 1024 * 1024)), metadata: { skill: 'book' } } });
    const refusedHuge = await rpcRaw(TOKENS.alice, huge).catch((error: unknown) => ({ status: 413, body: undefined, text: String(error) }));
    expect(refusedHuge.status).toBe(413);
    expect(JSON.stringify((await rpc(TOKENS.alice, 'ListTasks', {})).result.tasks)).not.toMatch(/deep-1|xxxxxxxx/);
  });
});

describe('attack 29: ProtoJSON proto field names', () => {
  it('a follow-up whose message says `task_id` and `message_id` (proto names) answers the question of that task: no second task at the agent', async () => {
    const created = await rpc(TOKENS.alice, 'SendMessage', { message: message('proto-names-1', 'a proto trip'), metadata: { skill: 'ask' }, configuration: { returnImmediately: true } });
    const taskId = created.result.task.id as string;
    await eventually(async () => (await rpc(TOKENS.alice, 'GetTask', { id: taskId })).result?.status?.state === 'TASK_STATE_INPUT_REQUIRED', 'asked');
    const before = asking.receivedMessages.filter((received) => !received.isFollowUp).length;
    const followUp = await rpc(TOKENS.alice, 'SendMessage', { message: { message_id: 'proto-names-2', role: 'ROLE_USER', parts: [{ text: 'Oslo' }], task_id: taskId }, configuration: { return_immediately: true } });
    expect(followUp.error).toBeUndefined();
    const done = await eventually(async () => {
      const task = (await rpc(TOKENS.alice, 'GetTask', { id: taskId })).result;
      return task?.status?.state === 'TASK_STATE_COMPLETED' && task;
    }, 'completed by the proto-named follow-up', 30_000);
    expect(JSON.stringify(done.artifacts)).toContain('booked in Oslo');
    expect(asking.receivedMessages.filter((received) => !received.isFollowUp).length).toBe(before);
  }, 60_000);
});

describe('attack 29: push notification configs aimed at private addresses (public-only policy)', () => {
  it('loopback, private, link-local, unspecified and mapped addresses in every spelling are refused; none is kept', async () => {
    const created = await rpc(TOKENS.alice, 'SendMessage', { message: message('push-ssrf-1', 'a push trip'), metadata: { skill: 'ask' }, configuration: { returnImmediately: true } });
    const taskId = created.result.task.id as string;
    const urls = [
      'http://127.0.0.1/hook',
      'http://127.1/hook',
      'http://2130706433/hook',
      'http://0x7f000001/hook',
      'http://0177.0.0.1/hook',
      'http://localhost/hook',
      'http://localhost./hook',
      'http://[::1]/hook',
      'http://[::ffff:127.0.0.1]/hook',
      'http://[::ffff:7f00:1]/hook',
      'http://[0:0:0:0:0:ffff:a00:1]/hook',
      'http://0.0.0.0/hook',
      'http://[::]/hook',
      'http://10.0.0.1/hook',
      'http://172.16.0.1/hook',
      'http://192.168.1.1/hook',
      'http://169.254.169.254/latest/meta-data',
      'http://[fe80::1]/hook',
      'http://[fd00::1]/hook',
      'http://100.64.0.1/hook',
      'http://[64:ff9b::7f00:1]/hook',
      'http://[::127.0.0.1]/hook',
      'http://user@127.0.0.1/hook',
      'file:///etc/passwd',
      'gopher://127.0.0.1:6379/_INFO',
    ];
    const accepted: string[] = [];
    for (const url of urls) {
      const answer = await rpc(TOKENS.alice, 'CreateTaskPushNotificationConfig', { taskId, url, token: 'push-token' });
      if (!answer.error) accepted.push(url);
    }
    expect(accepted).toEqual([]);
    const listed = await rpc(TOKENS.alice, 'ListTaskPushNotificationConfigs', { taskId });
    expect(listed.result.configs ?? []).toEqual([]);
  }, 60_000);
});

describe('attack 29: a follow-up sent again (the same messageId) after the agent asked its next question', () => {
  // Kind (fixed): the front door took a follow-up's messageId as no identity: a client's retry of its answer to one
  // question (same messageId, same content) was journaled as the answer to the next question. Now the reply's identity
  // is derived from the caller's messageId (caller.ts `frontReplyId` → `producer.reply`'s `messageId`): a retry finds
  // the reply journaled under it and answers nothing else.
  it("the retry of the answer to 'Which city?' is the same message, not the answer to 'Which date?': the agent gets 'Paris' once", async () => {
    const created = await rpc(TOKENS.alice, 'SendMessage', { message: message('retry-1', 'a retried trip'), metadata: { skill: 'ask-twice' }, configuration: { returnImmediately: true } });
    const taskId = created.result.task.id as string;
    const statusText = async () => JSON.stringify((await rpc(TOKENS.alice, 'GetTask', { id: taskId })).result?.status ?? {});
    await eventually(async () => (await statusText()).includes('Which city?'), 'first question');
    const answer = { message: message('retry-answer-1', 'Paris', { taskId }), configuration: { returnImmediately: true } };
    expect((await rpc(TOKENS.alice, 'SendMessage', answer)).error).toBeUndefined();
    await eventually(async () => (await statusText()).includes('Which date?'), 'second question');
    // The client did not see the first answer's reply (a timeout) and sends the very same message again.
    const retried = await rpc(TOKENS.alice, 'SendMessage', answer);
    expect(retried.error).toBeUndefined();
    expect(retried.result.task.id).toBe(taskId);
    expect(await statusText()).toContain('Which date?');
    expect((await rpc(TOKENS.alice, 'SendMessage', { message: message('retry-answer-2', 'Friday', { taskId }), configuration: { returnImmediately: true } })).error).toBeUndefined();
    await eventually(async () => (await statusText()).includes('TASK_STATE_COMPLETED'), 'completed');
    expect(twice.receivedMessages.filter((received) => received.isFollowUp).map((received) => received.text)).toEqual(['Paris', 'Friday']);
  }, 60_000);
});


describe('attack 29: a SubscribeToTask client that never reads', () => {
  // Kind (fixed): the front door's event streams ignored backpressure: every update was written whatever the socket
  // held, so a client that never reads made the server buffer each growing artifact again and again (events.ts Drained).
  it('the server holds at most about two events of it (twice the task\'s artifact), not every update of a growing artifact', async () => {
    const responses: ServerResponse[] = [];
    const track = (request: { url?: string }, response: ServerResponse) => void (request.url === '/a2a' && responses.push(response));
    app.server.on('request', track);
    try {
      const created = await rpc(TOKENS.alice, 'SendMessage', { message: message('slow-reader-1', 'grow it'), metadata: { skill: 'grow' }, configuration: { returnImmediately: true } });
      const taskId = created.result.task.id as string;
      const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SubscribeToTask', params: { id: taskId } });
      const port = new URL(baseUrl).port;
      const socket = connect(Number(port), '127.0.0.1');
      await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
      socket.write(`POST /a2a HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${TOKENS.alice}\r\ncontent-type: application/json\r\na2a-version: 1.0\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
      socket.pause();
      const stream = await eventually(async () => responses.find((response) => !response.writableEnded && response.getHeader('content-type')?.toString().includes('text/event-stream')), 'the stream answered', 10_000);
      let most = 0;
      // Until the task completes (bounded: 400 looks, 100 ms apart), the most the server holds for this client.
      for (let look = 0; look < 400; look++) {
        most = Math.max(most, stream.writableLength);
        const state = (await rpc(TOKENS.alice, 'GetTask', { id: taskId })).result?.status?.state;
        if (state === 'TASK_STATE_COMPLETED' && look > 0) break;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      most = Math.max(most, stream.writableLength);
      socket.destroy();
      expect(most).toBeLessThanOrEqual(2 * GROWN.length + 64 * 1024);
    } finally {
      app.server.off('request', track);
    }
  }, 90_000);
});

describe('attack 29: flow control against agents that hold or refuse', () => {
  const flow = useFieldCases();

  it("an agent that takes our questions' answers and never answers them (8 held replies, send concurrency 4) does not stall another agent's 6 sends", async () => {
    const prefix = flow.newPrefix();
    let created = 0;
    const holder = await flow.agentWith({
      SendMessage: (params) => {
        if (params.message.taskId) return { hang: true };
        const id = `H${++created}`;
        return { result: { task: task(id, 'INPUT_REQUIRED', { contextId: params.message.contextId, history: [params.message], message: agentMessage(`question of ${id}`, { messageId: `q-${id}` }) }) } };
      },
      ListTasks: () => ({ result: { tasks: [], nextPageToken: '', pageSize: 50, totalSize: 0 } }),
    });
    const good = await startTaskAgent({ taskMs: 100 });
    try {
      const producer = flow.producer(prefix);
      await flow.fleetFor(prefix, { concurrency: { send: 4 }, requestTimeoutMs: 1_000 } as never);
      const held: string[] = [];
      for (let index = 0; index < 8; index++) held.push((await producer.delegate({ agent: holder.cardUrl, text: `held ${index}`, idempotencyKey: `${prefix}-h-${index}` })).id);
      await eventually(async () => (await Promise.all(held.map((id) => producer.get(id)))).every((view) => view.openQuestions.length === 1), 'every held delegation asks', 30_000);
      for (const id of held) await producer.reply(id, 'an answer never taken');
      await eventually(async () => holder.calls('SendMessage').filter((call) => call.params.message.taskId).length >= 4, 'the holder holds replies', 30_000);
      const goodIds: string[] = [];
      for (let index = 0; index < 6; index++) goodIds.push((await producer.delegate({ agent: good.cardUrl, text: `good ${index}`, idempotencyKey: `${prefix}-g-${index}` })).id);
      await eventually(async () => (await Promise.all(goodIds.map((id) => producer.get(id)))).every((view) => view.state === 'COMPLETED'), 'the good agent\'s delegations COMPLETED', 60_000, 200);
      expect(good.count('SendMessage')).toBe(6);
      // Each held reply left at most once (never a second SendMessage of one reply while the first is held).
      const replies = holder.calls('SendMessage').filter((call) => call.params.message.taskId).map((call) => call.params.message.messageId);
      expect(new Set(replies).size).toBe(replies.length);
    } finally {
      await good.close();
    }
  }, 120_000);

  it('429 with Retry-After (seconds, an HTTP date, a huge value, garbage): the agent is paused at most retryAfterMaxMs, the delegation completes with one task, another agent is not paused', async () => {
    const prefix = flow.newPrefix();
    const refusals = ['2', new Date(Date.now() + 2_000).toUTCString(), '999999999', '-5', 'soon'];
    const pausedAt: number[] = [];
    const agent = await flow.agentWith({
      SendMessage: (params, call) => {
        if (call.count <= refusals.length) {
          pausedAt.push(Date.now());
          return { http: { status: 429, body: '{"error":"slow down"}', headers: { 'retry-after': refusals[call.count - 1]! } } };
        }
        return { result: { task: task(`R${call.count}`, 'COMPLETED', { contextId: params.message.contextId, history: [params.message], artifacts: { a1: 'ok' } }) } };
      },
      GetTask: (params) => ({ result: task(params.id, 'COMPLETED', { artifacts: { a1: 'ok' } }) }),
      ListTasks: () => ({ result: { tasks: [], nextPageToken: '', pageSize: 50, totalSize: 0 } }),
    });
    const good = await startTaskAgent({ taskMs: 50 });
    try {
      const producer = flow.producer(prefix);
      await flow.fleetFor(prefix, { retryAfterMaxMs: 3_000 } as never);
      const ids: string[] = [];
      for (let index = 0; index < 1; index++) ids.push((await producer.delegate({ agent: agent.cardUrl, text: `paused ${index}`, idempotencyKey: `${prefix}-p-${index}` })).id);
      await eventually(async () => agent.count('SendMessage') >= 1, 'first refusal');
      const goodId = (await producer.delegate({ agent: good.cardUrl, text: 'not paused', idempotencyKey: `${prefix}-g` })).id;
      await eventually(async () => (await producer.get(goodId)).state === 'COMPLETED', 'the other agent completes', 30_000);
      await eventually(async () => (await Promise.all(ids.map((id) => producer.get(id)))).every((view) => view.state === 'COMPLETED'), 'every paused delegation COMPLETED', 90_000, 200);
      const accepted = agent.calls('SendMessage').slice(refusals.length);
      expect(accepted).toHaveLength(1);
      // One delegation, one messageId on every try (a refused try created nothing).
      expect(new Set(agent.calls('SendMessage').map((call) => call.params.message.messageId)).size).toBe(1);
      // The first Retry-After (2 s) was honoured: the next SendMessage came no sooner.
      expect(agent.requests.filter((request) => request.method === 'SendMessage')[1]!.at - pausedAt[0]!).toBeGreaterThanOrEqual(1_900);
    } finally {
      await good.close();
    }
  }, 150_000);
});
