/**
 * Benchmark 6, the cost of the journal's durability setting (WAIT for one replica after the workflow
 * is created, and before each SendMessage leaves): one primary with one replica on loopback, the same
 * workload twice in the same run, rounds alternating off / on so load drifts hit both sides alike:
 * one journal write with and without WAIT, one after the other; how long `producer.delegate` takes to answer (p50, p99) and the end-to-end throughput (delegate →
 * send → follow → COMPLETED) at concurrency 50, each side with WAIT and without.
 */
import { Redis } from 'ioredis';
import { createProducer } from '@durable-a2a/producer';
import { Journal, connectionGeneration, type JournalDurability } from '@durable-a2a/shared';
import { startRedisServer } from '../test/harness/redis.ts';
import { startDemoAgent } from '../test/harness/agent.ts';
import { completesWith } from '../test/harness/agent-behaviours.ts';
import { mapLimit, round, scaled, sleep, startBenchFleet, stopAgent, type BenchResult } from './common.ts';

const CONCURRENCY = 50;
const ROUNDS = 3;
// A generous WAIT timeout: the benchmark measures the acknowledgement, not a timeout (a loaded 2-core machine can stall the replica for a second).
const ON: JournalDurability = { replicas: 1, timeoutMs: 5_000 };
const OFF: JournalDurability = { replicas: 0, timeoutMs: 1_000 };

interface Side {
  acknowledgeMs: number[];
  delegations: number;
  wallMs: number;
}

const median = (values: number[]): number => percentile(values, 50);
const percentile = (values: number[], p: number): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
};

