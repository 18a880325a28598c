/**
 * The A2A front door with stock clients as the callers (`@a2a-js/sdk` 1.3.0 over JSON-RPC and HTTP+JSON,
 * 0.3.14 over JSON-RPC): real HTTP, real Redis, a real fleet, the test kit's agents behind it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import type { ApiServer } from '@durable-a2a/producer/server';
import type { Fleet } from '@durable-a2a/workers';
import { SendMessageRequest, TaskState, type StreamResponse, type Task } from '@a2a-js/sdk';
import type { Task as TaskV03 } from 'a2a-sdk-v03';
import { useRedisServer } from '../harness/redis.ts';
import { startDemoAgent, type DemoAgentHandle } from '../harness/agent.ts';
import { asksForInput, completesWith, completionSteps, runsSlowly } from '../harness/agent-behaviours.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { TEST_API_TOKEN, authorized, listenOnLoopback, startTestServer } from '../harness/api-server.ts';
import { frontDoorClient, frontDoorClientV03 } from '../harness/front-door.ts';

const redisServer = useRedisServer();
const PREFIX = 'front';
const OTHER_TOKEN = 'another-callers-token-0123456789';
let app: ApiServer;
let baseUrl: string;
let fleet: Fleet;
let booking: DemoAgentHandle;
let asking: DemoAgentHandle;
let slow: DemoAgentHandle;

const skill = (id: string) => [{ id, name: id, description: `does ${id}`, tags: ['test'] }];

beforeAll(async () => {
  booking = await startDemoAgent({ name: 'Booking agent', skills: skill('book-hotel'), behaviour: completesWith('booked: Hotel Kranich') });
  asking = await startDemoAgent({ name: 'Asking agent', skills: skill('pick-city'), behaviour: asksForInput('Which city?', (answer) => completionSteps(`booked in ${answer}`)) });
  slow = await startDemoAgent({ name: 'Slow agent', skills: skill('slow-work'), behaviour: runsSlowly(60_000) });
  app = startTestServer({ redisUrl: redisServer().url, prefix: PREFIX, apiTokens: [TEST_API_TOKEN, OTHER_TOKEN] });
  baseUrl = await listenOnLoopback(app);
  fleet = await startTestFleet({ redisUrl: redisServer().url, prefix: PREFIX });
  for (const agent of [booking, asking, slow]) {
    expect((await authorized(app, { method: 'POST', url: '/v1/agents', payload: { cardUrl: agent.cardUrl } })).statusCode).toBeLessThan(300);
  }
});
afterAll(async () => {
  await fleet?.close();
  await app?.close();
  await Promise.all([booking?.close(), asking?.close(), slow?.close()]);
});

/** A SendMessage request in the 1.3.0 client's form, built from its 1.0 JSON by the SDK. */
function sendRequest(text: string, options: { skill?: string; messageId?: string; taskId?: string; contextId?: string; returnImmediately?: boolean } = {}) {
  return SendMessageRequest.fromJSON({
    message: { messageId: options.messageId ?? randomUUID(), role: 'ROLE_USER', parts: [{ text }], taskId: options.taskId, contextId: options.contextId },
    configuration: options.returnImmediately ? { returnImmediately: true } : undefined,
    metadata: options.skill ? { skill: options.skill } : undefined,
  });
}
const artifactText = (task: Task) => task.artifacts.flatMap((artifact) => artifact.parts.map((part) => (part.content?.$case === 'text' ? part.content.value : ''))).join('');
const statusText = (task: Task) => (task.status?.message?.parts ?? []).map((part) => (part.content?.$case === 'text' ? part.content.value : '')).join('');
const received = (agent: DemoAgentHandle, text: string) => agent.receivedMessages.filter((message) => message.text === text && !message.isFollowUp).length;

