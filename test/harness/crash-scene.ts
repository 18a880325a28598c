/**
 * The crash-recovery scene of the tests that SIGKILL worker processes and let fresh workers recover from the journal
 * alone: a private redis-server with an append-only file (what a killed worker journaled must outlive it), the
 * agents started once for the file, and per test a producer under a fresh key prefix, worker processes spawned on
 * that prefix and at most one in-process fleet. After each test the fleet is closed, the processes killed and the
 * producer closed; after the file the agents stop.
 */
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { createProducer, type Producer, type WorkflowView } from '@durable-a2a/producer';
import type { Fleet, StartFleetOptions } from '@durable-a2a/workers';
import { useRedisServer, type RedisServerHandle } from './redis.ts';
import { eventually, spawnWorkerProcess, startTestFleet, type WorkerProcess } from './fleet.ts';
import { startTravelCast, travelVerifierEnvironment, type TravelCast } from './travel.ts';

export interface CrashSceneOptions<Agents> {
  /** Stem of each test's key prefix (a counter is appended). */
  prefix: string;
  /** Starts the agents, once before the file's tests. */
  startAgents(): Promise<Agents>;
  /** Stops them after the file's tests. */
  stopAgents(agents: Agents): Promise<void>;
  /** Environment every spawned worker gets besides REDIS_URL and DA2A_PREFIX (e.g. DA2A_HTTP_VERIFIERS). */
  workerEnvironment?(agents: Agents): Record<string, string>;
}

export interface CrashScene<Agents> {
  readonly redisServer: () => RedisServerHandle;
  /** The agents `startAgents` returned. */
  agents(): Agents;
  /** The current test's producer (after `setUp`). */
  producer(): Producer;
  /** A producer under a fresh key prefix (`prefix` to name it instead), for the current test. */
  setUp(prefix?: string): { prefix: string; producer: Producer };
  /** A worker process on the current prefix; `environment` adds to (or overrides) the scene's. Killed after the test. */
  spawn(environment?: Record<string, string>): WorkerProcess;
  /** The in-process fleet of the current test, on its prefix; closed after the test. */
  startFleet(options?: Partial<StartFleetOptions>): Promise<Fleet>;
  /**
   * The view of workflow `id` once `accept` holds (default: COMPLETED), within `timeoutMs` (default 30 s). On timeout
   * the error carries the first step's last attempt as last seen.
   */
  reached(id: string, accept?: (view: WorkflowView) => boolean, timeoutMs?: number): Promise<WorkflowView>;
}

/** Registers the scene's hooks in the calling test file; see the file's header. */
export function useCrashScene<Agents>(options: CrashSceneOptions<Agents>): CrashScene<Agents> {
  const redisServer = useRedisServer({ appendOnly: true });
  const processes: WorkerProcess[] = [];
  let agents: Agents | undefined;
  let current: { prefix: string; producer: Producer } | undefined;
  let fleet: Fleet | undefined;
  let counter = 0;

  beforeAll(async () => {
    agents = await options.startAgents();
  });
  afterAll(async () => {
    if (agents !== undefined) await options.stopAgents(agents);
  });
  afterEach(async () => {
    await fleet?.close();
    fleet = undefined;
    await Promise.all(processes.splice(0).map((worker) => worker.kill()));
    await current?.producer.close();
    current = undefined;
  });

  const need = <T>(value: T | undefined, what: string): T => {
    if (value === undefined) throw new Error(`crash scene: ${what}`);
    return value;
  };
  const scene: CrashScene<Agents> = {
    redisServer,
    agents: () => need(agents, 'the agents are not started yet'),
    producer: () => need(current, 'call setUp() first').producer,
    setUp(prefix = `${options.prefix}${++counter}`) {
      const producer = createProducer({ redis: redisServer().url, addressPolicy: { allowLoopback: true }, prefix });
      current = { prefix, producer };
      return current;
    },
    spawn(environment = {}) {
      const { prefix } = need(current, 'call setUp() first');
      const worker = spawnWorkerProcess({ REDIS_URL: redisServer().url, DA2A_PREFIX: prefix, ...options.workerEnvironment?.(scene.agents()), ...environment });
      processes.push(worker);
      return worker;
    },
    async startFleet(fleetOptions = {}) {
      const { prefix } = need(current, 'call setUp() first');
      fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, ...fleetOptions });
      return fleet;
    },
    async reached(id, accept = (view) => view.state === 'COMPLETED', timeoutMs = 30_000) {
      const producer = scene.producer();
      try {
        return await eventually(async () => {
          const view = await producer.get(id);
          return accept(view) && view;
        }, `workflow ${id}`, timeoutMs);
      } catch (error) {
        const view = await producer.get(id).catch(() => undefined);
        throw new Error(`${String(error)}; last seen ${view?.state} ${JSON.stringify(view?.steps[0]?.attempts.at(-1))}`, { cause: error });
      }
    },
  };
  return scene;
}

