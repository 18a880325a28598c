/**
 * `pnpm tsx --conditions=@durable-a2a/source bench/monitor-peers.ts [side] [delegations] [concurrency]`: a profiling
 * aid, not a benchmark. Starts one side of the peers benchmark (`naive` or `durable-separate`, default the latter)
 * as `pnpm bench peers` does, each process on its own, with the same agent (0 ms of work), runs a warm-up round,
 * then N delegations (default 500, C=50) with Redis MONITOR attached, and prints per delegation: the commands each
 * process sent (client, worker; by command and key shape), those run inside scripts, how many times each
 * process wrote to Redis (a MONITOR batch of one connection in one event-loop turn counts once: a round trip), and
 * the write and read system calls of each process, and the requests that reached the agent, by method.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { startMonitor } from '@durable-a2a/testing';
import { spawnBenchChild } from './processes/ipc.ts';
import { startSide, type SideName } from './peers/sides.ts';

const sideName = (process.argv[2] ?? 'durable-separate') as SideName;
const delegations = Number(process.argv[3] ?? '500');
const concurrency = Number(process.argv[4] ?? '50');
const agent = spawnBenchChild<{ cardUrl: string; baseUrl: string }>('agent', { BENCH_AGENT_BEHAVIOUR: 'completes:0' });
const { cardUrl, baseUrl } = await agent.ready;
const side = await startSide(sideName, { concurrency, workerEnvironment: {} });
const [clientPid, workerPid, redisPid] = side.pids();

/** The pid of the process holding the local end `port` of a connection to redis-server (from `ss -tnp`). */
function ownersOfPorts(): Map<string, string> {
  const owners = new Map<string, string>();
  const lines = execFileSync('ss', ['-tnpH'], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 }).split('\n');
  for (const line of lines) {
    const match = /\S+\s+\d+\s+\d+\s+(\S+):(\d+)\s+\S+\s+users:\(\("[^"]+",pid=(\d+)/.exec(line);
    if (!match) continue;
    const pid = Number(match[3]);
    const role = pid === clientPid ? 'client' : pid === workerPid ? 'worker' : pid === redisPid ? undefined : `pid ${pid}`;
    if (role) owners.set(`${match[1]}:${match[2]}`, role);
  }
  return owners;
}

/** Write and read system calls of `pid` so far (`/proc/<pid>/io`: syscw, syscr). */
function systemCalls(pid: number | undefined): { writes: number; reads: number } {
  const text = readFileSync(`/proc/${pid}/io`, 'utf8');
  const field = (name: string) => Number(new RegExp(`${name}: (\\d+)`).exec(text)?.[1] ?? 0);
  return { writes: field('syscw'), reads: field('syscr') };
}

const shape = (text: string) =>
  text
    .replace(/\bw0-c\d+-(r|warm)\d*-\d+/g, '<wf>')
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '<id>')
    .replace(/[0-9a-f]{40,64}/g, '<hex>')
    .replace(/\b\d{4,}\b/g, '<n>');

try {
  const input = (tag: string, count: number) => ({ cardUrl, baseUrl, count, concurrency, tag: `w0-c${concurrency}-${tag}` });
  await side.round(input('warm', 100));
  const methods = ['SendMessage', 'SendStreamingMessage', 'GetTask', 'SubscribeToTask', 'GetAgentCard'];
  const requestCounts = () => Promise.all(methods.map((method) => agent.call<number>('requestCount', method)));
  const requestsBefore = await requestCounts();
  const listening = execFileSync('ss', ['-tlnpH'], { encoding: 'utf8' }).split('\n').find((line) => line.includes(`pid=${redisPid},`));
  if (!listening) throw new Error(`redis-server ${redisPid} listens on no TCP port`);
  const redisUrl = `redis://${listening.split(/\s+/)[3]}`;
  const monitor = await startMonitor(redisUrl);
  const owners = ownersOfPorts();
  const tally = new Map<string, number>();
  const writes = new Map<string, number>();
  let lastBatch = '';
  monitor.on('monitor', (_time: string, args: string[], source: string) => {
    const command = (args[0] ?? '').toLowerCase();
    const key = command === 'evalsha' ? `${(args[1] ?? '').slice(0, 8)} ${args[3] ?? ''}` : (args[1] ?? '');
    const address = source.split(' ').pop() ?? '';
    const from = source.includes('lua') ? 'lua' : (owners.get(address) ?? `? ${address}`);
    const line = `${from.padEnd(7)} ${command} ${shape(key)}`;
    tally.set(line, (tally.get(line) ?? 0) + 1);
    // Commands of one connection that follow each other without another connection's between: one write (a round trip).
    if (from !== 'lua' && address !== lastBatch) writes.set(from, (writes.get(from) ?? 0) + 1);
    if (from !== 'lua') lastBatch = address;
  });
  const callsBefore = [clientPid, workerPid].map(systemCalls);
  await side.round(input('r', delegations));
  const calls = [clientPid, workerPid].map(systemCalls).map((after, index) => ({ writes: after.writes - callsBefore[index]!.writes, reads: after.reads - callsBefore[index]!.reads }));
  monitor.disconnect();
  const requests = (await requestCounts()).map((count, index) => `${methods[index]} ${((count - requestsBefore[index]!) / delegations).toFixed(2)}`);
  const totals = new Map<string, number>();
  for (const [line, count] of [...tally.entries()].sort((a, b) => b[1] - a[1])) {
    const per = count / delegations;
    const from = line.split(' ')[0]!;
    totals.set(from, (totals.get(from) ?? 0) + per);
    if (per >= 0.05) console.log(per.toFixed(2).padStart(7), line);
  }
  console.log(`per delegation (${sideName}, C=${concurrency}, ${delegations} delegations):`);
  for (const [from, per] of totals) console.log(`  ${from}: ${per.toFixed(1)} commands${writes.has(from) ? `, ${(writes.get(from)! / delegations).toFixed(1)} writes (round trips at most)` : ''}`);
  ['client', 'worker'].forEach((role, index) => console.log(`  ${role} system calls: ${(calls[index]!.writes / delegations).toFixed(1)} writes, ${(calls[index]!.reads / delegations).toFixed(1)} reads`));
  console.log(`  agent requests: ${requests.join(', ')}`);
} finally {
  await side.stop();
  await agent.stop();
}
process.exit(0);