export async function run(scale: number): Promise<BenchResult> {
  const perRound = scaled(200, scale, 10);
  const primary = await startRedisServer();
  const replica = await startRedisServer({ extraArguments: ['--replicaof', '127.0.0.1', String(primary.port)] });
  const agent = await startDemoAgent({ behaviour: completesWith('done', { delayMs: 20 }) });
  const sides: Record<'off' | 'on', Side> = { off: { acknowledgeMs: [], delegations: 0, wallMs: 0 }, on: { acknowledgeMs: [], delegations: 0, wallMs: 0 } };
  const probe = new Redis(primary.url);
  const writes = { off: [] as number[], on: [] as number[] };
  try {
    // Online = past the initial sync (diskless, after repl-diskless-sync-delay): WAIT would time out before.
    while (!/slave0:.*state=online/.test(await probe.info('replication'))) await sleep(50);
    for (let index = 0; index < 2 * ROUNDS; index++) {
      const mode = index % 2 === 0 ? 'off' : 'on';
      writes[mode].push(await sequentialWrites(mode, index, scaled(500, scale, 20)));
    }
    // Warm-up: a full round per side, unmeasured (the first round pays for JIT and script loading).
    await round_('off', 'warm', perRound);
    await round_('on', 'warm', perRound);
    for (let index = 0; index < ROUNDS; index++) {
      for (const mode of index % 2 === 0 ? (['off', 'on'] as const) : (['on', 'off'] as const)) {
        const result = await round_(mode, `r${index}`, perRound);
        sides[mode].acknowledgeMs.push(...result.acknowledgeMs);
        sides[mode].delegations += perRound;
        sides[mode].wallMs += result.wallMs;
      }
    }
  } finally {
    probe.disconnect();
    await stopAgent(agent);
    await replica.stop();
    await primary.stop();
  }
  const throughput = (side: Side) => side.delegations / (side.wallMs / 1000);
  const p = (side: Side, at: number) => percentile(side.acknowledgeMs, at);
  return {
    name: 'durability',
    title: 'Cost of WAIT for one replica on the critical journal writes',
    figures: [
      { metric: 'one journal write (createWorkflow), sequential, WAIT off', value: round(median(writes.off), 3), unit: 'ms' },
      { metric: 'one journal write + WAIT 1, sequential', value: round(median(writes.on), 3), unit: 'ms' },
      { metric: 'write latency ratio on / off', value: round(median(writes.on) / median(writes.off), 2), unit: '' },
      { metric: 'producer.delegate p50, WAIT off', value: round(p(sides.off, 50), 2), unit: 'ms' },
      { metric: 'producer.delegate p50, WAIT on', value: round(p(sides.on, 50), 2), unit: 'ms' },
      { metric: 'producer.delegate p99, WAIT off', value: round(p(sides.off, 99), 2), unit: 'ms' },
      { metric: 'producer.delegate p99, WAIT on', value: round(p(sides.on, 99), 2), unit: 'ms' },
      { metric: 'p50 ratio on / off', value: round(p(sides.on, 50) / p(sides.off, 50), 2), unit: '' },
      { metric: 'end-to-end throughput, WAIT off', value: round(throughput(sides.off), 1), unit: 'delegations/s' },
      { metric: 'end-to-end throughput, WAIT on', value: round(throughput(sides.on), 1), unit: 'delegations/s' },
      { metric: 'throughput ratio on / off', value: round(throughput(sides.on) / throughput(sides.off), 2), unit: '' },
    ],
    notes: [
      `Journal write: ${scaled(500, scale, 20)} sequential createWorkflow calls per round, ${ROUNDS} rounds per side, median of the round medians: the latency WAIT adds to each critical write.`,
      `${ROUNDS} rounds of ${perRound} delegations per side (alternating order) at concurrency ${CONCURRENCY}, after a full unmeasured warm-up round per side; one replica on loopback (no network latency: on a real network each WAIT adds about one round trip to the replica).`,
      'WAIT on = producer and workers with durability { replicas: 1, timeoutMs: 5000 }: WAIT after the workflow is created (before delegate answers) and after the mark before SendMessage leaves. Agent works 20 ms.',
    ],
  };

  /** Median ms of one createWorkflow (+ WAIT when on), one after the other on one connection. */
  async function sequentialWrites(mode: 'off' | 'on', index: number, count: number): Promise<number> {
    const redis = new Redis(primary.url);
    const journal = new Journal(redis, { prefix: `writes-${mode}-${index}`, durability: mode === 'on' ? ON : OFF });
    const took: number[] = [];
    try {
      for (let write = 0; write < count; write++) {
        const at = performance.now();
        const generation = connectionGeneration(redis);
        await journal.createWorkflow(`w${write}`, { state: 'RUNNING' });
        await journal.awaitReplicas(`w${write}`, generation);
        took.push(performance.now() - at);
      }
    } finally {
      redis.disconnect();
    }
    return percentile(took, 50);
  }

  async function round_(mode: 'off' | 'on', tag: string, count: number): Promise<{ acknowledgeMs: number[]; wallMs: number }> {
    const prefix = `durability-${mode}-${tag}`;
    const durability = mode === 'on' ? ON : OFF;
    const producer = createProducer({ redis: primary.url, addressPolicy: { allowLoopback: true }, prefix, durability });
    const fleet = await startBenchFleet({ redisUrl: primary.url, prefix, durability, concurrency: { send: CONCURRENCY, follow: CONCURRENCY }, subscribeRateLimit: { max: 1_000_000, durationMs: 1_000 } });
    const acknowledgeMs: number[] = [];
    try {
      const started = performance.now();
      await mapLimit(Array.from({ length: count }), CONCURRENCY, async (_, index) => {
        const at = performance.now();
        await producer.delegate({ agent: agent.cardUrl, text: 'do the thing', idempotencyKey: `${tag}-${index}` });
        acknowledgeMs.push(performance.now() - at);
      });
      while ((await probe.zcard(`${prefix}:unfinished`)) > 0) await sleep(20);
      if (process.env.BENCH_DEBUG) console.log(mode, tag, Math.round(performance.now() - started), "ms");
      return { acknowledgeMs, wallMs: performance.now() - started };
    } finally {
      await fleet.close();
      await producer.close();
    }
  }
}
