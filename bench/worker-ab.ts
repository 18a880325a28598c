/**
 * Interleaved A/B of the worker process, for a change to the worker's code on a shared, loaded machine: one
 * redis-server (AOF everysec), one agent (0 ms of work, or `WORKER_AB_WORK_MS`), one producer process (checkout A's
 * `bench/processes/producer-batch.ts`) and two worker processes, one per checkout (`packages/workers` main.ts, as the
 * peers bench and `producer-ab.ts` run it), which take turns: while one runs a batch the other is SIGSTOPped (it holds
 * nothing between batches: every delegation of a batch is settled before the next starts), the order swapped every
 * round. Both sides meet the same load within seconds of each other; what differs is the worker's code.
 *
 *   pnpm tsx --conditions=@durable-a2a/source bench/worker-ab.ts <checkout A> <checkout B> [rounds 8] [count 2000]
 *
 * Prints each batch's worker CPU µs per delegation (user + system from /proc/<pid>/stat; of it, the main thread's
 * from /proc/<pid>/task/<pid>/stat, the rest being V8's and libuv's threads), redis-server's and the producer's as
 * the load's control, and per round B ÷ A of the worker; then the medians.
 * `WORKER_AB_NODE_ARGS_A` / `WORKER_AB_NODE_ARGS_B` (space-separated) add Node or V8 options to one side's worker
 * (e.g. the same checkout twice, B with `--max-semi-space-size=32`): a flag's A/B. `WORKER_AB_BUILT_A=1` /
 * `WORKER_AB_BUILT_B=1` run that side's worker from its build (`dist/main.js`, plain node, as the runtime image
 * does; `pnpm build` in the checkout first) instead of from source through tsx.
 */
import { execFileSync, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { interleavedRounds, producerProcessOf, readyOf, runBatch, workerProcessOf } from './ab-processes.ts';

const [checkoutA, checkoutB, roundsArgument, countArgument] = process.argv.slice(2);
if (!checkoutA || !checkoutB) throw new Error('usage: worker-ab.ts <checkout A> <checkout B> [rounds] [count]');
const roots = { A: resolve(checkoutA), B: resolve(checkoutB) };
const rounds = Number(roundsArgument ?? 8);
const count = Number(countArgument ?? 2000);
const workMs = Number(process.env.WORKER_AB_WORK_MS ?? 0);
const CONCURRENCY = Number(process.env.WORKER_AB_C ?? 50);
const TICKS_PER_SECOND = 100;

/** User + system CPU of `pid` in µs (/proc/<pid>/stat, clock ticks), or of its main thread alone with `mainThread`. */
function cpuMicrosOf(pid: number, mainThread = false): number {
  const fields = readFileSync(mainThread ? `/proc/${pid}/task/${pid}/stat` : `/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1_000_000) / TICKS_PER_SECOND;
}

const { startRedisServer, startDemoAgent, completesWith } = (await import(`${roots.A}/packages/testing/src/index.ts`)) as typeof import('@durable-a2a/testing');
const redisServer = await startRedisServer({ appendOnly: true });
const agent = await startDemoAgent({ behaviour: completesWith('the result of the delegation', { delayMs: workMs }) });
const children: ChildProcess[] = [];

const ready = (child: ChildProcess) => readyOf(children, child);

try {
  const nodeArguments = (side: 'A' | 'B') => (process.env[`WORKER_AB_NODE_ARGS_${side}`] ?? '').split(' ').filter(Boolean);
  const built = (side: 'A' | 'B') => process.env[`WORKER_AB_BUILT_${side}`] === '1';
  const workers = {
    A: workerProcessOf(roots.A, redisServer.url, CONCURRENCY, nodeArguments('A'), built('A')),
    B: workerProcessOf(roots.B, redisServer.url, CONCURRENCY, nodeArguments('B'), built('B')),
  };
  console.log(`worker A: ${built('A') ? 'dist/main.js, plain node' : 'src/main.ts, tsx'}; worker B: ${built('B') ? 'dist/main.js, plain node' : 'src/main.ts, tsx'}`);
  await Promise.all(Object.values(workers).map(ready));
  const producer = producerProcessOf(roots.A, redisServer.url);
  await ready(producer);
  // redis-server's pid: the process listening on its port.
  const listening = execFileSync('ss', ['-tlnpH'], { encoding: 'utf8' }).split('\n').find((line) => line.includes(`:${redisServer.port} `));
  const redisPid = Number(/pid=(\d+)/.exec(listening ?? '')?.[1]);
  if (!redisPid) throw new Error(`no process listens on redis-server's port ${redisServer.port}`);
  const batch = async (side: 'A' | 'B', tag: string, n: number) => {
    const other = side === 'A' ? workers.B : workers.A;
    other.kill('SIGSTOP');
    workers[side].kill('SIGCONT');
    const worker = workers[side].pid!;
    const before = { worker: cpuMicrosOf(worker), main: cpuMicrosOf(worker, true), redis: cpuMicrosOf(redisPid) };
    const result = await runBatch(producer, { count: n, concurrency: CONCURRENCY, tag, cardUrl: agent.cardUrl });
    return { ...result, workerMicros: cpuMicrosOf(worker) - before.worker, mainMicros: cpuMicrosOf(worker, true) - before.main, redisMicros: cpuMicrosOf(redisPid) - before.redis };
  };
  await interleavedRounds(rounds, count, batch, (result) => result.workerMicros / count, (result) => `${(result.workerMicros / count).toFixed(1)} µs worker CPU per delegation (main thread ${(result.mainMicros / count).toFixed(1)}; redis-server ${(result.redisMicros / count).toFixed(1)}, producer ${(result.cpuMicros / count).toFixed(1)})`);
} finally {
  for (const child of children) {
    child.kill('SIGCONT');
    child.kill('SIGTERM');
  }
  await agent.stop();
  await redisServer.stop();
}
