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
 * the SendMessage reaching the agent's executor (wall clock; the agents' process records each text's arrival), and
 * within it until its first send job went active in the worker (BullMQ's `active` event, read from the queue's event
 * stream: its id is Redis' clock) and how many of its send jobs the worker enqueued again (a slot wait, a retry).
 *
 * The tenants are real: each tenant's delegations go through `producer.forScope({ tenant, role: 'service' })`, so its
 * workflows are `<tenant>~<id>` and every send job of them (the first and every re-enqueue by the workers) carries
 * the workflow's tenant.
 */
import { QueueEvents } from 'bullmq';
import { Redis } from 'ioredis';
import { createProducer, type Producer } from '@durable-a2a/producer';
import { queuePrefix } from '@durable-a2a/shared';
import { startRedisServer } from '../test/harness/redis.ts';
import { spawnWorkerProcess, type WorkerProcess } from '../test/harness/fleet.ts';
import { loadAverage1 as load1, mapLimit, percentile, PRODUCTION_TIMINGS, round, scaled, type BenchResult, type Figure } from './common.ts';
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

type Setting = 'solo' | 'burst' | 'burst, one tenant';
const SETTINGS: readonly Setting[] = ['solo', 'burst', 'burst, one tenant'];

/** A finished delegation: its added latency (ms), its text (the agents' process records its arrival) and its start (ms since epoch). */
interface Ended {
  id: string;
  addedMs: number;
  text: string;
  startedAtMs: number;
}

interface AgentsReady {
  agents: { cardUrl: string }[];
}


export async function run(scale: number): Promise<BenchResult> {
  const quietCount = scaled(10, scale, 2);
  const burstCount = BURST_FACTOR * quietCount;
  const rounds = scaled(4, scale, 1);
  const behaviours = Array.from({ length: AGENT_COUNT }, (_, index) => `completes:${index === AGENT_COUNT - 1 ? SLOW_FACTOR * WORK_MS : WORK_MS}`);
  const workMsOf = (index: number) => (index % AGENT_COUNT === AGENT_COUNT - 1 ? SLOW_FACTOR * WORK_MS : WORK_MS);
  const redisServer = await startRedisServer();
  const agentsChild = spawnBenchChild<AgentsReady>('agent', { BENCH_AGENT_BEHAVIOUR: behaviours.join(',') });
  let producer: Producer | undefined;
  let worker: WorkerProcess | undefined;
  const added = new Map<Setting, number[]>(SETTINGS.map((setting) => [setting, []]));
  const untilAtAgent = new Map<Setting, number[]>(SETTINGS.map((setting) => [setting, []]));
  const untilActive = new Map<Setting, number[]>(SETTINGS.map((setting) => [setting, []]));
  const enqueuedAgain = new Map<Setting, number>(SETTINGS.map((setting) => [setting, 0]));
  /** When each send job first went active (ms since epoch, Redis' clock), by job id. */
  const activeAt = new Map<string, number>();
  let sendEvents: QueueEvents | undefined;
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
    sendEvents = new QueueEvents('send', { connection: new Redis(redisServer.url, { maxRetriesPerRequest: null }), prefix: queuePrefix('fair') });
    sendEvents.on('active', ({ jobId }, eventId) => {
      if (!activeAt.has(jobId)) activeAt.set(jobId, Number(eventId.split('-')[0]));
    });
    await sendEvents.waitUntilReady();
    const p = producer;
    const tenants = new Map([QUIET, BURSTING].map((tenant) => [tenant, p.forScope({ tenant, role: 'service' })]));

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
        const scoped = tenants.get(tenant)!;
        const { id } = await scoped.delegate({ agent: agents[index % AGENT_COUNT]!.cardUrl, text, idempotencyKey: `${tag}-${index}` });
        finished.push(
          scoped.waitFor(id, { timeoutMs: 300_000 }).then((view) => {
            const addedMs = performance.now() - started - workMsOf(index);
            total++;
            if (view.state === 'COMPLETED') completed++;
            return { id, addedMs, text, startedAtMs };
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
        for (const end of ends) {
          // A delegation's send jobs: `send|<workflow>|main.1|<resend>[|…]`; the first is `…|0`, any other the worker's.
          const jobs = [...activeAt.keys()].filter((jobId) => jobId.startsWith(`send|${end.id}|`));
          const first = activeAt.get(`send|${end.id}|main.1|0`);
          if (first !== undefined) untilActive.get(setting)!.push(first - end.startedAtMs);
          enqueuedAgain.set(setting, enqueuedAgain.get(setting)! + jobs.filter((jobId) => jobId !== `send|${end.id}|main.1|0`).length);
        }
        p95s.push(`${setting} ${round(percentile(samples, 95), 1)}`);
      }
      perRound.push(`round ${index + 1} (${order.join(' → ')}): quiet p95 ms ${p95s.join(', ')}`);
    }
  } finally {
    await sendEvents?.close();
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
  for (const setting of SETTINGS) {
    const waits = untilActive.get(setting)!;
    figures.push({
      metric: `quiet tenant, ${setting}: delegate → first send job active p50 / p95 (send jobs enqueued again)`,
      value: round(percentile(waits, 50), 1),
      unit: `/ ${round(percentile(waits, 95), 1)} ms (${enqueuedAgain.get(setting)})`,
    });
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
      "Tenants: each tenant's delegations through producer.forScope({ tenant, role: 'service' }): its workflows are <tenant>~<id>, and every send job (the workers' re-enqueues too) carries that tenant.",
      ...perRound,
    ],
  };
}
