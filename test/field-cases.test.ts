/**
 * Field cases (/work/shared/cases/field-reports.md) end to end: producer →
 * fleet → a scripted raw JSON-RPC agent → journal. Each `describe` names its
 * case id; the case's "Expected" is the assertion.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Queue } from 'bullmq';
import { createProducer, type Producer } from '@durable-a2a/producer';
import { createRedisClient, queuePrefix, type DelegationView } from '@durable-a2a/shared';
import type { Fleet, StartFleetOptions } from '@durable-a2a/workers';
import { useRedisServer } from './harness/redis.ts';
import { eventually, startTestFleet } from './harness/fleet.ts';
import {
  AU,
  SU,
  agentMessage,
  ev,
  startScriptedAgent,
  task,
  taskEvent,
  userMessage,
  type ScriptedAgentHandle,
  type ScriptedHandler,
  type ScriptedHandlers,
} from './harness/scripted-agent.ts';

const redisServer = useRedisServer();
let counter = 0;
let producer: Producer | undefined;
const fleets: Fleet[] = [];
const agents: ScriptedAgentHandle[] = [];

afterEach(async () => {
  await Promise.all(fleets.splice(0).map((fleet) => fleet.close()));
  await Promise.all(agents.splice(0).map((agent) => agent.close()));
  await producer?.close();
  producer = undefined;
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const NOT_FOUND = { error: { code: -32001, message: 'Task not found' } } as const;

/** ISO timestamps relative to the start of a test ("10:00:00" = base). */
let base = Date.now();
const at = (seconds: number) => new Date(base + seconds * 1000).toISOString();

interface Setup {
  prefix: string;
  producer: Producer;
  agent: ScriptedAgentHandle;
  fleet: Fleet;
  /** What the first SendMessage carried (our messageId and requested contextId). */
  seen: { contextId?: string; messageId?: string };
}

async function agentWith(handlers: ScriptedHandlers): Promise<ScriptedAgentHandle> {
  const agent = await startScriptedAgent(handlers);
  agents.push(agent);
  return agent;
}

async function fleetFor(prefix: string, options: Partial<StartFleetOptions> = {}): Promise<Fleet> {
  const fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, ...options });
  fleets.push(fleet);
  // Let the start-up sweep finish before the test delegates. A sweep that sees a fresh INTENT
  // enqueues a second send job, and the two can race (see the R22 note in the report):
  // the field cases here are not about that race.
  await eventually(async () => {
    const counts = await fleet.context.queues.reconcile.getJobCounts('waiting', 'active', 'prioritized');
    return Object.values(counts).every((count) => count === 0);
  }, 'start-up sweep done', 5_000, 20);
  return fleet;
}

function newPrefix(): string {
  base = Date.now();
  return `field${++counter}`;
}

/** SendMessage → a SUBMITTED task `taskId` that keeps our message in its history, in the context we asked for. */
function accept(seen: Setup['seen'], taskId = 'T1', contextId?: string): ScriptedHandler {
  return (params) => {
    seen.contextId ??= params.message.contextId;
    seen.messageId ??= params.message.messageId;
    return { result: { task: task(taskId, 'SUBMITTED', { contextId: contextId ?? params.message.contextId, history: [params.message], timestamp: at(0) }) } };
  };
}

/** Agent + producer + fleet; `handlers` may read `seen` (filled by the first SendMessage). */
async function setUp(handlers: (seen: Setup['seen']) => ScriptedHandlers, fleetOptions: Partial<StartFleetOptions> = {}): Promise<Setup> {
  const prefix = newPrefix();
  const seen: Setup['seen'] = {};
  const agent = await agentWith({ SendMessage: accept(seen), ...handlers(seen) });
  producer = createProducer({ redis: redisServer().url, prefix });
  const fleet = await fleetFor(prefix, fleetOptions);
  return { prefix, producer, agent, fleet, seen };
}

const ref = (id: string, delegationId = 'main.1') => ({ workflowId: id, delegationId });
const recordOf = (p: Producer, id: string, delegationId = 'main.1') => p.journal.getDelegation(ref(id, delegationId));
const viewOf = async (p: Producer, id: string, delegationId = 'main.1') => (await p.journal.getDelegationView(ref(id, delegationId)))!;
const artifactText = (view: DelegationView, artifactId: string) =>
  view.artifacts.find((artifact) => artifact.artifactId === artifactId)?.parts.map((part) => part.text ?? '').join('');

async function finished(p: Producer, id: string, timeoutMs = 20_000, delegationId = 'main.1') {
  return eventually(async () => {
    const record = await recordOf(p, id, delegationId);
    return record && ['COMPLETED', 'FAILED', 'CANCELED', 'REJECTED', 'AMBIGUOUS', 'LOST'].includes(record.state) && record;
  }, `delegation ${id}/${delegationId} finished`, timeoutMs);
}

async function workflowSettled(p: Producer, id: string, timeoutMs = 20_000) {
  return eventually(async () => {
    const view = await p.get(id);
    return view.state !== 'RUNNING' && view;
  }, `workflow ${id} settled`, timeoutMs);
}

/** Sum of a counter's values whose labels include `labels`. */
async function metric(counter: { get(): Promise<{ values: { value: number; labels: Record<string, unknown> }[] }> }, labels: Record<string, string> = {}) {
  const { values } = await counter.get();
  return values.filter((value) => Object.entries(labels).every(([key, wanted]) => value.labels[key] === wanted)).reduce((sum, value) => sum + value.value, 0);
}

