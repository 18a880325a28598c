/**
 * The harness of the end-to-end field-case tests (each named in the table of
 * docs/field-cases.md): producer → fleet → a scripted raw JSON-RPC agent →
 * journal, each test under its own key prefix. `useFieldCases()` registers
 * the private redis-server and the teardown; the rest are plain helpers.
 */
import { afterEach, expect } from 'vitest';
import { createProducer, type Producer } from '@durable-a2a/producer';
import type { DelegationRecord, DelegationView } from '@durable-a2a/shared';
import type { Fleet, StartFleetOptions } from '@durable-a2a/workers';
import { useRedisServer } from './redis.ts';
import { eventually, startTestFleet, startupSweepDone, workflowSettled } from './fleet.ts';
export { workflowSettled } from './fleet.ts';
import { startScriptedAgent, task, type ScriptedAgentHandle, type ScriptedAnswer, type ScriptedCall, type ScriptedHandler, type ScriptedHandlers } from './scripted-agent.ts';

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** A JSON-RPC TaskNotFoundError (spec §11, -32001). */
export const NOT_FOUND = { error: { code: -32001, message: 'Task not found' } } as const;

/**
 * Fleet options for the attack rounds over two agents (`stepOverTwo`): a reconcile every 300 ms, follow back-off 200 ms
 * to 1 s, requests bounded by 3 s, a not-found window of 2 s.
 */
export const FAST_ATTACK_OPTIONS = { reconcileIntervalMs: 300, followBackoff: { baseMs: 200, capMs: 1_000 }, requestTimeoutMs: 3_000, notFoundWindowMs: 2_000 };

/** A JSON-RPC ListTasks result of `tasks` (page size 50, `nextPageToken` '' by default: the last page). */
export const listTasksPage = (tasks: unknown[], nextPageToken = '') => ({ result: { tasks, nextPageToken, pageSize: 50, totalSize: tasks.length } });

/**
 * A JSON-RPC agent that books on SendMessage as T1 (COMPLETED a1 "booked", our context and message) and answers
 * `sendAnswer` instead of its task; GetTask and ListTasks then tell the truth, SubscribeToTask is refused (no
 * streaming). For the attacks whose step must never reach the second agent (`stepOverTwo`).
 */
export function bookingThenAnswering(sendAnswer: (call: ScriptedCall, booked: Record<string, unknown>) => ScriptedAnswer): ScriptedHandlers {
  let contextId = '';
  let history: unknown[] = [];
  const booked = () => task('T1', 'COMPLETED', { contextId, history, artifacts: { a1: 'booked' } });
  return {
    SendMessage: (params, call) => {
      contextId = params.message.contextId;
      history = [params.message];
      return sendAnswer(call, booked());
    },
    GetTask: (params) => (params.id === 'T1' && contextId ? { result: booked() } : { error: { code: -32001, message: 'Task not found' } }),
    ListTasks: () => listTasksPage(contextId ? [booked()] : []),
    SubscribeToTask: () => ({ error: { code: -32004, message: 'streaming not supported' } }),
  };
}

/**
 * Agents the field-case harness did not start (HTTP+JSON, gRPC), closed by `close` after each test once `h`'s fleets
 * and producers are closed: push each one on the list returned.
 */
export function closedAfterEach<T>(h: { closeFleetsAndProducers(): Promise<void> }, close: (handle: T) => Promise<unknown>): T[] {
  const handles: T[] = [];
  afterEach(async () => {
    await h.closeFleetsAndProducers();
    await Promise.all(handles.splice(0).map(close));
  });
  return handles;
}

export interface Setup {
  prefix: string;
  producer: Producer;
  agent: ScriptedAgentHandle;
  fleet: Fleet;
  /** What the first SendMessage carried (our messageId and requested contextId). */
  seen: { contextId?: string; messageId?: string };
}

export const ref = (id: string, delegationId = 'main.1') => ({ workflowId: id, delegationId });
export const recordOf = (p: Producer, id: string, delegationId = 'main.1') => p.journal.getDelegation(ref(id, delegationId));
export const viewOf = async (p: Producer, id: string, delegationId = 'main.1') => (await p.journal.getDelegationView(ref(id, delegationId)))!;
export const artifactText = (view: DelegationView, artifactId: string) =>
  view.artifacts.find((artifact) => artifact.artifactId === artifactId)?.parts.map((part) => part.text ?? '').join('');

/** Waits (bounded) until a delegation is finished; returns its record. */
export async function finished(p: Producer, id: string, timeoutMs = 20_000, delegationId = 'main.1') {
  return eventually(async () => {
    const record = await recordOf(p, id, delegationId);
    return record && ['COMPLETED', 'FAILED', 'CANCELED', 'REJECTED', 'AMBIGUOUS', 'LOST'].includes(record.state) && record;
  }, `delegation ${id}/${delegationId} finished`, timeoutMs);
}

