/**
 * `pnpm tsx --conditions=@durable-a2a/source bench/script-ir.ts <trace.json> <checkout> [copies] [out dir]`: a
 * profiling aid, not a benchmark. redis-server's instructions per call of each journal step (valgrind callgrind, `Ir`),
 * for a trace captured with `bench/script-replay.ts capture`, replayed with `checkout`'s script texts on a private
 * redis-server run under callgrind. Instruction counts do not move with the machine's load, so two checkouts are
 * compared in two runs one after the other (each with its own trace: the scripts' arguments may differ). Each shape of
 * trace is replayed `copies` times (default 200) under fresh ids, step by step (one pipeline per step): the counters
 * are dumped around each step, and a step of PINGs gives the per-call floor of a round trip. The dumps stay in
 * `out dir` (default a temporary one) for `callgrind_annotate`. `SCRIPT_IR_OVERRIDE=name=file.lua,…` replays those
 * scripts' texts from files instead (what-if variants: a `do return … end` inserted at a line gives the cost up to it).
 * Each step is printed with all of redis-server's instructions per call and those inside Redis's `call()` (the commands
 * alone: `insideCall`); the server logs no slow commands (under valgrind every script is "slow", and the log's copies of
 * the arguments counted). Needs valgrind (`apt-get install valgrind`).
 *
 * What it showed on 2026-12-06 (redis-server 7.0.15): an EVALSHA costs about 11,000 instructions bare and 1,000 more
 * per argument (parsing, a Lua string hashed byte by byte, the KEYS/ARGV tables grown one slot at a time); a prelude
 * table about 300 per entry; a Lua string pattern match or library call 1,000 to 4,000; every string made in Lua
 * (replies, concatenations) about 7 per byte.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Redis } from 'ioredis';
import { sleep } from './common.ts';

type Step = { script: string; keys: string[]; args: string[] } | { command: string[] };
interface Trace {
  workflowId: string;
  steps: Step[];
}

const [file, checkout, copiesText = '200', outArg] = process.argv.slice(2);
if (!file || !checkout) throw new Error('usage: script-ir.ts <trace.json> <checkout> [copies] [out dir]');
const copies = Number(copiesText);
// Made when named (callgrind cannot write its dumps into a missing directory: the server then never answers).
const out = outArg ?? mkdtempSync(join(tmpdir(), 'script-ir-'));
mkdirSync(out, { recursive: true });
const { scriptText } = (await import(`${resolve(checkout)}/packages/shared/src/journal/scripts.ts`)) as { scriptText: (name: string) => string };
const shapeOf = (trace: Trace) => trace.steps.map((step) => ('script' in step ? step.script : step.command[0])).join(',');

function renamed(trace: Trace, tag: string): Step[] {
  const text = JSON.stringify(trace.steps);
  let renamedText = text.split(trace.workflowId).join(`${tag}${trace.workflowId}`);
  for (const key of new Set(text.match(/cost:task:[0-9a-f]+/g) ?? [])) renamedText = renamedText.split(key).join(`${key}${tag}`);
  return JSON.parse(renamedText) as Step[];
}

const port = 20000 + Math.floor(Math.random() * 20000);
const server = spawn('valgrind', ['--tool=callgrind', `--callgrind-out-file=${out}/cg.%p`, '--dump-instr=no', 'redis-server', '--port', String(port), '--save', '', '--appendonly', 'no', '--slowlog-log-slower-than', '-1'], { stdio: 'ignore' });
/** A fresh connection per try until the server answers (callgrind starts it slowly). */
async function connected(): Promise<Redis> {
  for (let tries = 0; ; tries++) {
    const client = new Redis({ port, lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 });
    client.on('error', () => {});
    try {
      await client.connect();
      await client.ping();
      return client;
    } catch (error) {
      client.disconnect();
      if (tries > 150) throw error;
      await sleep(200);
    }
  }
}
// The server goes with this process, whatever ends it (a what-if variant whose replies break a later step).
process.on('exit', () => server.kill('SIGTERM'));
const redis = await connected();

