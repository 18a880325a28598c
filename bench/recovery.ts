/**
 * Benchmark 3, recovery time: N delegations in flight on an agent that keeps
 * working, the only worker process SIGKILLed, a fresh one started: seconds
 * until every record is reattached (its follow lease is held by the new
 * worker) or terminal. Run twice, side by side: on an empty journal, and with
 * H finished records cloned from a real finished workflow (bench/history.ts;
 * not in the unfinished index, as finished records never are), to show that
 * recovery does not grow with history. Knobs: BENCH_RECOVERY_IN_FLIGHT
 * (default 10,000 × BENCH_SCALE) and BENCH_RECOVERY_HISTORY (default
 * 1,000,000 × BENCH_SCALE). The agent runs in its own process; the workers
 * run production timings (30 s leases, job locks and stalled check). Any
 * `DA2A_*` variable of the environment is passed to the workers over those
 * (e.g. `DA2A_LIVENESS_TTL_MS=0` to end the dead worker's leases at their TTL
 * only). Progress lines go to stdout as the run goes; the last line is one
 * summary: seconds from the SIGKILL without and with history, their ratio and
 * the load average beside each.
 */
import { Redis } from 'ioredis';
import type { Producer } from '@durable-a2a/producer';
import { startDemoAgent } from '../test/harness/agent.ts';
import { completesWith } from '../test/harness/agent-behaviours.ts';
import { cloneFinishedWorkflow } from './history.ts';
import { startWorkerProcessRig } from './rig.ts';
import {
  FINISHED,
  loadAverage1,
  mapLimit,
  PRODUCTION_TIMINGS,
  readLeasesAndStates,
  round,
  scaled,
  seconds,
  sleep,
  spawnedWorkerId,
  stopAgent,
  usedMemory,
  workerOverrides,
  type BenchResult,
} from './common.ts';

const PREFIX = 'rec';
/** Subscriptions per second the fleet may open; the default 50/s would make recovery N/50 s by design. */
const SUBSCRIBE_RATE = { max: 10_000, durationMs: 1_000 };
/** Reconcile sweep interval of both workers (production's default). */
const RECONCILE_INTERVAL_MS = Number(PRODUCTION_TIMINGS.DA2A_RECONCILE_INTERVAL_MS);
/**
 * How long each task runs at the agent, and how long a worker keeps a stream that carries no event open (ms): far
 * beyond the run. A set-up slower than the worker's stream-quiet window (default 5 minutes: then the stream is
 * closed and the task polled) or than the tasks would lose its first streams before the kill: on a loaded
 * machine the followed count rose, then fell, and the set-up never finished.
 */
const TASK_MS = 3_600_000;
/** A wait gives up when no record moved for this long (ms), naming what the missing records look like. */
const STALL_MS = 120_000;
/** A wait gives up after this long in any case (ms). */
const WAIT_TIMEOUT_MS = 900_000;
/** Progress lines of a wait, at most one per this many ms. */
const PROGRESS_EVERY_MS = 5_000;

interface RecoveryRun {
  inFlight: number;
  history: number;
  fillSeconds: number;
  usedMemoryBytes: number;
  /** From the SIGKILL to the last record reattached or terminal. */
  fromKillSeconds: number;
  /** From the new worker reporting ready to the last record reattached or terminal. */
  fromReadySeconds: number;
  reattached: number;
  terminal: number;
  sendMessages: number;
  /** Setup: seconds from the first delegate until 1,000 (or all, if fewer) and all streams were open on the first worker. */
  firstThousandSeconds: number;
  setupSeconds: number;
  /** The 1-minute load average at the SIGKILL and when the last record was reattached. */
  loadAtKill: number;
  loadAtEnd: number;
}

/** A knob from the environment (a positive integer), else the scaled default. */
const knob = (name: string, fallback: number): number => {
  const value = Number(process.env[name]);
  return Number.isInteger(value) && value > 0 ? value : fallback;
};

