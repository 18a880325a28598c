/**
 * Benchmark `fairness`: does one tenant's burst slow another tenant's delegations down? Ten agents (test kit
 * agents, all in one process of their own), nine working WORK_MS per task and one working 10 × WORK_MS; a quiet
 * tenant delegates `quiet` at once, round-robin over the agents. Three settings, interleaved in every round (their
 * order rotates round by round), each after the previous one's delegations all finished:
 *   - solo: the quiet tenant alone;
 *   - burst: the other tenant first delegates 10 × `quiet` at once, then (its delegations all accepted, so its
 *     backlog is queued ahead) the quiet tenant its `quiet`;
 *   - burst, one tenant: the same, with the quiet delegations in the bursting tenant (no fairness between them):
 *     the reference that shows what tenant fairness buys.
 * Added latency of a delegation: from `producer.delegate` until `producer.waitFor` resolves COMPLETED, minus its
 * agent's work time. The figure to judge: the quiet tenant's p95 added latency with the burst ÷ solo (target ≤ 2).
 * Its part before the agent has the message (where tenant order acts: the send queue): from `producer.delegate` to
 * the SendMessage reaching the agent's executor (wall clock; the agents' process records each text's arrival).
 *
 * The tenant: in this release a send job names its tenant in its data (`tenant`, docs/flow-control.md "Tenants")
 * and the producer has no tenant option yet, so the bench puts the tenant of the `delegate` call on the message
 * send it enqueues (`FairSendQueue.add`, wrapped for the run with the tenant of the calling context), as
 * tenant-owned workflows will. The workers' own re-enqueues (a send waiting for a slot, a retry) carry none.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { loadavg } from 'node:os';
import { createProducer, type Producer } from '@durable-a2a/producer';
import { FairSendQueue } from '@durable-a2a/shared';
import { startRedisServer } from '../test/harness/redis.ts';
import { spawnWorkerProcess, type WorkerProcess } from '../test/harness/fleet.ts';
import { BENCH_STREAM_IDLE_TIMEOUT_MS, mapLimit, percentile, round, scaled, type BenchResult, type Figure } from './common.ts';
import { spawnBenchChild } from './processes/ipc.ts';

/** Work per task of the nine agents (ms); the tenth works SLOW_FACTOR times as long. */
const WORK_MS = 100;
const SLOW_FACTOR = 10;
const AGENT_COUNT = 10;
/** The bursting tenant delegates this many times the quiet tenant's delegations. */
const BURST_FACTOR = 10;
/** Send slots of the one worker process: small, so that the burst queues up on the send queue (what tenant order is for). */
const SEND_CONCURRENCY = 4;
/** `delegate` calls in flight at once while a tenant bursts. */
const ENQUEUE_CONCURRENCY = 20;
const QUIET = 'quiet';
const BURSTING = 'bursting';

/** The worker's timings: production's (the harness's are the tests' short ones), streams never cut for idleness. */
const PRODUCTION_TIMINGS = {
  DA2A_REQUEST_TIMEOUT_MS: '30000',
  DA2A_RECONCILE_INTERVAL_MS: '30000',
  DA2A_PARKED_POLL_MS: '60000',
  DA2A_LOCK_DURATION_MS: '30000',
  DA2A_STALLED_INTERVAL_MS: '30000',
  DA2A_STREAM_IDLE_TIMEOUT_MS: String(BENCH_STREAM_IDLE_TIMEOUT_MS),
};

type Setting = 'solo' | 'burst' | 'burst, one tenant';
const SETTINGS: readonly Setting[] = ['solo', 'burst', 'burst, one tenant'];

/** A finished delegation: its added latency (ms), its text (the agents' process records its arrival) and its start (ms since epoch). */
interface Ended {
  addedMs: number;
  text: string;
  startedAtMs: number;
}

interface AgentsReady {
  agents: { cardUrl: string }[];
}

const load1 = () => round(loadavg()[0]!, 2);

