/**
 * Benchmark 2, Redis cost per delegation: commands (INFO commandstats) and
 * Redis CPU (INFO cpu, used_cpu_sys + used_cpu_user) per happy-path
 * delegation, read before and after, against BullMQ's own floor: add and
 * process two trivial jobs per delegation (what send → follow needs at the
 * least) through plain BullMQ queues on the same Redis.
 * INFO cpu follows the machine: on 2 shared cores the durable side's Node processes run beside redis-server, the
 * floor's hardly. `BENCH_CALLGRIND_DIR=<dir> REDIS_SERVER_BIN=<wrapper>` (see `instructionsSinceDump`) adds each
 * side's redis-server instructions, which do not move with the load; `BENCH_SCALE=0.4` is enough under callgrind.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { createProducer } from '@durable-a2a/producer';
import { JOB_RETENTION } from '@durable-a2a/shared';
import { startRedisServer } from '../test/harness/redis.ts';
import { startDemoAgent } from '../test/harness/agent.ts';
import { completesWith } from '../test/harness/agent-behaviours.ts';
import { callsDelta, commandCalls, commandMicros, delegateWithinConcurrency, mapLimit, redisCpuSeconds, round, scaled, sleep, startBenchFleet, stopAgent, type BenchResult } from './common.ts';

const CONCURRENCY = 50;
/** Commands the measurement itself sends (INFO); never part of a delegation's cost. */
const OWN_COMMANDS = new Set(['info']);

interface Cost {
  commands: number;
  /** Process CPU of redis-server (INFO cpu) over the run: commands, networking, event loop. */
  cpuSeconds: number;
  /** Time spent executing commands (INFO commandstats usec, summed); scripts' inner calls are inside their EVALSHA's time. */
  commandMicros: number;
  byCommand: Map<string, number>;
  byMicros: Map<string, number>;
  /** redis-server's instructions over the run (callgrind `Ir`, `BENCH_CALLGRIND_DIR` only; else 0). */
  instructions: number;
  /** The system part of `cpuSeconds` (used_cpu_sys): the kernel's share, networking mostly. */
  sysSeconds: number;
}

async function redisSysSeconds(meter: Redis): Promise<number> {
  return Number(/used_cpu_sys:([\d.]+)/.exec(await meter.info('cpu'))?.[1]);
}

/**
 * With `BENCH_CALLGRIND_DIR` set, redis-server runs under valgrind's callgrind (REDIS_SERVER_BIN: a wrapper that execs
 * `valgrind --tool=callgrind --callgrind-out-file=$BENCH_CALLGRIND_DIR/cg.%p … redis-server "$@"`), and each side's
 * instructions are read from a dump before and after it: a count that does not move with the machine's load, unlike
 * INFO cpu on a shared machine. Returns the instructions since the last dump.
 */
let dumps = 0;
async function instructionsSinceDump(meter: Redis): Promise<number> {
  const dir = process.env.BENCH_CALLGRIND_DIR;
  if (!dir) return 0;
  const pid = /process_id:(\d+)/.exec(await meter.info('server'))?.[1];
  execFileSync('callgrind_control', ['-d', String(pid)], { stdio: 'ignore' });
  dumps += 1;
  return Number(/^totals: (\d+)/m.exec(readFileSync(join(dir, `cg.${pid}.${dumps}`), 'utf8'))?.[1]);
}

export async function run(scale: number): Promise<BenchResult> {
  const delegations = scaled(500, scale, 10);
  const redisServer = await startRedisServer();
  const meter = new Redis(redisServer.url);
  try {
    const durable = await durableCost(redisServer.url, meter, delegations);
    const floor = await bullmqFloor(redisServer.url, meter, delegations);
    const per = (cost: Cost) => ({ commands: cost.commands / delegations, cpuMs: (cost.cpuSeconds * 1000) / delegations, commandMicros: cost.commandMicros / delegations, instructions: cost.instructions / delegations, sysMs: (cost.sysSeconds * 1000) / delegations });
    const d = per(durable);
    const f = per(floor);
    const top = (values: Map<string, number>) =>
      [...values.entries()]
        .sort((x, y) => y[1] - x[1])
        .slice(0, 8)
        .map(([command, value]) => `${command} ${round(value / delegations, 1)}`)
        .join(', ');
    return {
      name: 'redis-cost',
      title: 'Redis cost per happy-path delegation',
      figures: [
        { metric: 'durable-a2a: Redis commands per delegation', value: round(d.commands, 1), unit: 'commands' },
        { metric: 'BullMQ floor (2 jobs): Redis commands per delegation', value: round(f.commands, 1), unit: 'commands' },
        { metric: 'commands ratio durable / floor', value: round(d.commands / f.commands, 2), unit: '' },
        { metric: 'durable-a2a: Redis command time per delegation (commandstats usec)', value: round(d.commandMicros, 1), unit: 'µs' },
        { metric: 'BullMQ floor: Redis command time per delegation (commandstats usec)', value: round(f.commandMicros, 1), unit: 'µs' },
        { metric: 'durable-a2a: Redis process CPU per delegation (INFO cpu)', value: round(d.cpuMs * 1000, 1), unit: 'µs' },
        { metric: 'BullMQ floor: Redis process CPU per delegation (INFO cpu)', value: round(f.cpuMs * 1000, 1), unit: 'µs' },
        { metric: 'durable-a2a: of which system (used_cpu_sys)', value: round(d.sysMs * 1000, 1), unit: 'µs' },
        { metric: 'BullMQ floor: of which system (used_cpu_sys)', value: round(f.sysMs * 1000, 1), unit: 'µs' },
        { metric: 'CPU ratio durable / floor (INFO cpu)', value: round(d.cpuMs / f.cpuMs, 2), unit: '' },
        ...(d.instructions > 0
          ? [
              { metric: 'durable-a2a: redis-server instructions per delegation (callgrind)', value: round(d.instructions / 1000, 1), unit: 'k Ir' },
              { metric: 'BullMQ floor: redis-server instructions per delegation (callgrind)', value: round(f.instructions / 1000, 1), unit: 'k Ir' },
              { metric: 'instructions ratio durable / floor (callgrind)', value: round(d.instructions / f.instructions, 2), unit: '' },
            ]
          : []),
        { metric: 'delegations measured', value: delegations, unit: 'per side' },
      ],
      notes: [
        `${delegations} delegations per side at concurrency ${CONCURRENCY}, after an untimed warm-up (scripts loaded); INFO commands excluded. Neither side polls Redis for completion: the durable side counts settled delegations from the fleet's histogram in-process, the floor counts in its worker.`,
        'Command time = the sum of INFO commandstats usec over every command (an EVALSHA\'s time includes the redis.call inside it, which commandstats also lists on their own: the sum counts script-inner time twice, so it is an upper bound; the EVALSHA time alone is in the per-command line below). Process CPU (used_cpu_user + used_cpu_sys) adds networking and the event loop.',
        'Durable: producer.delegate → send → follow → COMPLETED with an in-process fleet on production timings, at most 50 delegations unsettled at once (send and follow concurrency 50, the one agent\'s follow share 50) (the 30 s reconcile sweep and the workers\' idle blocking reads are included, as they are in the floor).',
        `Floor: queue A add → worker A adds to queue B → worker B returns; same retention options (${JSON.stringify(JOB_RETENTION.removeOnComplete)}) and concurrency.`,
        `Durable top commands per delegation: ${top(durable.byCommand)}.`,
        `Floor top commands per delegation: ${top(floor.byCommand)}.`,
        `Durable command time per delegation (µs): ${top(durable.byMicros)}.`,
        'commandstats counts each EVALSHA and also every redis.call inside the script, so script-internal work is included on both sides.',
      ],
    };
  } finally {
    meter.disconnect();
    await redisServer.stop();
  }
}

