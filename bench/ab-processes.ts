/**
 * The processes `producer-ab.ts` and `worker-ab.ts` run: a worker process of one checkout (its `packages/workers`
 * main.ts from source through tsx, as the peers bench runs it, or its build `dist/main.js` with plain node, as the
 * runtime image runs it) and producer processes (`processes/producer-batch.ts`), forked with the source conditions
 * and tsx or, built, with plain node on the producer's `dist/`, and a wait for a child's `{ ready: true }`.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { loadAverage1 } from './common.ts';

export const EXEC_ARGV = ['--conditions=@durable-a2a/source', '--import', 'tsx'];
const BATCH = fileURLToPath(new URL('./processes/producer-batch.ts', import.meta.url));

/** What a producer process answers for one batch: its own CPU (µs), the delegations completed, the wall time. */
export interface BatchResult {
  cpuMicros: number;
  completed: number;
  elapsedMs: number;
}

/** Resolves once `child` says it is ready (and adds it to `children`); rejects if it exits first. */
export const readyOf = (children: ChildProcess[], child: ChildProcess) =>
  new Promise<void>((resolveReady, reject) => {
    children.push(child);
    child.on('message', (message: { ready?: boolean }) => message.ready && resolveReady());
    child.once('exit', (code) => reject(new Error(`a bench process exited before ready (code ${code})`)));
  });

/**
 * A worker process of checkout `root` on `redisUrl` (prefix `ab`), send and follow concurrency `concurrency`;
 * `nodeArguments` are Node or V8 options put before the entry (e.g. `--max-semi-space-size=32`), default none.
 * `built`: the checkout's `packages/workers/dist/main.js` (run `pnpm build` in it first) with plain node, as the
 * runtime image's `bin/durable-a2a-workers.mjs` runs it; default false: `src/main.ts` through tsx.
 */
export const workerProcessOf = (root: string, redisUrl: string, concurrency: number, nodeArguments: readonly string[] = [], built = false): ChildProcess =>
  fork(built ? `${root}/packages/workers/dist/main.js` : `${root}/packages/workers/src/main.ts`, [], {
    cwd: root,
    execArgv: [...(built ? [] : EXEC_ARGV), ...nodeArguments],
    env: {
      PATH: process.env.PATH ?? '',
      LOG_LEVEL: 'silent',
      REDIS_URL: redisUrl,
      DA2A_PREFIX: 'ab',
      DA2A_ALLOW_LOOPBACK: 'true',
      DA2A_CONCURRENCY: `send=${concurrency},follow=${concurrency}`,
      DA2A_FOLLOW_SLOTS_PER_AGENT: String(concurrency),
      DA2A_SEND_SLOTS_PER_AGENT: String(concurrency),
      DA2A_SUBSCRIBE_RATE_LIMIT: '1000000/1000',
      DA2A_STREAM_IDLE_TIMEOUT_MS: '600000',
    },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });

/**
 * A producer process of checkout `root` (`processes/producer-batch.ts`) on `redisUrl`. `built`: the checkout's
 * `packages/producer/dist` (run `pnpm build` in it first) with plain node, as a deployed service loads it; default
 * false: its sources through tsx.
 */
export const producerProcessOf = (root: string, redisUrl: string, built = false): ChildProcess =>
  fork(BATCH, [root, redisUrl, built ? 'built' : 'source'], { cwd: root, execArgv: built ? [] : EXEC_ARGV });

/** Runs one batch of `count` delegations (`concurrency` at once) on `producer`; its answer. */
export const runBatch = (producer: ChildProcess, batch: { count: number; concurrency: number; tag: string; cardUrl: string }) =>
  new Promise<BatchResult>((resolveBatch) => {
    producer.once('message', resolveBatch);
    producer.send(batch);
  });

/**
 * The A/B's rounds: a warm-up batch of 500 on each side, then `rounds` rounds of one batch of `count` a side, the
 * order swapped every round. `measure` is the µs per delegation compared, `line` a batch's progress line. Prints
 * each batch, then the medians and B ÷ A per round.
 */
export async function interleavedRounds<Result extends BatchResult>(
  rounds: number,
  count: number,
  batch: (side: 'A' | 'B', tag: string, n: number) => Promise<Result>,
  measure: (result: Result) => number,
  line: (result: Result) => string,
): Promise<void> {
  for (const side of ['A', 'B'] as const) await batch(side, `warm-${side}`, 500);
  const perDelegation: Record<'A' | 'B', number[]> = { A: [], B: [] };
  const ratios: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? (['A', 'B'] as const) : (['B', 'A'] as const);
    for (const side of order) {
      const result = await batch(side, `r${round}-${side}`, count);
      perDelegation[side].push(measure(result));
      console.log(`round ${round + 1} ${side}: ${line(result)}, ${result.completed}/${count} completed, ${Math.round((count * 1000) / result.elapsedMs)}/s, load ${loadAverage1()}`);
    }
    ratios.push(perDelegation.B[round]! / perDelegation.A[round]!);
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  console.log(`median A ${median(perDelegation.A).toFixed(1)} µs, B ${median(perDelegation.B).toFixed(1)} µs; B ÷ A by round ${ratios.map((ratio) => ratio.toFixed(3)).join(' ')}; median ${median(ratios).toFixed(3)}`);
}
