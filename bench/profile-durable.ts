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
import { delegateWithinConcurrency } from './common.ts';
import { startProfilingRig } from './rig.ts';

const CONCURRENCY = 50;
const delegations = Number(process.argv[2] ?? '2000');
const profilePath = process.argv[3] ?? '/tmp/durable.cpuprofile';
const rig = await startProfilingRig({ prefix: 'profile', agentBehaviour: process.env.PROFILE_AGENT_BEHAVIOUR ?? 'completes:0', concurrency: CONCURRENCY });
const { cardUrl, producer, fleet } = rig;
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
  await rig.stop();
}
