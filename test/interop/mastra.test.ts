/**
 * Mastra's A2A server (`@mastra/server` through `@mastra/hono`; A2A 0.3, protocol code of its own, not
 * @a2a-js/sdk) through our client and through the fleet, every interop scenario: happy, slow, held past
 * the request timeout, failed, cancel, worker killed after the task id was journaled, streaming send.
 * What Mastra does (read from its handlers): `message/send` honours `blocking: false` (a WORKING task at
 * once, the run in the background, the task kept in its in-memory store); the answer is an artifact
 * `<taskId>:response` and the final status has no message; history holds our message; `message/stream`
 * opens with the whole Task, then artifact updates, then a `final` status update; `tasks/resubscribe` and
 * `tasks/cancel` work, a canceled task stays canceled; `tasks/list` exists only under `A2A-Version: 1.0`,
 * which its card does not advertise. Deviations: when the caller of `message/stream` goes away, Mastra
 * cancels the task itself ("Task canceled because the request was aborted"); a `tasks/cancel` of a
 * `message/send` task answers CANCELED but does not stop the run (the model goes on to its answer).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type A2ATransport,
  type StreamEvent,
  TaskNotFoundError,
  UnsupportedOperationError,
  drainStream,
} from '@durable-a2a/a2a';
import { createProducer, type Producer, type WorkflowView } from '@durable-a2a/producer';
import type { Fleet } from '@durable-a2a/workers';
import { type MastraAgentHandle, startMastraAgent } from '../harness/index.ts';
import { TEST_TIMINGS, eventually, spawnWorkerProcess, startTestFleet, workflowSettled } from '../harness/fleet.ts';
import { useRedisServer } from '../harness/redis.ts';
import { textOf, useWildAgent, wildMessage as message } from '../harness/wild-agent.ts';

const redisServer = useRedisServer();

let mastra: MastraAgentHandle;
let transport: A2ATransport;
useWildAgent(startMastraAgent, (started) => ({ agent: mastra, transport } = started));
const methodsFor = (taskId: string, method: string) => mastra.requests.filter((request) => request.method === method && request.taskId === taskId).length;

describe('Mastra A2A server through our client', () => {
  it('message/send with returnImmediately: a WORKING task at once holding our messageId; GetTask later COMPLETED, the answer an artifact, no status message', async () => {
    const answer = await transport.sendMessage({ message: message('hello', 'mastra-m1'), configuration: { returnImmediately: true } });
    expect('task' in answer).toBe(true);
    if (!('task' in answer)) return;
    expect(['TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING', 'TASK_STATE_COMPLETED']).toContain(answer.task.status.state);
    expect(answer.task.contextId).toBe('ctx-mastra-m1');
    expect(answer.task.history?.some((entry) => entry.messageId === 'mastra-m1')).toBe(true);
    const done = await eventually(async () => {
      const current = await transport.getTask({ id: answer.task.id });
      return current.status.state === 'TASK_STATE_COMPLETED' && current;
    }, 'task completed', 15_000);
    expect(done.status.message).toBeUndefined();
    expect(done.artifacts?.map((artifact) => [artifact.artifactId, textOf(artifact.parts)])).toEqual([[`${answer.task.id}:response`, 'Mastra echo: hello']]);
    expect(mastra.sendsOf('mastra-m1')).toBe(1);
  });

  it('message/stream: the whole Task first (task id, our messageId in history), an artifact update, a final status update; ends terminal', async () => {
    const events: StreamEvent[] = [];
    const end = await drainStream(transport.sendStreamingMessage({ message: message('streamed', 'mastra-m2') }), (event) => void events.push(event));
    const first = events[0]!.response;
    expect('task' in first && first.task.history?.some((entry) => entry.messageId === 'mastra-m2')).toBe(true);
    const taskId = 'task' in first ? first.task.id : undefined;
    expect(taskId).toBeTruthy();
    const artifacts = events.flatMap((event) => ('artifactUpdate' in event.response ? [event.response.artifactUpdate] : []));
    expect(artifacts.map((update) => [update.taskId, textOf(update.artifact.parts)])).toEqual([[taskId, 'Mastra echo: streamed']]);
    expect(end).toMatchObject({ kind: 'terminal', lastState: 'TASK_STATE_COMPLETED' });
  });

  it('cancel while a message/send task works: CancelTask answers CANCELED and the task stays CANCELED without a result, but the run is not stopped: the model still answers (deviation)', async () => {
    const text = 'slow:3000 canceled yet it runs';
    const answer = await transport.sendMessage({ message: message(text, 'mastra-m3'), configuration: { returnImmediately: true } });
    if (!('task' in answer)) throw new Error('expected a task');
    await eventually(async () => mastra.prompts.includes(text), 'the model was asked', 10_000);
    const canceled = await transport.cancelTask({ id: answer.task.id });
    expect(canceled.status.state).toBe('TASK_STATE_CANCELED');
    expect(mastra.answered).not.toContain(text);
    // Mastra registers no abort for a message/send run: the model goes on to its answer, which Mastra then drops.
    await eventually(async () => mastra.answered.includes(text), 'the model answered after the cancel', 15_000);
    const after = await transport.getTask({ id: answer.task.id });
    expect(after.status.state).toBe('TASK_STATE_CANCELED');
    expect(after.artifacts ?? []).toEqual([]);
  });

  it('a dropped message/stream: Mastra cancels the task itself (deviation); tasks/resubscribe then gives the CANCELED snapshot', async () => {
    const stream = transport.sendStreamingMessage({ message: message('slow:20000 dropped', 'mastra-m4') });
    const first = await stream.next();
    const response = (first.value as StreamEvent).response;
    const taskId = 'task' in response ? response.task.id : '';
    expect(taskId).toBeTruthy();
    await stream.return(undefined as never);
    const after = await eventually(async () => {
      const current = await transport.getTask({ id: taskId });
      return current.status.state !== 'TASK_STATE_WORKING' && current;
    }, 'the dropped task settled', 10_000);
    expect(after.status.state).toBe('TASK_STATE_CANCELED');
    expect(textOf(after.status.message?.parts)).toBe('Task canceled because the request was aborted.');
    const resubscribed: StreamEvent[] = [];
    const end = await drainStream(transport.subscribeToTask({ id: taskId }), (event) => void resubscribed.push(event));
    expect(end).toMatchObject({ kind: 'terminal', lastState: 'TASK_STATE_CANCELED' });
  });

  it('unknown task: TaskNotFoundError (-32001, received); tasks/list: none in 0.3 (our transport refuses it locally), Mastra answers it only under A2A-Version 1.0, which its card does not list', async () => {
    const missing = await transport.getTask({ id: 'no-such-task' }).catch((error: unknown) => error);
    expect(missing).toBeInstanceOf(TaskNotFoundError);
    expect(missing).toMatchObject({ delivery: 'received' });
    await expect(transport.listTasks({ contextId: 'ctx-mastra-m1' })).rejects.toBeInstanceOf(UnsupportedOperationError);
    const list = (version?: string) =>
      fetch(mastra.rpcUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(version ? { 'A2A-Version': version } : {}) },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tasks/list', params: { contextId: 'ctx-mastra-m1' } }),
      }).then((response) => response.json() as Promise<{ error?: { code: number }; result?: { tasks: unknown[] } }>);
    expect((await list()).error?.code).toBe(-32601);
    expect((await list('1.0')).result?.tasks).toHaveLength(1);
  });
});

/** A fleet on its own key prefix, with a producer; both closed after the describe block. */
function useFleet(name: string, options: { streamingSends: boolean }) {
  const context: { producer?: Producer; fleet?: Fleet; prefix: string } = { prefix: '' };
  beforeAll(async () => {
    context.prefix = `mastra-${name}-${Date.now()}`;
    context.producer = createProducer({ redis: redisServer().url, prefix: context.prefix, addressPolicy: { allowLoopback: true } });
    context.fleet = await startTestFleet({ redisUrl: redisServer().url, prefix: context.prefix, ...options, slowPollAfterMs: 2_000, slowPollMs: 1_000 });
  });
  afterAll(async () => {
    await context.fleet?.close();
    await context.producer?.close();
  });
  return context;
}