/**
 * Waits (bounded, 30 s) until a delegation is finished and asserts it COMPLETED with `taskId` and the artifact `a1`
 * holding `text`: the adopted task's result kept.
 */
export async function expectCompletedWith(p: Producer, id: string, taskId: string, text: string): Promise<void> {
  expect(await finished(p, id, 30_000)).toMatchObject({ state: 'COMPLETED', taskId });
  expect(artifactText(await viewOf(p, id), 'a1')).toBe(text);
}


/** An agent whose SendMessage calls a test counts: a scripted agent, or a raw one exposing the same `count`. */
export type SendCounting = Pick<ScriptedAgentHandle, 'count'>;

/**
 * The attacks' verdict for a step over agents A and B (`stepOverTwo` and its kin) whose A may hold our message: the
 * step is left to a person, never re-delegated. Asserts hotel.1 AMBIGUOUS, the workflow settled (waits at most 20 s)
 * and not COMPLETED, no hotel.2, agent B never sent a SendMessage, agent A exactly `sendsAtA` (default 1). Returns
 * hotel.1's record for the case's own checks.
 */
export async function expectLeftToAPersonNeverB(p: Producer, workflowId: string, agentA: SendCounting, agentB: SendCounting, sendsAtA = 1): Promise<DelegationRecord> {
  const first = await p.journal.getDelegation(ref(workflowId, 'hotel.1'));
  expect(first?.state).toBe('AMBIGUOUS');
  expect((await workflowSettled(p, workflowId, 20_000)).state).not.toBe('COMPLETED');
  expect(await p.journal.getDelegation(ref(workflowId, 'hotel.2'))).toBeUndefined();
  expect(agentB.count('SendMessage')).toBe(0);
  expect(agentA.count('SendMessage')).toBe(sendsAtA);
  return first!;
}

/** Sum of a counter's values whose labels include `labels`. */
export async function metric(counter: { get(): Promise<{ values: { value: number; labels: Record<string, unknown> }[] }> }, labels: Record<string, string> = {}) {
  const { values } = await counter.get();
  return values.filter((value) => Object.entries(labels).every(([key, wanted]) => value.labels[key] === wanted)).reduce((sum, value) => sum + value.value, 0);
}

/**
 * A counter the fleet moves just after a journal write (or after routing it) that a test may already have read:
 * waits (at most 2 s) for its first count, then returns the sum as `metric` does. A second count is never waited
 * for, so a test expecting 1 still fails on 2; one expecting 0 reads `metric` directly.
 */
export async function counted(counter: Parameters<typeof metric>[0], labels: Record<string, string> = {}) {
  return (await eventually(async () => (await metric(counter, labels)) || false, 'a first count', 2_000, 10).catch(() => 0)) as number;
}

const TERMINAL_WIRE = ['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED'];
/** Terminal transitions the fleet journaled (metric), summed over the terminal states; waits for the first as `counted` does. */
export async function terminalTransitions(fleet: Fleet) {
  const total = async () => {
    let sum = 0;
    for (const state of TERMINAL_WIRE) sum += await metric(fleet.metrics.transitions, { state });
    return sum;
  };
  return (await eventually(async () => (await total()) || false, 'a terminal transition counted', 2_000, 10).catch(() => 0)) as number;
}

/** Writes "SendMessage may have left" into the journal without sending (crash window 2: sent, not recorded). */
export async function markSentNotRecorded(p: Producer, id: string, agent: ScriptedAgentHandle) {
  const fence = await p.journal.claim(ref(id), 'test/crash-window-2');
  await p.journal.markSending(ref(id), fence, { url: agent.rpcUrl, protocolBinding: 'JSONRPC', protocolVersion: '1.0' });
}