async function measure(meter: Redis, work: () => Promise<void>): Promise<Cost> {
  const before = await commandCalls(meter);
  const microsBefore = await commandMicros(meter);
  const cpuBefore = await redisCpuSeconds(meter);
  const sysBefore = await redisSysSeconds(meter);
  await instructionsSinceDump(meter);
  await work();
  const instructions = await instructionsSinceDump(meter);
  const cpuAfter = await redisCpuSeconds(meter);
  const sysSeconds = (await redisSysSeconds(meter)) - sysBefore;
  const byCommand = callsDelta(before, await commandCalls(meter));
  const byMicros = callsDelta(microsBefore, await commandMicros(meter));
  for (const command of OWN_COMMANDS) {
    byCommand.delete(command);
    byMicros.delete(command);
  }
  const sum = (values: Map<string, number>) => [...values.values()].reduce((total, value) => total + value, 0);
  return { commands: sum(byCommand), cpuSeconds: cpuAfter - cpuBefore, commandMicros: sum(byMicros), byCommand, byMicros, instructions, sysSeconds };
}

async function durableCost(redisUrl: string, meter: Redis, delegations: number): Promise<Cost> {
  const prefix = 'cost';
  const agent = await startDemoAgent({ behaviour: completesWith('the result of the delegation', { delayMs: 50 }) });
  const producer = createProducer({ redis: redisUrl, addressPolicy: { allowLoopback: true }, prefix });
  const fleet = await startBenchFleet({ redisUrl, prefix, concurrency: { send: CONCURRENCY, follow: CONCURRENCY }, followSlotsPerAgent: CONCURRENCY, subscribeRateLimit: { max: 1_000_000, durationMs: 1_000 } });
  const batch = (count: number, tag: string) =>
    delegateWithinConcurrency(fleet, count, CONCURRENCY, (index) => producer.delegate({ agent: agent.cardUrl, text: 'do the thing', idempotencyKey: `${tag}-${index}` }));
  try {
    await batch(Math.min(20, delegations), 'warm');
    await sleep(200);
    return await measure(meter, async () => {
      await batch(delegations, 'run');
      await sleep(200); // let the last workflow updates and job completions be written
    });
  } finally {
    await fleet.close();
    await producer.close();
    await stopAgent(agent);
  }
}

async function bullmqFloor(redisUrl: string, meter: Redis, delegations: number): Promise<Cost> {
  const connection = new Redis(redisUrl, { maxRetriesPerRequest: null });
  const options = { connection, prefix: '{floor}', defaultJobOptions: { ...JOB_RETENTION } };
  const first = new Queue('first', options);
  const second = new Queue('second', options);
  let done = 0;
  const workerA = new Worker('first', async (job) => void (await second.add('follow', job.data as object)), { connection, prefix: '{floor}', concurrency: CONCURRENCY });
  const workerB = new Worker('second', async () => void done++, { connection, prefix: '{floor}', concurrency: CONCURRENCY });
  const batch = async (count: number) => {
    const target = done + count;
    await mapLimit(Array.from({ length: count }), CONCURRENCY, (_, index) => first.add('send', { index }));
    while (done < target) await sleep(20);
  };
  try {
    await batch(Math.min(20, delegations));
    await sleep(200);
    return await measure(meter, async () => {
      await batch(delegations);
      await sleep(200); // let the last completions be written
    });
  } finally {
    await Promise.all([workerA.close(), workerB.close()]);
    await Promise.all([first.close(), second.close()]);
    connection.disconnect();
  }
}