/** Runs `task` with message sends enqueued inside it placed as `tenant`'s (see the module header). */
function tenantTagging(): { as: <T>(tenant: string, task: () => Promise<T>) => Promise<T>; restore: () => void } {
  const current = new AsyncLocalStorage<string>();
  const original = FairSendQueue.prototype.add;
  FairSendQueue.prototype.add = function (this: FairSendQueue, name, data, options) {
    const tenant = current.getStore();
    const job = data as { kind?: string; tenant?: string };
    const tagged = tenant !== undefined && (job.kind ?? 'message') === 'message' && job.tenant === undefined ? { ...job, tenant } : data;
    return original.call(this, name, tagged, options);
  };
  return { as: (tenant, task) => current.run(tenant, task), restore: () => (FairSendQueue.prototype.add = original) };
}

export async function run(scale: number): Promise<BenchResult> {
  const quietCount = scaled(10, scale, 2);
  const burstCount = BURST_FACTOR * quietCount;
  const rounds = scaled(4, scale, 1);
  const behaviours = Array.from({ length: AGENT_COUNT }, (_, index) => `completes:${index === AGENT_COUNT - 1 ? SLOW_FACTOR * WORK_MS : WORK_MS}`);
  const workMsOf = (index: number) => (index % AGENT_COUNT === AGENT_COUNT - 1 ? SLOW_FACTOR * WORK_MS : WORK_MS);
  const redisServer = await startRedisServer();
  const agentsChild = spawnBenchChild<AgentsReady>('agent', { BENCH_AGENT_BEHAVIOUR: behaviours.join(',') });
  const tagging = tenantTagging();
  let producer: Producer | undefined;
  let worker: WorkerProcess | undefined;
  const added = new Map<Setting, number[]>(SETTINGS.map((setting) => [setting, []]));
  const untilAtAgent = new Map<Setting, number[]>(SETTINGS.map((setting) => [setting, []]));
  const burstAdded: number[] = [];
  const perRound: string[] = [];
  let completed = 0;
  let total = 0;
  const loadAtStart = load1();
  try {
    const { agents } = await agentsChild.ready;
    producer = createProducer({ redis: redisServer.url, addressPolicy: { allowLoopback: true }, prefix: 'fair' });
    // The workers in a process of their own, as deployed: the producer's calls and waits do not share their event loop.
    worker = spawnWorkerProcess({
      REDIS_URL: redisServer.url,
      DA2A_PREFIX: 'fair',
      DA2A_CONCURRENCY: `send=${SEND_CONCURRENCY}`,
      ...PRODUCTION_TIMINGS,
    });
    await worker.ready;
    const p = producer;

    /**
     * `count` delegations of `tenant`, round-robin over the agents, ENQUEUE_CONCURRENCY delegate calls at once; resolves
     * when all are accepted, with each one's end (`Ended`).
     */
    const delegateAll = async (tag: string, tenant: string, count: number) => {
      const finished: Promise<Ended>[] = [];
      await mapLimit(Array.from({ length: count }), ENQUEUE_CONCURRENCY, async (_, index) => {
        const started = performance.now();
        const startedAtMs = Date.now();
        const text = `${tag} ${index}`;
        const { id } = await tagging.as(tenant, () => p.delegate({ agent: agents[index % AGENT_COUNT]!.cardUrl, text, idempotencyKey: `${tag}-${index}` }));
        finished.push(
          p.waitFor(id, { timeoutMs: 300_000 }).then((view) => {
            const addedMs = performance.now() - started - workMsOf(index);
            total++;
            if (view.state === 'COMPLETED') completed++;
            return { addedMs, text, startedAtMs };
          }),
        );
      });
      return { ends: Promise.all(finished) };
    };

    const runSetting = async (setting: Setting, tag: string): Promise<Ended[]> => {
      if (setting === 'solo') return (await delegateAll(`${tag}-q`, QUIET, quietCount)).ends;
      const burst = await delegateAll(`${tag}-b`, BURSTING, burstCount);
      const quiet = await delegateAll(`${tag}-q`, setting === 'burst' ? QUIET : BURSTING, quietCount);
      const [quietAdded, burstEnds] = await Promise.all([quiet.ends, burst.ends]);
      if (setting === 'burst') burstAdded.push(...burstEnds.map((end) => end.addedMs));
      return quietAdded;
    };

    await runSetting('burst', 'warm'); // untimed: connections, scripts, JIT
    for (let index = 0; index < rounds; index++) {
      const order = SETTINGS.map((_, offset) => SETTINGS[(index + offset) % SETTINGS.length]!);
      const p95s: string[] = [];
      for (const setting of order) {
        const ends = await runSetting(setting, `r${index}-${setting.replaceAll(/\W+/g, '')}`);
        const samples = ends.map((end) => end.addedMs);
        added.get(setting)!.push(...samples);
        const arrived = await agentsChild.call<(number | null)[]>('arrivals', ends.map((end) => end.text));
        untilAtAgent.get(setting)!.push(...ends.flatMap((end, position) => (arrived[position] != null ? [arrived[position]! - end.startedAtMs] : [])));
        p95s.push(`${setting} ${round(percentile(samples, 95), 1)}`);
      }
      perRound.push(`round ${index + 1} (${order.join(' → ')}): quiet p95 ms ${p95s.join(', ')}`);
    }
  } finally {
    tagging.restore();
    await worker?.kill('SIGTERM');
    await producer?.close();
    await agentsChild.stop();
    await redisServer.stop();
  }

  const p95 = (setting: Setting) => percentile(added.get(setting)!, 95);
  const figures: Figure[] = [];
  for (const setting of SETTINGS) {
    const samples = added.get(setting)!;
    figures.push({ metric: `quiet tenant, ${setting}: added latency p50 / p95`, value: round(percentile(samples, 50), 1), unit: `/ ${round(percentile(samples, 95), 1)} ms (${samples.length} delegations)` });
  }
  for (const setting of SETTINGS) {
    const waits = untilAtAgent.get(setting)!;
    figures.push({ metric: `quiet tenant, ${setting}: delegate → SendMessage at the agent p50 / p95`, value: round(percentile(waits, 50), 1), unit: `/ ${round(percentile(waits, 95), 1)} ms` });
  }
  figures.push(
    { metric: 'quiet tenant p95 added latency ratio, burst / solo (target ≤ 2)', value: round(p95('burst') / p95('solo'), 2), unit: '' },
    { metric: 'quiet tenant p95 added latency ratio, burst in one tenant / solo (no fairness: the reference)', value: round(p95('burst, one tenant') / p95('solo'), 2), unit: '' },
    { metric: 'bursting tenant, burst: added latency p50 / p95', value: round(percentile(burstAdded, 50), 1), unit: `/ ${round(percentile(burstAdded, 95), 1)} ms` },
    { metric: 'delegations completed (all settings, warm-up included)', value: completed, unit: `of ${total}` },
    { metric: 'load average (1 min) at start / end', value: loadAtStart, unit: `/ ${load1()}` },
  );
  return {
    name: 'fairness',
    title: "Tenant fairness: a quiet tenant's added latency, alone and behind another tenant's 10× burst",
    figures,
    notes: [
      `${AGENT_COUNT} test kit agents (@durable-a2a/testing startDemoAgent, completesWith after a delay) in one process: ${AGENT_COUNT - 1} working ${WORK_MS} ms per task, one ${SLOW_FACTOR * WORK_MS} ms. Delegations go round-robin over them.`,
      `Quiet tenant: ${quietCount} delegations at once; bursting tenant: ${burstCount} at once (at most ${ENQUEUE_CONCURRENCY} delegate calls in flight), all accepted before the quiet ones start. ${rounds} rounds, the three settings in each (order rotating), after one untimed burst round.`,
      `One producer (this process) and one worker process (packages/workers main.ts: production timings, send concurrency ${SEND_CONCURRENCY}, default follow concurrency and work-conserving agent shares), one redis-server. Added latency = delegate → waitFor COMPLETED, minus the agent's work time; percentiles over every round's delegations.`,
      'Tenant on each send: the bench tags the message sends enqueued by a delegate call with its tenant (FairSendQueue.add wrapped for the run), as tenant-owned workflows will carry it; the workers\' own re-enqueues carry none.',
      ...perRound,
    ],
  };
}
