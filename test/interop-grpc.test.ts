/**
 * Interop matrix, gRPC column: our `GrpcTransport` (1.0 and 0.3) against
 * @a2a-js/sdk's gRPC servers on port 0: sdk 1.3.0 (1.0), sdk 1.3.0 with its 0.3
 * gRPC service (legacy mode), sdk 0.3.14. The interface is picked from each
 * agent's card, which lists only gRPC. Same scenarios as test/interop.test.ts;
 * results in docs/interop.md.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type A2ATransport,
  type Message,
  type StreamEvent,
  type StreamResponse,
  type Task,
  InvalidParamsError,
  TaskNotFoundError,
  UnsupportedOperationError,
  bearerToken,
  createTransport,
  drainStream,
  fetchAgentCard,
  normalizePushBody,
  selectInterface,
} from '@durable-a2a/a2a';
import { artifactText, scripted, startWebhook, taskIdOf, taskOf, userMessage, waitFor } from './harness/interop.ts';
import { type GrpcTransport, grpcTransports } from '@durable-a2a/a2a/grpc';
import { type GrpcAgentHandle, startGrpcAgent } from './harness/grpc-agent.ts';

type Handle = Pick<GrpcAgentHandle, 'cardUrl' | 'dropStreamsAfter' | 'stop' | 'seenMetadata' | 'droppedStreams'>;
interface Cell {
  version: '1.0' | '0.3';
  sdk: string;
  start: () => Promise<Handle>;
}

const CELLS: Cell[] = [
  { version: '1.0', sdk: '1.3.0', start: () => startGrpcAgent({ behaviour: scripted }) },
  { version: '1.0', sdk: '1.3.0 legacyCompat', start: () => startGrpcAgent({ behaviour: scripted, flavour: 'legacyCompat' }) },
  { version: '0.3', sdk: '1.3.0 legacyCompat', start: () => startGrpcAgent({ behaviour: scripted, flavour: 'legacyCompat' }) },
  { version: '0.3', sdk: '0.3.14', start: () => startGrpcAgent({ behaviour: scripted, flavour: 'v03' }) },
];

const stateOf = (response: StreamResponse): string | undefined =>
  'task' in response ? response.task.status.state : 'statusUpdate' in response ? response.statusUpdate.status.state : undefined;


for (const cell of CELLS) {
  const name = `GRPC × ${cell.version} (sdk ${cell.sdk})`;
  describe(name, () => {
    let agent: Handle;
    let transport: A2ATransport;

    beforeAll(async () => {
      agent = await cell.start();
      const card = await fetchAgentCard(agent.cardUrl);
      const agentInterface = selectInterface(card, { transports: grpcTransports, versions: [cell.version] });
      expect(agentInterface).toMatchObject({ protocolBinding: 'GRPC', protocolVersion: cell.version });
      transport = createTransport(agentInterface!, { transports: grpcTransports, credentials: bearerToken('grpc-secret') });
      expect(transport.binding).toBe('GRPC');
    });
    afterAll(async () => {
      (transport as GrpcTransport | undefined)?.close();
      await agent?.stop();
    });

    it(`${name}: send (credentials and A2A-Version travel as call metadata)`, async () => {
      const sent = taskOf(await transport.sendMessage({ message: userMessage('complete'), configuration: { returnImmediately: true } }));
      const done = await waitFor(async () => {
        const task = await transport.getTask({ id: sent.id });
        return task.status.state === 'TASK_STATE_COMPLETED' ? task : undefined;
      });
      expect(artifactText(done)).toBe('done');
      expect(agent.seenMetadata.at(-1)).toMatchObject({ authorization: 'Bearer grpc-secret', 'a2a-version': cell.version });
    });

    it(`${name}: stream`, async () => {
      const events: StreamEvent[] = [];
      const end = await drainStream(transport.sendStreamingMessage({ message: userMessage('complete') }), (event) => void events.push(event));
      expect(end).toMatchObject({ kind: 'terminal', lastState: 'TASK_STATE_COMPLETED', eventCount: events.length });
      expect(events[0]!.response).toHaveProperty('task');
      const artifacts = events.flatMap((event) => ('artifactUpdate' in event.response ? [event.response.artifactUpdate] : []));
      expect(artifacts.map((update) => update.artifact.parts[0]?.text)).toEqual(['done']);
    });

    it(`${name}: resubscribe after a dropped stream`, async () => {
      agent.dropStreamsAfter(1);
      const events: StreamEvent[] = [];
      let firstEnd: unknown;
      try {
        firstEnd = await drainStream(transport.sendStreamingMessage({ message: userMessage('paced') }), (event) => void events.push(event));
      } finally {
        agent.dropStreamsAfter(undefined);
      }
      expect(agent.droppedStreams).toBeGreaterThanOrEqual(1);
      expect(firstEnd).toMatchObject({ kind: 'incomplete', eventCount: 1 });
      const taskId = taskIdOf(events[0]!.response)!;
      const resumed: StreamEvent[] = [];
      const end = await drainStream(transport.subscribeToTask({ id: taskId }), (event) => void resumed.push(event));
      expect(end).toMatchObject({ kind: 'terminal', lastState: 'TASK_STATE_COMPLETED' });
      expect(resumed.every((event) => taskIdOf(event.response) === taskId)).toBe(true);
      expect(artifactText(await transport.getTask({ id: taskId }))).toBe('paced');
    });

    it(`${name}: GetTask, and NOT_FOUND is TaskNotFoundError`, async () => {
      const sent = taskOf(await transport.sendMessage({ message: userMessage('complete') }));
      expect(sent.status.state).toBe('TASK_STATE_COMPLETED');
      const task = await transport.getTask({ id: sent.id });
      expect(task).toMatchObject({ id: sent.id, status: { state: 'TASK_STATE_COMPLETED' } });
      expect(artifactText(task)).toBe('done');
      expect(sent.history?.[0]).toMatchObject({ role: 'ROLE_USER', parts: [{ text: 'complete' }] });
      await expect(transport.getTask({ id: randomUUID() })).rejects.toBeInstanceOf(TaskNotFoundError);
    });

    it(`${name}: cancel`, async () => {
      const sent = taskOf(await transport.sendMessage({ message: userMessage('slow'), configuration: { returnImmediately: true } }));
      const canceled = await transport.cancelTask({ id: sent.id });
      expect(canceled).toMatchObject({ id: sent.id, status: { state: 'TASK_STATE_CANCELED' } });
      expect((await transport.getTask({ id: sent.id })).status.state).toBe('TASK_STATE_CANCELED');
    });

    it(`${name}: input-required, then a follow-up on the same taskId`, async () => {
      const asked = taskOf(await transport.sendMessage({ message: userMessage('ask') }));
      expect(asked.status.state).toBe('TASK_STATE_INPUT_REQUIRED');
      expect(asked.status.message?.parts[0]?.text).toBe('which day?');
      // The server keeps a stream of an interrupted task open: the idle watchdog ends it normally, as `interrupted`.
      const watched = createTransport({ url: transport.url, protocolBinding: 'GRPC', protocolVersion: cell.version }, { transports: grpcTransports, idleTimeoutMs: 300 });
      const end = await drainStream(watched.subscribeToTask({ id: asked.id }), () => undefined);
      (watched as GrpcTransport).close();
      expect(end).toMatchObject({ kind: 'interrupted', lastState: 'TASK_STATE_INPUT_REQUIRED' });
      const answered = taskOf(await transport.sendMessage({ message: userMessage('friday', { taskId: asked.id, ...(asked.contextId ? { contextId: asked.contextId } : {}) }) }));
      expect(answered).toMatchObject({ id: asked.id, status: { state: 'TASK_STATE_COMPLETED' } });
      expect(artifactText(answered)).toContain('booked friday');
    });

    it(`${name}: push`, async () => {
      const webhook = await startWebhook();
      try {
        const config = { id: 'cfg-1', url: webhook.url, token: 'push-token' };
        const sent = taskOf(await transport.sendMessage({ message: userMessage('paced'), configuration: { returnImmediately: true, taskPushNotificationConfig: config } }));
        const completed = await waitFor(() =>
          webhook.bodies.map(({ body }) => normalizePushBody(body)).find((response) => taskIdOf(response) === sent.id && stateOf(response) === 'TASK_STATE_COMPLETED'),
        );
        expect(taskIdOf(completed)).toBe(sent.id);
        const listed = await transport.listTaskPushNotificationConfigs({ taskId: sent.id });
        expect(listed.configs).toEqual([expect.objectContaining({ id: 'cfg-1', url: webhook.url })]);
        const fetched = await transport.getTaskPushNotificationConfig({ taskId: sent.id, id: 'cfg-1' });
        expect(fetched).toMatchObject({ id: 'cfg-1', url: webhook.url, token: 'push-token' });
        await transport.createTaskPushNotificationConfig({ taskId: sent.id, id: 'cfg-2', url: webhook.url });
        await transport.deleteTaskPushNotificationConfig({ taskId: sent.id, id: 'cfg-1' });
        expect((await transport.listTaskPushNotificationConfigs({ taskId: sent.id })).configs.map((entry) => entry.id)).toEqual(['cfg-2']);
      } finally {
        await webhook.close();
      }
    });

    if (cell.version === '1.0') {
      it(`${name}: listTasks`, async () => {
        const sent = taskOf(await transport.sendMessage({ message: userMessage('complete') }));
        const listed = await transport.listTasks({ contextId: sent.contextId!, pageSize: 10 });
        expect(listed.tasks.map((task) => task.id)).toEqual([sent.id]);
      });
    } else {
      it(`${name}: listTasks is unsupported (0.3 has no list)`, async () => {
        await expect(transport.listTasks({})).rejects.toBeInstanceOf(UnsupportedOperationError);
      });
      it(`${name}: what 0.3 cannot carry is refused before sending (a data part that is not an object)`, async () => {
        const message: Message = { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ data: [1, 2] }] };
        await expect(transport.sendMessage({ message })).rejects.toBeInstanceOf(InvalidParamsError);
      });
    }
  });
}
