/**
 * `pnpm tsx --conditions=@durable-a2a/source bench/bullmq-send-cost.ts [jobs] [rounds]`: a profiling aid, not a
 * benchmark. What BullMQ's own scripts cost redis-server for the send queue's two ways of adding a job and the two
 * ways of fetching one, each measured alone on a private redis-server (INFO cpu and commandstats before and after,
 * 100 calls in flight at a time, phases in turn for `rounds` rounds, the median printed):
 *
 * - add: a plain job (the wait list) against a prioritized one (the send queue's message sends, `send-priority.ts`);
 * - fetch: a plain job and a prioritized one, each taken by its own moveToActive (what a worker with free slots does);
 *   a finish that fetches the next job in the same script and finds one (what a busy worker does, "finish + fetch
 *   chained": the finish's and the fetch's cost together); a finish whose fetch finds none (what a worker whose jobs
 *   are short did after almost every job) against a finish that asks for none.
 *
 * µs per job of redis-server CPU (process CPU: commands, Lua, networking) and of command time (commandstats).
 */
import { Queue, Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import { startRedisServer } from '@durable-a2a/testing';
import { info, mapLimit, redisCpuSeconds, round } from './common.ts';

const jobs = Number(process.argv[2] ?? '5000');
const rounds = Number(process.argv[3] ?? '5');
const IN_FLIGHT = 100;
/** A message send's BullMQ priority at the default delegation priority, place 0 (`bullmqSendPriority(5, 0)`). */
const SEND_PRIORITY = 1_000_001;

const server = await startRedisServer();
const meter = new Redis(server.url);
const connection = new Redis(server.url, { maxRetriesPerRequest: null });

async function usage(): Promise<{ cpu: number; micros: number }> {
  const stats = await info(meter, 'commandstats');
  let micros = 0;
  for (const [key, value] of stats) if (key.startsWith('cmdstat_') && key !== 'cmdstat_info') micros += Number(/usec=(\d+)/.exec(value)?.[1] ?? 0);
  return { cpu: await redisCpuSeconds(meter), micros };
}

/** Redis CPU and command time of `work`, µs per job. */
async function measure(work: () => Promise<unknown>, count = jobs): Promise<{ cpu: number; micros: number }> {
  const before = await usage();
  await work();
  const after = await usage();
  return { cpu: ((after.cpu - before.cpu) * 1e6) / count, micros: (after.micros - before.micros) / count };
}

const indices = () => Array.from({ length: jobs }, (_, index) => index);
const data = { workflowId: 'w', delegationId: 'main.1', kind: 'message', tenant: 'default' };

async function queueOf(name: string): Promise<{ queue: Queue; worker: Worker }> {
  const queue = new Queue(name, { connection, defaultJobOptions: { removeOnComplete: true } });
  const worker = new Worker(name, null, { connection, autorun: false });
  await worker.waitUntilReady();
  return { queue, worker };
}

const add = (queue: Queue, priority: number | undefined) => mapLimit(indices(), IN_FLIGHT, (index) => queue.add('send', data, { jobId: `send|${index}`, ...(priority ? { priority } : {}) }));
const fetchAll = (worker: Worker) => mapLimit(indices(), IN_FLIGHT, async (index) => (await worker.getNextJob(`t${index}`, { block: false })) as Job);
const finishAll = (taken: Job[], fetchNext: boolean) => mapLimit(taken, IN_FLIGHT, (job) => job.moveToCompleted('ok', job.token!, fetchNext));
/** Each finish fetches the next job (all `jobs` were added first, so every fetch finds one): `jobs` finishes, `jobs` fetches. */
async function chained(worker: Worker): Promise<void> {
  const first = await mapLimit(indices().slice(0, IN_FLIGHT), IN_FLIGHT, async (index) => (await worker.getNextJob(`c${index}`, { block: false })) as Job);
  await Promise.all(
    first.map(async (job) => {
      let current: Job | undefined = job;
      for (let bound = 0; current && bound < jobs; bound++) {
        const next = (await current.moveToCompleted('ok', current.token!, true)) as unknown;
        if (!Array.isArray(next) || !next[0]) return;
        current = (worker as unknown as { createJob(data: unknown, id: string): Job }).createJob(next[0], next[1]);
        current.token = current.token ?? job.token;
      }
    }),
  );
}

type Phase = 'add wait' | 'add prioritized' | 'fetch wait, moveToActive' | 'fetch by moveToActive' | 'finish, no next asked' | 'finish, next asked, none' | 'finish + fetch chained';
const results = new Map<Phase, { cpu: number[]; micros: number[] }>();
const note = (phase: Phase, value: { cpu: number; micros: number }) => {
  const entry = results.get(phase) ?? { cpu: [], micros: [] };
  entry.cpu.push(value.cpu);
  entry.micros.push(value.micros);
  results.set(phase, entry);
};

try {
  for (let r = 0; r < rounds; r++) {
    const plain = await queueOf(`plain-${r}`);
    const prioritized = await queueOf(`prio-${r}`);
    note('add wait', await measure(() => add(plain.queue, undefined)));
    note('add prioritized', await measure(() => add(prioritized.queue, SEND_PRIORITY)));
    let plainTaken: Job[] = [];
    note('fetch wait, moveToActive', await measure(async () => (plainTaken = await fetchAll(plain.worker))));
    await finishAll(plainTaken, false);
    let taken: Job[] = [];
    note('fetch by moveToActive', await measure(async () => (taken = await fetchAll(prioritized.worker))));
    // The queue is empty now: a finish asking for the next job finds none.
    note('finish, next asked, none', await measure(() => finishAll(taken.slice(0, jobs / 2), true), jobs / 2));
    note('finish, no next asked', await measure(() => finishAll(taken.slice(jobs / 2), false), jobs - jobs / 2));
    const chain = await queueOf(`chain-${r}`);
    await add(chain.queue, SEND_PRIORITY);
    note('finish + fetch chained', await measure(() => chained(chain.worker)));
    for (const { queue, worker } of [plain, prioritized, chain]) await Promise.all([queue.close(), worker.close()]);
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  console.log(`BullMQ send-queue script costs, µs of redis-server per job (median of ${rounds} rounds of ${jobs} jobs, ${IN_FLIGHT} in flight)`);
  for (const [phase, { cpu, micros }] of results) console.log(`  ${phase.padEnd(26)} CPU ${round(median(cpu), 1).toString().padStart(6)}   command time ${round(median(micros), 1).toString().padStart(6)}`);
} finally {
  connection.disconnect();
  meter.disconnect();
  await server.stop();
}
process.exit(0);