describe('cards and authentication', () => {
  it("the service's card lists the registered skills, declares the bearer scheme and points at /a2a", async () => {
    const response = await fetch(`${baseUrl}/.well-known/agent-card.json`, { headers: { 'a2a-version': '1.0' } });
    expect(response.status).toBe(200);
    const card = (await response.json()) as { skills: { id: string }[]; supportedInterfaces: { url: string; protocolBinding: string }[]; securitySchemes: object; capabilities: object };
    expect(card.skills.map((entry) => entry.id).sort()).toEqual(['book-hotel', 'pick-city', 'slow-work']);
    expect(new Set(card.supportedInterfaces.map((item) => item.url))).toEqual(new Set([`${baseUrl}/a2a`]));
    expect(card.securitySchemes).toHaveProperty('bearer');
    expect(card.capabilities).toMatchObject({ streaming: true, pushNotifications: true });
  });

  it("a registered agent's proxied card points at the front door, with that agent's skills only", async () => {
    const response = await fetch(`${baseUrl}/a2a/agents/Asking%20agent/.well-known/agent-card.json`, { headers: { 'a2a-version': '1.0' } });
    expect(response.status).toBe(200);
    const card = (await response.json()) as { name: string; skills: { id: string }[]; supportedInterfaces: { url: string }[] };
    expect(card.name).toBe('Asking agent');
    expect(card.skills.map((entry) => entry.id)).toEqual(['pick-city']);
    expect(card.supportedInterfaces[0]!.url).toBe(`${baseUrl}/a2a/agents/Asking%20agent`);
    expect((await fetch(`${baseUrl}/a2a/agents/nobody/.well-known/agent-card.json`)).status).toBe(404);
  });

  it('A2A calls without a valid API token are 401 and write nothing', async () => {
    const response = await fetch(`${baseUrl}/a2a`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'a2a-version': '1.0' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: { messageId: 'unauthenticated', role: 'ROLE_USER', parts: [{ text: 'x' }] } } }),
    });
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe('Bearer');
    expect(received(booking, 'x')).toBe(0);
  });
});

