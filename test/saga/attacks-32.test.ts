/**
 * Attack round 32: task ids UTF-8 cannot carry, floods of tiny stream events, streams that only say they are alive,
 * answers that point elsewhere or come in odd shapes. Real redis-server, real fleet, scripted raw node:http agents
 * (JSON-RPC, HTTP+JSON) and an @a2a-js/sdk gRPC agent, counting SendMessage per messageId. Each `it` holds; the one
 * finding is marked FIXED FINDING. Also added this round to earlier suites (same set-ups): a CancelTask answered
 * COMPLETED (attacks-30), a message:send answered 200 with an empty body (attacks-31).
 */
import { describe, expect, it } from 'vitest';
import { artifactText, finished, useFieldCases, viewOf } from '../harness/field-cases.ts';
import type { Producer } from '@durable-a2a/producer';
import type { StartFleetOptions } from '@durable-a2a/workers';
import { closeKeptAfterEach } from '../harness/lifecycle.ts';
import { startGrpcAgent } from '../harness/grpc-agent.ts';
import { startRestAgent } from '../harness/rest-agent.ts';
import { ev, liveStream, task, taskEvent, type ScriptedHandlers, type SseWait } from '../harness/scripted-agent.ts';
import { useRedisClient } from '../harness/redis.ts';

const h = useFieldCases();
const keep = closeKeptAfterEach();
const redis = useRedisClient(h.redisServer);
const fast = { reconcileIntervalMs: 300, followBackoff: { baseMs: 200, capMs: 1_000 }, requestTimeoutMs: 3_000, notFoundWindowMs: 2_000 };
const page = (tasks: unknown[]) => ({ result: { tasks, nextPageToken: '', pageSize: 50, totalSize: tasks.length } });

/** Redis's own measure of a delegation's artifacts hash (every field: SAMPLES 0), bytes. */
const artifactsMemory = async (producer: Producer, workflowId: string) => Number(await redis().call('MEMORY', 'USAGE', producer.journal.keys.artifacts(workflowId, 'main.1'), 'SAMPLES', '0'));

/** One delegation to the agent at `cardUrl` by a fleet with `fleetOptions` (on top of `fast`): its producer and id. */
async function delegateTo(cardUrl: string, fleetOptions: Partial<StartFleetOptions> = {}) {
  const prefix = h.newPrefix();
  const producer = h.producer(prefix);
  await h.fleetFor(prefix, { ...fast, ...fleetOptions });
  const { id } = await producer.delegate({ agent: cardUrl, text: 'go', idempotencyKey: `${prefix}-1` });
  return { producer, id };
}

/** Waits for the delegation and asserts it COMPLETED on T1 with a1 "booked" (the agent's own result). */
async function bookedOnT1(producer: Producer, id: string) {
  expect(await finished(producer, id, 60_000)).toMatchObject({ state: 'COMPLETED', taskId: 'T1' });
  expect(artifactText(await viewOf(producer, id), 'a1')).toBe('booked');
}

/** Waits for the delegation and asserts it ended at the artifact limit with Redis's hash of its artifacts within it. */
async function endedAtTheLimit(producer: Producer, id: string, limit: number) {
  expect(await finished(producer, id, 60_000)).toMatchObject({ state: 'AMBIGUOUS', error: { code: 'LIMIT_EXCEEDED', limit: 'artifactBytesPerDelegation' } });
  expect(await artifactsMemory(producer, id)).toBeLessThan(1.25 * limit);
}

/** A task id JSON can carry (`"\ud800"`) but UTF-8 cannot: ioredis, undici and protobuf write it as U+FFFD. */
const LONE = 'T\ud800';

/**
 * A JSON-RPC agent that books once as task `taskId` (COMPLETED a1 "booked", our context, our message) and knows it
 * only under that exact id: GetTask of any other id is TaskNotFound; ListTasks lists it; SubscribeToTask refuses.
 */
function bookingUnder(taskId: string, sends: Map<string, number>, first: 'SUBMITTED' | 'COMPLETED' = 'SUBMITTED'): ScriptedHandlers {
  let contextId = '';
  let history: unknown[] = [];
  const booked = (state: string) => task(taskId, state, { contextId, history, artifacts: { a1: 'booked' } });
  return {
    SendMessage: (params) => {
      sends.set(params.message.messageId, (sends.get(params.message.messageId) ?? 0) + 1);
      contextId = params.message.contextId;
      history = [params.message];
      return { result: { task: booked(first) } };
    },
    GetTask: (params) => (params.id === taskId && contextId ? { result: booked('COMPLETED') } : { error: { code: -32001, message: 'Task not found' } }),
    ListTasks: () => page(contextId ? [booked('COMPLETED')] : []),
    SubscribeToTask: (params) => (params.id === taskId ? { error: { code: -32004, message: 'terminal' } } : { error: { code: -32001, message: 'Task not found' } }),
    CancelTask: () => ({ error: { code: -32001, message: 'Task not found' } }),
  };
}

