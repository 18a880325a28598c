/**
 * Benchmark 3, recovery time: N delegations in flight on an agent that keeps
 * working, the only worker process SIGKILLed, a fresh one started: seconds
 * until every record is reattached (its follow lease is held by the new
 * worker) or terminal. Run twice, side by side: on an empty journal, and with
 * H finished records written straight into the journal (not in the
 * unfinished index, as finished records never are), to show that recovery
 * does not grow with history.
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { createProducer } from '@durable-a2a/producer';
import { buildIntent, journalKeys } from '@durable-a2a/shared';
import { startRedisServer } from '../test/harness/redis.ts';
import { startDemoAgent } from '../test/harness/agent.ts';
import { runsSlowly } from '../test/harness/agent-behaviours.ts';
import { spawnWorkerProcess, TEST_TIMINGS, type WorkerProcess } from '../test/harness/fleet.ts';
import {
  BENCH_STREAM_IDLE_TIMEOUT_MS,
  FINISHED,
  mapLimit,
  readLeasesAndStates,
  round,
  scaled,
  seconds,
  sleep,
  spawnedWorkerId,
  stopAgent,
  usedMemory,
  type BenchResult,
} from './common.ts';

const PREFIX = 'rec';
/** Subscriptions per second the fleet may open; the default 50/s would make recovery N/50 s by design. */
const SUBSCRIBE_RATE = { max: 1_000, durationMs: 1_000 };
const RETENTION_MS = 7 * 24 * 3600 * 1000;
/** Records per pipeline when writing history. */
const FILL_BATCH = 2_000;

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
}

export async function run(scale: number): Promise<BenchResult> {
  const inFlight = scaled(1_000, scale, 10);
  const history = scaled(1_000_000, scale, 1_000);
  const empty = await recoveryRun(inFlight, 0);
  const full = await recoveryRun(inFlight, history);
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
      { metric: 'history fill time (pipelined HSETs)', value: full.fillSeconds, unit: 's' },
      { metric: 'Redis used_memory with history', value: round(full.usedMemoryBytes / 2 ** 20, 1), unit: 'MiB' },
    ],
    notes: [
      'The first worker sweeps every 30 s (production) so that setup is not slowed by the reconcile sweep; the fresh one uses the test timings below.',
      `One worker process (spawnWorkerProcess, follow concurrency ${inFlight + 100}) follows ${inFlight} delegations on an agent that runs 10 minutes per task; it is SIGKILLed, a fresh process started.`,
      `Timings as in the crash tests (lock ${TEST_TIMINGS.lockDurationMs} ms, stalled check ${TEST_TIMINGS.stalledIntervalMs} ms, reconcile sweep ${TEST_TIMINGS.reconcileIntervalMs} ms, reconcile batch 1,000): the dead worker's follow leases must expire before anyone reattaches.`,
      `Subscribe rate limit raised to ${SUBSCRIBE_RATE.max}/${SUBSCRIBE_RATE.durationMs} ms so the figure shows the recovery mechanism; the limiter alone puts a floor of ${round(floorSeconds, 1)} s under it (the reconnect-storm benchmark shows the default 50/s).`,
      'Reattached = the follow lease of the record is held by the new worker (`<workerId>/<jobId>`), polled every 100 ms; terminal = a finished journal state.',
      'History rows: a COMPLETED delegation hash with a real happy-path row\'s fields (ids varied) and the 7-day retention PEXPIRE, written with pipelined HSETs; none is in the unfinished index.',
    ],
  };
}

