/**
 * `pnpm tsx --conditions=@durable-a2a/source bench/profile-worker.ts [streams] [dir]`:
 * a profiling aid, not a benchmark. One worker process (`main.ts` under
 * `node --cpu-prof`, profile written to `dir` on its graceful exit) opens
 * `streams` follows (default 1,000) on an agent in its own process that keeps
 * every task WORKING; prints how many were followed each second, then SIGTERMs
 * the worker so the profile is written.
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { createProducer } from '@durable-a2a/producer';
import { startRedisServer } from '../test/harness/redis.ts';
import { TEST_TIMINGS } from '../test/harness/fleet.ts';
import { BENCH_STREAM_IDLE_TIMEOUT_MS, delegateMany, readLeasesAndStates, sleep } from './common.ts';
import { spawnBenchChild } from './processes/ipc.ts';

const streams = Number(process.argv[2] ?? '1000');
const dir = process.argv[3] ?? '/tmp';
const redisServer = await startRedisServer();
const agent = spawnBenchChild<{ cardUrl: string }>('agent', { BENCH_AGENT_BEHAVIOUR: 'slow:600000' });
const { cardUrl } = await agent.ready;
const prefix = 'prof';
const worker = fork(fileURLToPath(new URL('../packages/workers/src/main.ts', import.meta.url)), [], {
  execArgv: ['--conditions=@durable-a2a/source', '--import', 'tsx', '--cpu-prof', `--cpu-prof-dir=${dir}`],
  env: {
    PATH: process.env.PATH ?? '',
    LOG_LEVEL: 'silent',
    REDIS_URL: redisServer.url,
    DA2A_PREFIX: prefix,
    DA2A_ALLOW_LOOPBACK: 'true',
    DA2A_CONCURRENCY: `follow=${streams + 100},send=50`,
    DA2A_FOLLOW_SLOTS_PER_AGENT: String(streams + 100),
    DA2A_SUBSCRIBE_RATE_LIMIT: '1000/1000',
    DA2A_STREAM_IDLE_TIMEOUT_MS: String(BENCH_STREAM_IDLE_TIMEOUT_MS),
    DA2A_LOCK_DURATION_MS: process.env.DA2A_LOCK_DURATION_MS ?? String(TEST_TIMINGS.lockDurationMs),
    DA2A_STALLED_INTERVAL_MS: process.env.DA2A_STALLED_INTERVAL_MS ?? String(TEST_TIMINGS.stalledIntervalMs),
  },
  stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
});
await new Promise<void>((resolve) => worker.on('message', (message: { ready?: boolean }) => message.ready && resolve()));
const producer = createProducer({ redis: redisServer.url, addressPolicy: { allowLoopback: true }, prefix });
const reader = new Redis(redisServer.url);
const started = performance.now();
const refs = await delegateMany(producer, cardUrl, streams, { text: 'job', keyPrefix: 'p' });
console.log(`delegated ${streams} in ${((performance.now() - started) / 1000).toFixed(1)} s`);
for (let second = 0; second < 300; second++) {
  const rows = await readLeasesAndStates(reader, prefix, refs);
  const followed = rows.filter((row) => row.lease && row.state === 'WORKING').length;
  console.log(`${((performance.now() - started) / 1000).toFixed(1)} s: ${followed} followed`);
  if (followed === streams) break;
  await sleep(1_000);
}
worker.kill('SIGTERM');
await new Promise((resolve) => worker.once('exit', resolve));
reader.disconnect();
await producer.close();
await agent.stop();
await redisServer.stop();
process.exit(0);
