/**
 * `pnpm tsx --conditions=@durable-a2a/source bench/script-replay.ts capture <trace.json> [delegations]`, then
 * `pnpm tsx --conditions=@durable-a2a/source bench/script-replay.ts replay <trace.json> [workflows] [rounds]`:
 * a profiling aid, not a benchmark. `capture` runs happy-path delegations (agent 10 ms, or `SCRIPT_REPLAY_AGENT_MS`; C=10) through the profiling
 * rig with MONITOR and keeps, per workflow, the journal's own client commands in order (script calls by name,
 * BullMQ's commands left out). `replay` runs those sequences again on a private redis-server, each workflow under a
 * fresh id (its task ids too), with this checkout's script texts, and prints Redis's execution time per call of each
 * script (SLOWLOG at threshold 0: µs without networking), per round. Two checkouts replaying one trace, alternately,
 * compare script versions on the same records.
 * `… script-replay.ts ab <traceA.json> <checkoutA> <traceB.json> <checkoutB> [workflows] [rounds]`: two checkouts in one
 * run on one redis-server, workflow by workflow in turn (A, B, A, …), each trace (captured by its own checkout: the
 * scripts' arguments may differ) with its checkout's script texts. On a loaded machine a change of the load reaches
 * both sides alike, which two runs one after the other cannot promise; the ratio B ÷ A per script is the figure.
 */
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { readFileSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { Redis } from 'ioredis';
import { rawScriptCaller, scriptNames, scriptSha, type ScriptName } from '../packages/shared/src/journal/scripts.ts';
import { startRedisServer } from '../test/harness/redis.ts';
import { delegateWithinConcurrency, sleep } from './common.ts';
import { startProfilingRig } from './rig.ts';

/** One client command of the journal: a script by name, or a plain command. */
type Step = { script: ScriptName; keys: string[]; args: string[] } | { command: string[] };
/** A captured workflow: its id and its journal commands in the order Redis ran them. */
interface Trace {
  workflowId: string;
  steps: Step[];
}

const PREFIX = 'cost';

/**
 * MONITOR on a plain socket, each line's arguments decoded exactly (Redis quotes them as sdscatrepr does: \\, \",
 * \n, \r, \t, \a, \b, \xHH bytes); ioredis's own monitor mode does not undo backslashes.
 */
async function rawMonitor(url: string, onCommand: (args: string[], source: string) => void): Promise<Socket> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  await once(socket, 'connect');
  socket.write('MONITOR\r\n');
  const escapes: Record<string, number> = { n: 10, r: 13, t: 9, a: 7, b: 8 };
  let pending = '';
  socket.setEncoding('latin1');
  socket.on('data', (chunk: string) => {
    pending += chunk;
    let end;
    while ((end = pending.indexOf('\r\n')) >= 0) {
      const line = pending.slice(0, end);
      pending = pending.slice(end + 2);
      const match = /^\+[\d.]+ \[\d+ ([^\]]*)\] (.*)$/.exec(line);
      if (!match) continue;
      // Each argument is quoted; inside, a quote is always escaped, so an unescaped one opens or closes an argument.
      const args: string[] = [];
      let bytes: number[] | undefined;
      const text = match[2]!;
      for (let i = 0; i < text.length; i++) {
        const c = text[i]!;
        if (c === '"') {
          if (bytes) args.push(Buffer.from(bytes).toString('utf8'));
          bytes = bytes ? undefined : [];
        } else if (!bytes) continue;
        else if (c !== '\\') bytes.push(c.charCodeAt(0));
        else if (text[i + 1] === 'x') {
          bytes.push(parseInt(text.slice(i + 2, i + 4), 16));
          i += 3;
        } else {
          const next = text[++i]!;
          bytes.push(escapes[next] ?? next.charCodeAt(0));
        }
      }
      onCommand(args, match[1]!);
    }
  });
  return socket;
}

