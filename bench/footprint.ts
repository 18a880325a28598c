/**
 * Benchmark 5, footprint: Redis bytes per finished record without artifacts
 * (MEMORY USAGE over each workflow's journal keys, and the used_memory delta
 * over K records, which also carries BullMQ's retained jobs), and the RSS of
 * a spawned worker process holding S concurrent streams (VmRSS from
 * /proc/<pid>/status), with its idle CPU and the Redis commands per second it
 * costs while those streams stay open (production lease and lock timings).
 * Knobs: BENCH_FOOTPRINT_RECORDS, BENCH_FOOTPRINT_STREAMS (default 1,000 ×
 * BENCH_SCALE each).
 */
import { readFileSync, readdirSync } from 'node:fs';
import { Redis } from 'ioredis';
import { createProducer } from '@durable-a2a/producer';
import { startRedisServer } from '../test/harness/redis.ts';
import { startDemoAgent } from '../test/harness/agent.ts';
import type { Behaviour } from '../test/harness/agent-behaviours.ts';

import {
  commandCalls,
  delegateMany,
  followedBy,
  mapLimit,
  round,
  rssBytes,
  scaled,
  sleep,
  spawnedWorkerId,
  startBenchFleet,
  stopAgent,
  untilEveryRow,
  usedMemory,
  waitForWorkflows,
  type BenchResult,
} from './common.ts';
import { startWorkerProcessRig } from './rig.ts';
import { BUILT_MAIN } from '../test/harness/fleet.ts';

/** WORKING, then COMPLETED with a short status message: no artifact rows. */
const noArtifacts: Behaviour = () => [{ state: 'WORKING' }, { state: 'COMPLETED', text: 'done' }];

/**
 * How long each task of the streams' agent runs, and how long the worker keeps a stream that carries no event open
 * (ms): far beyond the run. With the worker's defaults (stream quiet window 5 minutes) a set-up of 10,000 streams on
 * a loaded machine outlived its first streams: they were closed and polled, and the set-up never finished.
 */
const TASK_MS = 3_600_000;

/**
 * How long the idle worker's CPU and Redis commands are measured (ms; `BENCH_FOOTPRINT_IDLE_MS`, default 30 s: three
 * lease renewal ticks, thirty heartbeats). At 10,000 streams the old generation's full collection (a heap of 500 MB or
 * more) comes about once a minute: a 30 s window holds one or none, and its CPU figure moved 2× between runs for that
 * (docs/performance.md, "An idle worker's heap"). Several minutes average it.
 */
const IDLE_WINDOW_MS = Number.isInteger(Number(process.env.BENCH_FOOTPRINT_IDLE_MS)) && Number(process.env.BENCH_FOOTPRINT_IDLE_MS) > 0 ? Number(process.env.BENCH_FOOTPRINT_IDLE_MS) : 30_000;

/** Node options for the footprint worker (`BENCH_FOOTPRINT_WORKER_NODE_ARGS`, space-separated), a profiling aid; default none. */
const WORKER_NODE_ARGS = (process.env.BENCH_FOOTPRINT_WORKER_NODE_ARGS ?? '').split(' ').filter((arg) => arg !== '');

/**
 * Runs the built worker (`BENCH_FOOTPRINT_BUILT=1`: packages/workers/dist/main.js, `pnpm build` first), as production
 * does; default the source under tsx, whose compiled functions carry an own `name` property each (esbuild's `__name`):
 * about 8 KB of heap a stream more (docs/performance.md, "An idle worker's heap").
 */
const BUILT = process.env.BENCH_FOOTPRINT_BUILT === '1';

/** CPU seconds of each of a process's threads so far, summed by thread name (`comm`: the main thread under its own name as `main`). */
function cpuSecondsByThread(pid: number): Map<string, number> {
  const byName = new Map<string, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const name = Number(tid) === pid ? 'main' : stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')).replace(/\d+$/, '');
      const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
      byName.set(name, (byName.get(name) ?? 0) + (Number(fields[11]) + Number(fields[12])) / 100);
    } catch {
      // A thread that ended meanwhile.
    }
  }
  return byName;
}

/** CPU seconds a process used so far (utime + stime from /proc/<pid>/stat, in clock ticks of 100 Hz). */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