const TERMINAL_WIRE = ['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED'];
async function terminalTransitions(fleet: Fleet) {
  let total = 0;
  for (const state of TERMINAL_WIRE) total += await metric(fleet.metrics.transitions, { state });
  return total;
}

/** Writes "SendMessage may have left" into the journal without sending (crash window 2: sent, not recorded). */
async function markSentNotRecorded(p: Producer, id: string, agent: ScriptedAgentHandle) {
  const fence = await p.journal.claim(ref(id), 'test/crash-window-2');
  await p.journal.markSending(ref(id), fence, { url: agent.rpcUrl, protocolBinding: 'JSONRPC', protocolVersion: '1.0' });
}

// ---------------------------------------------------------------------------

describe('R04: last event not followed by a blank line, then EOF', () => {
  it('discards the unterminated COMPLETED, reads the task once: COMPLETED with a1 "done", fast', async () => {
    const { producer: p, agent, fleet, seen } = await setUp(
      (seen) => ({
        SubscribeToTask: () => ({
          sse: ev(SU('WORKING', { contextId: seen.contextId })) + 'data: ' + SU('COMPLETED', { contextId: seen.contextId }) + '\n',
          endAfter: 'close',
        }),
        GetTask: () => ({ result: task('T1', 'COMPLETED', { contextId: seen.contextId, artifacts: { a1: 'done' } }) }),
      }),
      // A large backoff: a resubscription or retry before the GetTask would be visible in the elapsed time.
      { followBackoff: { baseMs: 10_000, capMs: 20_000 }, reconcileIntervalMs: 60_000 },
    );
    const started = Date.now();
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'r04', idempotencyKey: 'r04' });
    const record = await finished(p, id);
    const elapsed = Date.now() - started;
    expect(record.state).toBe('COMPLETED');
    expect(artifactText(await viewOf(p, id), 'a1')).toBe('done');
    expect(agent.count('GetTask')).toBe(1);
    expect(agent.count('SendMessage')).toBe(1);
    expect(agent.count('SubscribeToTask')).toBe(1);
    expect(agent.calls('SendMessage')[0]!.params.message.messageId).toBe(seen.messageId);
    // Not applied from the stream: the terminal transition came from the GetTask, once.
    expect(await metric(fleet.metrics.transitions, { state: 'TASK_STATE_COMPLETED', source: 'stream' })).toBe(0);
    expect(await metric(fleet.metrics.transitions, { state: 'TASK_STATE_COMPLETED', source: 'get-task' })).toBe(1);
    expect(await terminalTransitions(fleet)).toBe(1);
    expect(elapsed).toBeLessThan(5_000);
    expect((await workflowSettled(p, id)).state).toBe('COMPLETED');
  });
});

describe('R05: a quiet SSE stream (worker side, scaled to a 500 ms idle watchdog)', () => {
  it('": ping" then silence longer than the watchdog: resubscribed, never FAILED or re-delegated, then COMPLETED once', async () => {
    const { producer: p, agent, fleet } = await setUp(
      (seen) => ({
        SubscribeToTask: (_params, call) =>
          call.count === 1
            ? { sse: [': ping\n\n'], endAfter: 'hang' }
            : { sse: [taskEvent(task('T1', 'WORKING', { contextId: seen.contextId })), ev(SU('COMPLETED', { contextId: seen.contextId }))], endAfter: 'close' },
        GetTask: () => ({ result: task('T1', 'WORKING', { contextId: seen.contextId }) }),
      }),
      { streamIdleTimeoutMs: 500, reconcileIntervalMs: 60_000 },
    );
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'r05', idempotencyKey: 'r05' });
    const record = await finished(p, id);
    expect(record.state).toBe('COMPLETED');
    expect(agent.count('SubscribeToTask')).toBeGreaterThanOrEqual(2);
    expect(agent.count('SendMessage')).toBe(1);
    expect(await metric(fleet.metrics.resubscriptions, { reason: 'idle' })).toBeGreaterThanOrEqual(1);
    expect(await metric(fleet.metrics.transitions, { state: 'TASK_STATE_FAILED' })).toBe(0);
    expect(await terminalTransitions(fleet)).toBe(1);
    expect(await metric(fleet.metrics.redelegations)).toBe(0);
    const view = await workflowSettled(p, id);
    expect(view.state).toBe('COMPLETED');
    expect(view.steps[0]!.attempts).toHaveLength(1);
  });

  it('keep-alive comments every 100 ms for 2 s reset the watchdog: one subscription, 0 reconnects, 1 terminal transition', async () => {
    const keepAlives = Array.from({ length: 20 }, () => [': keepalive\n\n', { waitMs: 100 }]).flat();
    const { producer: p, agent, fleet } = await setUp(
      (seen) => ({
        SubscribeToTask: () => ({
          sse: [taskEvent(task('T1', 'WORKING', { contextId: seen.contextId })), ...keepAlives, ev(SU('COMPLETED', { contextId: seen.contextId }))],
          endAfter: 'close',
        }),
        GetTask: () => ({ result: task('T1', 'WORKING', { contextId: seen.contextId }) }),
      }),
      { streamIdleTimeoutMs: 500, reconcileIntervalMs: 60_000 },
    );
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'r05b', idempotencyKey: 'r05b' });
    const record = await finished(p, id);
    expect(record.state).toBe('COMPLETED');
    expect(agent.count('SubscribeToTask')).toBe(1);
    expect(agent.count('GetTask')).toBe(0);
    expect(await metric(fleet.metrics.resubscriptions)).toBe(0);
    expect(await terminalTransitions(fleet)).toBe(1);
  });
});

