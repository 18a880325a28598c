/**
 * Benchmark 2, Redis cost per delegation: commands (INFO commandstats) and
 * Redis CPU (INFO cpu, used_cpu_sys + used_cpu_user) per happy-path
 * delegation, read before and after, against BullMQ's own floor: add and
 * process two trivial jobs per delegation (what send → follow needs at the
 * least) through plain BullMQ queues on the same Redis.
 */
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { createProducer } from '@durable-a2a/producer';
import { JOB_RETENTION } from '@durable-a2a/shared';
import { startRedisServer } from '../test/harness/redis.ts';
import { startDemoAgent } from '../test/harness/agent.ts';
import { completesWith } from '../test/harness/agent-behaviours.ts';
import { callsDelta, commandCalls, mapLimit, redisCpuSeconds, round, scaled, sleep, startBenchFleet, stopAgent, type BenchResult } from './common.ts';

const CONCURRENCY = 50;
/** Commands the measurement itself sends (INFO); never part of a delegation's cost. */
const OWN_COMMANDS = new Set(['info']);

interface Cost {
  commands: number;
  cpuSeconds: number;
  byCommand: Map<string, number>;
}

export async function run(scale: number): Promise<BenchResult> {
  const delegations = scaled(500, scale, 10);
  const redisServer = await startRedisServer();
  const meter = new Redis(redisServer.url);
  try {
    const durable = await durableCost(redisServer.url, meter, delegations);
    const floor = await bullmqFloor(redisServer.url, meter, delegations);
    const per = (cost: Cost) => ({ commands: cost.commands / delegations, cpuMs: (cost.cpuSeconds * 1000) / delegations });
    const d = per(durable);
    const f = per(floor);
    const top = (cost: Cost) =>
      [...cost.byCommand.entries()]
        .sort((a, b) => b[1] - a[1])
        .slice(0, 8)
        .map(([command, calls]) => `${command} ${round(calls / delegations, 1)}`)
        .join(', ');
    return {
      name: 'redis-cost',
      title: 'Redis cost per happy-path delegation',
      figures: [
        { metric: 'durable-a2a: Redis commands per delegation', value: round(d.commands, 1), unit: 'commands' },
        { metric: 'BullMQ floor (2 jobs): Redis commands per delegation', value: round(f.commands, 1), unit: 'commands' },
        { metric: 'commands ratio durable / floor', value: round(d.commands / f.commands, 2), unit: '' },
        { metric: 'durable-a2a: Redis CPU per delegation', value: round(d.cpuMs, 3), unit: 'ms' },
        { metric: 'BullMQ floor: Redis CPU per delegation', value: round(f.cpuMs, 3), unit: 'ms' },
        { metric: 'CPU ratio durable / floor', value: round(d.cpuMs / f.cpuMs, 2), unit: '' },
        { metric: 'delegations measured', value: delegations, unit: 'per side' },
      ],
      notes: [
        `${delegations} delegations per side at concurrency ${CONCURRENCY}, after an untimed warm-up (scripts loaded); INFO commands excluded; the journal side's own completion polling (ZCARD) subtracted exactly.`,
        'Durable: producer.delegate → send → follow → COMPLETED with an in-process fleet on production timings (the 30 s reconcile sweep and the workers\' idle blocking reads are included, as they are in the floor).',
        `Floor: queue A add → worker A adds to queue B → worker B returns; same retention options (${JSON.stringify(JOB_RETENTION.removeOnComplete)}) and concurrency.`,
        `Durable top commands per delegation: ${top(durable)}.`,
        `Floor top commands per delegation: ${top(floor)}.`,
        'commandstats counts each EVALSHA and also every redis.call inside the script, so script-internal work is included on both sides.',
      ],
    };
  } finally {
    meter.disconnect();
    await redisServer.stop();
  }
}

async function measure(meter: Redis, work: () => Promise<Map<string, number>>): Promise<Cost> {
  const before = await commandCalls(meter);
  const cpuBefore = await redisCpuSeconds(meter);
  const own = await work();
  const cpuAfter = await redisCpuSeconds(meter);
  const byCommand = callsDelta(before, await commandCalls(meter));
  for (const command of OWN_COMMANDS) byCommand.delete(command);
  for (const [command, calls] of own) byCommand.set(command, (byCommand.get(command) ?? 0) - calls);
  const commands = [...byCommand.values()].reduce((sum, calls) => sum + calls, 0);
  return { commands, cpuSeconds: cpuAfter - cpuBefore, byCommand };
}

async function durableCost(redisUrl: string, meter: Redis, delegations: number): Promise<Cost> {
  const prefix = 'cost';
  const agent = await startDemoAgent({ behaviour: completesWith('the result of the delegation', { delayMs: 50 }) });
  const producer = createProducer({ redis: redisUrl, addressPolicy: { allowLoopback: true }, prefix });
  const fleet = await startBenchFleet({ redisUrl, prefix, concurrency: { send: CONCURRENCY, follow: CONCURRENCY }, subscribeRateLimit: { max: 1_000_000, durationMs: 1_000 } });
  const poller = new Redis(redisUrl);
  let polls = 0;
  const drained = async () => {
    for (;;) {
      polls++;
      if ((await poller.zcard(`${prefix}:unfinished`)) === 0) return;
      await sleep(50);
    }
  };
  const batch = async (count: number, tag: string) => {
    await mapLimit(Array.from({ length: count }), CONCURRENCY, (_, index) =>
      producer.delegate({ agent: agent.cardUrl, text: 'do the thing', idempotencyKey: `${tag}-${index}` }),
    );
    await drained();
  };
  try {
    await batch(Math.min(20, delegations), 'warm');
    await sleep(200);
    return await measure(meter, async () => {
      polls = 0;
      await batch(delegations, 'run');
      await sleep(100); // let the last job completions be written
      return new Map([['zcard', polls]]);
    });
  } finally {
    poller.disconnect();
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
      await sleep(100); // let the last completions be written
      return new Map();
    });
  } finally {
    await Promise.all([workerA.close(), workerB.close()]);
    await Promise.all([first.close(), second.close()]);
    connection.disconnect();
  }
}