async function capture(file: string, delegations: number): Promise<void> {
  // The agent's work (ms): `SCRIPT_REPLAY_AGENT_MS`, default 10.
  const rig = await startProfilingRig({ prefix: PREFIX, agentBehaviour: `completes:${Number(process.env.SCRIPT_REPLAY_AGENT_MS ?? 10)}`, concurrency: 10 });
  const byDigest = new Map(scriptNames().map((name) => [scriptSha(name), name]));
  const traces = new Map<string, Step[]>();
  // Workflow ids are the idempotency keys given below (`run-<n>`): they name the workflow's keys and index members.
  const workflowOf = (text: string) => /\b(?:run|warm)-\d+\b/.exec(text)?.[0];
  await delegateWithinConcurrency(rig.fleet, 5, 10, (index) => rig.producer.delegate({ agent: rig.cardUrl, text: 'do the thing', idempotencyKey: `warm-${index}` }));
  await sleep(300);
  const monitor = await rawMonitor(rig.redisUrl, (args, source) => {
    if (source.includes('lua')) return;
    const command = (args[0] ?? '').toLowerCase();
    let step: Step | undefined;
    if (command === 'evalsha' || command === 'eval') {
      const digest = command === 'eval' ? createHash('sha1').update(args[1] ?? '').digest('hex') : (args[1] ?? '');
      const script = byDigest.get(digest);
      const keyCount = Number(args[2]);
      if (script) step = { script, keys: args.slice(3, 3 + keyCount), args: args.slice(3 + keyCount) };
    } else if ((args[1] ?? '').startsWith(`${PREFIX}:`) && !['monitor', 'subscribe', 'psubscribe', 'info'].includes(command)) {
      step = { command: args };
    }
    const workflowId = step && workflowOf(args.join(' '));
    if (!step || !workflowId) return;
    traces.set(workflowId, [...(traces.get(workflowId) ?? []), step]);
  });
  await delegateWithinConcurrency(rig.fleet, delegations, 10, (index) => rig.producer.delegate({ agent: rig.cardUrl, text: 'do the thing', idempotencyKey: `run-${index}` }));
  await sleep(500);
  monitor.destroy();
  await rig.stop();
  const kept: Trace[] = [...traces.entries()].filter(([id]) => !id.startsWith('warm')).map(([workflowId, steps]) => ({ workflowId, steps }));
  writeFileSync(file, JSON.stringify(kept));
  console.log(`captured ${kept.length} workflows, ${kept.reduce((sum, trace) => sum + trace.steps.length, 0)} commands`);
}

/** The trace's text with its workflow id and the task ids its task owner keys name replaced by fresh ones. */
function renamed(trace: Trace, tag: string): Step[] {
  const text = JSON.stringify(trace.steps);
  const taskKeys = new Set(text.match(new RegExp(`${PREFIX}:task:[0-9a-f]+`, 'g')) ?? []);
  let out = text.split(trace.workflowId).join(`${tag}${trace.workflowId}`);
  for (const key of taskKeys) out = out.split(key).join(`${key}${tag}`);
  return JSON.parse(out) as Step[];
}

/** Runs `trace` once, renamed by `tag` (`renamed`): its scripts through `call`, its plain commands on `redis`. */
async function replayTrace(redis: Redis, call: (name: ScriptName, keys: string[], args: (string | number)[]) => Promise<unknown>, trace: Trace, tag: string): Promise<void> {
  for (const step of renamed(trace, tag)) {
    if ('script' in step) await call(step.script, step.keys, step.args);
    else await redis.call(step.command[0]!, ...step.command.slice(1));
  }
}

/**
 * Runs `work` with SLOWLOG logging every command (threshold 0, emptied first; `slowlog-max-len` must hold them), then
 * sets the threshold back to 10 ms. Returns the entries logged: [id, unix time, µs, arguments].
 */
async function slowlogDuring(redis: Redis, work: () => Promise<void>): Promise<[number, number, number, string[]][]> {
  await redis.config('SET', 'slowlog-log-slower-than', '0');
  await redis.slowlog('RESET');
  await work();
  await redis.config('SET', 'slowlog-log-slower-than', '10000');
  return (await redis.call('SLOWLOG', 'GET', '-1')) as [number, number, number, string[]][];
}

async function replay(file: string, workflows: number, rounds: number): Promise<void> {
  const traces = JSON.parse(readFileSync(file, 'utf8')) as Trace[];
  const server = await startRedisServer();
  const redis = new Redis(server.url);
  const call = rawScriptCaller(redis);
  const byDigest = new Map(scriptNames().map((name) => [scriptSha(name), name]));
  const run = async (round: number) => {
    for (let index = 0; index < workflows; index++) {
      await replayTrace(redis, call, traces[index % traces.length]!, `r${round}w${index}-`);
    }
  };
  await run(-1);
  await redis.config('SET', 'slowlog-max-len', '1000000');
  for (let round = 0; round < rounds; round++) {
    const entries = await slowlogDuring(redis, () => run(round));
    const tally = new Map<string, number[]>();
    for (const [, , micros, args] of entries) {
      const name = (args[0] ?? '').toLowerCase() === 'evalsha' ? byDigest.get(args[1] ?? '') : undefined;
      if (name) tally.set(name, [...(tally.get(name) ?? []), micros]);
    }
    // Mean and median: on a shared machine a call the kernel preempted counts its wait, which the median leaves out.
    const line = [...tally.entries()]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([name, all]) => {
        const sorted = all.sort((a, b) => a - b);
        const mean = sorted.reduce((sum, micros) => sum + micros, 0) / sorted.length;
        return `${name} ${mean.toFixed(1)}/${sorted[sorted.length >> 1]}`;
      })
      .join('  ');
    console.log(`round ${round} µs/call (mean/median): ${line}`);
    await sleep(50);
  }
  redis.disconnect();
  await server.stop();
}