/** The crash scene of the travel saga: its cast as the agents, and worker processes that verify bookings against its booking service. */
export function useTravelCrashScene(prefix: string): CrashScene<TravelCast> {
  return useCrashScene({
    prefix,
    startAgents: () => startTravelCast(),
    stopAgents: (cast) => cast.close(),
    workerEnvironment: (cast) => ({ DA2A_HTTP_VERIFIERS: travelVerifierEnvironment(cast.bookings.url) }),
  });
}

/** What the send crash-window cases read of an agent: its card, the messages it took and how often it ran one. */
export interface CountingAgent {
  readonly cardUrl: string;
  readonly receivedMessages: readonly { messageId: string }[];
  sendMessageCount(messageId?: string): number;
}

/**
 * Registers, in the calling describe, the send's crash windows (architecture windows 1 and 2) against `scene`'s
 * agent: a worker SIGKILLed after the agent accepted SendMessage, before the task id was journaled (the fresh fleet
 * adopts the task by our messageId: one SendMessage, no resend), and one SIGKILLed before the request left (resent
 * once, same messageId). `keyPrefix` starts the idempotency keys; `agentInterface`, when given, is what the orphan
 * must have journaled (the transport the card offers); `via` is added to the test names.
 */
export function sendCrashWindowCases(scene: CrashScene<CountingAgent>, options: { keyPrefix: string; via?: string; agentInterface?: { protocolBinding: string; protocolVersion: string } }): void {
  const via = options.via ? ` ${options.via}` : '';
  /** A delegation whose first worker process is SIGKILLed at `crashAt`. */
  const killedAt = async (crashAt: string, idempotencyKey: string) => {
    const { producer } = scene.setUp();
    const agent = scene.agents();
    const worker = scene.spawn({ DA2A_CRASH_AT: crashAt });
    await worker.ready;
    const { id, messageId } = await producer.delegate({ agent: agent.cardUrl, text: 'book', idempotencyKey });
    expect((await worker.exited).signal).toBe('SIGKILL');
    return { producer, agent, id, messageId };
  };
  it(`killed after the agent accepted SendMessage, before the taskId was recorded: adopted by messageId${via}, one SendMessage`, async () => {
    const { producer, agent, id, messageId } = await killedAt('send.after-request', `${options.keyPrefix}-2`);
    const orphan = (await producer.journal.getDelegation({ workflowId: id, delegationId: 'main.1' }))!;
    expect(orphan).toMatchObject({ state: 'INTENT', ...(options.agentInterface ? { agentInterface: options.agentInterface } : {}) });
    expect(orphan.taskId).toBeUndefined();
    expect(orphan.sendStartedAt).toBeGreaterThan(0);
    expect(agent.sendMessageCount(messageId)).toBe(1);

    const fleet = await scene.startFleet();
    const view = await scene.reached(id);
    expect(view.steps[0]!.attempts[0]!.resendCount).toBe(0);
    expect(agent.sendMessageCount(messageId)).toBe(1);
    expect((await fleet.metrics.adoptions.get()).values[0]!.value).toBe(1);
  });

  it(`killed before the request left: resent once${via} with the same messageId`, async () => {
    const { agent, id, messageId } = await killedAt('send.after-mark', `${options.keyPrefix}-1`);
    expect(agent.sendMessageCount(messageId)).toBe(0);

    await scene.startFleet();
    const view = await scene.reached(id);
    expect(view.steps[0]!.attempts[0]).toMatchObject({ resendCount: 1, messageId });
    expect(agent.sendMessageCount(messageId)).toBe(1);
    expect(agent.receivedMessages.filter((message) => message.messageId === messageId)).toHaveLength(1);
  });
}