describe('R09: artifact chunks and events delivered twice', () => {
  const chunks = (contextId?: string) => [
    ev(AU('a1', false, false, 'Hello, ', { contextId })),
    ev(AU('a1', true, false, 'big ', { contextId })),
    ev(AU('a1', true, true, 'world!', { contextId })),
    ev(SU('COMPLETED', { contextId })),
  ];

  async function run(duplicateLastTwo: boolean) {
    const { producer: p, agent, fleet } = await setUp(
      (seen) => ({
        SubscribeToTask: () => {
          const events = chunks(seen.contextId);
          if (duplicateLastTwo) events.splice(3, 0, events[2]!), events.push(events.at(-1)!);
          return { sse: events, endAfter: 'close' };
        },
      }),
      { reconcileIntervalMs: 60_000 },
    );
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'r09', idempotencyKey: `r09-${duplicateLastTwo}` });
    const record = await finished(p, id);
    const view = await workflowSettled(p, id);
    // Let any late duplicate processing happen before counting.
    await sleep(300);
    return { p, agent, fleet, id, record, view, artifacts: await viewOf(p, id) };
  }

  it('appends three deltas once: a1 === "Hello, big world!"', async () => {
    const { record, artifacts, fleet, view, agent } = await run(false);
    expect(record.state).toBe('COMPLETED');
    expect(artifactText(artifacts, 'a1')).toBe('Hello, big world!');
    expect(await terminalTransitions(fleet)).toBe(1);
    expect(view.state).toBe('COMPLETED');
    expect(agent.count('SendMessage')).toBe(1);
  });

  it('last artifact event and COMPLETED each sent twice: second sealed append ignored, 1 terminal transition, same journal version', async () => {
    const single = await run(false);
    const singleVersion = (await recordOf(single.p, single.id))!.version;
    await Promise.all(fleets.splice(0).map((fleet) => fleet.close()));
    await producer?.close();
    const { record, artifacts, fleet, view, agent, p, id } = await run(true);
    expect(agent.calls('SubscribeToTask')).toHaveLength(1);
    expect(record.state).toBe('COMPLETED');
    expect(artifactText(artifacts, 'a1')).toBe('Hello, big world!');
    expect(await terminalTransitions(fleet)).toBe(1);
    // The duplicates changed nothing: the record's version is the one of the run without duplicates.
    expect((await recordOf(p, id))!.version).toBe(singleVersion);
    expect(await metric(fleet.metrics.staleObservations, { reason: 'finished' })).toBeGreaterThanOrEqual(1);
    expect(view.state).toBe('COMPLETED');
    expect(view.steps[0]!.attempts).toHaveLength(1);
  });
});

describe('R10: append:false snapshot after deltas; lastChunk seals', () => {
  it('a1 === "Hello", a2 === "x", the post-seal update is dropped', async () => {
    const { producer: p, agent } = await setUp(
      (seen) => ({
        SubscribeToTask: () => {
          const c = { contextId: seen.contextId };
          return {
            sse: [
              ev(AU('a1', false, false, 'Hel', c)),
              ev(AU('a1', true, false, 'lo', c)),
              ev(AU('a2', true, false, 'x', c)),
              ev(AU('a1', false, true, 'Hello', c)),
              ev(AU('a1', true, false, '!!', c)),
              ev(SU('COMPLETED', c)),
            ],
            endAfter: 'close',
          };
        },
      }),
      { reconcileIntervalMs: 60_000 },
    );
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'r10', idempotencyKey: 'r10' });
    const record = await finished(p, id);
    expect(record.state).toBe('COMPLETED');
    const view = await viewOf(p, id);
    expect(artifactText(view, 'a1')).toBe('Hello');
    expect(artifactText(view, 'a2')).toBe('x');
    expect(view.artifacts.map((artifact) => artifact.artifactId)).toEqual(['a1', 'a2']);
  });
});

