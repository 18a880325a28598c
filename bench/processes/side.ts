/**
 * One measured side of the throughput benchmark in its own process
 * (`BENCH_SIDE=bare|durable`), so that `process.cpuUsage()` around a round is
 * that side's CPU alone (the agent runs in bench/processes/agent.ts).
 *
 * - bare: the @a2a-js/sdk client: sendMessage(returnImmediately), then
 *   resubscribeTask to a terminal status (getTask when refused or ended early):
 *   the closest equivalent of our send → follow, with no journal or queues.
 * - durable: createProducer().delegate() plus an in-process fleet (send and
 *   follow concurrency = the round's concurrency, production timings); the
 *   end of a round is seen in-process from the fleet's settled-delegation
 *   histogram, so no completion polling touches Redis.
 *
 * Calls: `round({ cardUrl, count, concurrency, tag })` → RoundResult;
 * `latency({ cardUrl, count, tag })` → end-to-end ms per sequential delegation
 * (durable: delegate + waitFor).
 */
import { performance } from 'node:perf_hooks';
import { TaskState } from '@a2a-js/sdk';
import { createProducer, type Producer } from '@durable-a2a/producer';
import type { Fleet } from '@durable-a2a/workers';
import { delegateWithinConcurrency, mapLimit, startBenchFleet } from '../common.ts';
import { bareDelegation, clientCache } from './a2a-task.ts';
import { serveCalls } from './ipc.ts';

/** What one measured round reports. */
export interface RoundResult {
  completed: number;
  elapsedMs: number;
  /** user + system CPU time of this process over the round. */
  cpuMicros: number;
  /** The share of the round's wall time this process's event loop was busy (0..1; performance.eventLoopUtilization). */
  eventLoopUtilization: number;
}

/** One round's input (also the peers benchmark's, bench/peers/sides.ts): keys or idempotency keys are `<tag>-<index>`. */
export interface RoundInput {
  cardUrl: string;
  baseUrl: string;
  count: number;
  concurrency: number;
  tag: string;
}

/** Large enough never to bind: measures the mechanism, not the fleet's deliberate subscription throttle. */
const UNTHROTTLED = { max: 1_000_000, durationMs: 1_000 };
const cpuNow = () => {
  const usage = process.cpuUsage();
  return usage.user + usage.system;
};

async function measured(work: () => Promise<number>): Promise<RoundResult> {
  const cpu = cpuNow();
  const loop = performance.eventLoopUtilization();
  const started = performance.now();
  const completed = await work();
  const { utilization } = performance.eventLoopUtilization(loop);
  return { completed, elapsedMs: performance.now() - started, cpuMicros: cpuNow() - cpu, eventLoopUtilization: utilization };
}

function bareSide() {
  const clientFor = clientCache();
  return {
    round: async ({ baseUrl, count, concurrency }: RoundInput) => {
      const client = await clientFor(baseUrl);
      return measured(async () => {
        const states = await mapLimit(Array.from({ length: count }), concurrency, () => bareDelegation(client));
        return states.filter((state) => state === TaskState.TASK_STATE_COMPLETED).length;
      });
    },
    latency: async ({ baseUrl, count }: RoundInput) => {
      const client = await clientFor(baseUrl);
      const durations: number[] = [];
      for (let index = 0; index < count; index++) {
        const started = performance.now();
        await bareDelegation(client);
        durations.push(performance.now() - started);
      }
      return durations;
    },
    close: async () => undefined,
  };
}

function durableSide(redisUrl: string, prefix: string) {
  const producer: Producer = createProducer({ redis: redisUrl, addressPolicy: { allowLoopback: true }, prefix });
  let fleet: Fleet | undefined;
  let fleetConcurrency = 0;
  const fleetFor = async (concurrency: number) => {
    if (fleet && fleetConcurrency === concurrency) return fleet;
    await fleet?.close();
    // One agent holds every stream here: its share is the whole follow concurrency (default: half, 90% at most).
    fleet = await startBenchFleet({ redisUrl, prefix, concurrency: { send: concurrency, follow: concurrency }, followSlotsPerAgent: concurrency, sendSlotsPerAgent: concurrency, subscribeRateLimit: UNTHROTTLED });
    fleetConcurrency = concurrency;
    return fleet;
  };
  return {
    round: async ({ cardUrl, count, concurrency, tag }: RoundInput) => {
      const running = await fleetFor(concurrency);
      return measured(() =>
        delegateWithinConcurrency(running, count, concurrency, (index) => producer.delegate({ agent: cardUrl, text: 'do the thing', idempotencyKey: `${tag}-${index}` })),
      );
    },
    latency: async ({ cardUrl, count, tag }: RoundInput) => {
      await fleetFor(fleetConcurrency || 50);
      const durations: number[] = [];
      for (let index = 0; index < count; index++) {
        const started = performance.now();
        const { id } = await producer.delegate({ agent: cardUrl, text: 'do the thing', idempotencyKey: `${tag}-${index}` });
        await producer.waitFor(id, { timeoutMs: 60_000 });
        durations.push(performance.now() - started);
      }
      return durations;
    },
    close: async () => {
      await fleet?.close();
      await producer.close();
    },
  };
}

const side = process.env.BENCH_SIDE === 'durable' ? durableSide(process.env.REDIS_URL!, process.env.BENCH_PREFIX ?? 'tp') : bareSide();
serveCalls(
  { pid: process.pid },
  {
    round: (argument) => side.round(argument as RoundInput),
    latency: (argument) => side.latency(argument as RoundInput),
  },
  () => side.close(),
);
