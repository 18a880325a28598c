/**
 * The send side (docs/agents.md "Agents that hold the send", docs/a2a-edge.md) through a real fleet (private redis-server, scripted raw agents):
 * V1 (a kind-less Task completes with one send), typed protocol errors on SendMessage (journaled
 * with code, limit and delivery; never a resend of the same messageId), V5 (an answer that arrived
 * is never "never reached the agent", even for a deduplicating agent), ownership of the send answer
 * (a foreign task is not adopted; the search decides), V2 (a held send is not a failure while the
 * attempt's deadline allows) and RT-deadline (an agent that never answers: DEADLINE_EXCEEDED, the
 * step moves to a second agent).
 */
import { createServer } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { createProducer, type Producer, type WorkflowView } from '@durable-a2a/producer';
import type { Fleet, StartFleetOptions } from '@durable-a2a/workers';
import { useRedisServer } from '../harness/redis.ts';
import { eventually, startTestFleet, workflowSettled } from '../harness/fleet.ts';
import { startScriptedAgent, task, type ScriptedAgentHandle, type ScriptedHandlers } from '../harness/scripted-agent.ts';
import { closeServer, listenOnLoopback, trackSockets } from '../harness/ports.ts';

const redisServer = useRedisServer();
let producer: Producer | undefined;
let fleet: Fleet | undefined;
const agents: ScriptedAgentHandle[] = [];
let counter = 0;

afterEach(async () => {
  await fleet?.close();
  await Promise.all(agents.map((agent) => agent.close()));
  await producer?.close();
  agents.length = 0;
  fleet = undefined;
  producer = undefined;
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const ours = (params: any, state: string, extra: object = {}) => task('T1', state as never, { contextId: params.message.contextId, history: [params.message], ...extra });

async function start(handlers: ScriptedHandlers, fleetOptions: Partial<StartFleetOptions> = {}) {
  const prefix = `wild-send-${++counter}-${Date.now()}`;
  const agent = await startScriptedAgent(handlers);
  agents.push(agent);
  producer = createProducer({ redis: redisServer().url, prefix, addressPolicy: { allowLoopback: true } });
  fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, ...fleetOptions });
  return { agent, prefix };
}

const finished = (id: string, timeoutMs = 30_000): Promise<WorkflowView> => workflowSettled(producer!, id, timeoutMs);

/** A server on `port` that accepts every connection, reads the request and never answers. */
async function startHangingServer(port: number) {
  const requests: { method: string; url: string }[] = [];
  const server = createServer((request) => void requests.push({ method: request.method ?? '', url: request.url ?? '' }));
  const sockets = trackSockets(server);
  await listenOnLoopback(server, port);
  return { requests, close: async () => (sockets.destroyAll(), closeServer(server)) };
}

const messageIds = (agent: ScriptedAgentHandle) => agent.calls('SendMessage').map((call) => call.params.message.messageId as string);