/** One side of an A/B replay: its traces and a caller of its checkout's script texts. */
interface Side {
  tag: string;
  traces: Trace[];
  call: (name: ScriptName, keys: string[], args: (string | number)[]) => Promise<unknown>;
  byDigest: Map<string, ScriptName>;
}

async function sideOf(tag: string, file: string, checkout: string, redis: Redis): Promise<Side> {
  type Scripts = { rawScriptCaller: typeof rawScriptCaller; scriptNames: typeof scriptNames; scriptSha: typeof scriptSha };
  const scripts = (await import(`${checkout}/packages/shared/src/journal/scripts.ts`)) as Scripts;
  const byDigest = new Map(scripts.scriptNames().map((name) => [scripts.scriptSha(name), name]));
  return { tag, traces: JSON.parse(readFileSync(file, 'utf8')) as Trace[], call: scripts.rawScriptCaller(redis), byDigest };
}

async function replayAb(a: [string, string], b: [string, string], workflows: number, rounds: number): Promise<void> {
  const server = await startRedisServer();
  const redis = new Redis(server.url);
  const sides = [await sideOf('a', ...a, redis), await sideOf('b', ...b, redis)];
  const run = async (round: number) => {
    for (let index = 0; index < workflows; index++) {
      for (const side of sides) {
        await replayTrace(redis, side.call, side.traces[index % side.traces.length]!, `${side.tag}${round}w${index}-`);
      }
    }
  };
  await run(-1);
  await redis.config('SET', 'slowlog-max-len', '1000000');
  const ratios = new Map<string, number[]>();
  for (let round = 0; round < rounds; round++) {
    const entries = await slowlogDuring(redis, () => run(round));
    const tally = new Map<string, number[]>();
    for (const [, , micros, args] of entries) {
      if ((args[0] ?? '').toLowerCase() !== 'evalsha') continue;
      const key = args[3] ?? '';
      const side = sides.find(({ tag }) => key.includes(`{wf:${tag}${round}w`));
      if (!side) continue;
      // The side by its tagged workflow key, the script by the side's own digests.
      const script = side.byDigest.get(args[1] ?? '');
      // applyStatus by the state it applies (ARGV[4]): the send's answer and the terminal status apart.
      const name = script === 'applyStatus' ? `${script}:${args[11] ?? ''}` : script;
      if (name) tally.set(`${name} ${side.tag}`, [...(tally.get(`${name} ${side.tag}`) ?? []), micros]);
    }
    const median = (all: number[]) => all.sort((x, y) => x - y)[all.length >> 1]!;
    const scripts = [...new Set([...tally.keys()].map((key) => key.slice(0, -2)))].sort();
    const line = scripts.map((name) => {
      const [ma, mb] = [median(tally.get(`${name} a`) ?? [0]), median(tally.get(`${name} b`) ?? [0])];
      ratios.set(name, [...(ratios.get(name) ?? []), mb / ma]);
      return `${name} ${ma}/${mb}`;
    });
    console.log(`round ${round} median µs/call A/B: ${line.join('  ')}`);
    await sleep(50);
  }
  for (const [name, all] of ratios) console.log(`${name}: B ÷ A median of rounds ${median3(all).toFixed(3)} (${all.map((r) => r.toFixed(2)).join(' ')})`);
  redis.disconnect();
  await server.stop();
}

const median3 = (all: number[]) => [...all].sort((x, y) => x - y)[all.length >> 1]!;

const [mode, file = '/tmp/script-trace.json', first, second, third, fourth, fifth] = process.argv.slice(2);
if (mode === 'capture') await capture(file, Number(first ?? '20'));
else if (mode === 'replay') await replay(file, Number(first ?? '200'), Number(second ?? '3'));
else if (mode === 'ab') await replayAb([file, first!], [second!, third!], Number(fourth ?? '200'), Number(fifth ?? '3'));
else throw new Error('usage: script-replay.ts capture|replay|ab <trace.json> …');
process.exit(0);
