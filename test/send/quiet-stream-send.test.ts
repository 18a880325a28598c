/**
 * A streaming send (SendStreamingMessage) the agent holds silent: it has our message and works on it, but sends no
 * event (its headers and nothing more, or not even its headers) for longer than `streamQuietMs`, and shows no task
 * while it works (an a2a-js agent saves its task only when its executor publishes the first event). An agent that
 * does not deduplicate by messageId (a2a-js does not) runs the work again for every request it receives, so the
 * count that matters is requests per messageId and per message text at the agent: exactly one, whatever the timing.
 * The agent (a raw node:http agent, `scripted-agent.ts`) executes each SendStreamingMessage / SendMessage it receives
 * and shows its task (finished) when the test says.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { createProducer, type Producer } from '@durable-a2a/producer';
import type { Fleet } from '@durable-a2a/workers';
import { useRedisServer } from '../harness/redis.ts';
import { closeAfterEach } from '../harness/lifecycle.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { startScriptedAgent, task, type ScriptedAgentHandle } from '../harness/scripted-agent.ts';

const redisServer = useRedisServer();
let counter = 0;

interface SilentAgent extends ScriptedAgentHandle {
  /** The work of every message received so far is done: its task (COMPLETED, artifact a1) is listed and readable. */
  finish(): void;
  /** Requests that carried a message (SendStreamingMessage and SendMessage): each one runs the work. */
  executions(): { messageId: string; text: string }[];
}

/** Each send runs the work and holds its stream silent: headers then nothing (`headers`), or no headers at all; `keepAlive`: SSE comments every 50 ms. */
async function startSilentAgent(options: { headers: boolean; keepAlive?: boolean }): Promise<SilentAgent> {
  const received: { messageId: string; text: string; contextId: string }[] = [];
  let finished = 0;
  const tasks = () =>
    received.slice(0, finished).map((message, index) =>
      task(`T-${index + 1}`, 'COMPLETED', { contextId: message.contextId, history: [{ role: 'ROLE_USER', messageId: message.messageId, contextId: message.contextId, parts: [{ text: message.text }] }], artifacts: { a1: 'done' } }),
    );
  const execute = (params: any) => {
    const message = params.message;
    received.push({ messageId: message.messageId, text: message.parts?.[0]?.text ?? '', contextId: message.contextId ?? 'C1' });
  };
  const silence = options.keepAlive ? Array.from({ length: 2_000 }, () => [{ waitMs: 50 }, ': keep-alive\n\n']).flat() : [];
  const agent = await startScriptedAgent({
    SendStreamingMessage: (params) => (execute(params), options.headers ? { sse: silence, endAfter: 'hang' } : { hang: true }),
    SendMessage: (params) => (execute(params), { hang: true }),
    ListTasks: () => ({ result: { tasks: tasks(), nextPageToken: '', pageSize: 50, totalSize: tasks().length } }),
    GetTask: (params) => {
      const found = tasks().find((entry) => entry.id === params.id);
      return found ? { result: found } : { error: { code: -32001, message: 'Task not found' } };
    },
    SubscribeToTask: () => ({ error: { code: -32004, message: 'Task is in a terminal state' } }),
  });
  return Object.assign(agent, {
    finish: () => void (finished = received.length),
    executions: () => received.map(({ messageId, text }) => ({ messageId, text })),
  });
}

