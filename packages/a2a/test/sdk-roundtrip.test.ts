/**
 * Round trip against a real @a2a-js/sdk 1.3.0 server over both bindings
 * (protocol doc §11 "Server outline"): SendMessage (returnImmediately) +
 * SubscribeToTask + GetTask + ListTasks, and a SendStreamingMessage.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AgentCard, TaskState } from '@a2a-js/sdk';
import {
  AgentEvent,
  type AgentExecutor,
  DefaultRequestHandler,
  type ExecutionEventBus,
  InMemoryTaskStore,
  type RequestContext,
} from '@a2a-js/sdk/server';
import { UserBuilder, agentCardHandler, jsonRpcHandler, restHandler } from '@a2a-js/sdk/server/express';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchAgentCard, selectInterface } from '../src/card.ts';
import { createTransport } from '../src/client.ts';
import { drainStream } from '../src/stream.ts';
import type { StreamEvent } from '../src/transport.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const now = () => new Date().toISOString();

/** Publishes task, then WORKING, an artifact and COMPLETED about 100 ms apart, so a subscriber has something to see. */
class DemoExecutor implements AgentExecutor {
  private readonly canceled = new Set<string>();

  execute = async (context: RequestContext, bus: ExecutionEventBus): Promise<void> => {
    const { taskId, contextId } = context;
    const status = (state: TaskState) => ({ state, timestamp: now(), message: undefined });
    bus.publish(AgentEvent.task({ id: taskId, contextId, status: status(TaskState.TASK_STATE_SUBMITTED), artifacts: [], history: [context.userMessage], metadata: undefined }));
    await sleep(100);
    bus.publish(AgentEvent.statusUpdate({ taskId, contextId, status: status(TaskState.TASK_STATE_WORKING), metadata: undefined }));
    await sleep(100);
    const part = { content: { $case: 'text' as const, value: 'done' }, metadata: undefined, filename: '', mediaType: 'text/plain' };
    bus.publish(AgentEvent.artifactUpdate({
      taskId, contextId, append: false, lastChunk: true, metadata: undefined,
      artifact: { artifactId: 'a1', name: 'result', description: '', parts: [part], metadata: undefined, extensions: [] },
    }));
    await sleep(100);
    const final = this.canceled.has(taskId) ? TaskState.TASK_STATE_CANCELED : TaskState.TASK_STATE_COMPLETED;
    bus.publish(AgentEvent.statusUpdate({ taskId, contextId, status: status(final), metadata: undefined }));
    bus.finished();
  };

  cancelTask = async (taskId: string): Promise<void> => {
    this.canceled.add(taskId);
  };
}

let server: Server;
let baseUrl: string;

beforeAll(async () => {
  server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const card = AgentCard.fromJSON({
    name: 'demo',
    description: 'round-trip agent',
    version: '1.0.0',
    supportedInterfaces: [
      { url: `${baseUrl}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' },
      { url: `${baseUrl}/a2a/rest`, protocolBinding: 'HTTP+JSON', tenant: '', protocolVersion: '1.0' },
    ],
    capabilities: { streaming: true, pushNotifications: true, extensions: [], extendedAgentCard: false },
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [{ id: 'echo', name: 'Echo', description: 'echoes', tags: ['demo'] }],
  });
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), new DemoExecutor());
  const app = express();
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: handler }));
  app.use('/a2a/jsonrpc', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  app.use('/a2a/rest', restHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  server.on('request', app);
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const userMessage = (messageId: string) => ({ messageId, role: 'ROLE_USER' as const, parts: [{ text: 'hello' }] });

describe.each(['JSONRPC', 'HTTP+JSON'])('SDK 1.3.0 round trip over %s', (binding) => {
  const connect = async () => {
    const card = await fetchAgentCard(baseUrl);
    expect(card.skills).toEqual([{ id: 'echo', name: 'Echo', description: 'echoes', tags: ['demo'] }]);
    const agentInterface = selectInterface(card, { bindings: [binding] });
    expect(agentInterface?.protocolBinding).toBe(binding);
    return createTransport(agentInterface!, { idleTimeoutMs: 5_000 });
  };

  it('SendMessage (returnImmediately) + SubscribeToTask + GetTask + ListTasks', async () => {
    const transport = await connect();
    const messageId = `M-${binding}-1`;
    const sent = await transport.sendMessage({ message: userMessage(messageId), configuration: { returnImmediately: true } });
    if (!('task' in sent)) throw new Error('expected a task');
    const taskId = sent.task.id;
    expect(['TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING']).toContain(sent.task.status.state);

    const events: StreamEvent[] = [];
    const end = await drainStream(transport.subscribeToTask({ id: taskId }), (event) => {
      events.push(event);
    });
    expect(end.kind).toBe('terminal');
    expect(end.lastState).toBe('TASK_STATE_COMPLETED');
    expect('task' in events[0]!.response).toBe(true); // first event is the snapshot (spec §3.1.6)
    expect(events.some((event) => 'artifactUpdate' in event.response && event.response.artifactUpdate.artifact.parts[0]?.text === 'done')).toBe(true);

    const task = await transport.getTask({ id: taskId });
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(task.artifacts?.[0]?.parts[0]?.text).toBe('done');
    expect(task.history?.some((message) => message.messageId === messageId)).toBe(true);

    const listed = await transport.listTasks({ contextId: task.contextId, includeArtifacts: true });
    expect(listed.tasks.map((listedTask) => listedTask.id)).toContain(taskId);
    expect(listed.nextPageToken ?? '').toBe('');
  });

  it('SendStreamingMessage streams task → COMPLETED', async () => {
    const transport = await connect();
    const states: string[] = [];
    const end = await drainStream(transport.sendStreamingMessage({ message: userMessage(`M-${binding}-2`) }), (event) => {
      if ('task' in event.response) states.push(event.response.task.status.state);
      if ('statusUpdate' in event.response) states.push(event.response.statusUpdate.status.state);
    });
    expect(states).toEqual(['TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING', 'TASK_STATE_COMPLETED']);
    expect(end).toMatchObject({ kind: 'terminal', eventCount: 4 });
  });

  it('GetTask of an unknown id -> TaskNotFoundError', async () => {
    const transport = await connect();
    await expect(transport.getTask({ id: 'no-such-task' })).rejects.toMatchObject({ code: 'TASK_NOT_FOUND' });
  });
});
