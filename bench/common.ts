/**
 * What every benchmark shares: the figures it returns, sizes from a scale,
 * Redis INFO readings, and the bits of fleet and agent plumbing that are the
 * same everywhere. Benchmarks import the harness modules directly (not
 * test/harness/index.ts) so that a harness file in progress elsewhere cannot
 * break them.
 */
import { readFileSync } from 'node:fs';
import { hostname, loadavg } from 'node:os';
import { Redis } from 'ioredis';
import { Registry } from 'prom-client';
import type { Producer } from '@durable-a2a/producer';
import { createLogger, parseCompactedWorkflow, type DelegationRef } from '@durable-a2a/shared';
import { startFleet, type Fleet, type StartFleetOptions } from '@durable-a2a/workers';
import type { DemoAgentHandle } from '../test/harness/agent.ts';

/** One measured number. */
export interface Figure {
  metric: string;
  value: number;
  unit: string;
}

/** What a benchmark returns: its figures plus the settings a reader needs to judge them. */
export interface BenchResult {
  name: string;
  title: string;
  figures: Figure[];
  /** Sizes and options the run used, and how to read the figures. */
  notes: string[];
  /**
   * Markdown tables that the report prints in place of the figure table, for a benchmark whose figures read
   * better side by side (bench/peers.ts); `figures` stay the machine-readable form.
   */
  tables?: string[];
}

export type Benchmark = (scale: number) => Promise<BenchResult>;

/**
 * `base × scale`, rounded, never below `min`. Scale 1 is what `pnpm bench`
 * runs by default (sized for a 2-core box); the smoke test uses ~0.05.
 */
export const scaled = (base: number, scale: number, min = 1): number => Math.max(min, Math.round(base * scale));

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Seconds with millisecond resolution, from a `performance.now()` difference. */
export const seconds = (ms: number): number => Math.round(ms) / 1000;

export const round = (value: number, digits = 2): number => {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
};

/** The `p`th percentile (nearest rank) of `values`; NaN when there are none. */
export const percentile = (values: readonly number[], p: number): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1))] ?? Number.NaN;
};

/** `INFO <section>` as a flat map of `field → string`. */
export async function info(redis: Redis, section: string): Promise<Map<string, string>> {
  const text = await redis.info(section);
  const fields = new Map<string, string>();
  for (const line of text.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon > 0 && !line.startsWith('#')) fields.set(line.slice(0, colon), line.slice(colon + 1));
  }
  return fields;
}

/** One number per command from `INFO commandstats` (`cmdstat_hset:calls=3,usec=12,…` → `hset → 3` for `calls`). */
async function commandStat(redis: Redis, stat: 'calls' | 'usec'): Promise<Map<string, number>> {
  const values = new Map<string, number>();
  const pattern = new RegExp(`${stat}=(\\d+)`);
  for (const [field, value] of await info(redis, 'commandstats')) {
    const match = pattern.exec(value);
    if (field.startsWith('cmdstat_') && match) values.set(field.slice('cmdstat_'.length), Number(match[1]));
  }
  return values;
}

/** Calls per command from `INFO commandstats`. */
export const commandCalls = (redis: Redis) => commandStat(redis, 'calls');

/** Microseconds Redis spent executing each command (`INFO commandstats` usec; a script's inner calls are also inside its EVALSHA). */
export const commandMicros = (redis: Redis) => commandStat(redis, 'usec');

/** Redis CPU seconds so far (`used_cpu_sys + used_cpu_user`, main thread and children). */
export async function redisCpuSeconds(redis: Redis): Promise<number> {
  const cpu = await info(redis, 'cpu');
  return Number(cpu.get('used_cpu_sys')) + Number(cpu.get('used_cpu_user'));
}

export async function usedMemory(redis: Redis): Promise<number> {
  return Number((await info(redis, 'memory')).get('used_memory'));
}

