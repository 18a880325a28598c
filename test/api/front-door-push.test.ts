/**
 * Push notification configs at the A2A front door with the stock `@a2a-js/sdk` 1.3.0 client (JSON-RPC) as the
 * caller: configs on its own tasks only, journaled, and each status change POSTed to the config's URL with its
 * token (a raw node:http receiver on loopback), retried while the receiver fails.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ApiServer } from '@durable-a2a/producer/server';
import type { Fleet } from '@durable-a2a/workers';
import { SendMessageRequest, TaskState, type Task } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import { Journal } from '@durable-a2a/shared';
import { useRedisClient, useRedisServer } from '../harness/redis.ts';
import { startDemoAgent, type DemoAgentHandle } from '../harness/agent.ts';
import { asksForInput, completionSteps } from '../harness/agent-behaviours.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { TEST_API_TOKEN, authorized, listenOnLoopback, startTestServer } from '../harness/api-server.ts';
import { frontDoorClient } from '../harness/front-door.ts';

const redisServer = useRedisServer();
const redis = useRedisClient(redisServer);
const PREFIX = 'front-push';
const OTHER_TOKEN = 'another-callers-token-0123456789';
let app: ApiServer;
let baseUrl: string;
let fleet: Fleet;
let asking: DemoAgentHandle;
let receiver: Receiver;

interface Push {
  path: string;
  headers: IncomingHttpHeaders;
  body: { statusUpdate?: { taskId: string; status: { state: string } }; artifactUpdate?: object };
  answered: number;
}
interface Receiver {
  url: string;
  pushes: Push[];
  /** Status code for the next request to `path` (the count of requests to it so far, this one included). */
  answer: (path: string, tries: number) => number;
  close(): Promise<void>;
}

/** A raw node:http receiver on loopback recording every POST. */
async function startReceiver(): Promise<Receiver> {
  const tries = new Map<string, number>();
  const receiving: Receiver = { url: '', pushes: [], answer: () => 200, close: async () => undefined };
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const path = request.url ?? '/';
      const count = (tries.get(path) ?? 0) + 1;
      tries.set(path, count);
      const status = receiving.answer(path, count);
      receiving.pushes.push({ path, headers: request.headers, body: JSON.parse(Buffer.concat(chunks).toString('utf8')), answered: status });
      response.writeHead(status).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiving.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  receiving.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return receiving;
}

beforeAll(async () => {
  receiver = await startReceiver();
  asking = await startDemoAgent({ name: 'Asking agent', skills: [{ id: 'pick-city', name: 'pick-city', description: 'asks', tags: ['test'] }], behaviour: asksForInput('Which city?', (answer) => completionSteps(`booked in ${answer}`)) });
  app = startTestServer({ redisUrl: redisServer().url, prefix: PREFIX, apiTokens: [TEST_API_TOKEN, OTHER_TOKEN] });
  baseUrl = await listenOnLoopback(app);
  fleet = await startTestFleet({ redisUrl: redisServer().url, prefix: PREFIX });
  expect((await authorized(app, { method: 'POST', url: '/v1/agents', payload: { cardUrl: asking.cardUrl } })).statusCode).toBeLessThan(300);
});
afterAll(async () => {
  await fleet?.close();
  await app?.close();
  await asking?.close();
  await receiver?.close();
});

const send = (text: string, options: { taskId?: string; contextId?: string } = {}) =>
  SendMessageRequest.fromJSON({ message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text }], taskId: options.taskId, contextId: options.contextId }, metadata: { skill: 'pick-city' } });