describe('R12: reads older than what the stream said', () => {
  it('stream COMPLETED (10:00:05), then the connection drops and GetTask answers WORKING (10:00:01): stays COMPLETED, no resubscribe', async () => {
    const { producer: p, agent, fleet } = await setUp(
      (seen) => ({
        SubscribeToTask: () => ({ sse: [ev(SU('COMPLETED', { contextId: seen.contextId, timestamp: at(5) }))], endAfter: 'destroy' }),
        GetTask: () => ({ result: task('T1', 'WORKING', { contextId: seen.contextId, timestamp: at(1) }) }),
      }),
      { reconcileIntervalMs: 60_000 },
    );
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'r12', idempotencyKey: 'r12' });
    const record = await finished(p, id);
    expect(record.state).toBe('COMPLETED');
    await workflowSettled(p, id);
    // Force more reads: a sweep of everything, twice.
    await fleet.sweepAll();
    await sleep(700);
    await fleet.sweepAll();
    await sleep(1_000);
    const after = (await recordOf(p, id))!;
    expect(after.state).toBe('COMPLETED');
    expect(after.statusTimestamp).toBe(at(5));
    // The stale read did happen (after the drop) and was ignored.
    expect(agent.count('GetTask')).toBe(1);
    expect(await metric(fleet.metrics.transitions, { source: 'get-task' })).toBe(0);
    expect(agent.count('SubscribeToTask')).toBe(1);
    expect(agent.count('SendMessage')).toBe(1);
    expect(await terminalTransitions(fleet)).toBe(1);
    expect(await metric(fleet.metrics.transitions, { state: 'TASK_STATE_WORKING' })).toBe(0);
    expect(await metric(fleet.metrics.redelegations)).toBe(0);
    expect((await p.get(id)).state).toBe('COMPLETED');
  });

  it('a stale GetTask snapshot applied to a COMPLETED record is ignored ("finished"), terminal states never regress', async () => {
    const { producer: p, agent } = await setUp(
      (seen) => ({
        SubscribeToTask: () => ({ sse: [ev(SU('COMPLETED', { contextId: seen.contextId, timestamp: at(5) }))], endAfter: 'close' }),
      }),
      { reconcileIntervalMs: 60_000 },
    );
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'r12c', idempotencyKey: 'r12c' });
    await finished(p, id);
    const before = (await recordOf(p, id))!;
    const { applyTask } = await import('@durable-a2a/shared');
    const result = await applyTask(p.journal, ref(id), task('T1', 'WORKING', { timestamp: at(1) }) as never, { snapshot: true });
    expect(result).toEqual({ applied: false, reason: 'finished' });
    const after = (await recordOf(p, id))!;
    expect(after.state).toBe('COMPLETED');
    expect(after.version).toBe(before.version);
  });

  it('a late SU(WORKING, 10:00:06) after COMPLETED on the stream: stays COMPLETED, 0 resubscribes, 0 re-delegations', async () => {
    const { producer: p, agent, fleet } = await setUp(
      (seen) => ({
        SubscribeToTask: () => ({
          sse: [ev(SU('COMPLETED', { contextId: seen.contextId, timestamp: at(5) })), ev(SU('WORKING', { contextId: seen.contextId, timestamp: at(6) }))],
          endAfter: 'close',
        }),
        GetTask: () => ({ result: task('T1', 'WORKING', { contextId: seen.contextId, timestamp: at(6) }) }),
      }),
      { reconcileIntervalMs: 60_000 },
    );
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'r12b', idempotencyKey: 'r12b' });
    await finished(p, id);
    await workflowSettled(p, id);
    await fleet.sweepAll();
    await sleep(1_000);
    const after = (await recordOf(p, id))!;
    expect(after.state).toBe('COMPLETED');
    expect(after.statusTimestamp).toBe(at(5));
    expect(agent.count('SubscribeToTask')).toBe(1);
    expect(agent.count('SendMessage')).toBe(1);
    expect(await metric(fleet.metrics.staleObservations, { reason: 'finished' })).toBeGreaterThanOrEqual(1);
    expect(await terminalTransitions(fleet)).toBe(1);
    expect(await metric(fleet.metrics.redelegations)).toBe(0);
    expect((await p.get(id)).state).toBe('COMPLETED');
  });
});

describe('R13: "Task not found" for a task that exists or existed', () => {
  it('(a) agent restarted: every GetTask/SubscribeToTask → -32001: LOST only after ≥3 not-founds over the window; then one re-delegation', async () => {
    const prefix = newPrefix();
    const seen: Setup['seen'] = {};
    const agent = await agentWith({
      SendMessage: (params, call) => {
        if (call.count === 1) return accept(seen)(params, call);
        return { result: { task: task('T2', 'COMPLETED', { contextId: params.message.contextId, history: [params.message], artifacts: { a1: 'redone' } }) } };
      },
      GetTask: (params) => (params.id === 'T1' ? NOT_FOUND : { result: task('T2', 'COMPLETED', { contextId: seen.contextId, artifacts: { a1: 'redone' } }) }),
      SubscribeToTask: (params) => (params.id === 'T1' ? NOT_FOUND : { error: { code: -32004, message: 'terminal' } }),
      ListTasks: () => ({ result: { tasks: [], nextPageToken: '', pageSize: 50, totalSize: 0 } }),
    });
    producer = createProducer({ redis: redisServer().url, prefix });
    const windowMs = 3_000;
    const fleet = await fleetFor(prefix, { notFoundWindowMs: windowMs, notFoundThreshold: 3, reconcileIntervalMs: 500 });
    const { id } = await producer.startWorkflow({ workflowId: 'r13a', steps: [{ name: 'main', agent: agent.cardUrl, message: { text: 'r13a' } }], maxAttemptsPerStep: 2 });
    // Well inside the window: not LOST yet, whatever the number of answers.
    await eventually(async () => agent.count('GetTask') >= 1, 'first not-found');
    const firstNotFound = agent.calls('GetTask')[0]!.at;
    await sleep(windowMs / 2);
    expect((await recordOf(producer, id))!.state).not.toBe('LOST');

    const lost = await finished(producer, id, 20_000);
    expect(lost.state).toBe('LOST');
    const notFoundsForT1 = agent.calls('GetTask').filter((call) => call.params.id === 'T1');
    expect(notFoundsForT1.length).toBeGreaterThanOrEqual(3);
    expect(lost.finishedAt! - firstNotFound).toBeGreaterThanOrEqual(windowMs);

    // Policy: a LOST step may be tried again on the same agent; exactly one new attempt, new messageId.
    const view = await workflowSettled(producer, id);
    expect(view.state).toBe('COMPLETED');
    expect(view.steps[0]!.attempts.map((attempt) => attempt.state)).toEqual(['LOST', 'COMPLETED']);
    expect(await metric(fleet.metrics.redelegations)).toBe(1);
    const sent = agent.calls('SendMessage').map((call) => call.params.message.messageId);
    expect(sent).toHaveLength(2);
    expect(new Set(sent).size).toBe(2);
    expect(agent.calls('SendMessage')[1]!.params.message.taskId).toBeUndefined();
  });

  it('(a) before marking a once-known task LOST, ListTasks(contextId) is consulted for our messageId', async () => {
    const { producer: p, agent } = await setUp(
      () => ({
        GetTask: () => NOT_FOUND,
        SubscribeToTask: () => NOT_FOUND,
        ListTasks: () => ({ result: { tasks: [], nextPageToken: '', pageSize: 50, totalSize: 0 } }),
      }),
      { notFoundWindowMs: 1_000, notFoundThreshold: 3, reconcileIntervalMs: 500 },
    );
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'r13a2', idempotencyKey: 'r13a2' });
    const record = await finished(p, id);
    expect(record.state).toBe('LOST');
    expect(agent.count('ListTasks')).toBeGreaterThanOrEqual(1);
  });

  it('(b) replicas answer not-found, WORKING, not-found, COMPLETED: the first non-error answer wins, COMPLETED, not LOST, 0 re-delegations', async () => {
    const answers = ['not-found', 'WORKING', 'not-found', 'COMPLETED'];
    const { producer: p, agent, fleet } = await setUp(
      (seen) => ({
        GetTask: (_params, call) => {
          const answer = answers[Math.min(call.count, answers.length) - 1]!;
          if (answer === 'not-found') return NOT_FOUND;
          return { result: task('T1', answer, { contextId: seen.contextId, timestamp: at(call.count), ...(answer === 'COMPLETED' ? { artifacts: { a1: 'ok' } } : {}) }) };
        },
        SubscribeToTask: () => NOT_FOUND,
        ListTasks: () => ({ result: { tasks: [], nextPageToken: '', pageSize: 50, totalSize: 0 } }),
      }),
      { notFoundWindowMs: 1_000, notFoundThreshold: 3, reconcileIntervalMs: 500 },
    );
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'r13b', idempotencyKey: 'r13b' });
    const record = await finished(p, id);
    expect(record.state).toBe('COMPLETED');
    expect(agent.count('GetTask')).toBe(4);
    expect(artifactText(await viewOf(p, id), 'a1')).toBe('ok');
    expect(agent.count('SendMessage')).toBe(1);
    expect(await metric(fleet.metrics.redelegations)).toBe(0);
    expect((await workflowSettled(p, id)).state).toBe('COMPLETED');
  });
});