export async function run(scale: number): Promise<BenchResult> {
  const inFlight = knob('BENCH_RECOVERY_IN_FLIGHT', scaled(10_000, scale, 10));
  const history = knob('BENCH_RECOVERY_HISTORY', scaled(1_000_000, scale, 1_000));
  // Each run is printed as it ends: a second run that fails or times out must not hide the first one's figures.
  const empty = await recoveryRun(inFlight, 0);
  console.log(`  recovery, empty journal: ${JSON.stringify(empty)}`);
  const full = await recoveryRun(inFlight, history);
  console.log(`  recovery, ${history} finished records: ${JSON.stringify(full)}`);
  console.log(summaryLine(empty, full));
  const floorSeconds = inFlight / (SUBSCRIBE_RATE.max / (SUBSCRIBE_RATE.durationMs / 1000));
  return {
    name: 'recovery',
    title: 'Recovery time after the whole fleet is SIGKILLed',
    figures: [
      { metric: 'delegations in flight', value: inFlight, unit: '' },
      { metric: 'finished records in the journal (second run)', value: history, unit: '' },
      { metric: 'empty journal: SIGKILL → all reattached or terminal', value: empty.fromKillSeconds, unit: 's' },
      { metric: `${history} finished: SIGKILL → all reattached or terminal`, value: full.fromKillSeconds, unit: 's' },
      { metric: 'ratio with history / empty', value: round(full.fromKillSeconds / empty.fromKillSeconds, 2), unit: '' },
      { metric: 'empty journal: new worker ready → all reattached or terminal', value: empty.fromReadySeconds, unit: 's' },
      { metric: `${history} finished: new worker ready → all reattached or terminal`, value: full.fromReadySeconds, unit: 's' },
      { metric: 'reattached or terminal (empty / with history)', value: empty.reattached + empty.terminal, unit: `/ ${full.reattached + full.terminal} of ${inFlight}` },
      { metric: 'SendMessage calls the agent saw (empty / with history)', value: empty.sendMessages, unit: `/ ${full.sendMessages} (one per delegation)` },
      { metric: `setup: streams opened per second, first ${Math.min(1_000, inFlight)} (empty / with history)`, value: round(Math.min(1_000, inFlight) / empty.firstThousandSeconds, 1), unit: `/ ${round(Math.min(1_000, inFlight) / full.firstThousandSeconds, 1)} 1/s` },
      { metric: `setup: streams opened per second, all ${inFlight} (empty / with history)`, value: round(inFlight / empty.setupSeconds, 1), unit: `/ ${round(inFlight / full.setupSeconds, 1)} 1/s` },
      { metric: 'recovery: streams reattached per second (empty / with history)', value: round(inFlight / empty.fromReadySeconds, 1), unit: `/ ${round(inFlight / full.fromReadySeconds, 1)} 1/s` },
      { metric: 'history fill time (cloned inside Redis, a Lua script per 1,000)', value: full.fillSeconds, unit: 's' },
      { metric: 'Redis used_memory with history', value: round(full.usedMemoryBytes / 2 ** 20, 1), unit: 'MiB' },
      { metric: 'load average (1 min) at the SIGKILL / at the end, empty journal', value: empty.loadAtKill, unit: `/ ${empty.loadAtEnd}` },
      { metric: 'load average (1 min) at the SIGKILL / at the end, with history', value: full.loadAtKill, unit: `/ ${full.loadAtEnd}` },
    ],
    notes: [
      `Both workers sweep on the production interval (${RECONCILE_INTERVAL_MS / 1000} s): recovery must not depend on a short sweep (the fresh worker's start-up sweep and the checks at each dead lease's end do the reattaching), and 1 s sweeps would re-check every workflow every second.`,
      `One worker process (spawnWorkerProcess, follow concurrency ${inFlight + 100}) follows ${inFlight} delegations on an agent that runs ${TASK_MS / 60_000} minutes per task (streams kept that long: no idle or quiet cut); it is SIGKILLed, a fresh process started.`,
      `Production timings (lease and job lock ${PRODUCTION_TIMINGS.DA2A_LOCK_DURATION_MS} ms, stalled check ${PRODUCTION_TIMINGS.DA2A_STALLED_INTERVAL_MS} ms, request timeout ${PRODUCTION_TIMINGS.DA2A_REQUEST_TIMEOUT_MS} ms, reconcile batch 1,000)${Object.keys(workerOverrides()).length > 0 ? `, overridden by ${JSON.stringify(workerOverrides())}` : ''}: the dead worker's follow leases end once its liveness key (3 s) is gone, else at their TTL.`,
      `Subscribe rate limit raised to ${SUBSCRIBE_RATE.max}/${SUBSCRIBE_RATE.durationMs} ms so the figure shows the recovery mechanism; the limiter alone puts a floor of ${round(floorSeconds, 1)} s under it (the reconnect-storm benchmark shows the default 50/s).`,
      'Reattached = the follow lease of the record is held by the new worker (`<workerId>/<jobId>`), polled every 100 ms; terminal = a finished journal state.',
      'History: one real single-step workflow completed through the first worker (agent in this process, 0 ms), then what it left in Redis cloned with same-length ids inside Redis (bench/history.ts, a Lua script per 1,000 clones: the compacted record, the task-owner key, its search-index member and updated-index entry; TTLs kept); none is in the unfinished index.',
      'The worker\'s per-agent follow share (DA2A_FOLLOW_SLOTS_PER_AGENT) is set to its whole follow concurrency: one agent holds every stream here, and the default share (90% at most) would leave the last tenth unfollowed.',
      'Setup and reattach are polled with one pipelined HGET state + GET lease per record, every max(100 ms, in-flight / 20 ms).',
    ],
  };
}

