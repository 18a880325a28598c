/**
 * The rig of the profiling aids (bench/monitor.ts, bench/timeline.ts, bench/profile-durable.ts): a private
 * redis-server, one benchmark agent in its own process, a producer and an in-process fleet whose send and follow
 * concurrency, and the agent's follow share, are `concurrency` (resubscriptions not rate-limited). And the rig of the
 * benchmarks that kill worker processes (bench/takeover.ts, bench/recovery.ts): the same without the fleet, with a
 * reader for polling and spawned workers; or with the agent in this process (bench/footprint.ts,
 * bench/reconnect-storm.ts: it is restarted, or its request log read).
 */
import { Redis } from 'ioredis';
import { createProducer, type Producer } from '@durable-a2a/producer';
import type { Fleet, StartFleetOptions } from '@durable-a2a/workers';
import { startRedisServer, type RedisServerHandle } from '../test/harness/redis.ts';
import { spawnWorkerProcess, type WorkerProcess } from '../test/harness/fleet.ts';
import { startDemoAgent, type DemoAgentHandle, type DemoAgentOptions } from '../test/harness/agent.ts';
import { startBenchFleet, stopAgent } from './common.ts';
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

/** A running rig of worker processes; `close()` SIGKILLs every worker spawned, then closes the rest. */
export interface WorkerProcessRig<Agent = BenchChild<{ cardUrl: string }>> {
  redisServer: RedisServerHandle;
  /** The agent: its process (`startWorkerProcessRig`, not awaited: `ready` gives its card URL, bench/processes/agent.ts), or its handle in this process (`startInProcessAgentRig`). */
  agent: Agent;
  producer: Producer;
  /** A plain client of the rig's Redis, for polling rows and reading INFO. */
  reader: Redis;
  /** Spawns a worker process (`spawnWorkerProcess(environment, entry, nodeArgs)`), SIGKILLed by `close()` if still running. */
  spawn(environment: Record<string, string>, nodeArgs?: readonly string[], entry?: string): WorkerProcess;
  /** SIGKILLs the spawned workers, then closes the reader, the producer, the agent and Redis, in that order. */
  close(): Promise<void>;
}

/**
 * Starts a private redis-server, the benchmark agent in its own process (`agentBehaviour`: its BENCH_AGENT_BEHAVIOUR,
 * e.g. `slow:60000`; not awaited), a producer under `prefix` and a reader.
 */
export async function startWorkerProcessRig(prefix: string, agentBehaviour: string): Promise<WorkerProcessRig> {
  const redisServer = await startRedisServer();
  const agent = spawnBenchChild<{ cardUrl: string }>('agent', { BENCH_AGENT_BEHAVIOUR: agentBehaviour });
  return rigAround(redisServer, prefix, agent, () => agent.stop());
}

/**
 * Starts a private redis-server, a demo agent in this process (`startDemoAgent(agentOptions)`; `close()` stops it
 * with `stopAgent`, its sleeping executions abandoned), a producer under `prefix` and a reader.
 */
export async function startInProcessAgentRig(prefix: string, agentOptions: DemoAgentOptions): Promise<WorkerProcessRig<DemoAgentHandle>> {
  const redisServer = await startRedisServer();
  const agent = await startDemoAgent(agentOptions);
  return rigAround(redisServer, prefix, agent, () => stopAgent(agent));
}

function rigAround<Agent>(redisServer: RedisServerHandle, prefix: string, agent: Agent, stop: () => Promise<void>): WorkerProcessRig<Agent> {
  const producer = createProducer({ redis: redisServer.url, addressPolicy: { allowLoopback: true }, prefix });
  const reader = new Redis(redisServer.url);
  const workers: WorkerProcess[] = [];
  return {
    redisServer,
    agent,
    producer,
    reader,
    spawn(environment, nodeArgs = [], entry = undefined) {
      const worker = spawnWorkerProcess(environment, entry, nodeArgs);
      workers.push(worker);
      return worker;
    },
    async close() {
      await Promise.all(workers.map((worker) => worker.kill('SIGKILL')));
      reader.disconnect();
      await producer.close();
      await stop();
      await redisServer.stop();
    },
  };
}