describe('the send answer', () => {
  it('V1: a Task without kind, COMPLETED in the send answer -> COMPLETED with one SendMessage', async () => {
    const { agent, prefix } = await start({
      SendMessage: (params) => ({ result: { id: 'T1', contextId: params.message.contextId, status: { state: 'completed', message: { messageId: 'r1', role: 'agent', parts: [{ text: 'Volt echo: go' }] } } } }),
    });
    const { id } = await producer!.delegate({ agent: agent.cardUrl, text: 'go', idempotencyKey: `${prefix}-v1` });
    const view = await finished(id);
    expect(view.state).toBe('COMPLETED');
    expect(agent.count('SendMessage')).toBe(1);
    expect(JSON.stringify(view)).toContain('Volt echo: go');
  });

  it('an unknown state spelling in the send answer: never resent, never adopted; no search possible -> AMBIGUOUS for a person (R26), one SendMessage', async () => {
    const { agent, prefix } = await start({ SendMessage: (params) => ({ result: { task: { ...ours(params, 'WORKING'), status: { state: 'TASK_STATE_PONDERING' } } } }) });
    const { id } = await producer!.delegate({ agent: agent.cardUrl, text: 'go', idempotencyKey: `${prefix}-wire` });
    const view = await finished(id);
    expect(view.state).toBe('NEEDS_ATTENTION');
    const attempt = view.steps[0]!.attempts[0]!;
    expect(attempt.state).toBe('AMBIGUOUS');
    expect(attempt.error?.message).toContain('UNKNOWN_WIRE_VALUE');
    await sleep(1_000);
    expect(agent.count('SendMessage')).toBe(1);
  });

  it('an unknown state spelling in the send answer, the task found by our messageId: adopted, one SendMessage', async () => {
    const { agent, prefix } = await start({
      SendMessage: (params) => ({ result: { task: { ...ours(params, 'WORKING'), status: { state: 'TASK_STATE_PONDERING' } } } }),
      ListTasks: () => ({ result: { tasks: [ours(agent.calls('SendMessage')[0]!.params, 'COMPLETED')], nextPageToken: '', pageSize: 50, totalSize: 1 } }),
      GetTask: () => ({ result: ours(agent.calls('SendMessage')[0]!.params, 'COMPLETED', { artifacts: [{ artifactId: 'a1', parts: [{ text: 'found' }] }] }) }),
    });
    const { id } = await producer!.delegate({ agent: agent.cardUrl, text: 'go', idempotencyKey: `${prefix}-wire-found` });
    const view = await finished(id);
    expect(view.state).toBe('COMPLETED');
    expect(view.steps[0]!.attempts[0]).toMatchObject({ taskId: 'T1', error: { code: 'UNKNOWN_WIRE_VALUE', delivery: 'received' } });
    expect(agent.count('SendMessage')).toBe(1);
  });

  it('an answer over a limit (1,001 parts): it arrived, so the work may be done: a person decides (LIMIT_EXCEEDED with the limit journaled), never a resend, never another agent (A31)', async () => {
    const parts = Array.from({ length: 1_001 }, (_, index) => ({ text: `p${index}` }));
    const { agent, prefix } = await start({ SendMessage: (params) => ({ result: { task: ours(params, 'COMPLETED', { artifacts: [{ artifactId: 'a1', parts }] }) } }) });
    const { id } = await producer!.delegate({ agent: agent.cardUrl, text: 'go', idempotencyKey: `${prefix}-limit` });
    const view = await finished(id);
    expect(view.state).toBe('NEEDS_ATTENTION');
    expect(view.steps[0]!.attempts).toHaveLength(1);
    expect(view.steps[0]!.attempts[0]).toMatchObject({ state: 'AMBIGUOUS', error: { code: 'LIMIT_EXCEEDED', limit: 'partsPerMessage', delivery: 'received' } });
    expect(agent.count('SendMessage')).toBe(1);
    const sent = messageIds(agent);
    expect(new Set(sent).size).toBe(sent.length);
  });

  it('ownership: a foreign task in the send answer is not adopted; one SendMessage; the outcome comes from the search', async () => {
    // Send leases last 120 s here: the search the foreign answer asks for runs at once only if the send gave its lease back first.
    const { agent, prefix } = await start(
      {
        SendMessage: () => ({ result: { task: task('FOREIGN', 'COMPLETED', { contextId: 'someone-elses-context', artifacts: [{ artifactId: 'x', parts: [{ text: 'foreign result' }] }] }) } }),
        ListTasks: () => ({ result: { tasks: [ours(agents[0]!.calls('SendMessage')[0]!.params, 'COMPLETED', { artifacts: [{ artifactId: 'a1', parts: [{ text: 'ours' }] }] })], nextPageToken: '', pageSize: 50, totalSize: 1 } }),
        GetTask: () => ({ result: ours(agents[0]!.calls('SendMessage')[0]!.params, 'COMPLETED', { artifacts: [{ artifactId: 'a1', parts: [{ text: 'ours' }] }] }) }),
      },
      { lockDurationMs: 120_000 },
    );
    const { id } = await producer!.delegate({ agent: agent.cardUrl, text: 'go', idempotencyKey: `${prefix}-foreign` });
    const view = await finished(id);
    expect(view.state).toBe('COMPLETED');
    expect(agent.count('SendMessage')).toBe(1);
    const attempt = view.steps[0]!.attempts[0]!;
    expect(attempt).toMatchObject({ taskId: 'T1', resultText: 'ours', error: { code: 'FOREIGN_TASK', delivery: 'received' } });
    expect(JSON.stringify(attempt.artifacts)).not.toContain('foreign result');
    expect(agent.count('ListTasks')).toBeGreaterThanOrEqual(1);
  });

  it('V5: an unreadable 200 answer from a deduplicating agent without ListTasks -> AMBIGUOUS, one SendMessage', async () => {
    let cardUrl = '';
    const agent = await startScriptedAgent({ SendMessage: () => ({ result: { neither: 'task nor message' } }) });
    agents.push(agent);
    cardUrl = agent.cardUrl;
    const prefix = `wild-send-v5-${Date.now()}`;
    producer = createProducer({ redis: redisServer().url, prefix, addressPolicy: { allowLoopback: true } });
    fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, deduplicatingAgents: [cardUrl] });
    const { id } = await producer.delegate({ agent: cardUrl, text: 'go', idempotencyKey: `${prefix}-v5` });
    const view = await finished(id);
    expect(view.state).toBe('NEEDS_ATTENTION');
    expect(view.steps[0]!.attempts[0]!.state).toBe('AMBIGUOUS');
    await sleep(1_500); // a resend would come within a sweep or two
    expect(agent.count('SendMessage')).toBe(1);
  });

  it('V2: a send held for longer than the request timeout is not a failure while the attempt deadline allows', async () => {
    const holdMs = Number(process.env.WILD_SEND_HOLD_MS ?? 5_000);
    const { agent, prefix } = await start(
      { SendMessage: async (params) => (await sleep(holdMs), { result: { task: ours(params, 'COMPLETED', { artifacts: [{ artifactId: 'a1', parts: [{ text: 'held' }] }] }) } }) },
      { requestTimeoutMs: 1_000 },
    );
    const { id } = await producer!.delegate({ agent: agent.cardUrl, text: 'go', idempotencyKey: `${prefix}-held` });
    const view = await finished(id, holdMs + 30_000);
    expect(view.state).toBe('COMPLETED');
    expect(agent.count('SendMessage')).toBe(1);
  }, 120_000);
});

