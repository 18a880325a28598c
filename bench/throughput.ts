/**
 * Benchmark 1, throughput ratio: delegations completed per second through
 * durable-a2a (producer → send → follow → COMPLETED) against the same SDK
 * agent driven directly by the bare `@a2a-js/sdk` client, same concurrency,
 * same run.
 *
 * The bare path is the closest equivalent of ours: `sendMessage` with
 * `returnImmediately: true` (our send job), then `resubscribeTask` until a
 * terminal status (our follow job), `getTask` when the stream is refused or
 * ends early (our readOnce). No journal, no queues.
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { SendMessageRequest, TaskState, type StreamResponse } from '@a2a-js/sdk';
import { ClientFactory, type Client } from '@a2a-js/sdk/client';
import { createProducer } from '@durable-a2a/producer';
import { startRedisServer } from '../test/harness/redis.ts';
import { startDemoAgent } from '../test/harness/agent.ts';
import { completesWith } from '../test/harness/agent-behaviours.ts';
import { mapLimit, round, scaled, seconds, sleep, startBenchFleet, stopAgent, type BenchResult } from './common.ts';

/** The agent works 100 ms per task, so both paths subscribe while the task is WORKING. */
const WORK_MS = 100;
const behaviour = () => completesWith('the result of the delegation', { delayMs: WORK_MS });
const TERMINAL = new Set<TaskState>([TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_CANCELED, TaskState.TASK_STATE_REJECTED]);
/** Large enough never to bind: measures the mechanism, not the fleet's deliberate subscription throttle. */
const UNTHROTTLED = { max: 1_000_000, durationMs: 1_000 };

export async function run(scale: number): Promise<BenchResult> {
  const delegations = scaled(1_000, scale, 10);
  const concurrency = Math.min(50, delegations);
  const throttledDelegations = scaled(250, scale, 10);
  const warmUp = Math.min(20, delegations);
  const redisServer = await startRedisServer();
  try {
    const bare = await bareRun(delegations, concurrency, warmUp);
    const durable = await durableRun(redisServer.url, 'tp', delegations, concurrency, warmUp, UNTHROTTLED);
    const throttled = await durableRun(redisServer.url, 'tpd', throttledDelegations, concurrency, warmUp, undefined);
    return {
      name: 'throughput',
      title: 'Throughput: durable-a2a against the bare @a2a-js/sdk client',
      figures: [
        { metric: 'bare SDK client: delegations/s', value: round(bare.perSecond, 1), unit: '1/s' },
        { metric: 'durable-a2a, subscribe limit out of the way: delegations/s', value: round(durable.perSecond, 1), unit: '1/s' },
        { metric: 'ratio durable / bare', value: round(durable.perSecond / bare.perSecond, 3), unit: '' },
        { metric: 'durable-a2a, default subscribe limit (50/1000 ms): delegations/s', value: round(throttled.perSecond, 1), unit: '1/s' },
        { metric: 'ratio durable (default limit) / bare', value: round(throttled.perSecond / bare.perSecond, 3), unit: '' },
        { metric: 'bare completed', value: bare.completed, unit: `of ${delegations}` },
        { metric: 'durable completed', value: durable.completed, unit: `of ${delegations}` },
        { metric: 'durable (default limit) completed', value: throttled.completed, unit: `of ${throttledDelegations}` },
        { metric: 'bare wall time', value: bare.seconds, unit: 's' },
        { metric: 'durable wall time', value: durable.seconds, unit: 's' },
      ],
      notes: [
        `${delegations} delegations at concurrency ${concurrency} per path (${warmUp} untimed warm-up each); the default-limit run uses ${throttledDelegations}.`,
        `Agent: @a2a-js/sdk 1.3.0 server in this process, JSON-RPC, WORKING → ${WORK_MS} ms → artifact → COMPLETED; one fresh agent per path.`,
        'Bare: ClientFactory client, sendMessage(returnImmediately) then resubscribeTask to a terminal status (getTask if refused or ended early): the closest equivalent of send → follow.',
        `Durable: createProducer().delegate() for each, an in-process fleet (send and follow concurrency ${concurrency}, production timings), completion read from the workflow hashes every 100 ms.`,
        'Everything runs in one Node process (agent, client or producer + fleet) beside one redis-server on this 2-core box.',
      ],
    };
  } finally {
    await redisServer.stop();
  }
}

interface PathResult {
  completed: number;
  seconds: number;
  perSecond: number;
}

