/**
 * Interleaved A/B of the producer process (`delegate()` + `waitFor()`), for a change to the producer's code on a
 * shared, loaded machine: one redis-server (AOF everysec), one agent (0 ms of work), one worker process (checkout A's
 * `packages/workers` main.ts, as the peers bench runs it) and two producer processes, one per checkout
 * (`bench/processes/producer-batch.ts`), which take turns running the same batch, the order swapped every round.
 * Both sides meet the same load within seconds of each other; what differs is the producer's code.
 *
 *   pnpm tsx --conditions=@durable-a2a/source bench/producer-ab.ts <checkout A> <checkout B> [rounds 8] [count 2000]
 *
 * Prints each batch's producer CPU µs per delegation and, per round, B ÷ A; then the medians.
 * `PRODUCER_AB_BUILT_A=1` / `PRODUCER_AB_BUILT_B=1` run that side's producer from its build (`packages/producer/dist`,
 * plain node, as a deployed service loads it; `pnpm build` in the checkout first) instead of from source through tsx:
 * the same checkout twice, B built, is the cost of tsx to the producer. `PRODUCER_AB_WORKER_BUILT=1` runs the worker
 * from checkout A's build.
 */
import type { ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { interleavedRounds, producerProcessOf, readyOf, runBatch, workerProcessOf } from './ab-processes.ts';

const [checkoutA, checkoutB, roundsArgument, countArgument] = process.argv.slice(2);
if (!checkoutA || !checkoutB) throw new Error('usage: producer-ab.ts <checkout A> <checkout B> [rounds] [count]');
const roots = { A: resolve(checkoutA), B: resolve(checkoutB) };
const rounds = Number(roundsArgument ?? 8);
const count = Number(countArgument ?? 2000);
const CONCURRENCY = 50;

const { startRedisServer, startDemoAgent, completesWith } = (await import(`${roots.A}/packages/testing/src/index.ts`)) as typeof import('@durable-a2a/testing');
const redisServer = await startRedisServer({ appendOnly: true });
const agent = await startDemoAgent({ behaviour: completesWith('the result of the delegation', { delayMs: 0 }) });
const children: ChildProcess[] = [];

const ready = (child: ChildProcess) => readyOf(children, child);

try {
  const built = (side: 'A' | 'B') => process.env[`PRODUCER_AB_BUILT_${side}`] === '1';
  await ready(workerProcessOf(roots.A, redisServer.url, CONCURRENCY, [], process.env.PRODUCER_AB_WORKER_BUILT === '1'));
  const producers = { A: producerProcessOf(roots.A, redisServer.url, built('A')), B: producerProcessOf(roots.B, redisServer.url, built('B')) };
  console.log(`producer A: ${built('A') ? 'dist, plain node' : 'src, tsx'}; producer B: ${built('B') ? 'dist, plain node' : 'src, tsx'}`);
  await Promise.all(Object.values(producers).map(ready));
  const batch = (side: 'A' | 'B', tag: string, n: number) => runBatch(producers[side], { count: n, concurrency: CONCURRENCY, tag, cardUrl: agent.cardUrl });
  await interleavedRounds(rounds, count, batch, (result) => result.cpuMicros / count, (result) => `${(result.cpuMicros / count).toFixed(1)} µs producer CPU per delegation`);
} finally {
  for (const child of children) child.kill('SIGTERM');
  await agent.stop();
  await redisServer.stop();
}