describe('attack 32: task ids that do not survive the journal', () => {
  it('JSON-RPC: our task named "T\\ud800" (a lone surrogate), SUBMITTED then COMPLETED: never LOST and re-delegated to B; A sent once', async () => {
    const sends = new Map<string, number>();
    const a = await h.agentWith(bookingUnder(LONE, sends));
    const { b, view } = await h.stepOverTwo(a.cardUrl, fast, 60_000);
    expect(b.count('SendMessage')).toBe(0);
    expect(view.steps[0]!.attempts).toHaveLength(1);
    expect(['COMPLETED', 'AMBIGUOUS']).toContain(view.steps[0]!.attempts[0]!.state);
    expect([...sends.values()]).toEqual([1]);
  }, 90_000);

  it('HTTP+JSON: our task named "T\\ud800": the path is never built from an id UTF-8 cannot carry (no URIError), never LOST and re-delegated; one message:send', async () => {
    let contextId: string | undefined;
    let history: unknown[] = [];
    const booked = (state: string) => task(LONE, state, { contextId, history, artifacts: { a1: 'booked' } });
    const a = await startRestAgent((method, path, body) => {
      if (method === 'POST' && path === '/message:send') {
        contextId = body.message.contextId;
        history = [body.message];
        return { status: 200, body: { task: booked('SUBMITTED') } };
      }
      if (method === 'GET' && path === '/tasks') return { status: 200, body: { tasks: contextId ? [booked('COMPLETED')] : [], nextPageToken: '', pageSize: 50, totalSize: contextId ? 1 : 0 } };
      return { status: 404, body: { error: { code: 404, status: 'NOT_FOUND', message: 'Task not found', details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'TASK_NOT_FOUND', domain: 'a2a-protocol.org' }] } } };
    }, { streaming: false });
    keep(a);
    const { b, view } = await h.stepOverTwo(a.cardUrl, fast, 60_000);
    expect(b.count('SendMessage')).toBe(0);
    expect(view.steps[0]!.attempts).toHaveLength(1);
    expect(['COMPLETED', 'AMBIGUOUS']).toContain(view.steps[0]!.attempts[0]!.state);
    expect(a.count('POST /message:send')).toBe(1);
  }, 90_000);
});

/*
 * FIXED FINDING (ids UTF-8 cannot carry were written as U+FFFD; kind: an identifier an agent sends is kept exactly as
 * sent or refused). Input: a stream (JSON-RPC or HTTP+JSON) whose task shows two artifacts `a\ud800` "part A" and
 * `a\udc00` "part B" (JSON text may hold a lone surrogate), each sealed, then COMPLETED; GetTask shows both. Observed:
 * both journaled as one artifact `a\ufffd` (ioredis writes UTF-8), the second dropped as a chunk after the first's seal:
 * COMPLETED with "part A" alone, "part B" lost without a word. Expected: never a finished step with part of the agent's
 * result. Fixed: `WireIdSchema` (packages/a2a/src/wire-id.ts) refuses such ids in every 1.0 and 0.3 schema: the answer
 * is unreadable (delivery received, effect maybe), so a full read, the search or a person decides; on gRPC the wire is
 * UTF-8, so no agent can send one. Property: packages/a2a/test/wire-id-property.test.ts. A task id of the same kind
 * (the first describe) ended with a person before and after: the journal held `T\ufffd`, the agent denied it.
 */
