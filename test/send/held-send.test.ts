/**
 * Field case V2 through a real fleet (private redis-server, a scripted raw agent that holds the send:
 * it ignores `returnImmediately` and answers only when the work is done):
 * - SendMessage held: the task is found by our messageId while the send is held and its id journaled
 *   before the work ends; one SendMessage; COMPLETED;
 * - streaming card (`streamingSends`): SendStreamingMessage, the task id journaled with the first event,
 *   the same stream followed to the end; no SendMessage;
 * - a worker SIGKILLed while the agent holds the send: another fleet finds the task by our messageId
 *   (ListTasks) and adopts it; never a second SendMessage.
 * And a send answered with an error (fuzz kind errorCode): an error that may come after the task was
 * created (-32603, HTTP 500) is resolved by a search for our messageId, never concluded FAILED; a
 * refusal (-32602) proves no task: FAILED with its code, no search.
 */
import { describe, expect, it } from 'vitest';
import { createProducer, type Producer } from '@durable-a2a/producer';
import type { StartFleetOptions } from '@durable-a2a/workers';
import { useRedisServer } from '../harness/redis.ts';
import { closeKeptAfterEach } from '../harness/lifecycle.ts';
import { eventually, spawnWorkerProcess, startTestFleet, workflowSettled } from '../harness/fleet.ts';
import { AU, SU, ev, startScriptedAgent, task, taskEvent, type ScriptedHandlers } from '../harness/scripted-agent.ts';

const redisServer = useRedisServer();
const keep = closeKeptAfterEach();
let counter = 0;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * An agent that holds the send for `holdMs`: one task per message, created when the send arrives,
 * COMPLETED (artifact a1 = "held") `holdMs` later; ListTasks and GetTask tell the truth meanwhile.
 */
function holdingAgent(holdMs: number): ScriptedHandlers & { SendStreamingMessage: ScriptedHandlers['SendMessage'] } {
  let created: { message: any; at: number } | undefined;
  const state = () => (created && Date.now() - created.at >= holdMs ? 'COMPLETED' : 'WORKING');
  const current = () =>
    task('T-held', state(), {
      contextId: created!.message.contextId,
      history: [created!.message],
      ...(state() === 'COMPLETED' ? { artifacts: { a1: 'held' } } : {}),
    });
  const create = (params: any) => (created ??= { message: params.message, at: Date.now() });
  const ids = () => ({ taskId: 'T-held', contextId: created!.message.contextId });
  return {
    SendMessage: async (params) => (create(params), await sleep(holdMs), { result: { task: current() } }),
    SendStreamingMessage: (params) => (
      create(params),
      { sse: [taskEvent(current()), { waitMs: holdMs }, ev(AU('a1', false, true, 'held', ids())), ev(SU('COMPLETED', ids()))] }
    ),
    ListTasks: () => ({ result: { tasks: created ? [current()] : [], nextPageToken: '', pageSize: 50, totalSize: created ? 1 : 0 } }),
    GetTask: () => (created ? { result: current() } : { error: { code: -32001, message: 'Task not found' } }),
    SubscribeToTask: () =>
      state() === 'COMPLETED'
        ? { error: { code: -32004, message: 'Task is in a terminal state' } }
        : { sse: [taskEvent(current()), { waitMs: Math.max(0, created!.at + holdMs - Date.now()) }, ev(SU('COMPLETED', ids()))] },
  };
}

/**
 * Starts a scripted agent with `handlers`, a producer and (unless `withFleet` is false) a test fleet with
 * `fleetOptions` on a new prefix; all closed after the test (the fleet first). `startFleet` starts one later.
 */
async function start(handlers: ScriptedHandlers, fleetOptions: Partial<StartFleetOptions> = {}, withFleet = true) {
  const prefix = `wild-held-${++counter}-${Date.now()}`;
  const agent = await startScriptedAgent(handlers);
  const producer = createProducer({ redis: redisServer().url, prefix, addressPolicy: { allowLoopback: true } });
  keep(producer, agent);
  const startFleet = async () => keep(await startTestFleet({ redisUrl: redisServer().url, prefix, ...fleetOptions }));
  if (withFleet) await startFleet();
  return { prefix, agent, producer, startFleet };
}

const taskIdOf = async (producer: Producer, id: string) => (await producer.journal.getDelegation({ workflowId: id, delegationId: 'main.1' }))?.taskId;

