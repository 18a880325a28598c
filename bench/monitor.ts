/**
 * `pnpm tsx --conditions=@durable-a2a/source bench/monitor.ts [delegations]`:
 * a profiling aid, not a benchmark. Runs N happy-path delegations (default
 * 50, at most 10 unsettled at once; agent 10 ms in its own process) through a producer and
 * an in-process fleet with Redis MONITOR attached, then prints the commands
 * per delegation by command and key shape (ids replaced by `<id>`), split into
 * calls from clients and calls from inside scripts (`lua`). The warm-up and the
 * idle blocking reads of the workers are included, as in production.
 * `MONITOR_LOCAL_FOLLOW_SLOTS=0` measures with follow jobs only (as before local follows).
 */
import { startMonitor } from '@durable-a2a/testing';
import { delegateWithinConcurrency, sleep } from './common.ts';
import { startProfilingRig } from './rig.ts';

const delegations = Number(process.argv[2] ?? '50');
const rig = await startProfilingRig({
  prefix: 'mon',
  agentBehaviour: 'completes:10',
  concurrency: 10,
  fleet: process.env.MONITOR_LOCAL_FOLLOW_SLOTS ? { localFollowSlots: Number(process.env.MONITOR_LOCAL_FOLLOW_SLOTS) } : {},
});
const { redisUrl, cardUrl, producer, fleet } = rig;
const run = async (count: number, tag: string) => {
  // At most 10 unsettled at once (the fleet's send and follow concurrency), as in the benchmarks.
  await delegateWithinConcurrency(fleet, count, 10, (index) => producer.delegate({ agent: cardUrl, text: 'do the thing', idempotencyKey: `${tag}-${index}` }));
  await sleep(300);
};
await run(5, 'warm');
const monitor = await startMonitor(redisUrl);
const tally = new Map<string, number>();
const shape = (text: string) =>
  text
    .replace(/\b(run|warm)-\d+/g, '<wf>')
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '<id>')
    .replace(/[0-9a-f]{40,64}/g, '<hex>')
    .replace(/\b\d{4,}\b/g, '<n>');
monitor.on('monitor', (_time: string, args: string[], source: string) => {
  const command = (args[0] ?? '').toLowerCase();
  const key = command === 'evalsha' ? `${(args[1] ?? '').slice(0, 8)} ${args[3] ?? ''}` : (args[1] ?? '');
  const from = source.includes('lua') ? 'lua' : 'client';
  const line = `${from.padEnd(6)} ${command} ${shape(key)}`;
  tally.set(line, (tally.get(line) ?? 0) + 1);
  // BENCH_MONITOR_TRACE=1: every command in order (for one or a few delegations).
  if (process.env.BENCH_MONITOR_TRACE === '1' && !/marker|bzpopmin/.test(line)) console.log('  ', line);
});
await run(delegations, 'run');
monitor.disconnect();
let client = 0;
let lua = 0;
for (const [line, count] of [...tally.entries()].sort((a, b) => b[1] - a[1])) {
  const per = count / delegations;
  if (line.startsWith('lua')) lua += per;
  else client += per;
  if (per >= 0.05) console.log(per.toFixed(2).padStart(7), line);
}
console.log(`per delegation: ${client.toFixed(1)} client commands, ${lua.toFixed(1)} inside scripts`);
await rig.stop();
process.exit(0);