describe('attack 32: two artifact ids that differ only in a lone surrogate', () => {
  const twoArtifacts = [{ artifactId: 'a\ud800', parts: [{ text: 'part A' }] }, { artifactId: 'a\udc00', parts: [{ text: 'part B' }] }];
  const streamOf = (contextId: string | undefined) => [
    { task: task('T1', 'WORKING', { contextId }) },
    ...twoArtifacts.map((artifact) => ({ artifactUpdate: { taskId: 'T1', contextId, artifact, lastChunk: true } })),
    { statusUpdate: { taskId: 'T1', contextId, status: { state: 'TASK_STATE_COMPLETED' } } },
  ];
  /** Asserts the step never finished with part of the result: both artifacts, or a person. */
  async function neverHalfTheResult(producer: Producer, id: string) {
    const record = await finished(producer, id, 60_000);
    const artifacts = (await viewOf(producer, id)).artifacts;
    if (record.state === 'COMPLETED') expect(artifacts).toHaveLength(2);
    else expect(record.state).toBe('AMBIGUOUS');
  }

  it('JSON-RPC SubscribeToTask: never COMPLETED with one of the two, one SendMessage', async () => {
    const { producer, agent, id } = await h.setUpAndDelegate((seen) => ({
      SubscribeToTask: () => ({ sse: streamOf(seen.contextId).map((result) => ev(JSON.stringify({ jsonrpc: '2.0', id: 1, result }))) }),
      GetTask: () => ({ result: task('T1', 'COMPLETED', { contextId: seen.contextId, artifacts: twoArtifacts }) }),
    }), fast);
    await neverHalfTheResult(producer, id);
    expect(agent.count('SendMessage')).toBe(1);
  }, 90_000);

  it('HTTP+JSON POST /tasks/T1:subscribe: never COMPLETED with one of the two, one message:send', async () => {
    let contextId: string | undefined;
    const agent = await startRestAgent((method, path, body) => {
      if (method === 'POST' && path === '/message:send') {
        contextId = body.message.contextId;
        return { status: 200, body: { task: task('T1', 'SUBMITTED', { contextId, history: [body.message] }) } };
      }
      if (path === '/tasks/T1:subscribe') return { status: 200, sse: streamOf(contextId).map((event) => JSON.stringify(event)) };
      if (method === 'GET' && path === '/tasks/T1') return { status: 200, body: task('T1', 'COMPLETED', { contextId, artifacts: twoArtifacts }) };
      return { status: 404, body: { error: { code: 404, status: 'NOT_FOUND', message: 'no route' } } };
    });
    keep(agent);
    const { producer, id } = await delegateTo(agent.cardUrl);
    await neverHalfTheResult(producer, id);
    expect(agent.count('POST /message:send')).toBe(1);
  }, 90_000);
});

/** Keep-alive comments are no event: a stream that carries nothing else for `streamQuietMs` is handed to polling. */
describe('attack 32: streams that only say they are alive', () => {
  const keepAlives: [string, (contextId: string | undefined) => (string | SseWait)[]][] = [
    ['a WORKING snapshot, then only keep-alive comments for ever', (contextId) => [taskEvent(task('T1', 'WORKING', { contextId })), ...liveStream(200, ': keep-alive\n\n')]],
    ['no snapshot ever, only keep-alive comments', () => liveStream(200, ': keep-alive\n\n')],
  ];
  for (const [name, stream] of keepAlives) {
    it(`SubscribeToTask: ${name}; GetTask says COMPLETED: COMPLETED with a1 in bounded time, one SendMessage`, async () => {
      const { producer, agent, id } = await h.setUpAndDelegate((seen) => ({
        SubscribeToTask: () => ({ sse: stream(seen.contextId), endAfter: 'hang' }),
        GetTask: () => ({ result: task('T1', 'COMPLETED', { contextId: seen.contextId, artifacts: { a1: 'booked' } }) }),
      }), { ...fast, streamQuietMs: 2_000 });
      await bookedOnT1(producer, id);
      expect(agent.count('SendMessage')).toBe(1);
    }, 90_000);
  }
});

describe('attack 32: answers that point elsewhere', () => {
  it('GetTask answered 307 to agent B (whose GetTask says COMPLETED "forged"), then honestly: never followed, COMPLETED with A\'s a1, one SendMessage', async () => {
    const b = await h.agentWith({ GetTask: () => ({ result: task('T1', 'COMPLETED', { artifacts: { a1: 'forged' } }) }) });
    const { producer, agent, id } = await h.setUpAndDelegate((seen) => ({
      SubscribeToTask: () => ({ error: { code: -32004, message: 'streaming not supported' } }),
      GetTask: (_params, call) => (call.count < 3 ? { http: { status: 307, body: '', headers: { location: b.rpcUrl } } } : { result: task('T1', 'COMPLETED', { contextId: seen.contextId, artifacts: { a1: 'booked' } }) }),
    }), fast);
    await bookedOnT1(producer, id);
    expect(b.count('GetTask')).toBe(0);
    expect(agent.count('SendMessage')).toBe(1);
  }, 90_000);
});