describe('R14: history trimmed, so our messageId is not visible', () => {
  const noSmallHistoryLength = (agent: ScriptedAgentHandle) => {
    const reads = [...agent.calls('ListTasks'), ...agent.calls('GetTask')];
    expect(reads.length).toBeGreaterThan(0);
    for (const read of reads) {
      const historyLength = read.params.historyLength;
      expect(historyLength === undefined || historyLength >= 10, `historyLength ${historyLength} in ${read.body}`).toBe(true);
    }
  };
  const trimmedT7 = (contextId?: string) =>
    task('T7', 'WORKING', { contextId, timestamp: new Date(Date.now()).toISOString(), history: [agentMessage('working on it', { taskId: 'T7', contextId })] });

  it('SendMessage accepted but the answer never came (request timeout): candidate T7 without our message → AMBIGUOUS, SendMessage count 1', async () => {
    const { producer: p, agent, seen } = await setUp(
      (seen) => ({
        SendMessage: (params) => {
          seen.contextId ??= params.message.contextId;
          seen.messageId ??= params.message.messageId;
          return { hang: true };
        },
        ListTasks: () => ({ result: { tasks: [trimmedT7(seen.contextId)], nextPageToken: '', pageSize: 50, totalSize: 1 } }),
        GetTask: () => ({ result: trimmedT7(seen.contextId) }),
      }),
      { requestTimeoutMs: 1_000, reconcileIntervalMs: 60_000 },
    );
    const { id, messageId } = await p.delegate({ agent: agent.cardUrl, text: 'r14', idempotencyKey: 'r14' });
    const record = await finished(p, id, 30_000);
    expect(record.state).toBe('AMBIGUOUS');
    expect(agent.count('SendMessage')).toBe(1);
    expect(agent.calls('SendMessage')[0]!.params.message.messageId).toBe(messageId);
    expect(agent.calls('ListTasks')[0]!.params.contextId).toBe(seen.contextId);
    expect(agent.calls('GetTask').some((call) => call.params.id === 'T7')).toBe(true);
    noSmallHistoryLength(agent);
    expect((await workflowSettled(p, id)).state).toBe('NEEDS_ATTENTION');
    await sleep(500);
    expect(agent.count('SendMessage')).toBe(1);
  });

  it('sent, not recorded (journal written directly): same outcome, no SendMessage at all', async () => {
    const prefix = newPrefix();
    const seen: Setup['seen'] = {};
    const agent = await agentWith({
      SendMessage: accept(seen),
      ListTasks: (params) => {
        seen.contextId ??= params.contextId;
        return { result: { tasks: [trimmedT7(seen.contextId)], nextPageToken: '', pageSize: 50, totalSize: 1 } };
      },
      GetTask: () => ({ result: trimmedT7(seen.contextId) }),
    });
    producer = createProducer({ redis: redisServer().url, prefix });
    const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'r14b', idempotencyKey: 'r14b' });
    await markSentNotRecorded(producer, id, agent);
    await fleetFor(prefix, { reconcileIntervalMs: 60_000 });
    const record = await finished(producer, id, 30_000);
    expect(record.state).toBe('AMBIGUOUS');
    expect(agent.count('SendMessage')).toBe(0);
    noSmallHistoryLength(agent);
  });
});