/** `after − before` per command, dropping commands that did not move. */
export function callsDelta(before: Map<string, number>, after: Map<string, number>): Map<string, number> {
  const delta = new Map<string, number>();
  for (const [command, calls] of after) {
    const moved = calls - (before.get(command) ?? 0);
    if (moved > 0) delta.set(command, moved);
  }
  return delta;
}

/** Resident set size of a process in bytes (Linux `/proc/<pid>/status` VmRSS). */
export function rssBytes(pid: number): number {
  const match = /VmRSS:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!match) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(match[1]) * 1024;
}

/** The `DA2A_*` variables of the benchmark's environment, passed to the worker processes it spawns over its own settings. */
export const workerOverrides = (): Record<string, string> =>
  Object.fromEntries(Object.entries(process.env).filter((entry): entry is [string, string] => entry[0].startsWith('DA2A_') && entry[1] !== undefined));

/** The worker id a spawned `main.ts` uses (its default, `hostname-pid`). */
export const spawnedWorkerId = (pid: number): string => `${hostname()}-${pid}`;

/**
 * Env for `spawnWorkerProcess` in benchmarks. The harness sets a 5 s stream
 * idle timeout for tests; the SDK agent sends no SSE keep-alives, so a
 * slow task would be cut and resubscribed every 5 s and pollute every
 * figure. Benchmarks raise it beyond their own length.
 */
export const BENCH_STREAM_IDLE_TIMEOUT_MS = 600_000;

/**
 * Production's timings for spawned workers (the harness's are the tests' short ones: 2 s leases and job locks, a
 * stalled check every second, 2 s requests), streams never cut for idleness. Under the tests' timings a worker
 * holding thousands of streams renews each lease every 0.7 s and BullMQ checks every active job every second: on a
 * loaded machine that work alone falls behind, leases lapse and streams are taken over and reopened in a loop.
 */
export const PRODUCTION_TIMINGS = {
  DA2A_REQUEST_TIMEOUT_MS: '30000',
  DA2A_RECONCILE_INTERVAL_MS: '30000',
  DA2A_PARKED_POLL_MS: '60000',
  DA2A_LOCK_DURATION_MS: '30000',
  DA2A_STALLED_INTERVAL_MS: '30000',
  DA2A_STREAM_IDLE_TIMEOUT_MS: String(BENCH_STREAM_IDLE_TIMEOUT_MS),
};

/** The machine's 1-minute load average, two decimals (other processes share the cores: give it beside a figure). */
export const loadAverage1 = (): number => round(loadavg()[0]!, 2);

/**
 * Stops an agent whose executions may still be sleeping (`runsSlowly`):
 * a restart abandons every execution (`crashAll`), so no timer keeps the
 * process alive, then the agent stops.
 */
export async function stopAgent(agent: DemoAgentHandle): Promise<void> {
  await agent.restart({ forgetTasks: true });
  await agent.close();
}

/** A delegation's journal state and its follow-lease holder (`workerId/jobId`), if any. */
export interface LeaseAndState {
  state: string | null;
  lease: string | null;
  /** The row's recorded error (JSON text of a RecordedError) while it is not compacted, else null. */
  error?: string | null;
}

/** Reads state and follow-lease holder of many delegations in one pipeline. */
export async function readLeasesAndStates(
  redis: Redis,
  prefix: string,
  refs: readonly { workflowId: string; delegationId: string }[],
): Promise<LeaseAndState[]> {
  const pipeline = redis.pipeline();
  for (const { workflowId, delegationId } of refs) {
    const base = `${prefix}:{wf:${workflowId}}:d:${delegationId}`;
    pipeline.hget(base, 'state');
    pipeline.get(`${base}:lease`);
    pipeline.get(`${prefix}:{wf:${workflowId}}:done`);
    pipeline.hget(base, 'error');
  }
  const replies = (await pipeline.exec()) ?? [];
  const result: LeaseAndState[] = [];
  refs.forEach(({ workflowId, delegationId }, index) => {
    // A finished workflow is compacted into one string: its delegations' states are read there.
    const finished = replies[4 * index + 2]?.[1] as string | null;
    const compacted = finished ? parseCompactedWorkflow(workflowId, finished).delegations.find(({ hash }) => hash.delegationId === delegationId)?.hash.state : undefined;
    result.push({
      state: (replies[4 * index]?.[1] as string | null) ?? compacted ?? null,
      lease: (replies[4 * index + 1]?.[1] as string | null) ?? null,
      error: (replies[4 * index + 3]?.[1] as string | null) ?? null,
    });
  });
  return result;
}