describe('V2: an agent that holds the send', () => {
  it('SendMessage held for 5 s: the task is found by our messageId and journaled before the work ends; one SendMessage; COMPLETED', async () => {
    const holdMs = 5_000;
    const { prefix, agent, producer } = await start(holdingAgent(holdMs) as ScriptedHandlers, { requestTimeoutMs: 1_000 });
    const sentAt = Date.now();
    const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'hold it', idempotencyKey: `${prefix}-held` });
    const taskId = await eventually(() => taskIdOf(producer, id), 'task id journaled', holdMs);
    expect(taskId).toBe('T-held');
    expect(Date.now() - sentAt).toBeLessThan(holdMs);
    const view = await workflowSettled(producer, id, holdMs + 20_000);
    expect(view.state).toBe('COMPLETED');
    expect(JSON.stringify(view)).toContain('held');
    expect(agent.count('SendMessage')).toBe(1);
    expect(agent.count('ListTasks')).toBeGreaterThanOrEqual(1);
  }, 60_000);

  it('a card that declares streaming (streamingSends): SendStreamingMessage, the task id journaled with the first event, the same stream followed to COMPLETED; no SendMessage', async () => {
    const holdMs = 3_000;
    const { prefix, agent, producer } = await start(holdingAgent(holdMs) as ScriptedHandlers, { streamingSends: true });
    const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'stream it', idempotencyKey: `${prefix}-streamed` });
    expect(await eventually(() => taskIdOf(producer, id), 'task id journaled', holdMs)).toBe('T-held');
    expect((await producer.get(id)).state).toBe('RUNNING');
    const view = await workflowSettled(producer, id, holdMs + 20_000);
    expect(view.state).toBe('COMPLETED');
    expect(JSON.stringify(view)).toContain('held');
    expect(agent.count('SendStreamingMessage' as never)).toBe(1);
    expect(agent.count('SendMessage')).toBe(0);
    expect(agent.count('SubscribeToTask')).toBe(0);
  }, 60_000);

  it('a worker SIGKILLed while the agent holds SendMessage: another fleet finds the task by our messageId and adopts it; one SendMessage', async () => {
    const holdMs = 6_000;
    const { prefix, agent, producer, startFleet } = await start(holdingAgent(holdMs) as ScriptedHandlers, {}, false);
    const worker = spawnWorkerProcess({ REDIS_URL: redisServer().url, DA2A_PREFIX: prefix });
    await worker.ready;
    const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'kill while held', idempotencyKey: `${prefix}-killed` });
    await eventually(async () => agent.count('SendMessage') === 1, 'the agent holds the send', 15_000);
    await worker.kill('SIGKILL');
    expect(await taskIdOf(producer, id)).toBeUndefined();
    await startFleet();
    const view = await workflowSettled(producer, id, holdMs + 30_000);
    expect(view.state).toBe('COMPLETED');
    expect(await taskIdOf(producer, id)).toBe('T-held');
    expect(agent.count('SendMessage')).toBe(1);
  }, 90_000);
});

describe('a SendMessage answered with an error', () => {
  const answeredWith = (error: { code: number; message: string }, createsTask: boolean): ScriptedHandlers => {
    let message: any;
    const ours = () => task('T-err', 'COMPLETED', { contextId: message.contextId, history: [message], artifacts: { a1: 'done anyway' } });
    return {
      SendMessage: (params) => ((message = createsTask ? params.message : undefined), { error }),
      ListTasks: () => ({ result: { tasks: message ? [ours()] : [], nextPageToken: '', pageSize: 50, totalSize: message ? 1 : 0 } }),
      GetTask: () => (message ? { result: ours() } : { error: { code: -32001, message: 'Task not found' } }),
      SubscribeToTask: () => ({ error: { code: -32004, message: 'Task is in a terminal state' } }),
    };
  };

  it('-32603 after the agent created the task: found by our messageId and adopted (COMPLETED), one SendMessage', async () => {
    const { prefix, agent, producer } = await start(answeredWith({ code: -32603, message: 'internal error after accepting' }, true));
    const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'go', idempotencyKey: `${prefix}-500` });
    const view = await workflowSettled(producer, id, 30_000);
    expect(view.state).toBe('COMPLETED');
    expect(JSON.stringify(view)).toContain('done anyway');
    expect(agent.count('SendMessage')).toBe(1);
    expect(agent.count('ListTasks')).toBeGreaterThanOrEqual(1);
  }, 60_000);

  it('-32602 (a refusal: no task created): FAILED with INVALID_PARAMS at once, no search, one SendMessage', async () => {
    const { prefix, agent, producer } = await start(answeredWith({ code: -32602, message: 'bad params' }, false));
    const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'go', idempotencyKey: `${prefix}-refused` });
    const view = await workflowSettled(producer, id, 30_000);
    expect(view.state).toBe('FAILED');
    expect(JSON.stringify(view)).toContain('INVALID_PARAMS');
    expect(agent.count('SendMessage')).toBe(1);
    expect(agent.count('ListTasks')).toBe(0);
  }, 60_000);
});
