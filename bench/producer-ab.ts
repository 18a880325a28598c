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
  await ready(workerProcessOf(roots.A, redisServer.url, CONCURRENCY));
  const producers = { A: producerProcessOf(roots.A, redisServer.url), B: producerProcessOf(roots.B, redisServer.url) };
  await Promise.all(Object.values(producers).map(ready));
  const batch = (side: 'A' | 'B', tag: string, n: number) => runBatch(producers[side], { count: n, concurrency: CONCURRENCY, tag, cardUrl: agent.cardUrl });
  await interleavedRounds(rounds, count, batch, (result) => result.cpuMicros / count, (result) => `${(result.cpuMicros / count).toFixed(1)} µs producer CPU per delegation`);
} finally {
  for (const child of children) child.kill('SIGTERM');
  await agent.stop();
  await redisServer.stop();
}
