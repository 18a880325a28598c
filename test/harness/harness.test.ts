/**
 * Proves the integration harness itself: redis lifecycle, the scripted SDK
 * agent over both bindings (driven by the SDK's own client), its fault
 * injection, the raw wire server and the booking service.
 */
import { existsSync } from 'node:fs';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { createRedisClient } from '@durable-a2a/shared';
import { SendMessageRequest, TaskState, type StreamResponse, type Task } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions, type Client } from '@a2a-js/sdk/client';
import { TaskNotFoundError } from '@a2a-js/sdk/errors';
import {
  asksForInput,
  book,
  cancelBooking,
  completesWith,
  completionSteps,
  fails,
  jsonRpcResult,
  rejects,
  repliesWith,
  requiresAuth,
  runsSlowly,
  sseEvent,
  sseHeaders,
  startBookingService,
  startDemoAgent,
  startRawAgent,
  startRedisServer,
  useDemoAgent,
  useRedisServer,
  type DemoAgentBinding,
  type DemoAgentHandle,
} from './index.ts';

describe('redis harness', () => {
  it('keeps an AOF-written key across kill and restart, and cleans up on stop', async () => {
    const server = await startRedisServer({ appendOnly: true, appendFsync: 'always' });
    const client = new Redis(server.url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    try {
      await client.connect();
      await client.set('harness:key', 'survives');
      expect(await client.config('GET', 'maxmemory-policy')).toEqual(['maxmemory-policy', 'noeviction']);
      client.disconnect();

      await server.kill();
      await server.restart();
      const afterCrash = new Redis(server.url);
      expect(await afterCrash.get('harness:key')).toBe('survives');
      afterCrash.disconnect();

      await server.restart();
      const afterRestart = new Redis(server.url);
      expect(await afterRestart.get('harness:key')).toBe('survives');
      afterRestart.disconnect();
    } finally {
      await server.stop();
    }
    expect(existsSync(server.dir)).toBe(false);
    await server.stop();
  });

  it('names the fix when REDIS_SERVER_BIN points to a missing file', async () => {
    const previous = process.env.REDIS_SERVER_BIN;
    process.env.REDIS_SERVER_BIN = '/nonexistent/redis-server';
    try {
      await expect(startRedisServer()).rejects.toThrow(/apt-get install redis-server.*REDIS_SERVER_BIN/s);
    } finally {
      if (previous === undefined) delete process.env.REDIS_SERVER_BIN;
      else process.env.REDIS_SERVER_BIN = previous;
    }
  });

  describe('useRedisServer', () => {
    const redis = useRedisServer();
    it('gives a running server inside tests', async () => {
      // A single server, or a three-master cluster under DA2A_TEST_REDIS=cluster.
      const client = createRedisClient(redis().url);
      expect(await client.ping()).toBe('PONG');
      client.disconnect();
    });
  });
});

describe.each<DemoAgentBinding>(['JSONRPC', 'HTTP+JSON'])('demo agent over %s', (binding) => {
  const useAgent = useDemoAgent({ name: 'Harness agent', skills: [{ id: 'echo', name: 'Echo', description: 'echoes', tags: ['test'] }] });
  let agent: DemoAgentHandle;
  let client: Client;

  beforeAll(async () => {
    agent = useAgent();
    const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { preferredTransports: [binding] }));
    client = await factory.createFromUrl(agent.baseUrl);
  });
  afterEach(() => {
    agent.dropStreamsAfter(undefined);
    agent.setBehaviour(completesWith('done'));
  });

  it('serves a card with both interfaces and the requested skills', async () => {
    const card = (await (await fetch(agent.cardUrl)).json()) as Record<string, unknown>;
    expect(card).toMatchObject({
      name: 'Harness agent',
      capabilities: { streaming: true, pushNotifications: true },
      skills: [{ id: 'echo', name: 'Echo' }],
      supportedInterfaces: [
        { url: agent.jsonRpcUrl, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
        { url: agent.restUrl, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' },
      ],
    });
    expect(client.transport.protocolName).toBe(binding);
  });

  it('streams chunked artifacts and completes', async () => {
    agent.setBehaviour(completesWith('hello world!', { chunks: 3 }));
    const events = await collect(client.sendMessageStream(request(`stream-${binding}`, 'hi')));
    const artifactChunks = events.flatMap((event) =>
      event.payload?.$case === 'artifactUpdate' ? [event.payload.value] : [],
    );
    expect(artifactChunks.map((chunk) => [chunk.append, chunk.lastChunk])).toEqual([[false, false], [true, false], [true, true]]);
    expect(lastState(events)).toBe(TaskState.TASK_STATE_COMPLETED);
    const taskId = events[0]?.payload?.$case === 'task' ? events[0].payload.value.id : '';
    const task = await client.getTask({ id: taskId, historyLength: undefined, tenant: '' });
    expect(artifactText(task)).toBe('hello world!');
    expect(agent.requestCount('SendStreamingMessage')).toBe(1);
  });

  it('counts executor invocations per messageId (the SDK does not deduplicate)', async () => {
    const messageId = `count-${binding}`;
    const first = (await client.sendMessage(request(messageId, 'once'))) as Task;
    expect(first.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(agent.sendMessageCount(messageId)).toBe(1);
    await client.sendMessage(request(messageId, 'twice'));
    expect(agent.sendMessageCount(messageId)).toBe(2);
    expect(agent.requestCount('SendMessage')).toBe(2);
    expect(agent.receivedMessages.filter((received) => received.messageId === messageId).map((received) => received.text)).toEqual(['once', 'twice']);
  });

  it('asks for input and continues on the same task', async () => {
    agent.setBehaviour(asksForInput('Which date?', (answer) => completionSteps(`booked for ${answer}`)));
    const asked = (await client.sendMessage(request(`ask-${binding}`, 'book a flight'))) as Task;
    expect(asked.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const answered = (await client.sendMessage(request(`answer-${binding}`, 'May 3', asked.id))) as Task;
    expect(answered.id).toBe(asked.id);
    expect(answered.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(artifactText(answered)).toBe('booked for May 3');
    expect(agent.receivedMessages.at(-1)).toMatchObject({ taskId: asked.id, isFollowUp: true, text: 'May 3' });
  });

  it('replies with a direct message', async () => {
    agent.setBehaviour(repliesWith('just a message'));
    const reply = await client.sendMessage(request(`direct-${binding}`, 'hi'));
    expect('parts' in reply && reply.parts[0]?.content).toEqual({ $case: 'text', value: 'just a message' });
  });

  it('drops a stream after N events while the task still completes', async () => {
    agent.setBehaviour(completesWith('abcdef', { chunks: 3, delayMs: 20 }));
    agent.dropStreamsAfter(2);
    const seen: StreamResponse[] = [];
    await expect(
      (async () => {
        for await (const event of client.sendMessageStream(request(`drop-${binding}`, 'go'))) seen.push(event);
      })(),
    ).rejects.toThrow();
    expect(seen).toHaveLength(2);
    expect(agent.droppedStreams).toBeGreaterThanOrEqual(1);
    const taskId = seen[0]?.payload?.$case === 'task' ? seen[0].payload.value.id : '';
    await waitFor(async () => (await client.getTask({ id: taskId, tenant: '' })).status?.state === TaskState.TASK_STATE_COMPLETED);
  });

  it('cancels a running task and a task waiting for input', async () => {
    agent.setBehaviour(runsSlowly(30_000));
    const running = (await client.sendMessage(request(`slow-${binding}`, 'slow', undefined, true))) as Task;
    const canceled = await client.cancelTask({ id: running.id, tenant: '', metadata: undefined });
    expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);

    agent.setBehaviour(asksForInput('?', () => completionSteps('never')));
    const parked = (await client.sendMessage(request(`parked-${binding}`, 'ask'))) as Task;
    const canceledParked = await client.cancelTask({ id: parked.id, tenant: '', metadata: undefined });
    expect(canceledParked.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    expect(agent.requestCount('CancelTask')).toBe(2);
  });

  it('lets a client resubscribe after a dropped stream', async () => {
    agent.setBehaviour(runsSlowly(300, 'finished'));
    agent.dropStreamsAfter(1);
    const seen: StreamResponse[] = [];
    await expect(
      (async () => {
        for await (const event of client.sendMessageStream(request(`resubscribe-${binding}`, 'go'))) seen.push(event);
      })(),
    ).rejects.toThrow();
    agent.dropStreamsAfter(undefined);
    const taskId = seen[0]?.payload?.$case === 'task' ? seen[0].payload.value.id : '';
    const resumed = await collect(client.resubscribeTask({ id: taskId, tenant: '' }));
    expect(resumed[0]?.payload?.$case).toBe('task');
    expect(lastState(resumed)).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(agent.requestCount('SubscribeToTask')).toBe(1);
  });

  it('goes to AUTH_REQUIRED and resumes out of band or on a follow-up', async () => {
    agent.setBehaviour(requiresAuth('log in first', { resumeAfterMs: 50 }));
    const outOfBand = (await client.sendMessage(request(`auth-oob-${binding}`, 'pay'))) as Task;
    expect(outOfBand.status?.state).toBe(TaskState.TASK_STATE_AUTH_REQUIRED);
    await waitFor(async () => (await client.getTask({ id: outOfBand.id, tenant: '' })).status?.state === TaskState.TASK_STATE_COMPLETED);

    agent.setBehaviour(requiresAuth('log in first'));
    const waiting = (await client.sendMessage(request(`auth-wait-${binding}`, 'pay'))) as Task;
    expect(waiting.status?.state).toBe(TaskState.TASK_STATE_AUTH_REQUIRED);
    const resumed = (await client.sendMessage(request(`auth-done-${binding}`, 'token', waiting.id))) as Task;
    expect(resumed.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
  });

  it('reports failure and rejection as task states', async () => {
    agent.setBehaviour(fails('no seats'));
    const failed = (await client.sendMessage(request(`fail-${binding}`, 'x'))) as Task;
    expect(failed.status?.state).toBe(TaskState.TASK_STATE_FAILED);
    expect(failed.status?.message?.parts[0]?.content).toEqual({ $case: 'text', value: 'no seats' });
    agent.setBehaviour(rejects('not my job'));
    const rejected = (await client.sendMessage(request(`reject-${binding}`, 'x'))) as Task;
    expect(rejected.status?.state).toBe(TaskState.TASK_STATE_REJECTED);
  });

  it('forgets tasks on restart and keeps its port', async () => {
    const task = (await client.sendMessage(request(`before-restart-${binding}`, 'x'))) as Task;
    await agent.restart({ forgetTasks: true });
    await expect(client.getTask({ id: task.id, tenant: '' })).rejects.toBeInstanceOf(TaskNotFoundError);
    const after = (await client.sendMessage(request(`after-restart-${binding}`, 'y'))) as Task;
    expect(after.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
  });
});

describe('demo agent push notifications', () => {
  it('delivers StreamResponse webhooks to a configured URL', async () => {
    const webhook = await startRawAgent((_request, response) => {
      response.writeHead(200).end();
    });
    const agent = await startDemoAgent();
    try {
      const client = await new ClientFactory().createFromUrl(agent.baseUrl);
      const pushed = SendMessageRequest.fromJSON({
        message: { messageId: 'push-1', role: 'ROLE_USER', parts: [{ text: 'hi' }] },
        configuration: { taskPushNotificationConfig: { url: `${webhook.url}/hook`, token: 'secret' } },
      });
      const task = (await client.sendMessage(pushed)) as Task;
      await waitFor(async () =>
        webhook.requests.some((seen) => seen.body.includes('TASK_STATE_COMPLETED')),
      );
      expect(webhook.requests[0]).toMatchObject({ method: 'POST', url: '/hook', headers: { 'x-a2a-notification-token': 'secret' } });
      expect(webhook.requests.every((seen) => seen.body.includes(task.id))).toBe(true);
    } finally {
      await agent.stop();
      await webhook.close();
    }
  });
});

describe('demo agent restart without forgetting', () => {
  it('keeps tasks and drops a stream before its first event', async () => {
    const agent = await startDemoAgent();
    try {
      const client = await new ClientFactory().createFromUrl(agent.baseUrl);
      const task = (await client.sendMessage(request('kept-1', 'x'))) as Task;
      await agent.restart({ forgetTasks: false });
      expect((await client.getTask({ id: task.id, tenant: '' })).status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
      agent.dropStreamsAfter(0);
      await expect(collect(client.sendMessageStream(request('kept-2', 'y')))).rejects.toThrow();
      expect(agent.sendMessageCount('kept-2')).toBe(1);
    } finally {
      await agent.stop();
    }
  });
});

describe('demo agent card options', () => {
  it('lists REST first, or only one interface, when asked', async () => {
    const restFirst = await startDemoAgent({ bindings: ['HTTP+JSON', 'JSONRPC'] });
    const restOnly = await startDemoAgent({ bindings: ['HTTP+JSON'] });
    try {
      expect(restFirst.card.supportedInterfaces.map((entry) => entry.protocolBinding)).toEqual(['HTTP+JSON', 'JSONRPC']);
      const client = await new ClientFactory().createFromUrl(restOnly.baseUrl);
      expect(client.transport.protocolName).toBe('HTTP+JSON');
      await client.sendMessage(request('rest-only', 'hi'));
      expect(restOnly.httpRequests.some((seen) => seen.url === '/a2a/rest/message:send')).toBe(true);
    } finally {
      await restFirst.stop();
      await restOnly.stop();
    }
  });
});

describe('raw agent', () => {
  it('lets a test write the wire bytes itself', async () => {
    const raw = await startRawAgent((_request, response, body) => {
      const { id } = JSON.parse(body) as { id: number };
      sseHeaders(response);
      response.end(sseEvent(jsonRpcResult(id, { statusUpdate: { taskId: 't', contextId: 'c', status: { state: 'TASK_STATE_WORKING' } } })));
    });
    try {
      const response = await fetch(raw.url, { method: 'POST', body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'SendStreamingMessage' }) });
      expect(response.headers.get('content-type')).toBe('text/event-stream');
      expect(await response.text()).toBe(
        'data: {"jsonrpc":"2.0","id":7,"result":{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_WORKING"}}}}\n\n',
      );
      expect(raw.requests[0]?.method).toBe('POST');
    } finally {
      await raw.close();
    }
  });
});

describe('booking service', () => {
  it('is idempotent on bookingKey and counts every call', async () => {
    const service = await startBookingService();
    try {
      await book(service.url, 'm-1', 'flight', { to: 'LIS' });
      await book(service.url, 'm-1', 'flight', { to: 'LIS' });
      await book(service.url, 'm-2', 'hotel');
      expect(service.bookings()).toHaveLength(2);
      expect(service.counts().creates.get('m-1')).toBe(2);

      await cancelBooking(service.url, 'm-2');
      await cancelBooking(service.url, 'm-1');
      await cancelBooking(service.url, 'm-1');
      const fetched = await fetch(`${service.url}/bookings/m-1`);
      expect(await fetched.json()).toEqual({ key: 'm-1', kind: 'flight', status: 'cancelled', details: { to: 'LIS' } });
      expect(service.counts().cancels.get('m-1')).toBe(2);
      expect(service.cancelOrder).toEqual(['m-2', 'm-1', 'm-1']);
      expect((await fetch(`${service.url}/bookings/unknown`)).status).toBe(404);

      service.failNextRequests(1);
      await expect(book(service.url, 'm-3', 'car')).rejects.toThrow(/503/);
      expect(service.booking('m-3')).toBeUndefined();
    } finally {
      await service.close();
    }
  });

  it('serves as a demo agent side effect', async () => {
    const service = await startBookingService();
    const agent = await startDemoAgent({
      behaviour: (incoming) => [{ sideEffect: () => book(service.url, incoming.messageId, 'flight').then(() => undefined) }, ...completionSteps('booked')],
    });
    try {
      const client = await new ClientFactory().createFromUrl(agent.baseUrl);
      await client.sendMessage(request('side-effect-1', 'book'));
      expect(service.booking('side-effect-1')?.status).toBe('booked');
    } finally {
      await agent.stop();
      await service.close();
    }
  });
});

/** A SendMessageRequest from wire JSON (the SDK converts to its TS form). */
function request(messageId: string, text: string, taskId?: string, returnImmediately = false): SendMessageRequest {
  return SendMessageRequest.fromJSON({
    message: { messageId, role: 'ROLE_USER', parts: [{ text }], ...(taskId ? { taskId } : {}) },
    configuration: { acceptedOutputModes: ['text/plain'], returnImmediately },
  });
}

async function collect(stream: AsyncIterable<StreamResponse>): Promise<StreamResponse[]> {
  const events: StreamResponse[] = [];
  for await (const event of stream) events.push(event);
  return events;
}

function lastState(events: StreamResponse[]): TaskState | undefined {
  const statuses = events.flatMap((event) => (event.payload?.$case === 'statusUpdate' ? [event.payload.value.status?.state] : []));
  return statuses.at(-1);
}

function artifactText(task: Task): string {
  return task.artifacts.flatMap((artifact) => artifact.parts).map((part) => (part.content?.$case === 'text' ? part.content.value : '')).join('');
}

async function waitFor(condition: () => Promise<boolean>, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe('onFreePort: an agent child whose port was taken before it listened is started on another port', () => {
  it('EADDRINUSE twice, then listening: the third port is used; another error is thrown at once; five in a row give up', async () => {
    const { onFreePort } = await import('./agent-process.ts');
    const tried: number[] = [];
    const port = await onFreePort(async (candidate) => {
      tried.push(candidate);
      if (tried.length < 3) throw new Error(`Mastra exited: Error: listen EADDRINUSE: address already in use 127.0.0.1:${candidate}`);
      return candidate;
    });
    expect(tried).toHaveLength(3);
    expect(port).toBe(tried[2]);
    let calls = 0;
    await expect(onFreePort(async () => ((calls += 1), Promise.reject(new Error('did not start in 60 s'))))).rejects.toThrow('did not start');
    expect(calls).toBe(1);
    calls = 0;
    await expect(onFreePort(async () => ((calls += 1), Promise.reject(new Error('EADDRINUSE'))))).rejects.toThrow('EADDRINUSE');
    expect(calls).toBe(5);
  });
});