describe('R15: ListTasks pagination skips or loops', () => {
  const other = (taskId: string, contextId?: string, seconds = 0) =>
    task(taskId, 'WORKING', { contextId, timestamp: at(seconds), history: [userMessage(`someone-else-${taskId}`), agentMessage('ok')] });

  async function searchSetUp(listTasks: (seen: Setup['seen'], messageId: () => string) => ScriptedHandler) {
    const prefix = newPrefix();
    const seen: Setup['seen'] = {};
    let ourMessageId = '';
    const agent = await agentWith({
      SendMessage: (params, call) => {
        seen.messageId ??= params.message.messageId;
        return { result: { task: task('T1', 'COMPLETED', { contextId: params.message.contextId, history: [params.message], artifacts: { a1: 'resent' } }) } };
      },
      ListTasks: (params, call) => {
        seen.contextId ??= params.contextId;
        return listTasks(seen, () => ourMessageId)(params, call);
      },
      GetTask: (params) => {
        if (params.id === 'T1') return { result: task('T1', 'COMPLETED', { contextId: seen.contextId, history: [userMessage(ourMessageId), agentMessage('done')], timestamp: at(6) }) };
        return { result: other(params.id, seen.contextId) };
      },
    });
    producer = createProducer({ redis: redisServer().url, prefix });
    const { id, messageId } = await producer.delegate({ agent: agent.cardUrl, text: 'r15', idempotencyKey: `r15-${counter}` });
    ourMessageId = messageId;
    await markSentNotRecorded(producer, id, agent);
    const fleet = await fleetFor(prefix, { reconcileIntervalMs: 60_000 });
    return { agent, fleet, id, messageId, p: producer };
  }

  it('T1 (holds M1) moves to the top between pages: found by the second pass and adopted, not resent', async () => {
    const { agent, fleet, id, p } = await searchSetUp((seen, messageId) => (params, call) => {
      const T1 = task('T1', 'COMPLETED', { contextId: seen.contextId, timestamp: at(6), history: [userMessage(messageId()), agentMessage('done')] });
      if (call.count === 1) return { result: { tasks: [other('T3', seen.contextId, 5), other('T2', seen.contextId, 4)], nextPageToken: 'p2', pageSize: 2, totalSize: 3 } };
      if (params.pageToken === 'p2') return { result: { tasks: call.count === 2 ? [] : [other('T2', seen.contextId, 4)], nextPageToken: '', pageSize: 2, totalSize: 3 } };
      // T1 was updated (10:06) while we read: it now leads page 1.
      return { result: { tasks: [T1, other('T3', seen.contextId, 5)], nextPageToken: 'p2', pageSize: 2, totalSize: 3 } };
    });
    const record = await finished(p, id, 30_000);
    expect(record.state).toBe('COMPLETED');
    expect(record.taskId).toBe('T1');
    expect(agent.count('SendMessage')).toBe(0);
    expect(agent.count('ListTasks')).toBeGreaterThanOrEqual(3);
    expect(agent.count('ListTasks')).toBeLessThanOrEqual(10);
    expect(await metric(fleet.metrics.adoptions)).toBe(1);
  });

  it('page "p2" repeats page 1 with nextPageToken "p2": the scan stops (≤ 10 calls), AMBIGUOUS, not resent', async () => {
    const { agent, id, p } = await searchSetUp((seen) => () => ({
      result: { tasks: [other('T3', seen.contextId, 5), other('T2', seen.contextId, 4)], nextPageToken: 'p2', pageSize: 2, totalSize: 3 },
    }));
    const record = await finished(p, id, 30_000);
    expect(record.state).toBe('AMBIGUOUS');
    expect(record.error?.message).toMatch(/pagination/i);
    expect(agent.count('ListTasks')).toBeLessThanOrEqual(10);
    expect(agent.count('SendMessage')).toBe(0);
  });

  it('a fresh token on every page, forever: capped at 10 ListTasks calls, AMBIGUOUS, not resent', async () => {
    const { agent, id, p } = await searchSetUp((seen) => (_params, call) => ({
      result: { tasks: [other(`X${call.count}a`, seen.contextId, 3), other(`X${call.count}b`, seen.contextId, 3)], nextPageToken: `p${call.count + 1}`, pageSize: 2, totalSize: 1000 },
    }));
    const record = await finished(p, id, 30_000);
    expect(record.state).toBe('AMBIGUOUS');
    expect(agent.count('ListTasks')).toBeLessThanOrEqual(10);
    expect(agent.count('SendMessage')).toBe(0);
  });

  it('a page without nextPageToken is the last page: one call per pass, no pageToken ever sent; proven absent → resent once', async () => {
    const { agent, id, p, messageId } = await searchSetUp((seen) => () => ({
      result: { tasks: [other('T3', seen.contextId, 5), other('T2', seen.contextId, 4)], pageSize: 2, totalSize: 2 },
    }));
    const record = await finished(p, id, 30_000);
    expect(agent.count('ListTasks')).toBe(2);
    expect(agent.calls('ListTasks').every((call) => call.params.pageToken === undefined)).toBe(true);
    expect(agent.count('SendMessage')).toBe(1);
    expect(agent.calls('SendMessage')[0]!.params.message.messageId).toBe(messageId);
    expect(record.state).toBe('COMPLETED');
  });
});

