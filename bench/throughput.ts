/**
 * Benchmark 1, throughput and CPU against the bare @a2a-js/sdk client: the
 * same SDK agent (own process) driven by the bare client and by durable-a2a
 * (producer → send → follow → COMPLETED), each side in a process of its own,
 * in A/B interleaved rounds (the order alternates every round), at agent work
 * 0 ms and 50 ms and concurrency 50 and 200. Per side: delegations per second
 * and Node CPU per delegation (process CPU time of that side's process over
 * the round); ratios durable ÷ bare per round, median reported. Then the
 * latency durable-a2a adds at concurrency 1 (p50, p95 of end-to-end times,
 * delegate + waitFor against the bare client's send + subscribe).
 * Machine CPU per delegation: the side's Node CPU plus the agent process's and
 * redis-server's over the same round. When the machine is the bottleneck (2
 * cores shared by all three), bare ÷ durable machine CPU is the ceiling of the
 * throughput ratio: what a cut must reach to move it.
 */
import { loadavg } from 'node:os';
import { Redis } from 'ioredis';
import { startRedisServer } from '../test/harness/redis.ts';
import { percentile, redisCpuSeconds, round, scaled, type BenchResult, type Figure } from './common.ts';
import { spawnBenchChild, type BenchChild } from './processes/ipc.ts';
import type { RoundResult } from './processes/side.ts';

interface AgentReady {
  cardUrl: string;
  baseUrl: string;
}

const ROUNDS = 3;

/** A round with the CPU the agent's process and redis-server spent over it (µs). */
interface MachineRound extends RoundResult {
  agentCpuMicros: number;
  redisCpuMicros: number;
}
const CONFIGS = [
  { workMs: 50, concurrency: 50 },
  { workMs: 0, concurrency: 50 },
  { workMs: 50, concurrency: 200 },
  { workMs: 0, concurrency: 200 },
] as const;
const LATENCY_WORK_MS = [0, 50] as const;

const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};
const load1 = () => round(loadavg()[0]!, 2);