/** A task of `client` waiting for its answer (INPUT_REQUIRED): it completes once the caller answers. */
async function waitingTask(client: Client): Promise<Task> {
  const asked = (await client.sendMessage(send('book me a hotel'))) as Task;
  expect(asked.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
  return asked;
}
const answer = (client: Client, task: Task, city: string) => client.sendMessage(send(city, { taskId: task.id, contextId: task.contextId }));
const pushesTo = (path: string) => receiver.pushes.filter((push) => push.path === path);
const completedPushes = (path: string) => pushesTo(path).filter((push) => push.body.statusUpdate?.status.state === 'TASK_STATE_COMPLETED');
const configOf = (task: Task, path: string, token: string, id = '') => ({ tenant: '', id, taskId: task.id, url: `${receiver.url}${path}`, token, authentication: undefined });

describe('push notification configs at the front door (@a2a-js/sdk 1.3.0 over JSON-RPC)', () => {
  it('the card offers push notifications', async () => {
    const card = (await (await fetch(`${baseUrl}/.well-known/agent-card.json`, { headers: { 'a2a-version': '1.0' } })).json()) as { capabilities: object };
    expect(card.capabilities).toMatchObject({ pushNotifications: true });
  });

  it('create, list and get a config; the task completes -> the receiver gets the completed status with the token; the config is journaled', async () => {
    const client = await frontDoorClient(baseUrl, 'JSONRPC');
    const task = await waitingTask(client);
    const created = await client.createTaskPushNotificationConfig(configOf(task, '/happy', 'token-happy'));
    expect(created.id).not.toBe('');
    expect(created).toMatchObject({ taskId: task.id, url: `${receiver.url}/happy`, token: 'token-happy' });
    const listed = await client.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' });
    expect(listed.configs.map((config) => config.id)).toEqual([created.id]);
    expect(await client.getTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: created.id })).toMatchObject({ url: `${receiver.url}/happy`, token: 'token-happy' });
    const journal = new Journal(redis(), { prefix: PREFIX });
    expect((await journal.frontPushConfigs(task.id)).map((config) => config.id)).toEqual([created.id]);

    await answer(client, task, 'Lübeck');
    const push = await eventually(async () => completedPushes('/happy')[0], 'the completed status is pushed');
    expect(push.headers['x-a2a-notification-token']).toBe('token-happy');
    expect(push.body.statusUpdate?.taskId).toBe(task.id);
    await eventually(async () => Object.values(await journal.notifications(task.id)).some((entry) => entry.kind === 'front-push' && entry.stage === 'delivered'), 'the delivery is journaled');
  });

  it('a receiver that fails twice then accepts still gets the completed status (at least once)', async () => {
    receiver.answer = (path, tries) => (path === '/flaky' && tries <= 2 ? 503 : 200);
    const client = await frontDoorClient(baseUrl, 'JSONRPC');
    const task = await waitingTask(client);
    await client.createTaskPushNotificationConfig(configOf(task, '/flaky', 'token-flaky'));
    await answer(client, task, 'Kiel');
    await eventually(async () => pushesTo('/flaky').some((push) => push.answered === 200 && push.body.statusUpdate?.status.state === 'TASK_STATE_COMPLETED'), 'the completed status is accepted after two failures', 60_000);
    expect(pushesTo('/flaky').filter((push) => push.answered === 503)).toHaveLength(2);
    receiver.answer = () => 200;
  });

  it('delete -> no more pushes; another caller can neither see nor delete the config', async () => {
    const client = await frontDoorClient(baseUrl, 'JSONRPC');
    const other = await frontDoorClient(baseUrl, 'JSONRPC', OTHER_TOKEN);
    const task = await waitingTask(client);
    const created = await client.createTaskPushNotificationConfig(configOf(task, '/deleted', 'token-deleted', 'mine'));
    expect(created.id).toBe('mine');
    // Another caller's view of the task and its configs: not found, and its delete removes nothing.
    await expect(other.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' })).rejects.toThrow(/not found/i);
    await expect(other.getTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'mine' })).rejects.toThrow(/not found/i);
    await expect(other.deleteTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'mine' })).rejects.toThrow(/not found/i);
    await expect(other.createTaskPushNotificationConfig(configOf(task, '/theirs', 'token-theirs'))).rejects.toThrow(/not found/i);
    expect((await client.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' })).configs.map((config) => config.id)).toEqual(['mine']);

    // A second config on the same task tells when the completion was pushed; the deleted one gets nothing.
    await client.createTaskPushNotificationConfig(configOf(task, '/kept', 'token-kept', 'kept'));
    await client.deleteTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'mine' });
    await expect(client.getTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'mine' })).rejects.toThrow(/not found/i);
    await answer(client, task, 'Rostock');
    await eventually(async () => completedPushes('/kept')[0], 'the kept config gets the completion');
    expect(pushesTo('/deleted')).toHaveLength(0);
    expect(pushesTo('/theirs')).toHaveLength(0);
  });

  it('a watch resumes in another API server: the config is created on one, that one closes, a second one (no config call) pushes the completion', async () => {
    const first = startTestServer({ redisUrl: redisServer().url, prefix: PREFIX, apiTokens: [TEST_API_TOKEN, OTHER_TOKEN] });
    let second: ApiServer | undefined;
    try {
      const firstClient = await frontDoorClient(await listenOnLoopback(first), 'JSONRPC');
      const task = await waitingTask(firstClient);
      await firstClient.createTaskPushNotificationConfig(configOf(task, '/resumed', 'token-resumed'));
      await first.close();
      second = startTestServer({ redisUrl: redisServer().url, prefix: PREFIX, apiTokens: [TEST_API_TOKEN, OTHER_TOKEN] });
      const secondClient = await frontDoorClient(await listenOnLoopback(second), 'JSONRPC');
      // The resumed watcher pushes the current status once (at least once: receivers dedupe on the status).
      const current = await eventually(async () => pushesTo('/resumed').find((push) => push.body.statusUpdate?.status.state === 'TASK_STATE_INPUT_REQUIRED'), 'the resumed watcher pushes the current status');
      expect(current.headers['x-a2a-notification-token']).toBe('token-resumed');
      await answer(secondClient, task, 'Wismar');
      const completed = await eventually(async () => completedPushes('/resumed')[0], 'the completion is pushed by the second server');
      expect(completed.body.statusUpdate?.taskId).toBe(task.id);
    } finally {
      await first.close();
      await second?.close();
    }
  });

  it(`at most 10 configs per task; a URL the address policy refuses is refused`, async () => {
    const client = await frontDoorClient(baseUrl, 'JSONRPC');
    const task = await waitingTask(client);
    for (let index = 0; index < 10; index++) await client.createTaskPushNotificationConfig(configOf(task, `/many-${index}`, 'token', `c${index}`));
    await expect(client.createTaskPushNotificationConfig(configOf(task, '/many-10', 'token', 'c10'))).rejects.toThrow(/push notification configs/);
    // Replacing one it holds is not one more.
    await client.createTaskPushNotificationConfig(configOf(task, '/many-0b', 'token', 'c0'));
    await expect(client.createTaskPushNotificationConfig({ ...configOf(task, '/x', 'token'), url: 'http://169.254.169.254/latest' })).rejects.toThrow(/url/);
    await expect(client.createTaskPushNotificationConfig({ ...configOf(task, '/x', 'token'), url: 'file:///etc/passwd' })).rejects.toThrow(/url/);
  });
});

