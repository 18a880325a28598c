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
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { resolve } from 'node:path';
import { loadAverage1 } from './common.ts';

const [checkoutA, checkoutB, roundsArgument, countArgument] = process.argv.slice(2);
if (!checkoutA || !checkoutB) throw new Error('usage: producer-ab.ts <checkout A> <checkout B> [rounds] [count]');
const roots = { A: resolve(checkoutA), B: resolve(checkoutB) };
const rounds = Number(roundsArgument ?? 8);
const count = Number(countArgument ?? 2000);
const CONCURRENCY = 50;
const EXEC_ARGV = ['--conditions=@durable-a2a/source', '--import', 'tsx'];
const BATCH = fileURLToPath(new URL('./processes/producer-batch.ts', import.meta.url));

const { startRedisServer, startDemoAgent, completesWith } = (await import(`${roots.A}/packages/testing/src/index.ts`)) as typeof import('@durable-a2a/testing');
const redisServer = await startRedisServer({ appendOnly: true });
const agent = await startDemoAgent({ behaviour: completesWith('the result of the delegation', { delayMs: 0 }) });
const children: ChildProcess[] = [];

/** Resolves once `child` says it is ready; rejects if it exits first. */
const ready = (child: ChildProcess) =>
  new Promise<void>((resolveReady, reject) => {
    children.push(child);
    child.on('message', (message: { ready?: boolean }) => message.ready && resolveReady());
    child.once('exit', (code) => reject(new Error(`a bench process exited before ready (code ${code})`)));
  });

interface BatchResult {
  cpuMicros: number;
  completed: number;
  elapsedMs: number;
}

try {
  const concurrency = String(CONCURRENCY);
  await ready(
    fork(`${roots.A}/packages/workers/src/main.ts`, [], {
      cwd: roots.A,
      execArgv: EXEC_ARGV,
      env: {
        PATH: process.env.PATH ?? '',
        LOG_LEVEL: 'silent',
        REDIS_URL: redisServer.url,
        DA2A_PREFIX: 'ab',
        DA2A_ALLOW_LOOPBACK: 'true',
        DA2A_CONCURRENCY: `send=${concurrency},follow=${concurrency}`,
        DA2A_FOLLOW_SLOTS_PER_AGENT: concurrency,
        DA2A_SEND_SLOTS_PER_AGENT: concurrency,
        DA2A_SUBSCRIBE_RATE_LIMIT: '1000000/1000',
        DA2A_STREAM_IDLE_TIMEOUT_MS: '600000',
      },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    }),
  );
  const producers = { A: fork(BATCH, [roots.A, redisServer.url], { cwd: roots.A, execArgv: EXEC_ARGV }), B: fork(BATCH, [roots.B, redisServer.url], { cwd: roots.B, execArgv: EXEC_ARGV }) };
  await Promise.all(Object.values(producers).map(ready));
  const batch = (side: 'A' | 'B', tag: string, n: number) =>
    new Promise<BatchResult>((resolveBatch) => {
      producers[side].once('message', resolveBatch);
      producers[side].send({ count: n, concurrency: CONCURRENCY, tag, cardUrl: agent.cardUrl });
    });
  for (const side of ['A', 'B'] as const) await batch(side, `warm-${side}`, 500);
  const perDelegation: Record<'A' | 'B', number[]> = { A: [], B: [] };
  const ratios: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? (['A', 'B'] as const) : (['B', 'A'] as const);
    for (const side of order) {
      const result = await batch(side, `r${round}-${side}`, count);
      perDelegation[side].push(result.cpuMicros / count);
      console.log(`round ${round + 1} ${side}: ${(result.cpuMicros / count).toFixed(1)} µs producer CPU per delegation, ${result.completed}/${count} completed, ${Math.round((count * 1000) / result.elapsedMs)}/s, load ${loadAverage1()}`);
    }
    ratios.push(perDelegation.B[round]! / perDelegation.A[round]!);
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  console.log(`median A ${median(perDelegation.A).toFixed(1)} µs, B ${median(perDelegation.B).toFixed(1)} µs; B ÷ A by round ${ratios.map((ratio) => ratio.toFixed(3)).join(' ')}; median ${median(ratios).toFixed(3)}`);
} finally {
  for (const child of children) child.kill('SIGTERM');
  await agent.stop();
  await redisServer.stop();
}