describe('R16: agent returns a different or empty contextId', () => {
  it('srv-77 is authoritative for T9 (C1 kept as requested), "" and "other" do not fail the job, the reply goes to T9 + srv-77', async () => {
    const { producer: p, agent, fleet, seen } = await setUp(
      () => ({
        SendMessage: (params, call) => {
          if (call.count === 1) {
            seen.contextId = params.message.contextId;
            seen.messageId = params.message.messageId;
            return { result: { task: task('T9', 'SUBMITTED', { contextId: 'srv-77', history: [{ ...params.message, contextId: 'srv-77' }], timestamp: at(0) }) } };
          }
          return { result: { task: task('T9', 'WORKING', { contextId: 'srv-77', timestamp: at(10) }) } };
        },
        SubscribeToTask: (_params, call) =>
          call.count === 1
            ? {
                sse: [
                  ev(SU('WORKING', { taskId: 'T9', contextId: '', timestamp: at(1) })),
                  ev(SU('WORKING', { taskId: 'T9', contextId: 'other', timestamp: at(2) })),
                  ev(AU('a1', false, false, 'partial', { taskId: 'T9', contextId: '' })),
                  ev(SU('INPUT_REQUIRED', { taskId: 'T9', contextId: '', timestamp: at(3), message: agentMessage('one room or two?', { taskId: 'T9' }) })),
                ],
                endAfter: 'close',
              }
            : { sse: [ev(SU('COMPLETED', { taskId: 'T9', contextId: 'other', timestamp: at(11) }))], endAfter: 'close' },
        GetTask: () => ({ result: task('T9', 'INPUT_REQUIRED', { contextId: 'srv-77', timestamp: at(3), message: agentMessage('one room or two?') }) }),
      }),
      { reconcileIntervalMs: 60_000 },
    );
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'r16', idempotencyKey: 'r16' });
    const [question] = await eventually(async () => {
      const open = await p.questions(id);
      return open.length > 0 && open;
    }, 'open question');
    expect(question!.text).toBe('one room or two?');
    const parked = (await recordOf(p, id))!;
    expect(parked.state).toBe('INPUT_REQUIRED');
    expect(parked.contextId).toBe('srv-77');
    expect(parked.requestedContextId).toBe(seen.contextId);
    await p.reply(id, 'two');
    const record = await finished(p, id);
    expect(record.state).toBe('COMPLETED');
    expect(record.contextId).toBe('srv-77');
    expect(record.requestedContextId).toBe(seen.contextId);
    expect(record.taskId).toBe('T9');
    expect(agent.count('SendMessage')).toBe(2);
    const reply = agent.calls('SendMessage')[1]!.params.message;
    expect(reply.taskId).toBe('T9');
    expect(reply.contextId).toBe('srv-77');
    expect(await metric(fleet.metrics.transitions, { state: 'TASK_STATE_FAILED' })).toBe(0);
    expect((await workflowSettled(p, id)).state).toBe('COMPLETED');
  });
});

describe('a reply the agent refuses for good', () => {
  it('opens the question again with the reason; a second answer goes out on the same task', async () => {
    const question = agentMessage('how many rooms?', { taskId: 'T4' }); // the same status message in the stream and in GetTask
    const { producer: p, agent } = await setUp(
      () => ({
        SendMessage: (params, call) => {
          if (call.count === 1) return { result: { task: task('T4', 'SUBMITTED', { contextId: 'C4', history: [params.message], timestamp: at(0) }) } };
          if (call.count === 2) return { error: { code: -32602, message: 'answer must be a number of rooms' } };
          return { result: { task: task('T4', 'WORKING', { contextId: 'C4', timestamp: at(10) }) } };
        },
        SubscribeToTask: (_params, call) =>
          call.count === 1
            ? { sse: [ev(SU('INPUT_REQUIRED', { taskId: 'T4', contextId: 'C4', timestamp: at(3), message: question }))], endAfter: 'close' }
            : { sse: [ev(SU('COMPLETED', { taskId: 'T4', contextId: 'C4', timestamp: at(11) }))], endAfter: 'close' },
        GetTask: () => ({ result: task('T4', 'INPUT_REQUIRED', { contextId: 'C4', timestamp: at(3), message: question }) }),
      }),
      { reconcileIntervalMs: 60_000 },
    );
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'rooms', idempotencyKey: 'refused-reply' });
    await eventually(async () => (await p.questions(id)).length > 0, 'the question');
    const first = await p.reply(id, 'a few');
    const [reopened] = await eventually(async () => {
      const open = await p.questions(id);
      return open.length > 0 && open[0]!.previousReplyRefused !== undefined ? open : undefined;
    }, 'the question open again after the refusal');
    expect(reopened!.previousReplyRefused).toContain('answer must be a number of rooms');
    const second = await p.reply(id, 'two');
    expect(second.created).toBe(true);
    expect(second.messageId).not.toBe(first.messageId);
    const record = await finished(p, id);
    expect(record.state).toBe('COMPLETED');
    const replies = agent.calls('SendMessage').slice(1).map((call) => call.params.message);
    expect(replies.map((message) => [message.taskId, message.parts[0].text])).toEqual([
      ['T4', 'a few'],
      ['T4', 'two'],
    ]);
  });
});