const finished = (producer: Producer, id: string, timeoutMs = 30_000): Promise<WorkflowView> => workflowSettled(producer, id, timeoutMs);

async function journaledTaskId(producer: Producer, workflowId: string, timeoutMs = 10_000): Promise<string> {
  const record = await eventually(async () => {
    const current = await producer.journal.getDelegation({ workflowId, delegationId: 'main.1' });
    return current?.taskId ? current : undefined;
  }, 'task id journaled', timeoutMs);
  return record.taskId!;
}

describe('delegations through the fleet to Mastra (SendMessage, returnImmediately)', () => {
  const context = useFleet('send', { streamingSends: false });

  it('happy: "hello" ends COMPLETED with one SendMessage, the result the artifact', async () => {
    const { id, messageId } = await context.producer!.delegate({ agent: mastra.cardUrl, text: 'fleet hello', idempotencyKey: 'mastra-happy' });
    const view = await finished(context.producer!, id);
    expect(view.state).toBe('COMPLETED');
    const attempt = view.steps[0]!.attempts[0]!;
    expect(attempt).toMatchObject({ state: 'COMPLETED', resultText: 'Mastra echo: fleet hello' });
    expect(view.steps[0]!.attempts).toHaveLength(1);
    expect(mastra.sendsOf(messageId)).toBe(1);
  }, 60_000);

  it('slow: the task id journaled while it works (WORKING), then COMPLETED with one SendMessage', async () => {
    const { id, messageId } = await context.producer!.delegate({ agent: mastra.cardUrl, text: 'slow:5000 slow hello', idempotencyKey: 'mastra-slow' });
    const taskId = await journaledTaskId(context.producer!, id);
    const running = await context.producer!.journal.getDelegation({ workflowId: id, delegationId: 'main.1' });
    expect(running?.state).not.toBe('COMPLETED');
    const view = await finished(context.producer!, id, 40_000);
    expect(view.state).toBe('COMPLETED');
    expect(view.steps[0]!.attempts[0]).toMatchObject({ taskId, state: 'COMPLETED', resultText: 'Mastra echo: slow hello' });
    expect(mastra.sendsOf(messageId)).toBe(1);
  }, 60_000);

  // Mastra honours `blocking: false`, so only a slow hop in front of it holds the answer (here a
  // middleware, after Mastra created the task). The send is held past the request timeout: our side keeps
  // it open up to the attempt's deadline and would search for our messageId meanwhile, but A2A 0.3 has no
  // tasks/list, so it waits for the answer, which brings the task id.
  it(`held past the request timeout (${TEST_TIMINGS.requestTimeoutMs} ms): the send stays open, no tasks/list asked (0.3 has none), the late answer journals the task: COMPLETED, one SendMessage`, async () => {
    const holdMs = TEST_TIMINGS.requestTimeoutMs * 3;
    const listsBefore = mastra.requests.filter((request) => request.method === 'tasks/list').length;
    const { id, messageId } = await context.producer!.delegate({ agent: mastra.cardUrl, text: `hold:${holdMs} held hello`, idempotencyKey: 'mastra-held' });
    const view = await finished(context.producer!, id, 40_000);
    expect(view.state).toBe('COMPLETED');
    expect(view.steps[0]!.attempts).toHaveLength(1);
    expect(view.steps[0]!.attempts[0]).toMatchObject({ state: 'COMPLETED', resultText: `Mastra echo: hold:${holdMs} held hello`, tries: 1 });
    expect(mastra.sendsOf(messageId)).toBe(1);
    expect(mastra.requests.filter((request) => request.method === 'tasks/list').length).toBe(listsBefore);
  }, 60_000);

  it('failed: the model throws, Mastra marks the task FAILED: the attempt is FAILED with its message, each attempt one SendMessage', async () => {
    const { id, messageId } = await context.producer!.delegate({ agent: mastra.cardUrl, text: 'fail: no such room', idempotencyKey: 'mastra-failed' });
    const view = await finished(context.producer!, id);
    expect(view.state).toBe('FAILED');
    const first = view.steps[0]!.attempts[0]!;
    expect(first.state).toBe('FAILED');
    expect(JSON.stringify(first)).toContain('the echo model refuses: no such room');
    expect(mastra.sendsOf(messageId)).toBe(1);
  }, 60_000);

  // Mastra's CANCELED does not stop a message/send run (deviation): the attempt is CANCELED as the agent
  // says, with no effect counted (no verifier here); a step whose effect matters declares a verifier.
  it('cancel: the workflow canceled while Mastra works: CancelTask reaches the task, the attempt and workflow CANCELED, one SendMessage; the model still runs to its end', async () => {
    const text = 'slow:8000 cancel me';
    const { id, messageId } = await context.producer!.delegate({ agent: mastra.cardUrl, text, idempotencyKey: 'mastra-cancel' });
    const taskId = await journaledTaskId(context.producer!, id);
    await context.producer!.cancel(id);
    const view = await finished(context.producer!, id);
    expect(view.state).toBe('CANCELED');
    expect(view.steps[0]!.attempts[0]).toMatchObject({ taskId, state: 'CANCELED' });
    expect(methodsFor(taskId, 'tasks/cancel')).toBeGreaterThanOrEqual(1);
    expect((await transport.getTask({ id: taskId })).status.state).toBe('TASK_STATE_CANCELED');
    expect(mastra.sendsOf(messageId)).toBe(1);
    await eventually(async () => mastra.answered.includes(text), 'the model answered after the cancel', 20_000);
    expect((await transport.getTask({ id: taskId })).status.state).toBe('TASK_STATE_CANCELED');
  }, 60_000);

  it('worker SIGKILLed after the task id was journaled: another fleet follows the same task to COMPLETED; one SendMessage', async () => {
    await context.fleet?.close();
    context.fleet = undefined;
    const worker = spawnWorkerProcess({ REDIS_URL: redisServer().url, DA2A_PREFIX: context.prefix, DA2A_ALLOW_LOOPBACK: 'true' });
    await worker.ready;
    const { id, messageId } = await context.producer!.delegate({ agent: mastra.cardUrl, text: 'slow:4000 kill after send', idempotencyKey: 'mastra-kill' });
    const taskId = await journaledTaskId(context.producer!, id, 15_000);
    await worker.kill('SIGKILL');
    context.fleet = await startTestFleet({ redisUrl: redisServer().url, prefix: context.prefix, slowPollAfterMs: 2_000, slowPollMs: 1_000 });
    const view = await finished(context.producer!, id, 40_000);
    expect(view.state).toBe('COMPLETED');
    expect(view.steps[0]!.attempts[0]).toMatchObject({ taskId, state: 'COMPLETED', resultText: 'Mastra echo: kill after send' });
    expect(mastra.sendsOf(messageId)).toBe(1);
    expect(methodsFor(taskId, 'tasks/resubscribe')).toBeGreaterThanOrEqual(1); // a dropped tasks/resubscribe does not cancel: the run went on
  }, 90_000);
});

