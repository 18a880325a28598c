/**
 * The chaos run shared by `pnpm chaos` (test/chaos/run.ts, 1,000 workflows)
 * and its short version in `pnpm test` (test/chaos/chaos.test.ts): many workflows
 * across several worker processes while, at seeded random times, workers are
 * SIGKILLed, agents cut their streams or restart and forget their tasks, and
 * Redis (AOF everysec) is restarted. Then, with the fleet quiet, the
 * invariants of test/harness/invariants.ts are checked, with the one
 * legitimate kind of duplicate made precise: an agent that restarted and
 * forgot its tasks between two executions of the same messageId (the
 * reconciler searched, found nothing, and resent: allowed).
 */
import { Redis } from 'ioredis';
import { queuePrefix, waitUntilConnected } from '@durable-a2a/shared';
import { createProducer, type Producer, type ProducerOptions, type WorkflowView } from '@durable-a2a/producer';
import type { RedisServerHandle } from '../harness/redis.ts';
import { keySlot, migrateSlot, type RedisClusterHandle } from '../harness/redis-cluster.ts';
import { startDemoAgent, type DemoAgentHandle } from '../harness/agent.ts';
import { completesWith, completionSteps, rejects, type Behaviour } from '../harness/agent-behaviours.ts';
import { startBookingService, type BookingServiceHandle } from '../harness/booking-service.ts';
import { spawnWorkerProcess, type WorkerProcess } from '../harness/fleet.ts';
import { answerQuestions, deliveriesOf, isSettled, stuckIndexEntries, summary, type Delivery } from '../harness/invariants.ts';
import { bookingBehaviour, hotelBehaviour, travelWorkflow } from '../harness/travel.ts';

/** mulberry32: a small seeded PRNG, so a failing run replays with the same choices (timing still varies). */
export function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** `CHAOS_SEED` if set, else a fresh one (printed by the caller). */
export const seedFromEnvironment = (): number =>
  process.env.CHAOS_SEED ? Number(process.env.CHAOS_SEED) >>> 0 : Math.floor(Math.random() * 2 ** 32) >>> 0;

export type FaultKind = 'kill-worker' | 'drop-streams' | 'agent-forgets' | 'redis-restart' | 'primary-failover' | 'redis-oom' | 'redis-readonly' | 'slot-migration';

export interface ChaosOptions {
  seed: number;
  workflows: number;
  /** A single server with AOF; restarted by the `redis-restart` fault when `redisRestarts`. Or a Sentinel set's URL. */
  redis: Pick<RedisServerHandle, 'url' | 'restart'>;
  redisRestarts: boolean;
  /**
   * The `redis-oom` and `redis-readonly` faults on the single server (Redis up but refusing writes, then taking
   * them again): a window of 0.5–2.5 s at `maxmemory` below the memory in use (noeviction), or as a replica of a
   * closed port (`REPLICAOF 127.0.0.1 1`: READONLY on every write, the data kept), undone with `maxmemory 0` /
   * `REPLICAOF NO ONE`. Default false.
   */
  redisRefusals?: boolean;
  /**
   * A Redis Cluster (`redis.url` is its `redis-cluster://` URL): adds the `slot-migration` fault (the hash slot of a
   * random in-flight workflow's keys, or one time in three of the queues' prefix, moves to another master while in
   * use and back again: `migrateSlot`, keys in batches of 5 (the queues': 20), the slot half moved for 0.1–0.5 s
   * after each step).
   * `redis-oom` then hits one master at random (`redis-readonly` is left out: a cluster node refuses REPLICAOF).
   */
  cluster?: Pick<RedisClusterHandle, 'ports'>;
  /** The `primary-failover` fault (a Sentinel set): kill the primary, let a replica take over. */
  failover?: () => Promise<void>;
  /** Faults drawn at random after `faultsFirst`. Default: worker kills, dropped streams, forgetful agents, Redis restarts. [] = none. */
  randomFaults?: FaultKind[];
  /** More environment for the worker processes (e.g. DA2A_JOURNAL_REPLICAS). */
  workerEnvironment?: Record<string, string>;
  /** More producer options (e.g. durability). */
  producerOptions?: Partial<ProducerOptions>;
  /** Worker processes kept running. Default 3. */
  workers?: number;
  /** Workflows in flight at once. Default 60. */
  inFlight?: number;
  /** Mean pause between faults (uniform in [0.5, 1.5] × mean). Default 2_000. */
  faultMeanMs?: number;
  /** No fault before this many workflows were started (so a fault hits them in flight). Default 0. */
  faultsAfterStarted?: number;
  /** Faults injected first, in this order (so a short run still sees each kind); random ones follow. */
  faultsFirst?: FaultKind[];
  /** Share of workflows that are travel sagas (the rest are single delegations). Default 0.5. */
  tripShare?: number;
  /** A workflow not settled after this long is a violation. Default 120_000. */
  workflowTimeoutMs?: number;
  /** Key prefix. Default `chaos`. */
  prefix?: string;
  /** Progress and fault lines. Default: silent. */
  log?: (line: string) => void;
}