/*
 * FIXED FINDING (the artifact limit counted an artifact's JSON but not its entry in the journal; kind: every stored
 * byte counts against `artifactBytesPerDelegation`, B31). Input: a stream (JSON-RPC, HTTP+JSON or gRPC) of
 * artifactUpdates each naming a new artifactId with no parts (`lastChunk: true`), then COMPLETED. Observed: each
 * counted about 10 bytes (the id, `{}`, `[]`) while Redis keeps five hash fields naming the id (meta:, parts:, order:,
 * bytes:, sealed:), about 300 bytes: 20,000 of them under a 256 KiB limit held 5.8 MB (22 times the limit; about
 * 370 MB a delegation at the default 16 MiB), and the delegation COMPLETED. Expected: the limit bounds the memory;
 * AMBIGUOUS LIMIT_EXCEEDED at it. Fixed: `storedArtifact` (packages/a2a/src/limits.ts) adds `artifactEntryBytes` once
 * per artifact; applyArtifact-2.lua takes it off a chunk appended to a stored artifact (the control below). Property:
 * test/journal/artifact-entry-bytes.test.ts.
 */
/** The artifact updates of `count` new artifacts with nothing in them (`x0`, `x1`, …), sealed. */
const emptyArtifacts = (count: number, contextId: string | undefined) =>
  Array.from({ length: count }, (_, index) => JSON.stringify({ artifactUpdate: { taskId: 'T1', contextId, artifact: { artifactId: `x${index}`, parts: [] }, lastChunk: true } }));

describe('attack 32: a stream of many tiny events', () => {
  it('SubscribeToTask: 20,000 artifactUpdates each a new empty artifact (lastChunk), then COMPLETED: Redis holds no more than about the limit for them', async () => {
    const limit = 256 * 1024;
    const { producer, agent, id } = await h.setUpAndDelegate((seen) => ({
      SubscribeToTask: () => {
        const frames = [taskEvent(task('T1', 'WORKING', { contextId: seen.contextId }))];
        for (let index = 0; index < 20_000; index++) {
          frames.push(ev(JSON.stringify({ jsonrpc: '2.0', id: 1, result: { artifactUpdate: { taskId: 'T1', contextId: seen.contextId, artifact: { artifactId: `x${index}`, parts: [] }, lastChunk: true } } })));
        }
        frames.push(ev(JSON.stringify({ jsonrpc: '2.0', id: 1, result: { statusUpdate: { taskId: 'T1', contextId: seen.contextId, status: { state: 'TASK_STATE_COMPLETED' } } } })));
        return { sse: frames.join('') };
      },
      GetTask: () => ({ result: task('T1', 'COMPLETED', { contextId: seen.contextId }) }),
    }), { ...fast, artifactBytesPerDelegation: limit });
    await endedAtTheLimit(producer, id, limit);
    expect(agent.count('SendMessage')).toBe(1);
  }, 90_000);

  it('HTTP+JSON: the same flood on POST /tasks/T1:subscribe (1,000 empty artifacts, limit 64 KiB): AMBIGUOUS LIMIT_EXCEEDED, Redis within the limit, one message:send', async () => {
    const limit = 64 * 1024;
    let contextId: string | undefined;
    const agent = await startRestAgent((method, path, body) => {
      if (method === 'POST' && path === '/message:send') {
        contextId = body.message.contextId;
        return { status: 200, body: { task: task('T1', 'SUBMITTED', { contextId, history: [body.message] }) } };
      }
      if (path === '/tasks/T1:subscribe') return { status: 200, sse: [JSON.stringify({ task: task('T1', 'WORKING', { contextId }) }), ...emptyArtifacts(1_000, contextId), JSON.stringify({ statusUpdate: { taskId: 'T1', contextId, status: { state: 'TASK_STATE_COMPLETED' } } })] };
      if (method === 'GET' && path === '/tasks/T1') return { status: 200, body: task('T1', 'COMPLETED', { contextId }) };
      return { status: 404, body: { error: { code: 404, status: 'NOT_FOUND', message: 'no route' } } };
    });
    keep(agent);
    const { producer, id } = await delegateTo(agent.cardUrl, { artifactBytesPerDelegation: limit });
    await endedAtTheLimit(producer, id, limit);
    expect(agent.count('POST /message:send')).toBe(1);
  }, 90_000);

  it('gRPC (@a2a-js/sdk server): a task publishing 1,000 empty artifacts (limit 64 KiB): AMBIGUOUS LIMIT_EXCEEDED, Redis within the limit, one SendMessage', async () => {
    const limit = 64 * 1024;
    const steps = [{ delayMs: 300 }, { state: 'WORKING' as const }, ...Array.from({ length: 1_000 }, (_, index) => ({ artifact: { artifactId: `x${index}`, text: '', lastChunk: true } })), { state: 'COMPLETED' as const }];
    const agent = await startGrpcAgent({ behaviour: () => steps, pushNotifications: false });
    keep({ close: () => agent.stop() });
    const { producer, id } = await delegateTo(agent.cardUrl, { artifactBytesPerDelegation: limit });
    await endedAtTheLimit(producer, id, limit);
    expect(agent.sendMessageCount()).toBe(1);
  }, 90_000);

  it('control: 5,000 one-character chunks appended to a1 (limit 256 KiB): COMPLETED with the whole text (a chunk costs its parts, not a new entry)', async () => {
    const text = 'abcdefghij'.repeat(500);
    const { producer, agent, id } = await h.setUpAndDelegate((seen) => ({
      SubscribeToTask: () => ({
        sse: [
          taskEvent(task('T1', 'WORKING', { contextId: seen.contextId })),
          ...[...text].map((character, index) => ev(JSON.stringify({ jsonrpc: '2.0', id: 1, result: { artifactUpdate: { taskId: 'T1', contextId: seen.contextId, artifact: { artifactId: 'a1', parts: [{ text: character }] }, append: index > 0, lastChunk: index === text.length - 1 } } }))),
          ev(JSON.stringify({ jsonrpc: '2.0', id: 1, result: { statusUpdate: { taskId: 'T1', contextId: seen.contextId, status: { state: 'TASK_STATE_COMPLETED' } } } })),
        ].join(''),
      }),
      GetTask: () => ({ error: { code: -32603, message: 'store unavailable' } }),
      ListTasks: () => ({ error: { code: -32601, message: 'Method not found' } }),
    }), { ...fast, artifactBytesPerDelegation: 256 * 1024 });
    const record = await finished(producer, id, 60_000);
    expect(record.state).toBe('COMPLETED');
    expect(artifactText(await viewOf(producer, id), 'a1')).toBe(text);
    expect(agent.count('SendMessage')).toBe(1);
  }, 90_000);
});