export async function run(scale: number): Promise<BenchResult> {
  const perRound = scaled(600, scale, 10);
  const latencyCount = scaled(100, scale, 5);
  const redisServer = await startRedisServer();
  const agents = new Map<number, BenchChild<AgentReady>>();
  for (const workMs of new Set([...CONFIGS.map((config) => config.workMs), ...LATENCY_WORK_MS])) {
    agents.set(workMs, spawnBenchChild<AgentReady>('agent', { BENCH_AGENT_BEHAVIOUR: `completes:${workMs}` }));
  }
  const bare = spawnBenchChild('side', { BENCH_SIDE: 'bare' });
  const durable = spawnBenchChild('side', { BENCH_SIDE: 'durable', REDIS_URL: redisServer.url, BENCH_PREFIX: 'tp' });
  const admin = new Redis(redisServer.url);
  const figures: Figure[] = [];
  const notes: string[] = [];
  let totalBare = 0;
  let totalDurable = 0;
  try {
    await Promise.all([bare.ready, durable.ready, ...[...agents.values()].map((agent) => agent.ready)]);
    for (const { workMs, concurrency } of CONFIGS) {
      const agent = await agents.get(workMs)!.ready;
      const label = `agent ${workMs} ms, C=${concurrency}`;
      const load = load1();
      const input = (tag: string, count: number) => ({ ...agent, count, concurrency, tag: `${workMs}-${concurrency}-${tag}` });
      await bare.call<RoundResult>('round', input('warm', Math.min(100, perRound)));
      await durable.call<RoundResult>('round', input('warm', Math.min(100, perRound)));
      const rounds: { bare: MachineRound; durable: MachineRound }[] = [];
      const agentChild = agents.get(workMs)!;
      for (let index = 0; index < ROUNDS; index++) {
        // The round, and the CPU the agent and redis-server spent over it.
        const run = async (side: BenchChild<unknown>): Promise<MachineRound> => {
          const [agentBefore, redisBefore] = await Promise.all([agentChild.call<number>('cpuMicros'), redisCpuSeconds(admin)]);
          const result = await side.call<RoundResult>('round', input(`r${index}`, perRound));
          const [agentAfter, redisAfter] = await Promise.all([agentChild.call<number>('cpuMicros'), redisCpuSeconds(admin)]);
          return { ...result, agentCpuMicros: agentAfter - agentBefore, redisCpuMicros: (redisAfter - redisBefore) * 1e6 };
        };
        if (index % 2 === 0) {
          const b = await run(bare);
          rounds.push({ bare: b, durable: await run(durable) });
        } else {
          const d = await run(durable);
          rounds.push({ bare: await run(bare), durable: d });
        }
      }
      const rate = (result: RoundResult) => (result.completed / result.elapsedMs) * 1000;
      const cpuMs = (result: RoundResult) => result.cpuMicros / 1000 / Math.max(1, result.completed);
      const perDelegationMs = (result: MachineRound, micros: number) => micros / 1000 / Math.max(1, result.completed);
      const machineMs = (result: MachineRound) => perDelegationMs(result, result.cpuMicros + result.agentCpuMicros + result.redisCpuMicros);
      totalBare += rounds.reduce((sum, r) => sum + r.bare.completed, 0);
      totalDurable += rounds.reduce((sum, r) => sum + r.durable.completed, 0);
      figures.push(
        { metric: `${label}: bare delegations/s (median round)`, value: round(median(rounds.map((r) => rate(r.bare))), 1), unit: '1/s' },
        { metric: `${label}: durable delegations/s (median round)`, value: round(median(rounds.map((r) => rate(r.durable))), 1), unit: '1/s' },
        { metric: `${label}: throughput ratio durable / bare (median of rounds)`, value: round(median(rounds.map((r) => rate(r.durable) / rate(r.bare))), 3), unit: '' },
        { metric: `${label}: bare Node CPU per delegation`, value: round(median(rounds.map((r) => cpuMs(r.bare))), 3), unit: 'ms' },
        { metric: `${label}: durable Node CPU per delegation (producer + fleet)`, value: round(median(rounds.map((r) => cpuMs(r.durable))), 3), unit: 'ms' },
        { metric: `${label}: CPU ratio durable / bare (median of rounds)`, value: round(median(rounds.map((r) => cpuMs(r.durable) / cpuMs(r.bare))), 2), unit: '' },
        {
          metric: `${label}: event loop busy, bare / durable process (near 1: that side's one event loop is its bottleneck)`,
          value: round(median(rounds.map((r) => r.bare.eventLoopUtilization)), 2),
          unit: `/ ${round(median(rounds.map((r) => r.durable.eventLoopUtilization)), 2)}`,
        },
        { metric: `${label}: agent CPU per delegation, bare / durable round`, value: round(median(rounds.map((r) => perDelegationMs(r.bare, r.bare.agentCpuMicros))), 3), unit: `/ ${round(median(rounds.map((r) => perDelegationMs(r.durable, r.durable.agentCpuMicros))), 3)} ms` },
        { metric: `${label}: redis-server CPU per delegation, durable round`, value: round(median(rounds.map((r) => perDelegationMs(r.durable, r.durable.redisCpuMicros))), 3), unit: 'ms' },
        { metric: `${label}: machine CPU per delegation (side + agent + redis-server), bare / durable`, value: round(median(rounds.map((r) => machineMs(r.bare))), 3), unit: `/ ${round(median(rounds.map((r) => machineMs(r.durable))), 3)} ms` },
        { metric: `${label}: machine CPU ratio bare / durable (the throughput ratio's ceiling when CPU-bound)`, value: round(median(rounds.map((r) => machineMs(r.bare) / machineMs(r.durable))), 3), unit: '' },
        { metric: `${label}: load average (1 min) at start / end`, value: load, unit: `/ ${load1()}` },
      );
      notes.push(
        `${label}: per-round ratios ${rounds.map((r) => round(rate(r.durable) / rate(r.bare), 2)).join(', ')}; CPU ratios ${rounds.map((r) => round(cpuMs(r.durable) / cpuMs(r.bare), 2)).join(', ')}.`,
      );
    }
    for (const workMs of LATENCY_WORK_MS) {
      const agent = await agents.get(workMs)!.ready;
      const load = load1();
      const bareTimes: number[] = [];
      const durableTimes: number[] = [];
      const input = (tag: string) => ({ ...agent, count: latencyCount, concurrency: 1, tag: `lat-${workMs}-${tag}` });
      await bare.call('latency', input('warm'));
      await durable.call('latency', input('warm'));
      for (let index = 0; index < 2; index++) {
        const order = index % 2 === 0 ? [bare, durable] : [durable, bare];
        for (const side of order) (side === bare ? bareTimes : durableTimes).push(...(await side.call<number[]>('latency', input(`r${index}`))));
      }
      const label = `C=1, agent ${workMs} ms`;
      figures.push(
        { metric: `${label}: bare p50 / p95`, value: round(percentile(bareTimes, 50), 2), unit: `/ ${round(percentile(bareTimes, 95), 2)} ms` },
        { metric: `${label}: durable p50 / p95`, value: round(percentile(durableTimes, 50), 2), unit: `/ ${round(percentile(durableTimes, 95), 2)} ms` },
        { metric: `${label}: added latency p50`, value: round(percentile(durableTimes, 50) - percentile(bareTimes, 50), 2), unit: 'ms' },
        { metric: `${label}: added latency p95`, value: round(percentile(durableTimes, 95) - percentile(bareTimes, 95), 2), unit: 'ms' },
        { metric: `${label}: load average (1 min) at start / end`, value: load, unit: `/ ${load1()}` },
      );
    }
    figures.push({ metric: 'bare completed (all measured rounds)', value: totalBare, unit: `of ${CONFIGS.length * ROUNDS * perRound}` });
    figures.push({ metric: 'durable completed (all measured rounds)', value: totalDurable, unit: `of ${CONFIGS.length * ROUNDS * perRound}` });
  } finally {
    admin.disconnect();
    await Promise.all([bare.stop(), durable.stop(), ...[...agents.values()].map((agent) => agent.stop())]);
    await redisServer.stop();
  }
  return {
    name: 'throughput',
    title: 'Throughput, Node CPU and added latency: durable-a2a against the bare @a2a-js/sdk client',
    figures,
    notes: [
      `${ROUNDS} measured rounds of ${perRound} delegations per side per setting, A/B interleaved (bare first in even rounds, durable first in odd), after one untimed warm-up round per side; ratios are per round, the median reported.`,
      'Processes: each agent (@a2a-js/sdk 1.3.0 server, JSON-RPC, WORKING → work → artifact → COMPLETED) in its own process; the bare client in one process; producer + in-process fleet (send and follow concurrency = C, production timings, subscribe limit out of the way) in another; one redis-server. Only one side runs at a time.',
      'Node CPU per delegation: process.cpuUsage() (user + system) of that side\'s process over the round ÷ delegations completed; the agent\'s CPU is in neither.',
      'Machine CPU per delegation: that Node CPU plus the agent process\'s (process.cpuUsage over IPC) and redis-server\'s (INFO cpu used_cpu_user + used_cpu_sys) over the same round. The three share the machine\'s cores, so when it is CPU-bound the throughput ratio cannot pass bare ÷ durable machine CPU.',
      'Event loop busy: performance.eventLoopUtilization() of each side\'s process over the round. Each side is one Node process; when both event loops are near 1, each side runs as fast as its one thread allows and the throughput ratio is about 1 ÷ the Node CPU ratio (a CPU ratio of 1.5 allows about 0.67). A deployed fleet runs the producer and each worker in processes of their own.',
      'Bare: sendMessage(returnImmediately) then resubscribeTask to a terminal status (getTask if refused or ended early). Durable: delegate() with at most C delegations unsettled at once (as the bare client keeps C in flight; settlement read in-process from the fleet\'s settled-delegation histogram, no Redis polling); the fleet runs send and follow concurrency C with one agent\'s send and follow shares set to C (the default shares, half and at most 90% of the slots, are for fleets that serve several agents: with the default send share a single-agent fleet ran at 0.19–0.37× bare instead of 0.47–0.61×).',
      `Added latency: ${latencyCount} sequential delegations per round, 2 interleaved rounds per side after a warm-up; durable = producer.delegate + producer.waitFor (pub/sub wake-up), bare = send + subscribe to terminal. Added = durable − bare at the same percentile.`,
      ...notes,
    ],
  };
}