async function recoveryRun(inFlight: number, history: number): Promise<RecoveryRun> {
  const rig = await startWorkerProcessRig(PREFIX, `slow:${TASK_MS}`);
  const { agent, producer, reader } = rig;
  const label = history > 0 ? `${history} finished` : 'empty journal';
  const log = (line: string) => console.log(`  [recovery, ${label}, load ${loadAverage1()}] ${line}`);
  const environment = {
    ...PRODUCTION_TIMINGS,
    REDIS_URL: rig.redisServer.url,
    DA2A_PREFIX: PREFIX,
    DA2A_CONCURRENCY: `follow=${inFlight + 100},send=50`,
    // One agent holds every stream here: its share is the whole follow concurrency (default: half, 90% at most).
    DA2A_FOLLOW_SLOTS_PER_AGENT: String(inFlight + 100),
    DA2A_SUBSCRIBE_RATE_LIMIT: `${SUBSCRIBE_RATE.max}/${SUBSCRIBE_RATE.durationMs}`,
    DA2A_STREAM_IDLE_TIMEOUT_MS: String(TASK_MS),
    DA2A_STREAM_QUIET_MS: String(TASK_MS),
    ...workerOverrides(),
  };
  const spawn = () => rig.spawn(environment);
  try {
    const { cardUrl } = await agent.ready;
    const first = spawn();
    await first.ready;
    const firstId = spawnedWorkerId(first.child.pid!);
    const fillStarted = performance.now();
    if (history > 0) await fillHistory(producer, reader, history, log);
    const fillSeconds = seconds(performance.now() - fillStarted);

    const setupStarted = performance.now();
    const tenth = Math.max(1, Math.ceil(inFlight / 10));
    let delegated = 0;
    const refs = await mapLimit(Array.from({ length: inFlight }), 50, async (_, index) => {
      const { id } = await producer.delegate({ agent: cardUrl, text: `job ${index}`, idempotencyKey: `flight-${index}` });
      if (++delegated % tenth === 0) log(`set-up: ${delegated} of ${inFlight} delegated (${seconds(performance.now() - setupStarted)} s)`);
      return { workflowId: id, delegationId: 'main.1' };
    });
    const thousand = Math.min(1_000, inFlight);
    let firstThousandAt: number | undefined;
    await waitUntil(reader, refs, (row) => row.lease?.startsWith(`${firstId}/`) === true && row.state === 'WORKING', 'set-up: followed by the first worker', log, (accepted) => {
      if (firstThousandAt === undefined && accepted >= thousand) firstThousandAt = performance.now();
    });
    const setupDoneAt = performance.now();

    const loadAtKill = loadAverage1();
    await first.kill('SIGKILL');
    const killedAt = performance.now();
    log('first worker SIGKILLed; starting a fresh one');
    const second = spawn();
    await second.ready;
    const readyAt = performance.now();
    log(`fresh worker ready ${seconds(readyAt - killedAt)} s after the SIGKILL`);
    const secondId = spawnedWorkerId(second.child.pid!);
    const rows = await waitUntil(reader, refs, (row) => row.lease?.startsWith(`${secondId}/`) === true || FINISHED.has(row.state ?? ''), 'reattached by the fresh worker', log);
    const doneAt = performance.now();
    log(`all ${inFlight} reattached or terminal ${seconds(doneAt - killedAt)} s after the SIGKILL`);
    return {
      inFlight,
      history,
      fillSeconds,
      usedMemoryBytes: await usedMemory(reader),
      fromKillSeconds: seconds(doneAt - killedAt),
      fromReadySeconds: seconds(doneAt - readyAt),
      reattached: rows.filter((row) => row.lease?.startsWith(`${secondId}/`)).length,
      terminal: rows.filter((row) => FINISHED.has(row.state ?? '')).length,
      sendMessages: await agent.call<number>('sendMessageCount'),
      firstThousandSeconds: seconds((firstThousandAt ?? setupDoneAt) - setupStarted),
      setupSeconds: seconds(setupDoneAt - setupStarted),
      loadAtKill,
      loadAtEnd: loadAverage1(),
    };
  } finally {
    await rig.close();
  }
}