describe.each(['JSONRPC', 'HTTP+JSON'] as const)('@a2a-js/sdk 1.3.0 over %s', (binding) => {
  it('happy path: a blocking SendMessage answers the completed task, whose id is ours; GetTask reads it back', async () => {
    const client = await frontDoorClient(baseUrl, binding);
    const sent = (await client.sendMessage(sendRequest(`book Hamburg ${binding}`, { skill: 'book-hotel' }))) as Task;
    expect(sent.id).toMatch(/^a2a-[0-9a-f]{16}-[0-9a-f]{32}$/);
    expect(sent.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(artifactText(sent)).toBe('booked: Hotel Kranich');
    const read = await client.getTask({ tenant: '', id: sent.id, historyLength: 1 });
    expect(read.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(read.history).toHaveLength(1);
    expect(received(booking, `book Hamburg ${binding}`)).toBe(1);
  });

  it('the same messageId sent twice is one task and one SendMessage at the agent; another caller sees neither', async () => {
    const client = await frontDoorClient(baseUrl, binding);
    const messageId = randomUUID();
    const text = `twice ${binding}`;
    const first = (await client.sendMessage(sendRequest(text, { skill: 'book-hotel', messageId }))) as Task;
    const second = (await client.sendMessage(sendRequest(text, { skill: 'book-hotel', messageId }))) as Task;
    expect(second.id).toBe(first.id);
    expect(second.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(received(booking, text)).toBe(1);
    const other = await frontDoorClient(baseUrl, binding, OTHER_TOKEN);
    await expect(other.getTask({ tenant: '', id: first.id })).rejects.toThrow(/not found/i);
    // The same messageId from another caller is that caller's own task.
    const theirs = (await other.sendMessage(sendRequest(text, { skill: 'book-hotel', messageId }))) as Task;
    expect(theirs.id).not.toBe(first.id);
    expect(received(booking, text)).toBe(2);
  });

  it("a question (INPUT_REQUIRED) reaches the caller; the caller's follow-up message on the task is the reply", async () => {
    const client = await frontDoorClient(`${baseUrl}/a2a/agents/Asking%20agent/`, binding);
    const asked = (await client.sendMessage(sendRequest('book me a hotel'))) as Task;
    expect(asked.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect(statusText(asked)).toBe('Which city?');
    const answered = (await client.sendMessage(sendRequest(`Lübeck ${binding}`, { taskId: asked.id, contextId: asked.contextId }))) as Task;
    expect(answered.id).toBe(asked.id);
    expect(answered.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(artifactText(answered)).toBe(`booked in Lübeck ${binding}`);
    // One remote task: the reply went on it (the agent saw a follow-up on the task it created).
    const followUp = asking.receivedMessages.find((message) => message.text === `Lübeck ${binding}`);
    expect(followUp?.isFollowUp).toBe(true);
  });

  it('cancel: returnImmediately answers at once, CancelTask reaches the agent and the task ends CANCELED', async () => {
    const client = await frontDoorClient(baseUrl, binding);
    const started = (await client.sendMessage(sendRequest(`slow ${binding}`, { skill: 'slow-work', returnImmediately: true }))) as Task;
    expect([TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING]).toContain(started.status?.state);
    await eventually(async () => (await client.getTask({ tenant: '', id: started.id })).status?.state === TaskState.TASK_STATE_WORKING, 'the slow agent has the task');
    const canceling = slow.requestCount('CancelTask');
    await client.cancelTask({ tenant: '', id: started.id, metadata: undefined });
    const ended = await eventually(async () => {
      const task = await client.getTask({ tenant: '', id: started.id });
      return task.status?.state === TaskState.TASK_STATE_CANCELED && task;
    }, 'the task is CANCELED');
    expect(ended.id).toBe(started.id);
    expect(slow.requestCount('CancelTask')).toBeGreaterThan(canceling);
  });

  it('SendStreamingMessage: the task first, then its artifact and the final status; SubscribeToTask on a finished task gives the snapshot', async () => {
    const client = await frontDoorClient(baseUrl, binding);
    const events: StreamResponse[] = [];
    for await (const event of client.sendMessageStream(sendRequest(`stream ${binding}`, { skill: 'book-hotel' }))) events.push(event);
    const first = events[0]!.payload;
    expect(first?.$case).toBe('task');
    const last = events.at(-1)!.payload;
    const taskId = first?.$case === 'task' ? first.value.id : '';
    expect(last?.$case === 'statusUpdate' && last.value.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const artifacts = events.flatMap((event) => (event.payload?.$case === 'artifactUpdate' ? [event.payload.value.artifact] : []));
    expect(artifacts.length + (first?.$case === 'task' ? first.value.artifacts.length : 0)).toBeGreaterThan(0);
    const again: StreamResponse[] = [];
    for await (const event of client.resubscribeTask({ tenant: '', id: taskId })) again.push(event);
    expect(again).toHaveLength(1);
    expect(again[0]!.payload?.$case === 'task' && again[0]!.payload.value.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
  });

  it("ListTasks: only the caller's tasks, by contextId", async () => {
    const client = await frontDoorClient(baseUrl, binding);
    const contextId = randomUUID();
    const mine = (await client.sendMessage(sendRequest(`listed ${binding}`, { skill: 'book-hotel', contextId }))) as Task;
    const other = await frontDoorClient(baseUrl, binding, OTHER_TOKEN);
    await other.sendMessage(sendRequest(`not listed ${binding}`, { skill: 'book-hotel', contextId }));
    const listed = await client.listTasks({ tenant: '', contextId, status: TaskState.TASK_STATE_UNSPECIFIED, pageToken: '', statusTimestampAfter: undefined });
    expect(listed.tasks.map((task) => task.id)).toEqual([mine.id]);
  });
});

describe('@a2a-js/sdk 0.3.14 over JSON-RPC', () => {
  it('happy path, and a question answered by a follow-up message', async () => {
    const client = await frontDoorClientV03(baseUrl);
    const sent = (await client.sendMessage({ message: { kind: 'message', messageId: randomUUID(), role: 'user', parts: [{ kind: 'text', text: 'book v03' }], metadata: { skill: 'book-hotel' } } })) as TaskV03;
    expect(sent.kind).toBe('task');
    expect(sent.status.state).toBe('completed');
    expect(sent.artifacts?.[0]?.parts[0]).toMatchObject({ kind: 'text', text: 'booked: Hotel Kranich' });

    const asked = (await client.sendMessage({ message: { kind: 'message', messageId: randomUUID(), role: 'user', parts: [{ kind: 'text', text: 'a hotel, v03' }], metadata: { skill: 'pick-city' } } })) as TaskV03;
    expect(asked.status.state).toBe('input-required');
    const answered = (await client.sendMessage({ message: { kind: 'message', messageId: randomUUID(), role: 'user', taskId: asked.id, contextId: asked.contextId, parts: [{ kind: 'text', text: 'Kiel' }] } })) as TaskV03;
    expect(answered.status.state).toBe('completed');
    expect(answered.artifacts?.[0]?.parts[0]).toMatchObject({ kind: 'text', text: 'booked in Kiel' });
    const read = await client.getTask({ id: asked.id });
    expect(read.status.state).toBe('completed');
  });
});
