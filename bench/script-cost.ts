/**
 * `pnpm tsx --conditions=@durable-a2a/source bench/script-cost.ts [delegations] [agentBehaviour] [concurrency]`:
 * a profiling aid, not a benchmark. Runs N happy-path delegations through the profiling rig with Redis SLOWLOG
 * recording every command (threshold 0), then prints Redis time per delegation by script (journal scripts by
 * name, BullMQ scripts by their first key) and by plain command. Slowlog durations are Redis's own execution
 * time in µs, without networking.
 */
import { Redis } from 'ioredis';
import { scriptNames, scriptSha } from '../packages/shared/src/journal/scripts.ts';
import { delegateWithinConcurrency, sleep } from './common.ts';
import { startProfilingRig } from './rig.ts';

const delegations = Number(process.argv[2] ?? '500');
const agentBehaviour = process.argv[3] ?? 'completes:10';
const concurrency = Number(process.argv[4] ?? '10');
const rig = await startProfilingRig({ prefix: 'cost', agentBehaviour, concurrency });
const { redisUrl, cardUrl, producer, fleet } = rig;
// By the digest the journal runs (a script's text may be written into at load, and composed ones have no file).
const names = new Map<string, string>(scriptNames().map((name) => [scriptSha(name), name]));
const run = (count: number, tag: string) =>
  delegateWithinConcurrency(fleet, count, concurrency, (index) => producer.delegate({ agent: cardUrl, text: 'do the thing', idempotencyKey: `${tag}-${index}` }));
await run(20, 'warm');
await sleep(300);
const admin = new Redis(redisUrl);
await admin.config('SET', 'slowlog-max-len', '1000000');
await admin.config('SET', 'slowlog-log-slower-than', '0');
await admin.slowlog('RESET');
await run(delegations, 'run');
await sleep(300);
await admin.config('SET', 'slowlog-log-slower-than', '10000');
const entries = (await admin.call('SLOWLOG', 'GET', '-1')) as [number, number, number, string[]][];
const tally = new Map<string, { calls: number; micros: number; each: number[] }>();
const shape = (text: string) =>
  text
    .replace(/\{wf:[^}]*\}/g, '{wf}')
    .replace(/send\|[^:]*/g, '<job>')
    .replace(/:task:[0-9a-f]+/g, ':task:<hex>');
for (const [, , micros, args] of entries) {
  const command = (args[0] ?? '').toLowerCase();
  if (command === 'slowlog' || command === 'config') continue;
  const sha = args[1] ?? '';
  const line = command === 'evalsha' ? `script ${names.get(sha) ?? `bullmq ${shape(args[3] ?? sha.slice(0, 8))} (${args[2] ?? "?"} keys)`}` : `${command} ${shape(args[1] ?? '')}`;
  const entry = tally.get(line) ?? { calls: 0, micros: 0, each: [] };
  entry.calls += 1;
  entry.micros += micros;
  entry.each.push(micros);
  tally.set(line, entry);
}
let total = 0;
// The median call too: on a loaded machine a call the kernel preempted counts its wait, which the mean carries.
const median = (values: number[]) => [...values].sort((x, y) => x - y)[values.length >> 1] ?? 0;
let totalOfMedians = 0;
for (const [line, { calls, micros, each }] of [...tally.entries()].sort((a, b) => b[1].micros - a[1].micros)) {
  total += micros;
  totalOfMedians += median(each) * calls;
  if (micros / delegations >= 0.5) console.log(`${(micros / delegations).toFixed(1).padStart(7)} µs ${(calls / delegations).toFixed(2).padStart(6)} calls  ${(micros / calls).toFixed(1).padStart(6)} µs/call  median ${String(median(each)).padStart(4)} µs  ${line}`);
}
console.log(`per delegation by the median call: ${(totalOfMedians / delegations).toFixed(1)} µs`);
console.log(`per delegation: ${(total / delegations).toFixed(1)} µs of Redis command time (${entries.length} slowlog entries)`);
admin.disconnect();
await rig.stop();
process.exit(0);
