/**
 * `pnpm tsx --conditions=@durable-a2a/source bench/profile-recovery.ts [inFlight] [dir] [history]`:
 * a profiling aid, not a benchmark. Fills `history` finished records first (default 0; cloned as the recovery
 * benchmark does, bench/history.ts), sets up `inFlight` follows (default 2,000) on one worker process with
 * production timings, SIGKILLs it, starts a fresh one under `node --cpu-prof` (profile written to `dir` on its
 * graceful exit), prints how many records the fresh worker holds every 500 ms and the Redis commands (INFO
 * commandstats) from the kill to the last reattach, then SIGTERMs the fresh worker so the profile is written.
 * Run it with and without history: the commands per record must not change (recovery reads the unfinished index).
 * It also prints the fresh worker's CPU seconds from ready to the last reattach (per record: the figure to compare
 * A/B on a loaded machine), the same by thread (JavaScript's main thread, V8's GC and compiler threads, the profiler's)
 * and the window from ready to the last reattach in the profile's clock, for `bench/cpuprofile-top.ts` (the start-up
 * and the close after the SIGTERM left out). `PROFILE_MONITOR=1`: Redis MONITOR from the kill to the last reattach, the commands per
 * record by key shape (this aid's own polling left out). `PROFILE_STALL_MS`: how long no new reattach may last before
 * the aid prints what is left and stops (default 10,000; a loaded machine needs more). `PROFILE_NODE_OPTIONS`: more Node flags for the fresh worker.
 * `PROFILE_RESTART_DELAY_MS`: how long after the SIGKILL the fresh worker is started (default 0; longer than the
 * liveness TTL, 3 s, for a restart that finds the dead worker's liveness key gone, as most real restarts do).
 */
import { Redis } from 'ioredis';
import { createProducer } from '@durable-a2a/producer';
import { startMonitor, startRedisServer } from '../test/harness/redis.ts';
import { spawnWorkerProcess } from '../test/harness/fleet.ts';
import { readdirSync, readFileSync } from 'node:fs';
import { startDemoAgent } from '../test/harness/agent.ts';
import { completesWith } from '../test/harness/agent-behaviours.ts';
import { callsDelta, commandCalls, loadAverage1, mapLimit, PRODUCTION_TIMINGS, readLeasesAndStates, redisCpuSeconds, sleep, spawnedWorkerId, stopAgent } from './common.ts';
import { cloneFinishedWorkflow } from './history.ts';
import { spawnBenchChild } from './processes/ipc.ts';

