/**
 * Benchmark 7, takeover: one of two worker processes is SIGKILLed with N
 * delegations in flight (default 50) that it follows; the other stays alive.
 * Seconds from the SIGKILL until every delegation is reattached by the
 * survivor (its follow lease held there) or terminal, and until every one is
 * settled. The agent's tasks end `SETTLE_MARGIN_MS` after the kill, so the
 * settle figure is the takeover, not the agent's own work. Production timings
 * (job lock, stalled check, reconcile interval, liveness) unless the
 * environment overrides them: `BENCH_TAKEOVER_IN_FLIGHT`, and any `DA2A_*`
 * variable is passed to both workers (e.g. `DA2A_LIVENESS_TTL_MS=0` for the
 * lease-expiry path alone).
 */
import { Redis } from 'ioredis';
import { startWorkerProcessRig } from './rig.ts';
import type { DelegationRef } from '@durable-a2a/shared';
import { FINISHED, followedBy, loadAverage1, PRODUCTION_TIMINGS, seconds, sleep, spawnedWorkerId, untilEveryRow, workerOverrides, type BenchResult, type LeaseAndState } from './common.ts';

const PREFIX = 'takeover';
/** How long each task runs at the agent (ms): long enough for both workers to start and the victim to follow all. */
const TASK_MS = 20_000;
/** The tasks end this long after the kill (ms): a takeover faster than this settles when the agent finishes. */
const SETTLE_MARGIN_MS = 1_000;

export async function run(): Promise<BenchResult> {
  const inFlight = Number(process.env.BENCH_TAKEOVER_IN_FLIGHT ?? '50');
  const overrides = workerOverrides();
  const result = await takeoverRun(inFlight, overrides);
  console.log(`  takeover: ${JSON.stringify(result)}`);
  return {
    name: 'takeover',
    title: 'Takeover after one worker of two is SIGKILLed',
    figures: [
      { metric: 'delegations in flight on the killed worker', value: inFlight, unit: '' },
      { metric: 'SIGKILL → all reattached by the survivor or terminal', value: result.reattachedSeconds, unit: 's' },
      { metric: 'SIGKILL → all settled', value: result.settledSeconds, unit: 's' },
      { metric: `of which the agent's own remaining work`, value: seconds(SETTLE_MARGIN_MS), unit: 's' },
      { metric: 'SendMessage calls the agent saw', value: result.sendMessages, unit: `(one per delegation: ${inFlight})` },
    ],
    notes: [
      `Two spawned worker processes with production timings (job lock 30 s, stalled check 30 s, reconcile interval 30 s, request timeout 30 s)${Object.keys(overrides).length > 0 ? `, overridden by ${JSON.stringify(overrides)}` : ''}.`,
      `The first follows all ${inFlight} tasks (agent in its own process, each task ${TASK_MS / 1000} s) before the second starts; the first is SIGKILLed ${SETTLE_MARGIN_MS / 1000} s before the tasks end.`,
      'Reattached = the follow lease is held by the survivor; polled every 50 ms with one pipeline.',
    ],
  };
}

async function takeoverRun(inFlight: number, overrides: Record<string, string>) {
  const rig = await startWorkerProcessRig(PREFIX, `slow:${TASK_MS}`);
  const { agent, producer, reader } = rig;
  const environment = {
    ...{ REDIS_URL: rig.redisServer.url, DA2A_PREFIX: PREFIX },
    // One agent holds every stream here: its share is the whole follow concurrency (as in the recovery benchmark).
    ...{ DA2A_CONCURRENCY: `follow=${inFlight + 100}`, DA2A_FOLLOW_SLOTS_PER_AGENT: String(inFlight + 100) },
    ...PRODUCTION_TIMINGS,
    ...overrides,
  };
  const spawn = () => rig.spawn(environment);
  try {
    const { cardUrl } = await agent.ready;
    const victim = spawn();
    await victim.ready;
    const victimId = spawnedWorkerId(victim.child.pid!);
    const sentAt = performance.now();
    const refs = await Promise.all(
      Array.from({ length: inFlight }, async (_, index) => {
        const { id } = await producer.delegate({ agent: cardUrl, text: `job ${index}`, idempotencyKey: `takeover-${index}` });
        return { workflowId: id, delegationId: 'main.1' };
      }),
    );
    await poll(reader, refs, followedBy(victimId), 'all followed by the first worker');
    const survivor = spawn();
    await survivor.ready;
    const survivorId = spawnedWorkerId(survivor.child.pid!);
    const killAt = sentAt + TASK_MS - SETTLE_MARGIN_MS;
    if (performance.now() > killAt) throw new Error('takeover: setup took longer than the tasks; raise TASK_MS');
    await sleep(killAt - performance.now());
    await victim.kill('SIGKILL');
    const killedAt = performance.now();
    await poll(reader, refs, (row) => row.lease?.startsWith(`${survivorId}/`) === true || FINISHED.has(row.state ?? ''), 'all reattached');
    const reattachedAt = performance.now();
    await poll(reader, refs, (row) => FINISHED.has(row.state ?? ''), 'all settled');
    const settledAt = performance.now();
    return {
      reattachedSeconds: seconds(reattachedAt - killedAt),
      settledSeconds: seconds(settledAt - killedAt),
      sendMessages: await agent.call<number>('sendMessageCount'),
      loadAverage: loadAverage1(),
    };
  } finally {
    await rig.close();
  }
}

/** Polls every 50 ms (at most 120 s) until `accept` holds for every ref. */
async function poll(redis: Redis, refs: readonly DelegationRef[], accept: (row: LeaseAndState) => boolean, what: string): Promise<void> {
  await untilEveryRow(redis, PREFIX, refs, accept, `takeover: ${what}`, { intervalMs: 50, timeoutMs: 120_000 });
}