describe('a streaming send the agent holds silent past streamQuietMs', () => {
  let agent: SilentAgent | undefined;
  let producer: Producer | undefined;
  let fleet: Fleet | undefined;
  closeAfterEach(
    () => ({ fleet, agent, producer }),
    () => void (fleet = agent = producer = undefined),
  );

  /**
   * One delegation to a silent agent; waits until our side looked for the message at least `searches` times (a
   * search found nothing: the agent shows no task yet) or the agent received the message twice; then the agent
   * finishes the work and shows its task. Returns the executions and the delegation's final state.
   */
  async function silentSend(agentOptions: { headers: boolean; keepAlive?: boolean }, searches: number) {
    const prefix = `quiet-stream-send${++counter}`;
    agent = await startSilentAgent(agentOptions);
    producer = createProducer({ redis: redisServer().url, addressPolicy: { allowLoopback: true }, prefix });
    fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, streamingSends: true, streamQuietMs: 300, requestTimeoutMs: 500, slowPollMs: 1_000 });
    const { id, messageId } = await producer.delegate({ agent: agent.cardUrl, text: 'charge card 4242 once', idempotencyKey: 'quiet' });
    await eventually(async () => agent!.count('ListTasks') >= searches || agent!.executions().length > 1, 'searched while the agent was silent', 60_000);
    agent.finish();
    await eventually(async () => ['COMPLETED', 'NEEDS_ATTENTION', 'FAILED'].includes((await producer!.get(id)).state), 'the delegation settled', 60_000);
    return { messageId, executions: agent.executions(), state: (await producer.get(id)).state };
  }

  const once = (scene: Awaited<ReturnType<typeof silentSend>>) => {
    expect(scene.executions.filter((execution) => execution.messageId === scene.messageId)).toHaveLength(1);
    expect(scene.executions.filter((execution) => execution.text === 'charge card 4242 once')).toHaveLength(1);
    expect(scene.state).toBe('COMPLETED');
  };

  it('headers, then silence: the message is never sent again; the task is adopted when it shows; COMPLETED', async () => {
    once(await silentSend({ headers: true }, 2));
  }, 120_000);

  it('no headers at all: the message is never sent again; the task is adopted when it shows; COMPLETED', async () => {
    once(await silentSend({ headers: false }, 2));
  }, 120_000);

  it('keep-alives only: the message is never sent again; the task is adopted when it shows; COMPLETED', async () => {
    once(await silentSend({ headers: true, keepAlive: true }, 2));
  }, 120_000);

  it('an agent that never shows a task nor sends an event: at the attempt deadline the send ends DEADLINE_EXCEEDED, never sent again', async () => {
    const prefix = `quiet-stream-send${++counter}`;
    agent = await startSilentAgent({ headers: true });
    producer = createProducer({ redis: redisServer().url, addressPolicy: { allowLoopback: true }, prefix });
    fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, streamingSends: true, streamQuietMs: 300, requestTimeoutMs: 500, slowPollMs: 1_000, attemptDeadlineMs: 4_000 });
    const { id, messageId } = await producer.delegate({ agent: agent.cardUrl, text: 'charge card 4242 once', idempotencyKey: 'never' });
    await eventually(async () => (await producer!.get(id)).state !== 'RUNNING', 'the delegation settled', 60_000);
    const record = (await producer.journal.getDelegation({ workflowId: id, delegationId: 'main.1' }))!;
    expect({ state: record.state, code: record.error?.code }).toEqual({ state: 'FAILED', code: 'DEADLINE_EXCEEDED' });
    expect(agent.executions().filter((execution) => execution.messageId === messageId)).toHaveLength(1);
    expect(agent.count('ListTasks')).toBeGreaterThanOrEqual(2);
  }, 120_000);

  it('property: headers or not, keep-alives or not, any number of searches before the task shows: one execution, COMPLETED', async () => {
    await fc.assert(
      fc.asyncProperty(fc.boolean(), fc.boolean(), fc.integer({ min: 1, max: 3 }), async (headers, keepAlive, searches) => {
        try {
          once(await silentSend({ headers, keepAlive: headers && keepAlive }, searches));
        } finally {
          await fleet?.close();
          await producer?.close();
          await agent?.close();
          fleet = producer = agent = undefined;
        }
      }),
      { numRuns: Number(process.env.QUIET_STREAM_RUNS ?? 4), seed: Number(process.env.QUIET_STREAM_SEED ?? 5_150), endOnFailure: true },
    );
  }, 600_000);
});
