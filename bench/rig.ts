/**
 * The rig of the profiling aids (bench/monitor.ts, bench/timeline.ts, bench/profile-durable.ts): a private
 * redis-server, one benchmark agent in its own process, a producer and an in-process fleet whose send and follow
 * concurrency, and the agent's follow share, are `concurrency` (resubscriptions not rate-limited).
 */
import { createProducer, type Producer } from '@durable-a2a/producer';
import type { Fleet, StartFleetOptions } from '@durable-a2a/workers';
import { startRedisServer } from '../test/harness/redis.ts';
import { startBenchFleet } from './common.ts';
import { spawnBenchChild, type BenchChild } from './processes/ipc.ts';

/** A running rig; `stop()` closes the fleet, the producer, the agent and Redis, in that order. */
export interface ProfilingRig {
  redisUrl: string;
  cardUrl: string;
  producer: Producer;
  fleet: Fleet;
  /** The agent's process: `call('requestCount', method)`, `call('cpuMicros')` (bench/processes/agent.ts). */
  agent: BenchChild<{ cardUrl: string }>;
  stop(): Promise<void>;
}

/**
 * Starts the rig under `prefix`. `agentBehaviour`: the agent's BENCH_AGENT_BEHAVIOUR (e.g. `completes:0`, work in
 * ms); `fleet`: more fleet options (they win over the rig's).
 */
export async function startProfilingRig(options: { prefix: string; agentBehaviour: string; concurrency: number; fleet?: Partial<StartFleetOptions> }): Promise<ProfilingRig> {
  const { prefix, concurrency } = options;
  const redisServer = await startRedisServer();
  const agent = spawnBenchChild<{ cardUrl: string }>('agent', { BENCH_AGENT_BEHAVIOUR: options.agentBehaviour });
  const { cardUrl } = await agent.ready;
  const producer = createProducer({ redis: redisServer.url, addressPolicy: { allowLoopback: true }, prefix });
  const fleet = await startBenchFleet({
    redisUrl: redisServer.url,
    prefix,
    concurrency: { send: concurrency, follow: concurrency },
    followSlotsPerAgent: concurrency,
    sendSlotsPerAgent: concurrency,
    subscribeRateLimit: { max: 1_000_000, durationMs: 1_000 },
    ...options.fleet,
  });
  return {
    redisUrl: redisServer.url,
    cardUrl,
    producer,
    fleet,
    agent,
    async stop() {
      await fleet.close();
      await producer.close();
      await agent.stop();
      await redisServer.stop();
    },
  };
}