describe('delegations through the fleet to Mastra (streaming sends: message/stream)', () => {
  const context = useFleet('stream', { streamingSends: true });

  it('streaming send: the task id journaled with the first event, the same stream followed to COMPLETED; one message/stream, no message/send', async () => {
    const { id, messageId } = await context.producer!.delegate({ agent: mastra.cardUrl, text: 'slow:3000 streamed hello', idempotencyKey: 'mastra-stream' });
    const taskId = await journaledTaskId(context.producer!, id);
    const view = await finished(context.producer!, id);
    expect(view.state).toBe('COMPLETED');
    expect(view.steps[0]!.attempts[0]).toMatchObject({ taskId, state: 'COMPLETED', resultText: 'Mastra echo: streamed hello' });
    expect(mastra.requests.filter((request) => request.messageId === messageId).map((request) => request.method)).toEqual(['message/stream']);
  }, 60_000);

  // Mastra cancels a streamed task when its caller goes away: the killed worker's connection closes and
  // the task ends CANCELED by the agent. The journaled task id lets the other fleet read that outcome
  // (never a second send); the agent's CANCELED is recorded as it is, not mistaken for ours.
  it('worker SIGKILLed after the task id was journaled (first stream event): Mastra cancels the task with the closed stream; the other fleet records CANCELED for that task; one send', async () => {
    await context.fleet?.close();
    context.fleet = undefined;
    const worker = spawnWorkerProcess({ REDIS_URL: redisServer().url, DA2A_PREFIX: context.prefix, DA2A_ALLOW_LOOPBACK: 'true', DA2A_STREAMING_SENDS: 'true' });
    await worker.ready;
    const { id, messageId } = await context.producer!.delegate({ agent: mastra.cardUrl, text: 'slow:20000 kill while streaming', idempotencyKey: 'mastra-stream-kill' });
    const taskId = await journaledTaskId(context.producer!, id, 15_000);
    await worker.kill('SIGKILL');
    context.fleet = await startTestFleet({ redisUrl: redisServer().url, prefix: context.prefix, streamingSends: true, slowPollAfterMs: 2_000, slowPollMs: 1_000 });
    const view = await finished(context.producer!, id, 40_000);
    expect(view.steps[0]!.attempts[0]).toMatchObject({ taskId, state: 'CANCELED' });
    expect(JSON.stringify(view.steps[0]!.attempts[0])).toContain('Task canceled because the request was aborted.');
    expect(mastra.sendsOf(messageId)).toBe(1);
    expect(view.state).toBe('FAILED');
  }, 90_000);
});