describe('attack 32: answers of an odd shape', () => {
  it('SendMessage answered with a plain Message ("booked, ref 12"); later ListTasks shows a task holding our messageId: COMPLETED from the Message, never resent', async () => {
    let messageId = '';
    let contextId = '';
    const { producer, agent, id } = await h.setUpAndDelegate(() => ({
      SendMessage: (params) => {
        messageId = params.message.messageId;
        contextId = params.message.contextId;
        return { result: { message: { messageId: 'reply-1', role: 'ROLE_AGENT', contextId, parts: [{ text: 'booked, ref 12' }] } } };
      },
      ListTasks: () => page([task('T1', 'COMPLETED', { contextId, history: [{ messageId, role: 'ROLE_USER', parts: [{ text: 'go' }] }], artifacts: { a1: 'booked' } })]),
    }), fast);
    const record = await finished(producer, id, 45_000);
    expect(record.state).toBe('COMPLETED');
    expect(JSON.stringify(record)).toContain('booked, ref 12');
    expect(agent.count('SendMessage')).toBe(1);
  }, 60_000);

  it('GetTask answered as a JSON-RPC batch (we sent none): T1 COMPLETED "forged" under another request\'s id, T1 WORKING under ours; then honestly: never applied from the other element, COMPLETED with a1, one SendMessage', async () => {
    const { producer, agent, id } = await h.setUpAndDelegate((seen) => ({
      SubscribeToTask: () => ({ error: { code: -32004, message: 'streaming not supported' } }),
      GetTask: (_params, call) => (call.count < 3
        ? { http: { status: 200, body: JSON.stringify([{ jsonrpc: '2.0', id: 999_999, result: task('T1', 'COMPLETED', { contextId: seen.contextId, artifacts: { a1: 'forged' } }) }, { jsonrpc: '2.0', id: call.id, result: task('T1', 'WORKING', { contextId: seen.contextId }) }]) } }
        : { result: task('T1', 'COMPLETED', { contextId: seen.contextId, artifacts: { a1: 'booked' } }) }),
    }), fast);
    await bookedOnT1(producer, id);
    expect(agent.count('SendMessage')).toBe(1);
  }, 60_000);
});