describe('the journal of push notification configs (writeFrontPushConfig-1.lua)', () => {
  it('property: any sequence of writes and deletes keeps at most the limit, matches a model of the set, and expires with retention', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ op: fc.constantFrom('set' as const, 'set' as const, 'set' as const, 'delete' as const), id: fc.integer({ min: 0, max: 14 }) }), { minLength: 10, maxLength: 60 }),
        async (operations) => {
          const journal = new Journal(redis(), { prefix: `${PREFIX}-property`, retentionMs: 60_000 });
          const taskId = `property-${++run}`;
          const model = new Set<string>();
          for (const { op, id } of operations) {
            const configId = `c${id}`;
            if (op === 'set') {
              const outcome = await journal.writeFrontPushConfig(taskId, { id: configId, url: 'https://example.com/push', token: 't', at: 1 }, 10);
              expect(outcome).toBe(model.has(configId) || model.size < 10 ? 'written' : 'full');
              if (outcome === 'written') model.add(configId);
            } else {
              expect(await journal.deleteFrontPushConfig(taskId, configId)).toBe(model.delete(configId));
            }
          }
          const stored = (await journal.frontPushConfigs(taskId)).map((config) => config.id);
          expect(stored.sort()).toEqual([...model].sort());
          expect(stored.length).toBeLessThanOrEqual(10);
          if (model.size > 0) expect(await redis().pttl(`${PREFIX}-property:{wf:${taskId}}:front-push`)).toBeGreaterThan(0);
        },
      ),
      { numRuns: 60 },
    );
  });
});