export async function run(scale: number): Promise<BenchResult> {
  const knob = (name: string, fallback: number) => (Number.isInteger(Number(process.env[name])) && Number(process.env[name]) > 0 ? Number(process.env[name]) : fallback);
  const records = knob('BENCH_FOOTPRINT_RECORDS', scaled(1_000, scale, 10));
  const streams = knob('BENCH_FOOTPRINT_STREAMS', scaled(1_000, scale, 10));
  const bytes = await recordBytes(records);
  const memory = await workerRss(streams);
  const mib = (value: number) => round(value / 2 ** 20, 1);
  return {
    name: 'footprint',
    title: 'Footprint: Redis bytes per finished record, worker RSS per stream',
    figures: [
      { metric: 'journal keys per finished record (MEMORY USAGE)', value: Math.round(bytes.journalBytesPerRecord), unit: 'bytes' },
      { metric: '  of which the compacted record (`…:done`)', value: Math.round(bytes.compactedBytesPerRecord), unit: 'bytes' },
      { metric: 'used_memory delta per record (journal + BullMQ retained jobs)', value: Math.round(bytes.usedMemoryPerRecord), unit: 'bytes' },
      { metric: 'worker RSS idle', value: mib(memory.idle), unit: 'MiB' },
      { metric: `worker RSS with ${streams} open streams`, value: mib(memory.loaded), unit: 'MiB' },
      { metric: 'RSS per open stream', value: Math.round((memory.loaded - memory.idle) / streams), unit: 'bytes' },
      { metric: `worker CPU with ${streams} open streams, nothing happening (${IDLE_WINDOW_MS / 1000} s)`, value: round(memory.idleCpuPercent, 2), unit: '% of a core' },
      { metric: `Redis commands per second with ${streams} open streams, nothing happening`, value: round(memory.commandsPerSecond, 1), unit: '1/s' },
    ],
    notes: [
      `Encoding of a finished record: ${bytes.encoding} (a finished workflow is compacted into one JSON string, \`…{wf:<id>}:done\`, replacing its hashes and delegation list; layout in packages/shared/src/journal/compacted-record.ts). Before compaction the delegation hash was a hashtable (fields over hash-max-listpack-value, 64 bytes), 3,357 bytes per record in all.`,
      `${records} single-step delegations completed through an in-process fleet (agent: WORKING → COMPLETED, no artifact); MEMORY USAGE … SAMPLES 0 summed over every \`{wf:…}\` key of each workflow.`,
      'used_memory is read before the producer starts and after every workflow finished and the fleet closed; BullMQ keeps up to 1,000 completed jobs per queue for an hour, which this delta includes.',
      `Worker: spawnWorkerProcess (${BUILT ? 'built: packages/workers/dist/main.js' : 'source under tsx'}; follow concurrency ${streams + 100}, subscribe limit 1000/1000 ms; production lease, lock, stalled-check and reconcile timings: 30 s each) following ${streams} tasks of an agent in its own process that runs ${TASK_MS / 60_000} minutes each (the stream idle and quiet windows as long); RSS read once every stream is open (lease held, state WORKING) and the reconcile queue ran the set-up's jobs (at most the sweep's next one delayed), after 1 s to settle.`,
      `Idle CPU by thread (% of a core): ${memory.threads}.`,
      `Idle CPU: the worker's utime + stime (/proc/<pid>/stat) over ${IDLE_WINDOW_MS / 1000} s with every stream open and no event; Redis commands: INFO commandstats calls over the same window (a script's inner commands count too), minus the bench's own INFO calls (the renewal of every lease is one script per lease every 10 s, 500 per pipeline; the heartbeat one script per second).`,
    ],
  };
}

async function recordBytes(records: number) {
  const prefix = 'fp';
  const redisServer = await startRedisServer();
  const agent = await startDemoAgent({ behaviour: noArtifacts });
  const reader = new Redis(redisServer.url);
  try {
    const before = await usedMemory(reader);
    const producer = createProducer({ redis: redisServer.url, addressPolicy: { allowLoopback: true }, prefix });
    const fleet = await startBenchFleet({ redisUrl: redisServer.url, prefix, concurrency: { send: 50, follow: 50 }, subscribeRateLimit: { max: 1_000_000, durationMs: 1_000 } });
    let ids: string[];
    try {
      ids = await mapLimit(Array.from({ length: records }), 50, async (_, index) => (await producer.delegate({ agent: agent.cardUrl, text: `record ${index}`, idempotencyKey: `fp-${index}` })).id);
      const states = await waitForWorkflows(reader, prefix, ids);
      if (states.some((state) => state !== 'COMPLETED')) throw new Error(`footprint: not every workflow completed (${states.filter((state) => state !== 'COMPLETED').length} left)`);
      while ((await reader.zcard(`${prefix}:unfinished`)) > 0) await sleep(50);
    } finally {
      await fleet.close();
      await producer.close();
    }
    const after = await usedMemory(reader);
    let journal = 0;
    let compacted = 0;
    for (const id of ids) {
      const keys = await reader.keys(`${prefix}:{wf:${id}}:*`);
      for (const key of keys) {
        const usage = Number(await reader.memory('USAGE', key, 'SAMPLES', 0));
        journal += usage;
        if (key.endsWith(':done')) compacted += usage;
      }
    }
    const encoding = `${await reader.type(`${prefix}:{wf:${ids[0]}}:done`)}, ${await reader.object('ENCODING', `${prefix}:{wf:${ids[0]}}:done`)}`;
    return {
      journalBytesPerRecord: journal / records,
      compactedBytesPerRecord: compacted / records,
      usedMemoryPerRecord: (after - before) / records,
      encoding: String(encoding),
    };
  } finally {
    reader.disconnect();
    await stopAgent(agent);
    await redisServer.stop();
  }
}