/**
 * Polls the leases and states of `refs` under `prefix` every `intervalMs` (default 200 ms) until `accept` holds for
 * every row; returns those rows. Throws naming `what` after `timeoutMs` (default 10 minutes).
 */
export async function untilEveryRow(
  redis: Redis,
  prefix: string,
  refs: readonly DelegationRef[],
  accept: (row: LeaseAndState) => boolean,
  what: string,
  options: { intervalMs?: number; timeoutMs?: number } = {},
): Promise<LeaseAndState[]> {
  const deadline = Date.now() + (options.timeoutMs ?? 600_000);
  for (;;) {
    const rows = await readLeasesAndStates(redis, prefix, refs);
    if (rows.every(accept)) return rows;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(options.intervalMs ?? 200);
  }
}

/** A row WORKING and followed by the worker `workerId` (its follow lease is `<workerId>/<jobId>`). */
export const followedBy =
  (workerId: string) =>
  (row: LeaseAndState): boolean =>
    row.lease?.startsWith(`${workerId}/`) === true && row.state === 'WORKING';

/**
 * Delegates `count` tasks to `cardUrl`, at most 50 `delegate` calls at once (text `<text> <n>`, idempotency key
 * `<keyPrefix>-<n>`, n from 0); returns the refs of their first delegations (main.1), in that order.
 */
export async function delegateMany(producer: Producer, cardUrl: string, count: number, names: { text: string; keyPrefix: string }): Promise<DelegationRef[]> {
  return mapLimit(Array.from({ length: count }), 50, async (_, index) => {
    const { id } = await producer.delegate({ agent: cardUrl, text: `${names.text} ${index}`, idempotencyKey: `${names.keyPrefix}-${index}` });
    return { workflowId: id, delegationId: 'main.1' };
  });
}

export const FINISHED = new Set(['COMPLETED', 'FAILED', 'CANCELED', 'REJECTED', 'AMBIGUOUS', 'LOST']);

/** Runs `task` over `items` with at most `limit` at once. */
export async function mapLimit<T, R>(items: readonly T[], limit: number, task: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    for (let index = next++; index < items.length; index = next++) results[index] = await task(items[index]!, index);
  });
  await Promise.all(lanes);
  return results;
}

/**
 * An in-process fleet with production timings (30 s reconcile interval, 30 s
 * locks), a silent logger, a fresh metrics registry and loopback agents
 * allowed. The harness's `startTestFleet` uses 1 s sweeps, which would add
 * reconcile traffic that production does not have.
 */
export async function startBenchFleet(options: Partial<StartFleetOptions> & { redisUrl: string; prefix: string }): Promise<Fleet> {
  return startFleet({
    logger: createLogger({ level: process.env.BENCH_LOG_LEVEL ?? 'silent' }),
    metricsRegistry: new Registry(),
    addressPolicy: { allowLoopback: true },
    streamIdleTimeoutMs: BENCH_STREAM_IDLE_TIMEOUT_MS,
    ...options,
  });
}

