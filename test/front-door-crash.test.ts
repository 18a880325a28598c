/**
 * The front door's guarantees with processes dying under a stock `@a2a-js/sdk` 1.3.0 caller: the worker
 * process SIGKILLed mid-task still completes the caller's task with one SendMessage at the agent; the API
 * process SIGKILLed mid-stream and started again: the caller resubscribes, gets the snapshot first, then
 * the rest of the task.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import type { ApiServer } from '@durable-a2a/producer/server';
import type { Fleet } from '@durable-a2a/workers';
import { findFreePort } from '@durable-a2a/testing';
import { SendMessageRequest, TaskState, type StreamResponse, type Task } from '@a2a-js/sdk';
import { useRedisServer } from './harness/redis.ts';
import { startDemoAgent, type DemoAgentHandle } from './harness/agent.ts';
import { runsSlowly } from './harness/agent-behaviours.ts';
import { eventually, spawnWorkerProcess, startTestFleet } from './harness/fleet.ts';
import { spawnObserved, type ObservedProcess } from './harness/processes.ts';
import { TEST_API_TOKEN, listenOnLoopback, startTestServer } from './harness/api-server.ts';
import { bearerFetch, frontDoorClient } from './harness/front-door.ts';

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