/**
 * Polls until `accept` holds for every ref (every max(100 ms, refs / 20 ms)); returns the last rows. Logs the count
 * accepted every `PROGRESS_EVERY_MS`. Throws, naming the shapes of the records still missing, when the count has
 * not moved for `STALL_MS` or `WAIT_TIMEOUT_MS` has passed.
 */
async function waitUntil(
  redis: Redis,
  refs: readonly { workflowId: string; delegationId: string }[],
  accept: (row: { state: string | null; lease: string | null; error?: string | null }) => boolean,
  what: string,
  log: (line: string) => void,
  progress: (accepted: number) => void = () => undefined,
) {
  const started = Date.now();
  const intervalMs = Math.max(100, refs.length / 20);
  let best = -1;
  let movedAt = started;
  let loggedAt = started;
  for (;;) {
    const rows = await readLeasesAndStates(redis, PREFIX, refs);
    const missing = rows.filter((row) => !accept(row));
    const accepted = rows.length - missing.length;
    progress(accepted);
    if (missing.length === 0) return rows;
    const now = Date.now();
    if (accepted > best) [best, movedAt] = [accepted, now];
    if (now - loggedAt >= PROGRESS_EVERY_MS) {
      loggedAt = now;
      log(`${what}: ${accepted} of ${refs.length} after ${seconds(now - started)} s`);
    }
    const stalled = now - movedAt > STALL_MS;
    if (stalled || now - started > WAIT_TIMEOUT_MS) {
      const shapes = new Map<string, number>();
      for (const row of missing) {
        const code = row.error ? (/"code":"([^"]*)"/.exec(row.error)?.[1] ?? 'unparsed') : undefined;
        const shape = `${row.state} lease=${row.lease ? row.lease.split('/')[0] : 'none'}${code ? ` error=${code}` : ''}`;
        shapes.set(shape, (shapes.get(shape) ?? 0) + 1);
      }
      const why = stalled ? `no record moved for ${STALL_MS / 1000} s` : `timed out after ${WAIT_TIMEOUT_MS / 1000} s`;
      throw new Error(`recovery: ${what}: ${why} (${missing.length} of ${refs.length} missing: ${JSON.stringify(Object.fromEntries(shapes))})`);
    }
    await sleep(intervalMs);
  }
}

/** The one line a reader compares across runs: seconds from the SIGKILL without and with history, the ratio, loads. */
function summaryLine(empty: RecoveryRun, full: RecoveryRun): string {
  const ratio = round(full.fromKillSeconds / empty.fromKillSeconds, 2);
  return (
    `recovery summary: ${empty.inFlight} in flight, SIGKILL → all reattached: ${empty.fromKillSeconds} s empty journal (load ${empty.loadAtKill}→${empty.loadAtEnd}), ` +
    `${full.fromKillSeconds} s with ${full.history} finished records (load ${full.loadAtKill}→${full.loadAtEnd}); ratio ${ratio} (target ≤ 10 s, ratio ≤ 1.1)`
  );
}

/**
 * Writes `count` finished records: one real workflow completed through the
 * running worker (a 0 ms agent in this process), then cloned inside Redis
 * (bench/history.ts), with a progress line every tenth.
 */
async function fillHistory(producer: Producer, redis: Redis, count: number, log: (line: string) => void): Promise<void> {
  const fast = await startDemoAgent({ behaviour: completesWith('a finished job') });
  try {
    const { id } = await producer.delegate({ agent: fast.cardUrl, text: 'a finished job' });
    await producer.waitFor(id, { timeoutMs: 60_000 });
    await cloneFinishedWorkflow(redis, PREFIX, id, count, {
      onProgress: (written, total, elapsedMs) => log(`history fill: ${written} of ${total} finished records (${seconds(elapsedMs)} s)`),
    });
  } finally {
    await stopAgent(fast);
  }
}