/** Registers a private redis-server and per-test teardown; returns the helpers that need them. */
export function useFieldCases() {
  const redisServer = useRedisServer();
  let counter = 0;
  let base = Date.now();
  const producers: Producer[] = [];
  const fleets: Fleet[] = [];
  const agents: ScriptedAgentHandle[] = [];

  /** Closes every fleet and producer started so far (agents stay up). Fleet close is idempotent. */
  const closeFleetsAndProducers = async () => {
    await Promise.all(fleets.splice(0).map((fleet) => fleet.close()));
    await Promise.all(producers.splice(0).map((producer) => producer.close()));
  };
  afterEach(async () => {
    await Promise.all(fleets.splice(0).map((fleet) => fleet.close()));
    await Promise.all(agents.splice(0).map((agent) => agent.close()));
    await Promise.all(producers.splice(0).map((producer) => producer.close()));
  });

  /** ISO timestamps relative to the start of a test ("10:00:00" = base). */
  const at = (seconds: number) => new Date(base + seconds * 1000).toISOString();
  const newPrefix = () => {
    base = Date.now();
    return `field${++counter}`;
  };
  const producer = (prefix: string) => {
    const created = createProducer({ addressPolicy: { allowLoopback: true }, redis: redisServer().url, prefix });
    producers.push(created);
    return created;
  };
  const agentWith = async (handlers: ScriptedHandlers) => {
    const agent = await startScriptedAgent(handlers);
    agents.push(agent);
    return agent;
  };
  const fleetFor = async (prefix: string, options: Partial<StartFleetOptions> = {}) => {
    const fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, ...options });
    fleets.push(fleet);
    // Let the start-up sweep finish before the test delegates. A sweep that sees a fresh INTENT
    // enqueues a second send job, and the two can race (see the R22 note in the report):
    // the field cases here are not about that race.
    await startupSweepDone(fleet, 5_000);
    return fleet;
  };
  /** SendMessage → a SUBMITTED task `taskId` that keeps our message in its history, in the context we asked for. */
  const accept = (seen: Setup['seen'], taskId = 'T1', contextId?: string): ScriptedHandler => (params) => {
    seen.contextId ??= params.message.contextId;
    seen.messageId ??= params.message.messageId;
    return { result: { task: task(taskId, 'SUBMITTED', { contextId: contextId ?? params.message.contextId, history: [params.message], timestamp: at(0) }) } };
  };
  /** Agent + producer + fleet; `handlers` may read `seen` (filled by the first SendMessage). */
  const setUp = async (handlers: (seen: Setup['seen']) => ScriptedHandlers, fleetOptions: Partial<StartFleetOptions> = {}): Promise<Setup> => {
    const prefix = newPrefix();
    const seen: Setup['seen'] = {};
    const agent = await agentWith({ SendMessage: accept(seen), ...handlers(seen) });
    const created = producer(prefix);
    const fleet = await fleetFor(prefix, fleetOptions);
    return { prefix, producer: created, agent, fleet, seen };
  };
  /** `setUp`, then one delegation to the agent (journaled before it returns): its workflow id is `id`. */
  const setUpAndDelegate = async (handlers: (seen: Setup['seen']) => ScriptedHandlers, fleetOptions: Partial<StartFleetOptions> = {}) => {
    const setup = await setUp(handlers, fleetOptions);
    const { id } = await setup.producer.delegate({ agent: setup.agent.cardUrl, text: 'go', idempotencyKey: `${setup.prefix}-1` });
    await eventually(async () => (await setup.producer.journal.getDelegation(ref(id))) !== undefined, 'journaled');
    return { ...setup, id };
  };
  /**
   * Crash window 2: one delegation to `agent`, journaled and marked sent but never recorded (its messageId handed to
   * `onMessageId` before any worker runs); then a fleet whose reconciler searches for our message.
   */
  const sentNotRecorded = async (agent: ScriptedAgentHandle, onMessageId: (messageId: string) => void = () => undefined, fleetOptions: Partial<StartFleetOptions> = { reconcileIntervalMs: 300 }) => {
    const prefix = newPrefix();
    const created = producer(prefix);
    const { id } = await created.delegate({ agent: agent.cardUrl, text: 'go', idempotencyKey: `crash-${prefix}` });
    onMessageId((await recordOf(created, id))!.messageId);
    await markSentNotRecorded(created, id, agent);
    await fleetFor(prefix, fleetOptions);
    return { producer: created, id };
  };
  /**
   * A one-step workflow by skill `scripted` over agent A (`aCardUrl`, registered first) and agent B (a scripted agent
   * that books at once, task TB), at most 2 attempts; waits (bounded by `timeoutMs`) until it settles. For the attacks
   * whose step must never reach B (A's answer proves no refusal): B's calls are on `b`.
   */
  const stepOverTwo = async (aCardUrl: string, fleetOptions: Partial<StartFleetOptions> = {}, timeoutMs = 45_000) => {
    const b = await agentWith({ SendMessage: (params) => ({ result: { task: task('TB', 'COMPLETED', { contextId: params.message.contextId, history: [params.message], artifacts: { a1: 'B did it' } }) } }) });
    const prefix = newPrefix();
    const created = producer(prefix);
    await created.registerAgent(aCardUrl);
    await created.registerAgent(b.cardUrl);
    await fleetFor(prefix, fleetOptions);
    const { id } = await created.startWorkflow({ workflowId: `two-${prefix}-${Date.now()}`, maxAttemptsPerStep: 2, steps: [{ name: 'hotel', skill: 'scripted', message: { text: 'book' } }] });
    const view = await workflowSettled(created, id, timeoutMs);
    return { b, producer: created, id, view };
  };
  return { redisServer, at, newPrefix, producer, agentWith, fleetFor, accept, setUp, setUpAndDelegate, sentNotRecorded, stepOverTwo, closeFleetsAndProducers, counter: () => counter };
}
