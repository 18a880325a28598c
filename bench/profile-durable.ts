/**
 * `pnpm tsx --conditions=@durable-a2a/source bench/profile-durable.ts [delegations] [profile path]`:
 * a profiling aid, not a benchmark. The durable side of the throughput benchmark in one process
 * (producer + in-process fleet, C=50 in flight, agent 0 ms in its own process), 300 warm-up
 * delegations, then N (default 2,000) under the inspector's CPU profiler. Prints delegations/s and
 * Node CPU per delegation (the profiler adds a few percent) and writes a `.cpuprofile` (default
 * `/tmp/durable.cpuprofile`; open it in Chrome DevTools or any cpuprofile viewer).
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { createProducer } from '@durable-a2a/producer';
import { startRedisServer } from '../test/harness/redis.ts';
import { delegateWithinConcurrency, startBenchFleet } from './common.ts';
import { spawnBenchChild } from './processes/ipc.ts';

const CONCURRENCY = 50;
const delegations = Number(process.argv[2] ?? '2000');
const profilePath = process.argv[3] ?? '/tmp/durable.cpuprofile';
const redisServer = await startRedisServer();
const agent = spawnBenchChild<{ cardUrl: string }>('agent', { BENCH_AGENT_BEHAVIOUR: 'completes:0' });
const { cardUrl } = await agent.ready;
const prefix = 'profile';
const producer = createProducer({ redis: redisServer.url, addressPolicy: { allowLoopback: true }, prefix });
const fleet = await startBenchFleet({
  redisUrl: redisServer.url,
  prefix,
  concurrency: { send: CONCURRENCY, follow: CONCURRENCY },
  followSlotsPerAgent: CONCURRENCY,
  subscribeRateLimit: { max: 1_000_000, durationMs: 1_000 },
});
const run = (count: number, tag: string) =>
  delegateWithinConcurrency(fleet, count, CONCURRENCY, (index) => producer.delegate({ agent: cardUrl, text: 'do the thing', idempotencyKey: `${tag}-${index}` }));
try {
  await run(300, 'warm');
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  await run(delegations, 'run');
  const cpu = process.cpuUsage(cpuBefore);
  const elapsedMs = performance.now() - started;
  const { profile } = await session.post('Profiler.stop');
  writeFileSync(profilePath, JSON.stringify(profile));
  const cpuMs = (cpu.user + cpu.system) / 1000 / delegations;
  console.log(`${delegations} delegations in ${elapsedMs.toFixed(0)} ms: ${((delegations / elapsedMs) * 1000).toFixed(1)}/s, Node CPU ${cpuMs.toFixed(3)} ms per delegation; profile in ${profilePath}`);
} finally {
  await fleet.close();
  await producer.close();
  await agent.stop();
  await redisServer.stop();
}
