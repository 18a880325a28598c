/**
 * The A2A front door with stock clients as the callers: real HTTP, real Redis, a real fleet, the test
 * kit's agents behind it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import type { ApiServer } from '@durable-a2a/producer/server';
import type { Fleet } from '@durable-a2a/workers';
import { SendMessageRequest, TaskState, type Task } from '@a2a-js/sdk';
import { useRedisServer } from './harness/redis.ts';
import { startDemoAgent, type DemoAgentHandle } from './harness/agent.ts';
import { asksForInput, completesWith, completionSteps } from './harness/agent-behaviours.ts';
import { startTestFleet } from './harness/fleet.ts';
import { authorized, listenOnLoopback, startTestServer } from './harness/api-server.ts';
import { frontDoorClient } from './harness/front-door.ts';

const redisServer = useRedisServer();
const PREFIX = 'front';
let app: ApiServer;
let baseUrl: string;
let fleet: Fleet;
let booking: DemoAgentHandle;

beforeAll(async () => {
  booking = await startDemoAgent({ name: 'Booking agent', skills: [{ id: 'book-hotel', name: 'Book a hotel', description: 'Books a hotel', tags: ['travel'] }], behaviour: completesWith('booked: Hotel Kranich') });
  app = startTestServer({ redisUrl: redisServer().url, prefix: PREFIX });
  baseUrl = await listenOnLoopback(app);
  fleet = await startTestFleet({ redisUrl: redisServer().url, prefix: PREFIX });
  expect((await authorized(app, { method: 'POST', url: '/v1/agents', payload: { cardUrl: booking.cardUrl } })).statusCode).toBeLessThan(300);
});
afterAll(async () => {
  await fleet?.close();
  await app?.close();
  await booking?.close();
});

/** A SendMessage request in the 1.3.0 client's form, built from its 1.0 JSON by the SDK. `message`: extra message fields. */
const sendRequest = (text: string, options: { message?: Record<string, unknown>; configuration?: Record<string, unknown>; metadata?: Record<string, unknown> } = {}) =>
  SendMessageRequest.fromJSON({ message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text }], ...options.message }, configuration: options.configuration, metadata: options.metadata });
const textOf = (task: Task) => task.artifacts.flatMap((artifact) => artifact.parts.map((part) => (part.content?.$case === 'text' ? part.content.value : ''))).join('');

describe('the card', () => {
  it('lists the registered skills, declares the bearer scheme and points at /a2a', async () => {
    const response = await fetch(`${baseUrl}/.well-known/agent-card.json`, { headers: { 'a2a-version': '1.0' } });
    expect(response.status).toBe(200);
    const card = (await response.json()) as { skills: { id: string }[]; supportedInterfaces: { url: string; protocolBinding: string }[]; securitySchemes: object; capabilities: object };
    expect(card.skills.map((skill) => skill.id)).toEqual(['book-hotel']);
    expect(card.supportedInterfaces.map((item) => item.url)).toContain(`${baseUrl}/a2a`);
    expect(card.securitySchemes).toHaveProperty('bearer');
    expect(card.capabilities).toMatchObject({ streaming: true, pushNotifications: false });
  });
});

describe.each(['JSONRPC', 'HTTP+JSON'] as const)('@a2a-js/sdk 1.3.0 over %s', (binding) => {
  it('SendMessage (blocking) answers the completed task whose id is ours; GetTask reads it back', async () => {
    const client = await frontDoorClient(baseUrl, binding);
    const sent = (await client.sendMessage(sendRequest('book a room in Hamburg'))) as Task;
    expect(sent.id).toMatch(/^a2a-[0-9a-f]{16}-[0-9a-f]{32}$/);
    expect(sent.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(textOf(sent)).toBe('booked: Hotel Kranich');
    const read = await client.getTask({ tenant: '', id: sent.id, historyLength: 1 });
    expect(read.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(read.history).toHaveLength(1);
  });
});