/** Waits until every workflow has left RUNNING (or 10 minutes pass); returns their states. */
export async function waitForWorkflows(redis: Redis, prefix: string, ids: readonly string[], timeoutMs = 600_000): Promise<(string | null)[]> {
  const states = new Array<string | null>(ids.length).fill(null);
  let open = ids.map((_, index) => index);
  const deadline = Date.now() + timeoutMs;
  while (open.length > 0 && Date.now() < deadline) {
    const pipeline = redis.pipeline();
    // A finished workflow is compacted into one string (journal/compacted-record.ts): its state is read there.
    for (const index of open) pipeline.hget(`${prefix}:{wf:${ids[index]}}:wf`, 'state').get(`${prefix}:{wf:${ids[index]}}:done`);
    const replies = (await pipeline.exec()) ?? [];
    open = open.filter((index, position) => {
      const finished = replies[2 * position + 1]?.[1] as string | null;
      const state = (replies[2 * position]?.[1] as string | null) ?? (finished ? (parseCompactedWorkflow(ids[index]!, finished).workflow.state ?? null) : null);
      states[index] = state;
      return state === null || state === 'RUNNING';
    });
    if (open.length > 0) await sleep(100);
  }
  return states;
}

/** Live counts of the delegations a fleet settled, kept in-process; `next()` resolves at the next settle. */
interface SettleCounter {
  all: number;
  completed: number;
  next(): Promise<void>;
}

const counters = new WeakMap<Fleet, SettleCounter>();

/**
 * Counts the fleet's settled delegations as they happen: the settled-delegation histogram's `observe`
 * (called once per settled delegation, label `state`) is wrapped on this fleet's own registry, so a
 * waiting benchmark lane wakes on the settle itself; no polling (reading the histogram back costs CPU in
 * the measured process: ~10% of it when polled every millisecond).
 */
function settleCounter(fleet: Fleet): SettleCounter {
  const known = counters.get(fleet);
  if (known) return known;
  let wake: (() => void) | undefined;
  let waiting: Promise<void> | undefined;
  const counter: SettleCounter = {
    all: 0,
    completed: 0,
    next: () => (waiting ??= new Promise<void>((resolve) => (wake = resolve))),
  };
  const histogram = fleet.metrics.delegationDuration;
  const observe = histogram.observe.bind(histogram) as (...args: unknown[]) => void;
  (histogram as unknown as { observe: (...args: unknown[]) => void }).observe = (...args: unknown[]) => {
    observe(...args);
    counter.all++;
    if ((args[0] as { state?: string } | undefined)?.state === 'COMPLETED') counter.completed++;
    const resolve = wake;
    waiting = undefined;
    wake = undefined;
    resolve?.();
  };
  counters.set(fleet, counter);
  return counter;
}

/**
 * Runs `count` delegations through `delegate` with at most `concurrency` of them unsettled at once (enqueued
 * and not yet settled by the fleet), as the bare client keeps `concurrency` in flight: without the bound, every
 * delegation would be enqueued at once and the fleet would hold more streams than the concurrency says.
 * A waiting lane wakes on the next settle (`settleCounter`, in-process, no polling). Returns the delegations
 * that settled COMPLETED. Throws after 10 minutes.
 */
export async function delegateWithinConcurrency(fleet: Fleet, count: number, concurrency: number, delegate: (index: number) => Promise<unknown>): Promise<number> {
  const counter = settleCounter(fleet);
  const base = { all: counter.all, completed: counter.completed };
  let started = 0;
  const deadline = Date.now() + 600_000;
  const settle = async () => {
    if (Date.now() > deadline) throw new Error(`bench: ${counter.all - base.all} of ${count} delegations settled after 10 minutes`);
    await Promise.race([counter.next(), sleep(1_000)]);
  };
  await mapLimit(Array.from({ length: count }), concurrency, async (_, index) => {
    while (started - (counter.all - base.all) >= concurrency) await settle();
    started++;
    await delegate(index);
  });
  while (counter.all - base.all < count) await settle();
  return counter.completed - base.completed;
}

/** Settled delegations so far (all states, and COMPLETED alone), from the fleet's histogram. */
export async function settledCounts(fleet: Fleet): Promise<{ all: number; completed: number }> {
  const metric = await fleet.metrics.delegationDuration.get();
  let all = 0;
  let completed = 0;
  for (const sample of metric.values) {
    if (sample.metricName !== 'durable_a2a_delegation_duration_seconds_count') continue;
    all += sample.value;
    if (sample.labels.state === 'COMPLETED') completed += sample.value;
  }
  return { all, completed };
}