describe('RT-deadline', () => {
  it('an agent that accepts connections and never answers (its Agent Card included): the attempt ends at its deadline (AGENT_UNREACHABLE: its card never answered, nothing was sent), the step re-delegated to a second agent that completes', async () => {
    // Healthy while it is registered, then it accepts every connection and never answers.
    const { agent: hanging, prefix } = await start({ SendMessage: () => ({ hang: true }) }, { attemptDeadlineMs: 60_000 });
    const healthy = await startScriptedAgent({ SendMessage: (params) => ({ result: { task: ours(params, 'COMPLETED', { artifacts: [{ artifactId: 'a1', parts: [{ text: 'done' }] }] }) } }) });
    agents.push(healthy);
    await producer!.registerAgent(hanging.cardUrl);
    await producer!.registerAgent(healthy.cardUrl);
    const hangingCard = hanging.cardUrl;
    await hanging.close();
    // The same address now hangs: a raw server on the hanging agent's port.
    const port = Number(new URL(hangingCard).port);
    const hangingAgain = await startHangingServer(port);
    agents.push({ close: () => hangingAgain.close() } as ScriptedAgentHandle);
    const { id } = await producer!.startWorkflow({
      workflowId: `${prefix}-wf`,
      maxAttemptsPerStep: 3,
      steps: [{ name: 'only', skill: 'scripted', message: { text: 'go' }, attemptDeadlineMs: 3_000 }],
    });
    const view = await finished(id, 40_000);
    const attempts = view.steps[0]!.attempts;
    expect(view.state).toBe('COMPLETED');
    // The card fetch timed out before any SendMessage could leave: the attempt waited for the agent until its deadline.
    const timedOut = attempts.filter((attempt) => attempt.error?.code === 'AGENT_UNREACHABLE' || attempt.error?.code === 'DEADLINE_EXCEEDED');
    expect(timedOut.length).toBeGreaterThanOrEqual(1);
    expect(timedOut.every((attempt) => attempt.agentCardUrl === hangingCard && attempt.state === 'FAILED')).toBe(true);
    expect(attempts.at(-1)).toMatchObject({ agentCardUrl: healthy.cardUrl, state: 'COMPLETED' });
    expect(hangingAgain.requests.length).toBeGreaterThanOrEqual(1); // it was asked (its card), and never answered
    expect(hangingAgain.requests.every((request) => request.method === 'GET')).toBe(true); // no SendMessage left
  }, 60_000);
});