async function bareRun(delegations: number, concurrency: number, warmUp: number): Promise<PathResult> {
  const agent = await startDemoAgent({ behaviour: behaviour() });
  try {
    const client = await new ClientFactory().createFromUrl(agent.baseUrl);
    await mapLimit(Array.from({ length: warmUp }), concurrency, () => bareDelegation(client));
    const started = performance.now();
    const states = await mapLimit(Array.from({ length: delegations }), concurrency, () => bareDelegation(client));
    const elapsed = performance.now() - started;
    const completed = states.filter((state) => state === TaskState.TASK_STATE_COMPLETED).length;
    return { completed, seconds: seconds(elapsed), perSecond: (completed / elapsed) * 1000 };
  } finally {
    await stopAgent(agent);
  }
}

/** One delegation with the bare client; returns the final task state. */
async function bareDelegation(client: Client): Promise<TaskState | undefined> {
  const request = SendMessageRequest.fromJSON({
    message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'do the thing' }] },
    configuration: { acceptedOutputModes: ['text/plain'], returnImmediately: true },
  });
  const sent = await client.sendMessage(request);
  if (!('id' in sent) || !('status' in sent)) return TaskState.TASK_STATE_COMPLETED; // a direct Message reply
  const taskId = sent.id;
  let state = sent.status?.state;
  if (state !== undefined && TERMINAL.has(state)) return state;
  try {
    for await (const event of client.resubscribeTask({ id: taskId, tenant: '' })) {
      state = stateOf(event) ?? state;
      if (state !== undefined && TERMINAL.has(state)) return state;
    }
  } catch {
    // Refused (already terminal) or dropped: read it once, as our follow job does.
  }
  return (await client.getTask({ id: taskId, tenant: '', historyLength: 0 })).status?.state;
}

function stateOf(event: StreamResponse): TaskState | undefined {
  const payload = event.payload;
  if (payload?.$case === 'statusUpdate') return payload.value.status?.state;
  if (payload?.$case === 'task') return payload.value.status?.state;
  return undefined;
}

async function durableRun(
  redisUrl: string,
  prefix: string,
  delegations: number,
  concurrency: number,
  warmUp: number,
  subscribeRateLimit: { max: number; durationMs: number } | undefined,
): Promise<PathResult> {
  const agent = await startDemoAgent({ behaviour: behaviour() });
  const producer = createProducer({ redis: redisUrl, addressPolicy: { allowLoopback: true }, prefix });
  const fleet = await startBenchFleet({
    redisUrl,
    prefix,
    concurrency: { send: concurrency, follow: concurrency },
    ...(subscribeRateLimit ? { subscribeRateLimit } : {}),
  });
  const reader = new Redis(redisUrl);
  try {
    const batch = async (count: number, tag: string): Promise<{ completed: number; elapsedMs: number }> => {
      const started = performance.now();
      const ids = await mapLimit(Array.from({ length: count }), concurrency, async (_, index) => {
        const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'do the thing', idempotencyKey: `${tag}-${index}` });
        return id;
      });
      const states = await waitForWorkflows(reader, prefix, ids);
      return { completed: states.filter((state) => state === 'COMPLETED').length, elapsedMs: performance.now() - started };
    };
    await batch(warmUp, 'warm');
    const { completed, elapsedMs } = await batch(delegations, 'run');
    return { completed, seconds: seconds(elapsedMs), perSecond: (completed / elapsedMs) * 1000 };
  } finally {
    reader.disconnect();
    await fleet.close();
    await producer.close();
    await stopAgent(agent);
  }
}

/** Waits until every workflow has left RUNNING (or 10 minutes pass); returns their states. */
export async function waitForWorkflows(redis: Redis, prefix: string, ids: readonly string[], timeoutMs = 600_000): Promise<(string | null)[]> {
  const states = new Array<string | null>(ids.length).fill(null);
  let open = ids.map((_, index) => index);
  const deadline = Date.now() + timeoutMs;
  while (open.length > 0 && Date.now() < deadline) {
    const pipeline = redis.pipeline();
    for (const index of open) pipeline.hget(`${prefix}:{wf:${ids[index]}}:wf`, 'state');
    const replies = (await pipeline.exec()) ?? [];
    open = open.filter((index, position) => {
      const state = (replies[position]?.[1] as string | null) ?? null;
      states[index] = state;
      return state === null || state === 'RUNNING';
    });
    if (open.length > 0) await sleep(100);
  }
  return states;
}