let dumps = 0;
/** Instructions since the last dump (the dump file's `totals:` line), and the dump's path. */
function dump(): { instructions: number; file: string } {
  execFileSync('callgrind_control', ['-d', String(server.pid)], { stdio: 'ignore' });
  dumps += 1;
  const name = readdirSync(out).find((entry) => entry === `cg.${server.pid}.${dumps}`);
  if (!name) throw new Error(`no dump ${dumps} in ${out}`);
  return { instructions: Number(/^totals: (\d+)/m.exec(readFileSync(join(out, name), 'utf8'))?.[1]), file: join(out, name) };
}

/**
 * Instructions inside Redis's `call()` in a dump (inclusive): the commands' execution alone, without reading and
 * parsing the request, writing the reply, or the event loop's turns and `serverCron` (which a loaded machine stretches
 * over more of them: a PING measured 2.8 k a call in one run and 3.9 k in another, 0.6 k inside `call` in both).
 */
function insideCall(file: string): number {
  const annotated = execFileSync('callgrind_annotate', ['--inclusive=yes', '--threshold=100', file], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  return Number(/^\s*([\d,]+) \([^)]*\)\s+\?\?\?:call /m.exec(annotated)?.[1]?.replaceAll(',', '') ?? 'NaN');
}

/** `SCRIPT_IR_OVERRIDE=name=file.lua,…`: those scripts' texts from files instead (what-if variants). */
const overrides = new Map((process.env.SCRIPT_IR_OVERRIDE ?? '').split(',').filter(Boolean).map((pair) => pair.split('=') as [string, string]));
const textOf = (name: string) => (overrides.has(name) ? readFileSync(overrides.get(name)!, 'utf8') : scriptText(name));
const shas = new Map<string, string>();
const traces = JSON.parse(readFileSync(file, 'utf8')) as Trace[];
for (const trace of traces) {
  for (const step of trace.steps) if ('script' in step && !shas.has(step.script)) shas.set(step.script, String(await redis.script('LOAD', textOf(step.script))));
}
const run = (step: Step) => ('script' in step ? ['evalsha', shas.get(step.script)!, String(step.keys.length), ...step.keys, ...step.args] : step.command);

async function measure(label: string, calls: string[][]): Promise<void> {
  dump();
  const pipeline = redis.pipeline();
  for (const [command, ...args] of calls) pipeline.call(command!, ...args);
  await pipeline.exec();
  const { instructions, file } = dump();
  const inCall = (insideCall(file) / calls.length / 1000).toFixed(1).padStart(8);
  console.log(`${label.padEnd(28)} ${(instructions / calls.length / 1000).toFixed(1).padStart(8)} k Ir/call  (${calls.length} calls)  ${inCall} k in call()`);
}

const shapes = new Map<string, Trace[]>();
for (const trace of traces) shapes.set(shapeOf(trace), [...(shapes.get(shapeOf(trace)) ?? []), trace]);
// An untimed copy of every trace first: scripts compiled, keys' dictionaries grown.
// (A step a variant refuses is not a failure of the replay: its reply is an error, measured like any other.)
for (const trace of traces) for (const step of renamed(trace, 'warm-')) await redis.call(...(run(step) as [string, ...string[]])).catch(() => undefined);
await measure('ping', Array.from({ length: copies }, () => ['ping']));
for (const [shape, group] of shapes) {
  console.log(`shape ${shape} (${group.length} traces × ${copies} copies)`);
  const steps = Array.from({ length: copies }, (_, copy) => renamed(group[copy % group.length]!, `c${copy}-`));
  for (let index = 0; index < steps[0]!.length; index++) {
    const step = steps[0]![index]!;
    const label = 'script' in step ? (step.script === 'applyStatus' ? `applyStatus:${step.args[3]}` : step.script) : step.command[0]!;
    await measure(`${index} ${label}`, steps.map((trace) => run(trace[index]!)));
  }
}
await redis.quit();
server.kill('SIGTERM');
console.log(`dumps in ${out}`);
