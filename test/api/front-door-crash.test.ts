/**
 * The front door's guarantees with processes dying under a stock `@a2a-js/sdk` 1.3.0 caller: the worker
 * process SIGKILLed mid-task still completes the caller's task with one SendMessage at the agent; the API
 * process SIGKILLed mid-stream and started again: the caller resubscribes, gets the snapshot first, then
 * the rest of the task; the remote agent restarted with its tasks forgotten: the caller keeps its task id and
 * the core re-delegates.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import type { ApiServer } from '@durable-a2a/producer/server';
import type { Fleet } from '@durable-a2a/workers';
import { findFreePort } from '@durable-a2a/testing';
import { SendMessageRequest, TaskState, type StreamResponse, type Task } from '@a2a-js/sdk';
import { useRedisServer } from '../harness/redis.ts';
import { startDemoAgent, type DemoAgentHandle } from '../harness/agent.ts';
import { runsSlowly } from '../harness/agent-behaviours.ts';
import { eventually, spawnWorkerProcess, startTestFleet } from '../harness/fleet.ts';
import { spawnObserved, type ObservedProcess } from '../harness/processes.ts';
import { TEST_API_TOKEN, authorized, listenOnLoopback, startTestServer } from '../harness/api-server.ts';
import { bearerFetch, frontDoorClient } from '../harness/front-door.ts';

const redisServer = useRedisServer();
let slow: DemoAgentHandle;

beforeAll(async () => {
  slow = await startDemoAgent({ name: 'Slow agent', skills: [{ id: 'slow-work', name: 'Slow work', description: 'Takes a few seconds', tags: [] }], behaviour: runsSlowly(4_000, 'finished anyway') });
});
afterAll(async () => {
  await slow?.close();
});

const sendRequest = (text: string) =>
  SendMessageRequest.fromJSON({ message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text }] }, metadata: { skill: 'slow-work' } });
const received = (text: string) => slow.receivedMessages.filter((message) => message.text === text && !message.isFollowUp).length;
const finalText = (task: Task) => task.artifacts.flatMap((artifact) => artifact.parts.map((part) => (part.content?.$case === 'text' ? part.content.value : ''))).join('');

async function register(baseUrl: string): Promise<void> {
  const response = await bearerFetch()(`${baseUrl}/v1/agents`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ cardUrl: slow.cardUrl }) });
  expect(response.status).toBeLessThan(300);
}

describe('the worker process SIGKILLed mid-task', () => {
  const prefix = 'fd-worker-crash';
  let app: ApiServer;
  let fleet: Fleet | undefined;

  afterAll(async () => {
    await fleet?.close();
    await app?.close();
  });

  it("the caller's blocking SendMessage still completes, with one SendMessage at the agent", async () => {
    app = startTestServer({ redisUrl: redisServer().url, prefix });
    const baseUrl = await listenOnLoopback(app);
    await register(baseUrl);
    const worker = spawnWorkerProcess({ REDIS_URL: redisServer().url, DA2A_PREFIX: prefix });
    await worker.ready;
    const client = await frontDoorClient(baseUrl, 'JSONRPC');
    const text = `survive the worker ${randomUUID()}`;
    const blocking = client.sendMessage(sendRequest(text)) as Promise<Task>;
    await eventually(async () => received(text) === 1, 'the agent has the task');
    await worker.kill('SIGKILL');
    expect((await worker.exited).signal).toBe('SIGKILL');
    fleet = await startTestFleet({ redisUrl: redisServer().url, prefix });
    const answered = await blocking;
    const finished = answered.status?.state === TaskState.TASK_STATE_COMPLETED
      ? answered
      : await eventually(async () => {
          const task = await client.getTask({ tenant: '', id: answered.id });
          return task.status?.state === TaskState.TASK_STATE_COMPLETED && task;
        }, 'the task completes', 40_000);
    expect(finalText(finished)).toBe('finished anyway');
    expect(received(text)).toBe(1);
  }, 90_000);
});

describe('the API process SIGKILLed mid-stream', () => {
  const prefix = 'fd-api-crash';
  let fleet: Fleet | undefined;
  let api: ObservedProcess | undefined;

  afterAll(async () => {
    await api?.kill('SIGKILL');
    await fleet?.close();
  });

  const startApi = (port: number) =>
    spawnObserved('api', { REDIS_URL: redisServer().url, DA2A_PREFIX: prefix, PORT: String(port), HOST: '127.0.0.1', DA2A_API_TOKENS: TEST_API_TOKEN, DA2A_ALLOW_LOOPBACK: 'true', LOG_LEVEL: 'silent' });

  it.each(['JSONRPC', 'HTTP+JSON'] as const)('over %s: the caller resubscribes to the restarted API, gets the snapshot first, then the end', async (binding) => {
    fleet ??= await startTestFleet({ redisUrl: redisServer().url, prefix });
    const port = await findFreePort();
    api = startApi(port);
    await api.ready;
    const baseUrl = `http://127.0.0.1:${port}`;
    await register(baseUrl);
    const client = await frontDoorClient(baseUrl, binding);
    const text = `survive the API ${binding} ${randomUUID()}`;
    const stream = client.sendMessageStream(sendRequest(text));
    const first = (await stream.next()).value as StreamResponse;
    expect(first.payload?.$case).toBe('task');
    const taskId = first.payload?.$case === 'task' ? first.payload.value.id : '';
    await api.kill('SIGKILL');
    // The open stream ends with an error (the connection died); nothing else is needed of it.
    await expect((async () => {
      for (;;) if ((await stream.next()).done) return 'ended';
    })()).rejects.toThrow();
    api = startApi(port);
    await api.ready;
    const events: StreamResponse[] = [];
    for await (const event of client.resubscribeTask({ tenant: '', id: taskId })) events.push(event);
    expect(events[0]!.payload?.$case).toBe('task');
    const snapshot = events[0]!.payload?.$case === 'task' ? events[0]!.payload.value : undefined;
    expect(snapshot?.id).toBe(taskId);
    const last = events.at(-1)!.payload;
    const lastState = last?.$case === 'statusUpdate' ? last.value.status?.state : last?.$case === 'task' ? last.value.status?.state : undefined;
    expect(lastState).toBe(TaskState.TASK_STATE_COMPLETED);
    const finished = await client.getTask({ tenant: '', id: taskId });
    expect(finalText(finished)).toBe('finished anyway');
    expect(received(text)).toBe(1);
    await api.kill('SIGKILL');
    api = undefined;
  }, 90_000);
});

describe('the remote agent restarted with its tasks forgotten', () => {
  const prefix = 'fd-agent-restart';
  let app: ApiServer;
  let fleet: Fleet;

  afterAll(async () => {
    await fleet?.close();
    await app?.close();
  });

  it.each([
    ['by skill', ''],
    ['to the named agent', '/a2a/agents/Slow%20agent/'],
  ])('%s: the caller keeps its task id; the forgotten attempt is LOST and a new attempt completes it', async (_name, path) => {
    if (!app) {
      app = startTestServer({ redisUrl: redisServer().url, prefix });
      await listenOnLoopback(app);
      fleet = await startTestFleet({ redisUrl: redisServer().url, prefix });
    }
    const address = app.server.address();
    const baseUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
    await register(baseUrl);
    const client = await frontDoorClient(`${baseUrl}${path}`, 'HTTP+JSON');
    const text = `survive the agent ${randomUUID()}`;
    const started = (await client.sendMessage(SendMessageRequest.fromJSON({ message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text }] }, configuration: { returnImmediately: true }, metadata: { skill: 'slow-work' } }))) as Task;
    await eventually(async () => received(text) === 1, 'the agent has the task');
    await slow.restart({ forgetTasks: true });
    const ended = await eventually(async () => {
      const task = await client.getTask({ tenant: '', id: started.id });
      return [TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED].includes(task.status!.state) && task;
    }, 'the task ends for the caller', 60_000);
    // Same task id for the caller; behind it, the attempt the agent forgot is LOST and a new one (new messageId) completed.
    expect(ended.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(finalText(ended)).toBe('finished anyway');
    const view = (await authorized(app, { method: 'GET', url: `/v1/workflows/${started.id}` })).json() as { steps: { attempts: { state: string; messageId: string }[] }[] };
    const attempts = view.steps[0]!.attempts;
    expect(attempts.map((attempt) => attempt.state)).toEqual(['LOST', 'COMPLETED']);
    expect(attempts.map((attempt) => slow.sendMessageCount(attempt.messageId))).toEqual([1, 1]);
  }, 90_000);
});
