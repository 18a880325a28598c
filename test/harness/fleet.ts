/**
 * Runs durable-a2a workers for tests: in-process (`startTestFleet`) or as a
 * separate process that can be SIGKILLed (`spawnWorkerProcess`), with short
 * timings so recovery paths finish in seconds.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Registry } from 'prom-client';
import type { Producer, WorkflowView } from '@durable-a2a/producer';
import { createLogger } from '@durable-a2a/shared';
import { startFleet, type Fleet, type StartFleetOptions } from '@durable-a2a/workers';

/** Timings for tests: fast sweeps and settle windows, real mechanisms. */
export const TEST_TIMINGS = {
  requestTimeoutMs: 2_000,
  streamIdleTimeoutMs: 5_000,
  reconcileIntervalMs: 1_000,
  parkedPollMs: 2_000,
  lockDurationMs: 2_000,
  stalledIntervalMs: 1_000,
  notFoundWindowMs: 1_000,
  searchMarginMs: 2_000,
  followBackoff: { baseMs: 50, capMs: 500 },
  closeTimeoutMs: 2_000,
  // Test agents listen on 127.0.0.1.
  addressPolicy: { allowLoopback: true },
} satisfies Partial<StartFleetOptions>;

/** Starts an in-process fleet with a silent logger and a fresh metrics registry. */
export async function startTestFleet(options: Partial<StartFleetOptions> & { redisUrl: string; prefix: string }): Promise<Fleet> {
  return startFleet({
    ...TEST_TIMINGS,
    logger: createLogger({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }),
    metricsRegistry: new Registry(),
    ...options,
  });
}

/** Reconcile runs of `fleet` so far, by outcome (`durable_a2a_reconcile_runs_total`). */
export async function reconcileOutcomes(fleet: Fleet): Promise<Record<string, number>> {
  const outcomes: Record<string, number> = {};
  for (const value of (await fleet.metrics.reconcileRuns.get()).values) outcomes[String(value.labels.outcome)] = value.value;
  return outcomes;
}

/**
 * Node flags of a child process that runs TypeScript sources: tsx, and the
 * condition under which @durable-a2a/* packages export `src/` instead of `dist/`.
 */
export const SOURCE_EXEC_ARGV = ['--conditions=@durable-a2a/source', '--import', 'tsx'];

const MAIN = fileURLToPath(new URL('../../packages/workers/src/main.ts', import.meta.url));

export interface WorkerProcess {
  child: ChildProcess;
  /** Resolves when the fleet in the child reports ready. */
  ready: Promise<void>;
  /** The child's ops endpoint port (/metrics, /healthz), once ready, when DA2A_METRICS_PORT was set. */
  opsPort(): number | undefined;
  /** Resolves with the exit signal or code. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

/** The built worker (`pnpm build`: packages/workers/dist/main.js), as production runs it: no tsx, no source condition. */
export const BUILT_MAIN = fileURLToPath(new URL('../../packages/workers/dist/main.js', import.meta.url));

/**
 * Starts `packages/workers/src/main.ts` (or another `entry` that reports ready the same way) as a child process with
 * env-based config, under tsx with the source condition; a built `.js` entry (`BUILT_MAIN`) without them. `nodeArgs`:
 * Node options before those (default none).
 */
export function spawnWorkerProcess(environment: Record<string, string>, entry: string = MAIN, nodeArgs: readonly string[] = []): WorkerProcess {
  const child = fork(entry, [], {
    execArgv: [...nodeArgs, ...(entry.endsWith('.js') ? [] : SOURCE_EXEC_ARGV)],
    env: {
      PATH: process.env.PATH ?? '',
      LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
      DA2A_REQUEST_TIMEOUT_MS: String(TEST_TIMINGS.requestTimeoutMs),
      DA2A_STREAM_IDLE_TIMEOUT_MS: String(TEST_TIMINGS.streamIdleTimeoutMs),
      DA2A_RECONCILE_INTERVAL_MS: String(TEST_TIMINGS.reconcileIntervalMs),
      DA2A_PARKED_POLL_MS: String(TEST_TIMINGS.parkedPollMs),
      DA2A_LOCK_DURATION_MS: String(TEST_TIMINGS.lockDurationMs),
      DA2A_STALLED_INTERVAL_MS: String(TEST_TIMINGS.stalledIntervalMs),
      DA2A_NOT_FOUND_WINDOW_MS: String(TEST_TIMINGS.notFoundWindowMs),
      DA2A_SEARCH_MARGIN_MS: String(TEST_TIMINGS.searchMarginMs),
      DA2A_CLOSE_TIMEOUT_MS: String(TEST_TIMINGS.closeTimeoutMs),
      DA2A_ALLOW_LOOPBACK: 'true',
      ...environment,
    },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  let opsPort: number | undefined;
  const ready = new Promise<void>((resolve, reject) => {
    child.on('message', (message: { ready?: boolean; opsPort?: number }) => {
      if (!message.ready) return;
      opsPort = message.opsPort;
      resolve();
    });
    void exited.then(({ code, signal }) => reject(new Error(`worker exited before ready (code ${code}, signal ${signal})`)));
  });
  ready.catch(() => undefined);
  return {
    child,
    ready,
    opsPort: () => opsPort,
    exited,
    async kill(signal = 'SIGKILL') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
}

/** Send-path timings a test gives a worker process and its in-process peers alike. */
export interface SendTimings {
  lockDurationMs: number;
  requestTimeoutMs: number;
  livenessTtlMs: number;
}

/** A worker process on `prefix` that runs the send queue only, with `timings` (the sender a test pauses or kills). */
export function spawnSendWorker(redisUrl: string, prefix: string, timings: SendTimings): WorkerProcess {
  return spawnWorkerProcess({
    ...{ REDIS_URL: redisUrl, DA2A_PREFIX: prefix, DA2A_QUEUES: 'send' },
    ...{ DA2A_LOCK_DURATION_MS: String(timings.lockDurationMs), DA2A_REQUEST_TIMEOUT_MS: String(timings.requestTimeoutMs), DA2A_LIVENESS_TTL_MS: String(timings.livenessTtlMs) },
  });
}

/** Polls `check` until it returns a truthy value or `timeoutMs` passes (then throws with `what`). */
export async function eventually<T>(check: () => Promise<T | undefined | false>, what: string, timeoutMs = 20_000, intervalMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/**
 * Waits (bounded: `timeoutMs`, default 20 s) until `fleet`'s reconcile queue holds no job waiting or running: its
 * start-up sweep (enqueued before `startFleet` returns) has ended, and so have the batches it enqueued to run now
 * (delayed ones, at a lease's end, may still come). A start-up sweep reads the unfinished index by ZSCAN pages of
 * `reconcileBatchSize` once the index is a skiplist (createWorkflow-11.lua keeps it one), so it may still be paging
 * when a test writes the index, and claim entries the test's own sweep was to check.
 */
export async function startupSweepDone(fleet: Fleet, timeoutMs = 20_000): Promise<void> {
  await eventually(async () => {
    const counts = await fleet.context.queues.reconcile.getJobCounts('waiting', 'active', 'prioritized');
    return Object.values(counts).every((count) => count === 0);
  }, 'start-up sweep done', timeoutMs, 20);
}

/** Waits (bounded: `timeoutMs`, default 20 s) until the workflow `id` left RUNNING; returns its view. */
export async function workflowSettled(producer: Producer, id: string, timeoutMs = 20_000): Promise<WorkflowView> {
  return eventually(async () => {
    const view = await producer.get(id);
    return view.state !== 'RUNNING' && view;
  }, `workflow ${id} settled`, timeoutMs);
}
