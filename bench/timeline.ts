/**
 * `pnpm tsx --conditions=@durable-a2a/source bench/timeline.ts [delegations]`:
 * a profiling aid, not a benchmark. Runs N sequential happy-path delegations
 * (concurrency 1, agent 0 ms in its own process) through a producer and an
 * in-process fleet with Redis MONITOR attached, as the C=1 latency benchmark
 * does (delegate + waitFor), and prints the median delegation's Redis commands
 * in order with the milliseconds since its first command and since the
 * previous one: the gaps show where the added latency goes (round trips,
 * queue hops, HTTP to the agent, wake-ups).
 */
import { startMonitor } from '@durable-a2a/testing';
import { sleep } from './common.ts';
import { startProfilingRig } from './rig.ts';

const delegations = Number(process.argv[2] ?? '30');
const rig = await startProfilingRig({ prefix: 'tl', agentBehaviour: 'completes:0', concurrency: 1 });
const { redisUrl, cardUrl, producer } = rig;
const once = async (tag: string) => {
  const started = performance.now();
  const { id: workflowId } = await producer.delegate({ agent: cardUrl, text: 'do the thing', idempotencyKey: tag });
  await producer.waitFor(workflowId, { timeoutMs: 10_000 });
  return performance.now() - started;
};
for (let index = 0; index < 10; index++) await once(`warm-${index}`);
await sleep(200);
const monitor = await startMonitor(redisUrl);
const lines: { at: number; tag: string; line: string }[] = [];
let current = '';
monitor.on('monitor', (time: string, args: string[], source: string) => {
  const command = (args[0] ?? '').toLowerCase();
  if (/bzpopmin/.test(command)) return;
  const key = command === 'evalsha' ? `${(args[1] ?? '').slice(0, 8)} ${args[3] ?? ''}` : (args[1] ?? '');
  lines.push({ at: Number(time) * 1000, tag: current, line: `${source.includes('lua') ? 'lua   ' : 'client'} ${command} ${key.replace(/run-\d+/g, '<wf>')}` });
});
await sleep(100);
const totals: { tag: string; ms: number }[] = [];
for (let index = 0; index < delegations; index++) {
  current = `run-${index}`;
  totals.push({ tag: current, ms: await once(current) });
  await sleep(20);
}
await sleep(200);
monitor.disconnect();
const sorted = [...totals].sort((a, b) => a.ms - b.ms);
const median = sorted[Math.floor(sorted.length / 2)]!;
console.log(`end-to-end ms: p50 ${median.ms.toFixed(2)}, min ${sorted[0]!.ms.toFixed(2)}, max ${sorted.at(-1)!.ms.toFixed(2)}`);
const mine = lines.filter((entry) => entry.tag === median.tag && !entry.line.startsWith('lua'));
const first = mine[0]?.at ?? 0;
let previous = first;
for (const entry of mine) {
  console.log(`${(entry.at - first).toFixed(2).padStart(8)} +${(entry.at - previous).toFixed(2).padStart(6)}  ${entry.line.slice(0, 110)}`);
  previous = entry.at;
}
await rig.stop();
process.exit(0);