/**
 * Waits until the reconcile queue has run the set-up's jobs: nothing waiting or active, and at most the sweep
 * scheduler's next job delayed. Entries that came due while the streams were still opening leave lease-end batch jobs
 * behind (delayed about a lease duration); at 10,000 streams a 1 s settle measured them as idle work, and two runs
 * differed by 2× (docs/performance.md, "An idle worker's 10,000 open streams"). Polled every second, for
 * `timeoutMs` at most (default 300 s; then it measures anyway and says so).
 */
async function untilReconcileQuiet(reader: Redis, prefix: string, timeoutMs = 300_000): Promise<void> {
  const queue = `{${prefix}}:reconcile`;
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const [delayed, waiting, active] = await Promise.all([reader.zcard(`${queue}:delayed`), reader.llen(`${queue}:wait`), reader.llen(`${queue}:active`)]);
    if (delayed <= 1 && waiting === 0 && active === 0) return;
    await sleep(1_000);
  }
  console.warn(`footprint: the reconcile queue still had jobs after ${timeoutMs / 1000} s; measuring anyway`);
}

async function workerRss(streams: number) {
  const prefix = 'rss';
  // The agent in its own process (as the recovery benchmark's): in this one, beside the producer and the polling,
  // 10,000 streams starved it, and the worker's sends and streams failed with network errors.
  const rig = await startWorkerProcessRig(prefix, `slow:${TASK_MS}`);
  const { redisServer, agent, producer, reader } = rig;
  try {
    const { cardUrl } = await agent.ready;
    const worker = rig.spawn({
      REDIS_URL: redisServer.url,
      DA2A_PREFIX: prefix,
      DA2A_CONCURRENCY: `follow=${streams + 100}`,
      // One agent holds every stream here: its share is the whole follow concurrency (default: half, 90% at most).
      DA2A_FOLLOW_SLOTS_PER_AGENT: String(streams + 100),
      DA2A_SUBSCRIBE_RATE_LIMIT: '1000/1000',
      DA2A_STREAM_IDLE_TIMEOUT_MS: String(TASK_MS),
      DA2A_STREAM_QUIET_MS: String(TASK_MS),
      ...{ DA2A_LOCK_DURATION_MS: '30000', DA2A_STALLED_INTERVAL_MS: '30000', DA2A_RECONCILE_INTERVAL_MS: '30000' },
      // A profiling aid: Node options for the worker (`--cpu-prof --cpu-prof-dir=<dir>`, `--trace-gc`); with them the
      // worker is stopped by SIGTERM after the idle window, so a CPU profile is written.
    }, WORKER_NODE_ARGS, BUILT ? BUILT_MAIN : undefined);
    await worker.ready;
    const pid = worker.child.pid!;
    await sleep(1_000);
    const idle = rssBytes(pid);
    const refs = await delegateMany(producer, cardUrl, streams, { text: 'stream', keyPrefix: 'rss' });
    // One poll reads two keys per stream: every max(200 ms, streams / 20 ms), so the polling does not load the machine.
    await untilEveryRow(reader, prefix, refs, followedBy(spawnedWorkerId(pid)), 'footprint: every stream open', { intervalMs: Math.max(200, streams / 20), timeoutMs: 900_000 });
    await untilReconcileQuiet(reader, prefix);
    await sleep(1_000);
    const loaded = rssBytes(pid);
    const total = (calls: Map<string, number>) => [...calls].filter(([name]) => name !== 'info').reduce((sum, [, count]) => sum + count, 0);
    const [cpuBefore, threadsBefore, callsBefore] = [cpuSeconds(pid), cpuSecondsByThread(pid), total(await commandCalls(reader))];
    const windowStart = process.hrtime.bigint() / 1000n;
    if (WORKER_NODE_ARGS.length > 0) console.log(`footprint: idle window starts (monotonic µs ${windowStart})`);
    // With `--heapsnapshot-signal=SIGUSR2` among the Node options: a heap snapshot of the idle worker (it stalls the worker).
    if (WORKER_NODE_ARGS.some((arg) => arg.startsWith('--heapsnapshot-signal'))) worker.child.kill('SIGUSR2');
    await sleep(IDLE_WINDOW_MS);
    const [cpuAfter, threadsAfter, callsAfter] = [cpuSeconds(pid), cpuSecondsByThread(pid), total(await commandCalls(reader))];
    const threads = [...threadsAfter].map(([name, seconds]) => `${name} ${round(((seconds - (threadsBefore.get(name) ?? 0)) / (IDLE_WINDOW_MS / 1000)) * 100, 2)} %`).join(', ');
    if (WORKER_NODE_ARGS.length > 0) {
      console.log(`footprint: idle window ${windowStart} ${process.hrtime.bigint() / 1000n} (monotonic µs: bench/cpuprofile-top.ts <file> 0 40 <from> <to>)`);
      await worker.kill('SIGTERM');
    }
    return { idle, loaded, threads, idleCpuPercent: ((cpuAfter - cpuBefore) / (IDLE_WINDOW_MS / 1000)) * 100, commandsPerSecond: (callsAfter - callsBefore) / (IDLE_WINDOW_MS / 1000) };
  } finally {
    await rig.close();
  }
}