describe('R22: repeatable sweeper jobs multiply after restarts or deploys', () => {
  async function sweepSchedulers(prefix: string) {
    const connection = createRedisClient(redisServer().url);
    const queue = new Queue('reconcile', { connection, prefix: queuePrefix(prefix) });
    try {
      const schedulers = await queue.getJobSchedulers();
      const jobs = await queue.getJobs(['delayed', 'waiting', 'prioritized', 'wait']);
      const instances = jobs.filter((job) => job && job.repeatJobKey === 'reconcile-sweep');
      return { schedulers, instances };
    } finally {
      await queue.close();
      await connection.quit();
    }
  }

  it('four restarts at 60 s, then a deploy at 30 s: always exactly one "reconcile-sweep" scheduler, with the latest interval', async () => {
    const prefix = newPrefix();
    const intervals = [60_000, 60_000, 60_000, 60_000, 30_000];
    for (const interval of intervals) {
      const fleet = await fleetFor(prefix, { reconcileIntervalMs: interval });
      const { schedulers, instances } = await sweepSchedulers(prefix);
      expect(schedulers).toHaveLength(1);
      const scheduler = schedulers[0]! as { key?: string; id?: string; every?: number | string };
      expect(scheduler.id ?? scheduler.key).toBe('reconcile-sweep');
      expect(Number(scheduler.every)).toBe(interval);
      expect(instances.length).toBeLessThanOrEqual(1);
      await fleet.close();
      fleets.splice(fleets.indexOf(fleet), 1);
    }
  });

  it('two overlapping sweeps on two fleets never open a second subscription for one task', async () => {
    const prefix = newPrefix();
    const seen: Setup['seen'] = {};
    const agent = await agentWith({
      SendMessage: accept(seen),
      SubscribeToTask: () => ({ sse: [taskEvent(task('T1', 'WORKING', { contextId: seen.contextId }))], endAfter: 'hang' }),
      GetTask: () => ({ result: task('T1', 'WORKING', { contextId: seen.contextId }) }),
    });
    producer = createProducer({ redis: redisServer().url, prefix });
    const first = await fleetFor(prefix, { reconcileIntervalMs: 60_000, streamIdleTimeoutMs: 60_000, workerId: 'fleet-a' });
    const second = await fleetFor(prefix, { reconcileIntervalMs: 60_000, streamIdleTimeoutMs: 60_000, workerId: 'fleet-b' });
    const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'long', idempotencyKey: 'r22-long' });
    await eventually(async () => agent.count('SubscribeToTask') === 1 && (await producer!.journal.isFollowed(ref(id))), 'stream open');
    await Promise.all([first.sweepAll(), second.sweepAll(), first.sweepAll(), second.sweepAll()]);
    await sleep(2_500);
    expect(agent.count('SubscribeToTask')).toBe(1);
    expect(agent.count('SendMessage')).toBe(1);
    expect((await recordOf(producer, id))!.state).toBe('WORKING');
    // End the agent first: closing two fleets around an open stream is the next test.
    await agent.close();
  });

  it('frequent sweeps while first sends are in flight never discard an agent\'s answer (no AMBIGUOUS for a healthy agent)', async () => {
    const prefix = newPrefix();
    // A healthy agent that cannot list tasks (like a 0.3 agent): a discarded SendMessage answer cannot be recovered.
    const agent = await agentWith({
      SendMessage: async (params, call) => {
        await sleep(5);
        return { result: { task: task(`T${call.count}`, 'COMPLETED', { contextId: params.message.contextId, history: [params.message], artifacts: { a1: 'ok' } }) } };
      },
    });
    producer = createProducer({ redis: redisServer().url, prefix });
    await fleetFor(prefix, { reconcileIntervalMs: 50 });
    const started = await Promise.all(Array.from({ length: 200 }, (_, index) => producer!.delegate({ agent: agent.cardUrl, text: `job ${index}`, idempotencyKey: `sweep-race-${index}` })));
    const states = await Promise.all(started.map(async ({ id }) => (await finished(producer!, id, 30_000)).state));
    expect(states.filter((state) => state !== 'COMPLETED')).toEqual([]);
    expect(agent.count('SendMessage')).toBe(200);
  });

  it('closing two fleets that share a followed task: bounded close, no subscription opened by a closing fleet', async () => {
    const prefix = newPrefix();
    const seen: Setup['seen'] = {};
    const agent = await agentWith({
      SendMessage: accept(seen),
      SubscribeToTask: () => ({ sse: [taskEvent(task('T1', 'WORKING', { contextId: seen.contextId }))], endAfter: 'hang' }),
      GetTask: () => ({ result: task('T1', 'WORKING', { contextId: seen.contextId }) }),
    });
    producer = createProducer({ redis: redisServer().url, prefix });
    const options = { reconcileIntervalMs: 60_000, streamIdleTimeoutMs: 8_000, closeTimeoutMs: 2_000 };
    const first = await fleetFor(prefix, { ...options, workerId: 'fleet-a' });
    const second = await fleetFor(prefix, { ...options, workerId: 'fleet-b' });
    const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'long', idempotencyKey: 'r22-close' });
    await eventually(async () => agent.count('SubscribeToTask') === 1 && (await producer!.journal.isFollowed(ref(id))), 'stream open');
    const closing = Date.now();
    fleets.splice(0);
    await Promise.all([first.close(), second.close()]);
    const elapsed = Date.now() - closing;
    expect(agent.calls('SubscribeToTask').filter((call) => call.at >= closing)).toHaveLength(0);
    expect(elapsed).toBeLessThan(options.closeTimeoutMs + 2_000);
  });
});