const inFlight = Number(process.argv[2] ?? '2000');
const dir = process.argv[3] ?? '/tmp';
const history = Number(process.argv[4] ?? '0');
/** No record reattached for this long (ms; `PROFILE_STALL_MS`, default 10 s): print what the records left look like and stop. */
const stallMs = Number(process.env.PROFILE_STALL_MS ?? '10000');
/** How long after the SIGKILL the fresh worker is started (ms; `PROFILE_RESTART_DELAY_MS`, default 0). */
const restartDelayMs = Number(process.env.PROFILE_RESTART_DELAY_MS ?? '0');
/** `PROFILE_TAIL`: from this share of records reattached on, describe the records left every tick (0: never). */
const tailFrom = Number(process.env.PROFILE_TAIL ?? '0');
const prefix = 'profrec';
const redisServer = await startRedisServer();
const agent = spawnBenchChild<{ cardUrl: string }>('agent', { BENCH_AGENT_BEHAVIOUR: 'slow:600000' });
const { cardUrl } = await agent.ready;
const environment = {
  ...PRODUCTION_TIMINGS,
  REDIS_URL: redisServer.url,
  DA2A_PREFIX: prefix,
  DA2A_CONCURRENCY: `follow=${inFlight + 100},send=50`,
  DA2A_FOLLOW_SLOTS_PER_AGENT: String(inFlight + 100),
  DA2A_SUBSCRIBE_RATE_LIMIT: '10000/1000',
  DA2A_STREAM_QUIET_MS: '600000',
};
const first = spawnWorkerProcess(environment);
await first.ready;
const producer = createProducer({ redis: redisServer.url, addressPolicy: { allowLoopback: true }, prefix });
const reader = new Redis(redisServer.url);
if (history > 0) {
  const fast = await startDemoAgent({ behaviour: completesWith('a finished job') });
  const { id } = await producer.delegate({ agent: fast.cardUrl, text: 'a finished job' });
  await producer.waitFor(id, { timeoutMs: 60_000 });
  await cloneFinishedWorkflow(reader, prefix, id, history, { onProgress: (written, count, ms) => console.log(`history fill: ${written} of ${count} (${(ms / 1000).toFixed(1)} s)`) });
  await stopAgent(fast);
}
const refs = await mapLimit(Array.from({ length: inFlight }), 50, async (_, index) => {
  const { id } = await producer.delegate({ agent: cardUrl, text: `job ${index}`, idempotencyKey: `p-${index}` });
  return { workflowId: id, delegationId: 'main.1' };
});
const firstId = spawnedWorkerId(first.child.pid!);
for (let tick = 0; ; tick++) {
  const rows = await readLeasesAndStates(reader, prefix, refs);
  const followed = rows.filter((row) => row.lease?.startsWith(`${firstId}/`) && row.state === 'WORKING').length;
  if (followed === inFlight) break;
  if (tick % 10 === 0) console.log(`set-up: ${followed} of ${inFlight} followed by the first worker`);
  if (tick === 600) throw new Error(`set-up: ${followed} of ${inFlight} followed after 300 s; gave up`);
  await sleep(500);
}
console.log(`${inFlight} followed; load average ${loadAverage1()}; SIGKILL`);
await first.kill('SIGKILL');
const killedAt = performance.now();
const before = await commandCalls(reader);
// PROFILE_MONITOR=1: Redis MONITOR from the kill to the last reattach, commands by shape per record (this aid's own polling left out).
const tally = new Map<string, number>();
const monitor = process.env.PROFILE_MONITOR === '1' ? await startMonitor(redisServer.url) : undefined;
const readerAddress = /addr=(\S+)/.exec(String(await reader.call('CLIENT', 'INFO')))?.[1] ?? '';
monitor?.on('monitor', (_time: string, args: string[], source: string) => {
  if (source.endsWith(readerAddress)) return;
  const command = (args[0] ?? '').toLowerCase();
  const key = command === 'evalsha' ? `${(args[1] ?? '').slice(0, 8)} ${args[3] ?? ''}` : (args[1] ?? '');
  const line = `${source.includes('lua') ? 'lua' : 'client'} ${command} ${keyShape(key.slice(0, 120))}`;
  tally.set(line, (tally.get(line) ?? 0) + 1);
});
const redisCpuBefore = await redisCpuSeconds(reader);
const agentCpuBefore = cpuSeconds(agent.child.pid!);
if (restartDelayMs > 0) await sleep(restartDelayMs);
const second = spawnWorkerProcess({ ...environment, NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${dir} ${process.env.PROFILE_NODE_OPTIONS ?? ''}`, ...(process.env.SECOND_LOG_LEVEL ? { LOG_LEVEL: process.env.SECOND_LOG_LEVEL } : {}) });
await second.ready;
console.log(`fresh worker ready after ${((performance.now() - killedAt) / 1000).toFixed(2)} s`);
const workerCpuAtReady = cpuSeconds(second.child.pid!);
const threadsAtReady = cpuByThread(second.child.pid!);
const readyMicros = monotonicMicros();
let lastReattachMicros = readyMicros;
const secondId = spawnedWorkerId(second.child.pid!);
let lastHeld = -1;
let sameSince = performance.now();
for (let tick = 0; tick < 600; tick++) {
  const rows = await readLeasesAndStates(reader, prefix, refs);
  const held = rows.filter((row) => row.lease?.startsWith(`${secondId}/`)).length;
  lastReattachMicros = monotonicMicros();
  console.log(`${((performance.now() - killedAt) / 1000).toFixed(2)} s after the kill: ${held} reattached`);
  if (held === inFlight) break;
  if (tailFrom > 0 && held >= tailFrom * inFlight) await describeTail(rows);
  if (held !== lastHeld) [lastHeld, sameSince] = [held, performance.now()];
  if (performance.now() - sameSince > stallMs) {
    await diagnose(rows);
    break;
  }
  await sleep(500);
}

/**
 * `PROFILE_TAIL=<fraction>` (e.g. 0.8): once that share is reattached, every tick prints the shapes of the records left
 * (state, lease holder: the dead worker, another, none; seconds to their next check) and the queues' counts, without stopping.
 */
async function describeTail(rows: Awaited<ReturnType<typeof readLeasesAndStates>>) {
  const missing = refs.filter((_, index) => !rows[index]!.lease?.startsWith(`${secondId}/`));
  const pipeline = reader.pipeline();
  for (const ref of missing) pipeline.zscore(`${prefix}:unfinished`, `${ref.workflowId}|${ref.delegationId}`);
  const scores = ((await pipeline.exec()) ?? []).map(([, score]) => score as string | null);
  const now = Date.now();
  const shapes = new Map<string, number>();
  missing.forEach((ref, index) => {
    const row = rows[refs.indexOf(ref)]!;
    const holder = row.lease ? (row.lease.split('/')[0] === firstId ? 'dead' : 'other') : 'none';
    const score = scores[index];
    const due = score === null || score === undefined ? 'none' : `${Math.round((Number(score) - now) / 1000)}s`;
    const shape = `${row.state} lease=${holder} due=${due}`;
    shapes.set(shape, (shapes.get(shape) ?? 0) + 1);
  });
  const queues = await Promise.all(['follow', 'reconcile'].map(async (queue) => `${queue} wait=${await reader.llen(`{${prefix}}:${queue}:wait`)} active=${await reader.llen(`{${prefix}}:${queue}:active`)} prioritized=${await reader.zcard(`{${prefix}}:${queue}:prioritized`)} delayed=${await reader.zcard(`{${prefix}}:${queue}:delayed`)}`));
  console.log(`  tail: ${JSON.stringify([...shapes].sort((a, b) => b[1] - a[1]).slice(0, 8))}; ${queues.join('; ')}`);
}

/** Prints what the records not reattached look like: state, lease holder, index score; and the queues. */
async function diagnose(rows: Awaited<ReturnType<typeof readLeasesAndStates>>) {
  const shapes = new Map<string, number>();
  const now = Date.now();
  for (const [index, row] of rows.entries()) {
    if (row.lease?.startsWith(`${secondId}/`)) continue;
    const ref = refs[index]!;
    const score = await reader.zscore(`${prefix}:unfinished`, `${ref.workflowId}|${ref.delegationId}`);
    const due = score === null ? 'none' : `${Math.round((Number(score) - now) / 1000)}s`;
    const shape = `${row.state} lease=${row.lease ? row.lease.split('/')[0] === firstId ? 'dead' : 'other' : 'none'} due=${due}`;
    shapes.set(shape, (shapes.get(shape) ?? 0) + 1);
  }
  console.log('stalled; records not reattached:', JSON.stringify([...shapes].sort((a, b) => b[1] - a[1]).slice(0, 20)));
  for (const queue of ['follow', 'reconcile', 'send']) {
    const counts = await Promise.all(['wait', 'active', 'delayed', 'prioritized', 'failed'].map(async (state) => `${state}=${await reader.call(state === 'wait' || state === 'active' ? 'LLEN' : state === 'failed' || state === 'delayed' || state === 'prioritized' ? 'ZCARD' : 'LLEN', `{${prefix}}:${queue}:${state}`)}`));
    console.log(queue, counts.join(' '));
  }
  console.log('unfinished keys sample:', (await reader.keys(`${prefix}:unf*`)).slice(0, 3));
}
monitor?.disconnect();
for (const [line, count] of [...tally].sort((a, b) => b[1] - a[1])) if (count / inFlight >= 0.05) console.log((count / inFlight).toFixed(2).padStart(7), line);
const cpu = { worker: cpuSeconds(second.child.pid!), agent: cpuSeconds(agent.child.pid!) - agentCpuBefore, redis: (await redisCpuSeconds(reader)) - redisCpuBefore };
console.log(`${history} finished records; SIGKILL → last reattach ${((performance.now() - killedAt) / 1000).toFixed(2)} s (to 0.5 s), load average ${loadAverage1()}`);
console.log(`CPU seconds kill → all reattached: ${JSON.stringify(cpu)}`);
const afterReady = cpu.worker - workerCpuAtReady;
console.log(`fresh worker CPU from ready to the last reattach: ${afterReady.toFixed(2)} s (${((afterReady * 1000) / inFlight).toFixed(2)} ms per record)`);
const threadsAfter = cpuByThread(second.child.pid!);
const byThread = [...threadsAfter].map(([name, seconds]) => [name, seconds - (threadsAtReady.get(name) ?? 0)] as const).filter(([, seconds]) => seconds > 0);
console.log(`the same by thread: ${byThread.map(([name, seconds]) => `${name} ${seconds.toFixed(2)} s`).join(', ')}`);
console.log(`profile window, ready to the last reattach (µs, the profile's clock): pnpm tsx bench/cpuprofile-top.ts <${dir}/CPU…cpuprofile> 0 30 ${readyMicros} ${lastReattachMicros}`);
const delta = [...callsDelta(before, await commandCalls(reader))].sort((a, b) => b[1] - a[1]);
const total = delta.reduce((sum, [, calls]) => sum + calls, 0);
console.log(`Redis commands kill → all reattached: ${total} (${(total / inFlight).toFixed(1)} per record)`);
console.log(delta.slice(0, 25).map(([name, calls]) => `${name} ${(calls / inFlight).toFixed(2)}`).join(', '));
await second.kill('SIGTERM');
reader.disconnect();
await producer.close();
await agent.stop();
await redisServer.stop();
process.exit(0);

/** A key with its ids, numbers and hashes replaced, so the keys of every record count as one shape. */
function keyShape(key: string): string {
  return key
    .replace(/\{wf:[^}]*\}/g, '{wf:<id>}')
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '<id>')
    .replace(/[0-9a-f]{40,64}/g, '<hex>')
    .replace(/\b\d{4,}\b/g, '<n>');
}

/** Now on the monotonic clock a V8 CPU profile's `startTime` and `timeDeltas` are on, in µs. */
function monotonicMicros(): number {
  return Number(process.hrtime.bigint() / 1000n);
}

/**
 * User + system CPU seconds of a process's threads so far, by thread name (Linux /proc/<pid>/task; threads of one
 * name summed): `MainThread` runs JavaScript, `V8Worker` the concurrent and parallel GC and the optimizing compilers,
 * `v8:ProfEvntProc` the CPU profiler itself, `libuv-worker` the thread pool.
 */
function cpuByThread(pid: number): Map<string, number> {
  const byName = new Map<string, number>();
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    try {
      const name = readFileSync(`/proc/${pid}/task/${task}/comm`, 'utf8').trim();
      const fields = readFileSync(`/proc/${pid}/task/${task}/stat`, 'utf8').split(') ')[1]!.split(' ');
      byName.set(name, (byName.get(name) ?? 0) + (Number(fields[11]) + Number(fields[12])) / 100);
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return byName;
}

/** User + system CPU seconds of a process so far (Linux /proc/<pid>/stat, 100 ticks per second). */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}
