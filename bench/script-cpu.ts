/**
 * `pnpm tsx --conditions=@durable-a2a/source bench/script-cpu.ts <traceA.json> <checkoutA> <traceB.json> <checkoutB> [copies] [rounds]`:
 * a profiling aid, not a benchmark. redis-server CPU (INFO cpu: user + system, so networking and allocation count,
 * not only the script's own time as SLOWLOG has it) per journal step of a happy-path workflow, for two checkouts on
 * one redis-server: each trace (captured by its own checkout with `bench/script-replay.ts capture`, the scripts'
 * arguments may differ) is replayed `copies` times under fresh ids (default 400), step by step, each step of every
 * copy in pipelines of 100, A and B taking turns per step (the order swapped every round; default 8 rounds after an
 * untimed one). Only traces of one shape are replayed (`SHAPE`, default the create, the send's read, the mark, the
 * send's answer and the one-step finish; `SHAPE_A` and `SHAPE_B` when the sides' scripts differ, step for step). Prints per step the median µs of each side and the median of the rounds'
 * B ÷ A: on a loaded machine both sides meet the same load within a step, which two runs one after the other cannot
 * promise.
 */
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { startRedisServer } from '../test/harness/redis.ts';

type Step = { script: string; keys: string[]; args: string[] } | { command: string[] };
interface Trace {
  workflowId: string;
  steps: Step[];
}
interface Side {
  tag: string;
  traces: Trace[];
  shas: Map<string, string>;
}

const SHAPE = process.env.SHAPE ?? 'createWorkflow,hgetall,hgetall,markSending,applyStatus,finishStep';
const SHAPES = [process.env.SHAPE_A ?? SHAPE, process.env.SHAPE_B ?? SHAPE];
const PIPELINE = 100;
const shapeOf = (trace: Trace) => trace.steps.map((step) => ('script' in step ? step.script : step.command[0])).join(',');

/** The trace's steps with its workflow id and its task owner keys renamed by `tag` (as script-replay.ts does). */
function renamed(trace: Trace, tag: string): Step[] {
  const text = JSON.stringify(trace.steps);
  let out = text.split(trace.workflowId).join(`${tag}${trace.workflowId}`);
  for (const key of new Set(text.match(/cost:task:[0-9a-f]+/g) ?? [])) out = out.split(key).join(`${key}${tag}`);
  return JSON.parse(out) as Step[];
}

async function sideOf(redis: Redis, tag: string, file: string, checkout: string, shape: string): Promise<Side> {
  const { scriptText } = (await import(`${checkout}/packages/shared/src/journal/scripts.ts`)) as { scriptText: (name: string) => string };
  const traces = (JSON.parse(readFileSync(file, 'utf8')) as Trace[]).filter((trace) => shapeOf(trace) === shape);
  if (traces.length === 0) throw new Error(`${file}: no trace of shape ${shape}`);
  const shas = new Map<string, string>();
  for (const trace of traces) {
    for (const step of trace.steps) if ('script' in step && !shas.has(step.script)) shas.set(step.script, String(await redis.script('LOAD', scriptText(step.script))));
  }
  return { tag, traces, shas };
}

async function cpuSeconds(redis: Redis): Promise<number> {
  const info = await redis.info('cpu');
  return Number(/used_cpu_user:([\d.]+)/.exec(info)?.[1]) + Number(/used_cpu_sys:([\d.]+)/.exec(info)?.[1]);
}

const median = (values: number[]) => [...values].sort((x, y) => x - y)[values.length >> 1]!;

const [traceA, checkoutA, traceB, checkoutB, copiesText = '400', roundsText = '8'] = process.argv.slice(2);
if (!traceA || !checkoutA || !traceB || !checkoutB) throw new Error('usage: script-cpu.ts <traceA.json> <checkoutA> <traceB.json> <checkoutB> [copies] [rounds]');
const copies = Number(copiesText);
const server = await startRedisServer();
const redis = new Redis(server.url);
const sides = [await sideOf(redis, 'a', traceA, checkoutA, SHAPES[0]!), await sideOf(redis, 'b', traceB, checkoutB, SHAPES[1]!)];
const steps = SHAPES[0]!.split(',');
if (SHAPES[1]!.split(',').length !== steps.length) throw new Error('SHAPE_A and SHAPE_B must have as many steps');
const micros = sides.map(() => steps.map(() => [] as number[]));
for (let round = -1; round < Number(roundsText); round++) {
  const runs = sides.map((side) => Array.from({ length: copies }, (_, index) => renamed(side.traces[index % side.traces.length]!, `${side.tag}${round}c${index}-`)));
  for (let index = 0; index < steps.length; index++) {
    for (const k of round % 2 === 0 ? [0, 1] : [1, 0]) {
      const before = await cpuSeconds(redis);
      for (let start = 0; start < copies; start += PIPELINE) {
        const pipeline = redis.pipeline();
        for (const run of runs[k]!.slice(start, start + PIPELINE)) {
          const step = run[index]!;
          if ('script' in step) pipeline.evalsha(sides[k]!.shas.get(step.script)!, step.keys.length, ...step.keys, ...step.args);
          else pipeline.call(step.command[0]!, ...step.command.slice(1));
        }
        await pipeline.exec();
      }
      if (round >= 0) micros[k]![index]!.push(((await cpuSeconds(redis)) - before) * 1e6 / copies);
    }
  }
}
let [sumA, sumB] = [0, 0];
for (const [index, name] of steps.entries()) {
  const [a, b] = [micros[0]![index]!, micros[1]![index]!];
  sumA += median(a);
  sumB += median(b);
  console.log(`${name.padEnd(16)} A ${median(a).toFixed(1).padStart(6)}  B ${median(b).toFixed(1).padStart(6)} µs  B ÷ A (median of rounds) ${median(a.map((x, round) => b[round]! / x)).toFixed(3)}`);
}
console.log(`per workflow: A ${sumA.toFixed(1)} µs, B ${sumB.toFixed(1)} µs (B ÷ A ${(sumB / sumA).toFixed(3)}); ${copies} copies, traces A ${sides[0]!.traces.length}, B ${sides[1]!.traces.length}`);
redis.disconnect();
await server.stop();
process.exit(0);