export interface ChaosReport {
  seed: number;
  workflows: number;
  durationMs: number;
  /** Final workflow states. */
  states: Record<string, number>;
  faults: Record<FaultKind, number>;
  /** Executions of journaled messages at the agents (all kinds). */
  executions: number;
  /** Re-executions excused because the agent forgot its tasks in between. */
  legitimateDuplicates: number;
  /** Bookings cancelled by compensation, and the largest cancel count of one booking. */
  cancels: { bookings: number; maxPerBooking: number };
  /** Bookings of step attempts left booked in a COMPLETED trip besides the final attempt's (a finding, not an invariant of the brief). */
  leakedBookings: string[];
  /** Most frequent NEEDS_ATTENTION / FAILED reasons, for reading the run. */
  reasons: Record<string, number>;
  violations: string[];
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const skill = (id: string) => ({ id, name: id, description: `Can ${id}`, tags: ['travel'] });

/** An agent that logs, per messageId, the restart epoch in which each execution began. */
interface ChaosAgent {
  name: string;
  handle: DemoAgentHandle;
  epoch: number;
  executions: Map<string, number[]>;
}

async function startChaosAgent(name: string, behaviour: Behaviour, skills?: ReturnType<typeof skill>[]): Promise<ChaosAgent> {
  const agent: ChaosAgent = { name, handle: undefined as unknown as DemoAgentHandle, epoch: 0, executions: new Map() };
  const recorded: Behaviour = (request) => {
    const epochs = agent.executions.get(request.messageId) ?? [];
    epochs.push(agent.epoch);
    agent.executions.set(request.messageId, epochs);
    return behaviour(request);
  };
  agent.handle = await startDemoAgent({ name, behaviour: recorded, ...(skills ? { skills } : {}) });
  return agent;
}

/** A window in which the server at `url` (one server, never a cluster URL) refuses writes (OOM or READONLY), then takes them again (always undone). */
async function refuseWritesFor(url: string, kind: 'redis-oom' | 'redis-readonly', windowMs: number): Promise<void> {
  const admin = new Redis(url, { maxRetriesPerRequest: 3 });
  admin.on('error', () => undefined);
  try {
    if (kind === 'redis-oom') {
      const used = Number(/used_memory:(\d+)/.exec(await admin.info('memory'))?.[1] ?? 0);
      await admin.config('SET', 'maxmemory', String(Math.max(1, Math.floor(used / 2))));
    } else {
      await admin.replicaof('127.0.0.1', '1');
    }
    await sleep(windowMs);
  } finally {
    // Undone whatever happened above (a restart in between resets both anyway).
    await admin.config('SET', 'maxmemory', '0').catch(() => undefined);
    if (kind === 'redis-readonly') await admin.replicaof('NO', 'ONE').catch(() => undefined);
    admin.disconnect();
  }
}

/** Runs the chaos and returns the report; `violations` is empty when every invariant held. */
export async function runChaos(options: ChaosOptions): Promise<ChaosReport> {
  const random = mulberry32(options.seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const log = options.log ?? (() => undefined);
  const prefix = options.prefix ?? 'chaos';
  const workerCount = options.workers ?? 3;
  const inFlight = options.inFlight ?? 60;
  const faultMeanMs = options.faultMeanMs ?? 2_000;
  const tripShare = options.tripShare ?? 0.5;
  const workflowTimeoutMs = options.workflowTimeoutMs ?? 120_000;
  const startedAt = Date.now();
  const violations: string[] = [];

  // The cast: a plain agent for single delegations, the travel agents on a booking service.
  const bookings: BookingServiceHandle = await startBookingService();
  const carOutcome = new Map<string, 'book' | 'reject'>();
  const car2: Behaviour = (request) => {
    const workflowId = (request.metadata?.durableA2a as { workflowId?: string } | undefined)?.workflowId ?? '';
    return carOutcome.get(workflowId) === 'book' ? [{ state: 'WORKING' }, { delayMs: 200 }, ...completionSteps('car rented')] : [{ state: 'REJECTED', text: 'fleet fully booked' }];
  };
  const agents = {
    // Work long enough (a few hundred ms) that a forgetful restart catches tasks in flight.
    plain: await startChaosAgent('plain', completesWith('done', { delayMs: 300 })),
    flight: await startChaosAgent('flight', bookingBehaviour(bookings.url, 'flight', { workMs: 300 }), [skill('book-flight')]),
    hotel: await startChaosAgent('hotel', hotelBehaviour(bookings.url), [skill('book-hotel')]),
    car1: await startChaosAgent('car1', rejects('no cars left at this location'), [skill('rent-car')]),
    car2: await startChaosAgent('car2', car2, [skill('rent-car')]),
  };
  const allAgents = Object.values(agents);
  const byCard = new Map(allAgents.map((agent) => [agent.handle.cardUrl, agent]));

  const producer: Producer = createProducer({ redis: options.redis.url, addressPolicy: { allowLoopback: true }, prefix, ...options.producerOptions });
  for (const agent of [agents.flight, agents.hotel, agents.car1, agents.car2]) await producer.registerAgent(agent.handle.cardUrl);

  const verifiers = JSON.stringify({ booking: { urlTemplate: `${bookings.url}/bookings/{subjectMessageId}`, effectField: 'status', presentValues: ['booked'] } });
  const workers: WorkerProcess[] = [];
  const spawnWorker = () => {
    const worker = spawnWorkerProcess({
      REDIS_URL: options.redis.url,
      DA2A_PREFIX: prefix,
      DA2A_HTTP_VERIFIERS: verifiers,
      DA2A_SUBSCRIBE_RATE_LIMIT: '2000/1000',
      ...options.workerEnvironment,
    });
    workers.push(worker);
    void worker.exited.then(() => workers.splice(workers.indexOf(worker), 1));
    return worker;
  };
  await Promise.all(Array.from({ length: workerCount }, () => spawnWorker().ready));

  // The workload's workflows: kind by id, and those in flight (id -> started at, ms); a slot migration picks one.
  const kinds = new Map<string, 'single' | 'trip'>();
  const active = new Map<string, number>();

  // Faults, at seeded random times, until every workflow is settled.
  const faults: Record<FaultKind, number> = { 'kill-worker': 0, 'drop-streams': 0, 'agent-forgets': 0, 'redis-restart': 0, 'primary-failover': 0, 'redis-oom': 0, 'redis-readonly': 0, 'slot-migration': 0 };
  const cluster = options.cluster;
  // A cluster node refuses REPLICAOF: on a cluster, OOM windows only.
  const refusals: readonly FaultKind[] = options.redisRefusals ? (cluster ? ['redis-oom'] : ['redis-oom', 'redis-readonly']) : [];
  const migrations: readonly FaultKind[] = cluster ? ['slot-migration', 'slot-migration'] : [];
  const weighted: FaultKind[] = options.randomFaults ?? ['kill-worker', 'kill-worker', 'drop-streams', 'drop-streams', 'drop-streams', 'agent-forgets', ...(options.redisRestarts ? (['redis-restart'] as const) : []), ...refusals, ...migrations];
  const applicable = (kind: FaultKind): boolean =>
    (kind !== 'redis-restart' || options.redisRestarts) && ((kind !== 'redis-oom' && kind !== 'redis-readonly') || refusals.includes(kind)) && (kind !== 'slot-migration' || cluster !== undefined);
  const firstFaults = (options.faultsFirst ?? []).filter(applicable);
  let chaosOn = true;
  let next = 0; // workflows started so far
  const faultLoop = (async () => {
    while (chaosOn) {
      await sleep(faultMeanMs * (0.5 + random()));
      while (chaosOn && next < (options.faultsAfterStarted ?? 0)) await sleep(50);
      if (!chaosOn) break;
      const kind = firstFaults.shift() ?? (weighted.length > 0 ? pick(weighted) : undefined);
      if (kind === undefined) continue;
      faults[kind]++;
      try {
        if (kind === 'kill-worker') {
          const victim = workers.length > 0 ? pick(workers) : undefined;
          log(`fault: SIGKILL worker pid ${victim?.child.pid}`);
          await victim?.kill('SIGKILL');
          await sleep(random() * 500);
          await spawnWorker().ready;
        } else if (kind === 'drop-streams') {
          const agent = pick(allAgents);
          const events = 1 + Math.floor(random() * 3);
          log(`fault: ${agent.name} cuts streams after ${events} events`);
          agent.handle.dropStreamsAfter(events);
          const heal = 500 + random() * 1_500;
          void sleep(heal).then(() => agent.handle.dropStreamsAfter(undefined));
        } else if (kind === 'agent-forgets') {
          const agent = pick(allAgents);
          log(`fault: ${agent.name} restarts and forgets its tasks`);
          await agent.handle.restart({ forgetTasks: true });
          // Executions from now on can no longer be found by a search for an earlier one.
          agent.epoch++;
        } else if (kind === 'redis-oom' || kind === 'redis-readonly') {
          const windowMs = 500 + random() * 2_000;
          // On a cluster, one master at random.
          const url = cluster ? `redis://127.0.0.1:${pick(cluster.ports)}` : options.redis.url;
          log(`fault: Redis ${cluster ? `${url} ` : ''}refuses writes (${kind === 'redis-oom' ? 'maxmemory below used memory' : 'turned replica'}) for ${Math.round(windowMs)} ms`);
          await refuseWritesFor(url, kind, windowMs);
        } else if (kind === 'slot-migration') {
          if (!cluster) throw new Error('a slot migration needs a cluster (ChaosOptions.cluster)');
          const inFlightIds = [...active.keys()];
          const workflowId = inFlightIds.length > 0 && random() >= 1 / 3 ? pick(inFlightIds) : undefined;
          const key = workflowId ? producer.journal.keys.workflow(workflowId) : queuePrefix(prefix);
          const slot = await keySlot(cluster, key);
          const pauseMs = 100 + Math.round(random() * 400);
          // A workflow's slot holds a handful of keys; the queues' slot one hash per job waiting, delayed or failed.
          const batchSize = workflowId ? 5 : 20;
          const there = await migrateSlot(cluster, slot, { batchSize, pauseMs });
          const back = await migrateSlot(cluster, slot, { batchSize, pauseMs, toPort: there.fromPort });
          log(`fault: slot ${slot} (${workflowId ? `workflow ${workflowId}` : 'the queues'}) moved ${there.fromPort} -> ${there.toPort} -> ${back.toPort} (${there.keysMoved} and ${back.keysMoved} keys, half moved ${pauseMs} ms per step)`);
        } else if (kind === 'primary-failover') {
          log('fault: Redis primary failover');
          await options.failover?.();
        } else {
          log('fault: redis restart');
          await options.redis.restart();
        }
      } catch (error) {
        violations.push(`fault ${kind} could not be injected: ${String(error)}`);
      }
    }
  })();

  // The workload: `inFlight` workflows at a time; questions answered as they come.
  const views = new Map<string, WorkflowView>();
  let lastProgress = Date.now();
  const start = async (index: number) => {
    const trip = random() < tripShare;
    const id = `${trip ? 'trip' : 'job'}-${options.seed}-${index}`;
    kinds.set(id, trip ? 'trip' : 'single');
    // Drawn once: a retry must send the same workflow (a different one under the same id is a conflict).
    if (trip) carOutcome.set(id, random() < 0.5 ? 'book' : 'reject');
    const parallelFlightAndHotel = trip && random() < 0.3;
    for (;;) {
      try {
        if (trip) {
          await producer.startWorkflow(travelWorkflow(id, { parallelFlightAndHotel }));
        } else {
          await producer.delegate({ agent: agents.plain.handle.cardUrl, text: `job ${index}`, idempotencyKey: id });
        }
        break;
      } catch (error) {
        log(`start ${id} failed (${String(error)}); retrying (idempotent)`);
        await sleep(200);
      }
    }
    active.set(id, Date.now());
  };
  while (next < options.workflows || active.size > 0) {
    while (active.size < inFlight && next < options.workflows) await start(next++);
    await Promise.all(
      [...active.entries()].map(async ([id, since]) => {
        try {
          const view = await producer.get(id);
          if (isSettled(view)) {
            views.set(id, view);
            active.delete(id);
            return;
          }
          await answerQuestions(producer, view);
          if (Date.now() - since > workflowTimeoutMs) {
            violations.push(`${id} not settled after ${workflowTimeoutMs} ms: ${view.state} ${JSON.stringify(summary(view))}`);
            views.set(id, view);
            active.delete(id);
          }
        } catch (error) {
          // Redis restarting: read again next round; a workflow that stays unreadable is a violation.
          if (Date.now() - since > workflowTimeoutMs) {
            violations.push(`${id} unreadable after ${workflowTimeoutMs} ms: ${String(error)}`);
            active.delete(id);
          }
        }
      }),
    );
    if (Date.now() - lastProgress > 10_000) {
      lastProgress = Date.now();
      log(`progress: ${views.size}/${options.workflows} settled, ${active.size} in flight, ${workers.length} workers, ${Math.round((Date.now() - startedAt) / 1000)} s`);
    }
    await sleep(100);
  }

  // Every fault asked for first must have happened (a fast run may finish before the last one);
  // it hits the finished fleet, which must then still settle cleanly.
  while (firstFaults.length > 0) await sleep(50);
  // The fleet goes quiet: no more faults, agents healed, enough workers.
  chaosOn = false;
  await faultLoop;
  for (const agent of allAgents) agent.handle.dropStreamsAfter(undefined);
  while (workers.length < 2) await spawnWorker().ready;
  const quietDeadline = Date.now() + 30_000;
  // The producer fails fast (no offline queue): after an injected Redis restart, wait for its connection.
  if (!(await waitUntilConnected(producer.journal.redis, 15_000))) throw new Error('the producer did not reconnect to Redis within 15 s');
  let stuck = await stuckIndexEntries(producer);
  while (stuck.length > 0 && Date.now() < quietDeadline) {
    await sleep(500);
    stuck = await stuckIndexEntries(producer);
  }
  if (stuck.length > 0) violations.push(`unfinished index not drained (only parked records may stay): ${stuck.slice(0, 10).join(', ')}${stuck.length > 10 ? ` … ${stuck.length} in all` : ''}`);

  // No workflow lost: every one re-read, settled.
  const states: Record<string, number> = {};
  const reasons: Record<string, number> = {};
  for (const id of kinds.keys()) {
    const view = await producer.get(id).catch(() => undefined);
    if (!view) {
      violations.push(`workflow ${id} is gone`);
      continue;
    }
    views.set(id, view);
    states[view.state] = (states[view.state] ?? 0) + 1;
    if (!isSettled(view)) violations.push(`workflow ${id} ended ${view.state} without a reason: ${JSON.stringify(summary(view))}`);
    const reason = view.state === 'NEEDS_ATTENTION' ? view.attention?.message : view.state === 'FAILED' ? view.failure?.at(-1) : undefined;
    if (reason) {
      const key = `${view.state}: ${reason.replace(/[0-9a-f]{8}-[0-9a-f-]{27}/g, '<id>').replace(/\d+/g, 'N').slice(0, 120)}`;
      reasons[key] = (reasons[key] ?? 0) + 1;
    }
  }

  // No SendMessage executed twice where the agent still had the task.
  let executions = 0;
  let legitimateDuplicates = 0;
  const legitimate = (delivery: Delivery): boolean => {
    const epochs = byCard.get(delivery.agentCardUrl)?.executions.get(delivery.messageId) ?? [];
    return epochs.every((epoch, index) => index === 0 || epoch !== epochs[index - 1]);
  };
  const allowedCancels = new Map<string, number>();
  for (const view of views.values()) {
    // A compensation (found by kind: the view's `compensations`) undoes the attempt of its step with the same number.
    const undoneMessageIdOf = new Map(
      view.steps.flatMap((step) =>
        step.compensations.map((undo) => [undo.delegationId, step.attempts.find((attempt) => attempt.attempt === undo.attempt)?.messageId] as const),
      ),
    );
    for (const delivery of deliveriesOf(view)) {
      const agent = byCard.get(delivery.agentCardUrl);
      const count = agent?.executions.get(delivery.messageId)?.length ?? 0;
      executions += count;
      if (count > 1) {
        if (legitimate(delivery)) legitimateDuplicates += count - 1;
        else violations.push(`${delivery.workflowId}/${delivery.delegationId} ${delivery.kind} ${delivery.messageId} executed ${count} times by ${agent!.name} with no forgetful restart in between (epochs ${agent!.executions.get(delivery.messageId)!.join(',')})`);
      }
      if (delivery.kind === 'message' && undoneMessageIdOf.has(delivery.delegationId)) {
        const key = undoneMessageIdOf.get(delivery.delegationId);
        if (key) allowedCancels.set(key, (allowedCancels.get(key) ?? 0) + Math.max(1, legitimate(delivery) ? count : 1));
      }
    }
    // A compensated trip left no booking of its own behind.
    if (view.state === 'COMPENSATED') {
      for (const step of view.steps) {
        for (const attempt of step.attempts) {
          const booking = bookings.booking(attempt.messageId);
          if (booking?.status === 'booked') violations.push(`${view.workflowId} is COMPENSATED but ${attempt.delegationId}'s booking is still booked`);
        }
      }
    }
  }

  // No compensation run twice (booking service counts).
  const cancelCounts = bookings.counts().cancels;
  let maxPerBooking = 0;
  for (const [key, count] of cancelCounts) {
    maxPerBooking = Math.max(maxPerBooking, count);
    if (count > (allowedCancels.get(key) ?? 0)) violations.push(`booking ${key} cancelled ${count} times (allowed ${allowedCancels.get(key) ?? 0})`);
  }

  // Finding: a completed trip whose earlier attempt also booked (re-delegation after LOST with the effect present).
  const leakedBookings: string[] = [];
  for (const view of views.values()) {
    if (view.state !== 'COMPLETED' || kinds.get(view.workflowId) !== 'trip') continue;
    for (const step of view.steps) {
      for (const attempt of step.attempts.slice(0, -1)) {
        if (bookings.booking(attempt.messageId)?.status === 'booked') leakedBookings.push(`${view.workflowId}/${attempt.delegationId} (${attempt.state}, effect ${attempt.effect})`);
      }
    }
  }

  await Promise.all(workers.slice().map((worker) => worker.kill('SIGTERM')));
  await producer.close();
  await Promise.all([...allAgents.map((agent) => agent.handle.close()), bookings.close()]);
  return {
    seed: options.seed,
    workflows: options.workflows,
    durationMs: Date.now() - startedAt,
    states,
    faults,
    executions,
    legitimateDuplicates,
    cancels: { bookings: cancelCounts.size, maxPerBooking },
    leakedBookings,
    reasons,
    violations,
  };
}