async function recoveryRun(inFlight: number, history: number): Promise<RecoveryRun> {
  const redisServer = await startRedisServer();
  const agent = await startDemoAgent({ behaviour: runsSlowly(600_000) });
  const producer = createProducer({ redis: redisServer.url, addressPolicy: { allowLoopback: true }, prefix: PREFIX });
  const reader = new Redis(redisServer.url);
  const workers: WorkerProcess[] = [];
  const environment = {
    REDIS_URL: redisServer.url,
    DA2A_PREFIX: PREFIX,
    DA2A_CONCURRENCY: `follow=${inFlight + 100},send=50`,
    DA2A_SUBSCRIBE_RATE_LIMIT: `${SUBSCRIBE_RATE.max}/${SUBSCRIBE_RATE.durationMs}`,
    DA2A_STREAM_IDLE_TIMEOUT_MS: String(BENCH_STREAM_IDLE_TIMEOUT_MS),
  };
  const spawn = (extra: Record<string, string> = {}) => {
    const worker = spawnWorkerProcess({ ...environment, ...extra });
    workers.push(worker);
    return worker;
  };
  try {
    const fillStarted = performance.now();
    if (history > 0) await fillHistory(reader, history);
    const fillSeconds = seconds(performance.now() - fillStarted);

    // The first worker sweeps on the production interval: with 1 s sweeps every healthy stream is re-checked
    // every second, and under CPU contention that reconcile backlog starves the setup (see the report).
    const first = spawn({ DA2A_RECONCILE_INTERVAL_MS: '30000' });
    await first.ready;
    const firstId = spawnedWorkerId(first.child.pid!);
    const refs = await mapLimit(Array.from({ length: inFlight }), 50, async (_, index) => {
      const { id } = await producer.delegate({ agent: agent.cardUrl, text: `job ${index}`, idempotencyKey: `flight-${index}` });
      return { workflowId: id, delegationId: 'main.1' };
    });
    await waitUntil(reader, refs, (row) => row.lease?.startsWith(`${firstId}/`) === true && row.state === 'WORKING', 120_000, 'all delegations followed');

    await first.kill('SIGKILL');
    const killedAt = performance.now();
    const second = spawn();
    await second.ready;
    const readyAt = performance.now();
    const secondId = spawnedWorkerId(second.child.pid!);
    const rows = await waitUntil(reader, refs, (row) => row.lease?.startsWith(`${secondId}/`) === true || FINISHED.has(row.state ?? ''), 600_000, 'all reattached');
    const doneAt = performance.now();
    return {
      inFlight,
      history,
      fillSeconds,
      usedMemoryBytes: await usedMemory(reader),
      fromKillSeconds: seconds(doneAt - killedAt),
      fromReadySeconds: seconds(doneAt - readyAt),
      reattached: rows.filter((row) => row.lease?.startsWith(`${secondId}/`)).length,
      terminal: rows.filter((row) => FINISHED.has(row.state ?? '')).length,
      sendMessages: agent.sendMessageCount(),
    };
  } finally {
    await Promise.all(workers.map((worker) => worker.kill('SIGKILL')));
    reader.disconnect();
    await producer.close();
    await stopAgent(agent);
    await redisServer.stop();
  }
}

/** Polls every 100 ms until `accept` holds for every ref; returns the last rows. */
async function waitUntil(
  redis: Redis,
  refs: readonly { workflowId: string; delegationId: string }[],
  accept: (row: { state: string | null; lease: string | null }) => boolean,
  timeoutMs: number,
  what: string,
) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const rows = await readLeasesAndStates(redis, PREFIX, refs);
    const missing = rows.filter((row) => !accept(row));
    if (missing.length === 0) return rows;
    if (Date.now() > deadline) {
      const shapes = new Map<string, number>();
      for (const row of missing) {
        const shape = `${row.state} lease=${row.lease ? row.lease.split('/')[0] : 'none'}`;
        shapes.set(shape, (shapes.get(shape) ?? 0) + 1);
      }
      throw new Error(`recovery: timed out waiting for ${what} (${missing.length} of ${refs.length} missing: ${JSON.stringify(Object.fromEntries(shapes))})`);
    }
    await sleep(100);
  }
}

/**
 * Writes `count` finished delegation rows straight into the journal: one
 * HSET (a real happy-path row's fields, ids varied) and the retention
 * PEXPIRE per record, pipelined. Nothing goes into the unfinished index.
 */
export async function fillHistory(redis: Redis, count: number, prefix = PREFIX): Promise<void> {
  const keys = journalKeys(prefix);
  const template = Object.entries(finishedRow('history-template', Date.now()));
  const varying = new Set(['workflowId', 'messageId', 'taskId']);
  for (let start = 0; start < count; start += FILL_BATCH) {
    const pipeline = redis.pipeline();
    for (let index = start; index < Math.min(count, start + FILL_BATCH); index++) {
      const workflowId = `history-${index}`;
      const args: string[] = [];
      for (const [field, value] of template) args.push(field, field === 'workflowId' ? workflowId : varying.has(field) ? `${field}-${index}` : value);
      const key = keys.delegation(workflowId, 'main.1');
      pipeline.hset(key, ...args).pexpire(key, RETENTION_MS);
    }
    await pipeline.exec();
  }
}

/** A COMPLETED delegation row with the fields a real happy path leaves (no artifacts). */
function finishedRow(workflowId: string, now: number): Record<string, string> {
  const intent = buildIntent({
    workflowId,
    step: 'main',
    attempt: 1,
    agentCardUrl: 'http://127.0.0.1:9/.well-known/agent-card.json',
    message: { parts: [{ text: 'a finished job' }], metadata: { durableA2a: { workflowId, step: 'main', attempt: 1 } } },
    now: now - 60_000,
  });
  const timestamp = new Date(now - 1_000).toISOString();
  return {
    ...intent,
    agentInterface: JSON.stringify({ url: 'http://127.0.0.1:9/a2a/jsonrpc', protocolBinding: 'JSONRPC', protocolVersion: '1.0' }),
    taskId: randomUUID(),
    contextId: intent.requestedContextId!,
    state: 'COMPLETED',
    statusTimestamp: timestamp,
    statusTimestampMs: String(now - 1_000),
    sendStartedAt: String(now - 59_000),
    sendCount: '1',
    updatedAt: String(now),
    finishedAt: String(now),
    version: '6',
    fence: '2',
  };
}
