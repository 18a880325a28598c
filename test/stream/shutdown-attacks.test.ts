/**
 * Attacks on the fleet's close reaching every open stream through one listener (`shutdown-listeners.ts`) and on a
 * stream that fails to open giving its listener and quiet timer back at once. Streams to a raw agent
 * (`scripted-agent.ts`) that accepts SubscribeToTask and never sends headers, that sends headers and never an event,
 * that sends one event and then nothing, and that refuses the first subscriptions in a burst; the fleet closes while
 * they are open or still opening. What must hold: while streams run, one close listener per open stream (none left by
 * the failed ones); the close ends (bounded by the test's timeout) with no listener, no socket to the agent and no
 * timer of its own left; every row stays recoverable: a new fleet finishes each delegation, one SendMessage each.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { createProducer, type Producer } from '@durable-a2a/producer';
import type { Fleet } from '@durable-a2a/workers';
import type { DelegationRecord } from '@durable-a2a/shared';
import type { StreamEvent } from '@durable-a2a/a2a';
import type { JobRun, WorkerContext } from '../../packages/workers/src/context.ts';
import { readStream } from '../../packages/workers/src/delegation/io/stream.ts';
import { ShutdownListeners } from '../../packages/workers/src/shutdown-listeners.ts';
import { useRedisServer } from '../harness/redis.ts';
import { closeAfterEach } from '../harness/lifecycle.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { startScriptedAgent, task, taskEvent, type ScriptedAgentHandle } from '../harness/scripted-agent.ts';

const redisServer = useRedisServer();
let counter = 0;

type StreamKind = 'no-headers' | 'headers-only' | 'one-event';
const KINDS: readonly StreamKind[] = ['no-headers', 'headers-only', 'one-event'];

/** Timers (setTimeout / setInterval) alive in this process now. */
const timers = () => process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;

/**
 * SendMessage answers a WORKING task at once (T-<n>); SubscribeToTask refuses the first `refusals` subscriptions of
 * each task (-32603: a burst of streams that fail to open), then holds the stream as `kindOf(task)` says, until
 * `finish()`: from then on every task is COMPLETED (GetTask, and a subscription is refused as terminal).
 */
async function startHoldingAgent(kindOf: (taskNumber: number) => StreamKind, refusals: number) {
  let finished = false;
  const refused = new Map<string, number>();
  const messages: { messageId: string; contextId: string }[] = [];
  const view = (id: string) => {
    const message = messages[Number(id.slice(2)) - 1]!;
    return task(id, finished ? 'COMPLETED' : 'WORKING', { contextId: message.contextId, history: [{ role: 'ROLE_USER', messageId: message.messageId, contextId: message.contextId, parts: [{ text: 'go' }] }], ...(finished ? { artifacts: { a1: 'done' } } : {}) });
  };
  const agent = await startScriptedAgent({
    SendMessage: (params) => {
      messages.push({ messageId: params.message.messageId, contextId: params.message.contextId ?? 'C1' });
      return { result: { task: view(`T-${messages.length}`) } };
    },
    GetTask: (params) => (messages[Number(String(params.id).slice(2)) - 1] ? { result: view(params.id) } : { error: { code: -32001, message: 'Task not found' } }),
    ListTasks: () => ({ result: { tasks: messages.map((_, index) => view(`T-${index + 1}`)), nextPageToken: '', pageSize: 50, totalSize: messages.length } }),
    SubscribeToTask: (params) => {
      if (finished) return { error: { code: -32004, message: 'Task is in a terminal state' } };
      const seen = refused.get(params.id) ?? 0;
      if (seen < refusals) return (refused.set(params.id, seen + 1), { error: { code: -32603, message: 'busy' } });
      const kind = kindOf(Number(String(params.id).slice(2)));
      if (kind === 'no-headers') return { hang: true };
      return { sse: kind === 'one-event' ? [taskEvent(view(params.id))] : [], endAfter: 'hang' };
    },
  });
  return Object.assign(agent, { finish: () => void (finished = true), messageIds: () => messages.map((message) => message.messageId) });
}

describe('the fleet closes with streams open or opening', () => {
  let agent: (ScriptedAgentHandle & { finish(): void; messageIds(): string[] }) | undefined;
  let producer: Producer | undefined;
  let fleet: Fleet | undefined;
  let next: Fleet | undefined;
  closeAfterEach(
    () => ({ fleet: { close: async () => (await fleet?.close(), await next?.close()) }, agent, producer }),
    () => void (fleet = next = agent = producer = undefined),
  );

  /**
   * `count` delegations whose streams the agent holds (`kindOf`), after `refusals` refused subscriptions each; the
   * fleet closes once `openBeforeClose` streams are open (all of them by default), and everything is then checked.
   */
  async function scene(count: number, kindOf: (taskNumber: number) => StreamKind, refusals: number, openBeforeClose = count) {
    const prefix = `shutdown-attack${++counter}`;
    agent = await startHoldingAgent(kindOf, refusals);
    producer = createProducer({ redis: redisServer().url, addressPolicy: { allowLoopback: true }, prefix });
    const timersBefore = timers();
    // Streams stay open past the test (no quiet hand-over); refused subscriptions come back quickly.
    const timings = { streamQuietMs: 600_000, streamIdleTimeoutMs: 600_000, slowPollAfterMs: 600_000, followBackoff: { baseMs: 20, capMs: 100 } };
    fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, workerId: 'closing', concurrency: { send: 8, follow: count + 4 }, followSlotsPerAgent: count + 4, ...timings });
    const ids: string[] = [];
    for (let index = 0; index < count; index++) ids.push((await producer.delegate({ agent: agent.cardUrl, text: 'go', idempotencyKey: `d${index}` })).id);
    const open = () => `${agent!.openRequests('SubscribeToTask')} open, ${agent!.count('SubscribeToTask')} subscriptions, ${agent!.count('GetTask')} reads`;
    await eventually(async () => agent!.openRequests('SubscribeToTask') >= openBeforeClose, `${openBeforeClose} streams open`, 150_000, 20).catch((error: Error) => {
      throw new Error(`${error.message} (${open()})`);
    });
    if (openBeforeClose === count) {
      // Every stream open and held: one close listener each, none left by the refused ones.
      expect(fleet.context.shutdownListeners.size).toBe(count);
    }
    const listeners = fleet.context.shutdownListeners;
    await fleet.close();
    fleet = undefined;
    expect(listeners.size).toBe(0);
    await eventually(async () => agent!.openRequests() === 0, 'no connection from the closed fleet left at the agent', 30_000, 20);
    await eventually(async () => timers() <= timersBefore, 'no timer of the closed fleet left', 30_000, 20);
    // Every row recoverable: a new fleet finishes each one, without a second SendMessage.
    agent.finish();
    next = await startTestFleet({ redisUrl: redisServer().url, prefix, workerId: 'next' });
    await eventually(async () => (await Promise.all(ids.map((id) => producer!.get(id)))).every((view) => view.state === 'COMPLETED'), 'every delegation completed by the next fleet', 120_000, 100);
    const sends = agent.calls('SendMessage').map((call) => call.params.message.messageId);
    expect(sends.length).toBe(count);
    expect(new Set(sends).size).toBe(count);
  }

  it('60 streams held open (no headers, headers only, one event), each after two refused subscriptions: one listener per open stream; the close leaves no listener, socket or timer; all completed later', async () => {
    await scene(60, (taskNumber) => KINDS[taskNumber % KINDS.length]!, 2);
  }, 400_000);

  it('the close while streams are still opening (a third open): the same', async () => {
    await scene(30, (taskNumber) => KINDS[taskNumber % KINDS.length]!, 1, 10);
  }, 400_000);

  it('property: any count, mix of stream kinds, refusals and moment of the close: no listener, socket or timer left; every delegation completed once', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 24 }),
        fc.array(fc.constantFrom(...KINDS), { minLength: 1, maxLength: 5 }),
        fc.integer({ min: 0, max: 2 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        async (count, kinds, refusals, share) => {
          try {
            await scene(count, (taskNumber) => kinds[taskNumber % kinds.length]!, refusals, Math.max(1, Math.round(count * share)));
          } finally {
            await fleet?.close();
            await next?.close();
            await producer?.close();
            await agent?.close();
            fleet = next = producer = agent = undefined;
          }
        },
      ),
      { numRuns: Number(process.env.SHUTDOWN_ATTACK_RUNS ?? 4), seed: Number(process.env.SHUTDOWN_ATTACK_SEED ?? 909), endOnFailure: true },
    );
  }, 900_000);
});

/**
 * Thousands of streams in one process, below HTTP (`readStream` with its `open` given): streams that fail to open (a
 * throw before any stream, as without an interface), that open and never yield (no headers), and that yield one event
 * and then nothing, opened in bursts; the close comes while some are still being opened.
 */
describe('thousands of streams in one process', () => {
  type Kind = 'fails' | 'silent' | 'one-event';
  const silentLogger = { child: () => silentLogger, info: () => undefined, warn: () => undefined, debug: () => undefined, error: () => undefined };

  async function burst(kinds: readonly Kind[], closeAfter: number): Promise<void> {
    const shutdown = new AbortController();
    const listeners = new ShutdownListeners(shutdown.signal);
    const metrics = { agentLabels: { of: () => 'agent' }, resubscriptions: { inc: () => undefined } };
    const ctx = { logger: silentLogger, metrics, options: { streamQuietMs: 600_000 }, shutdownSignal: shutdown.signal, shutdownListeners: listeners } as unknown as WorkerContext;
    const record = { workflowId: 'wf', delegationId: 'd', step: 0, taskId: 'task' } as unknown as DelegationRecord;
    const snapshot: StreamEvent = { response: { task: { id: 'task', contextId: 'c', status: { state: 'TASK_STATE_WORKING' } } } } as StreamEvent;
    const timersBefore = timers();
    const runs: Promise<unknown>[] = [];
    let failedOpens = 0;
    for (const [index, kind] of kinds.entries()) {
      if (index === closeAfter) shutdown.abort(new Error('closing'));
      const open = (signal: AbortSignal) => {
        if (kind === 'fails') throw new Error('no interface to open a stream on');
        return (async function* () {
          if (kind === 'one-event') yield snapshot;
          await new Promise((_, reject) => (signal.aborted ? reject(signal.reason) : signal.addEventListener('abort', () => reject(signal.reason), { once: true })));
          return { kind: 'incomplete' as const, eventCount: 0 };
        })();
      };
      const sink = async () => ({ next: 'continue' }) as never;
      const run = readStream(ctx, record, { id: `job-${index}` } as JobRun, new AbortController().signal, sink, { open });
      runs.push(run.catch((error: Error) => (error.message === 'no interface to open a stream on' ? failedOpens++ : Promise.reject(error))));
      // Bursts: every 500 opens, the event loop turns (the streams open ones start reading).
      if (index % 500 === 499) await new Promise((resolve) => setImmediate(resolve));
    }
    await new Promise((resolve) => setImmediate(resolve));
    const alive = kinds.slice(0, closeAfter).filter((kind) => kind !== 'fails').length;
    if (closeAfter >= kinds.length) expect(listeners.size).toBe(alive);
    shutdown.abort(new Error('closing'));
    await Promise.all(runs);
    expect(failedOpens).toBe(kinds.filter((kind) => kind === 'fails').length);
    expect(listeners.size).toBe(0);
    expect(timers()).toBeLessThanOrEqual(timersBefore);
  }

  it('5,000 streams (a third fail to open), the close after all opened: one listener per open stream, then none; every quiet timer gone', async () => {
    const kinds = Array.from({ length: 5_000 }, (_, index) => (['fails', 'silent', 'one-event'] as const)[index % 3]!);
    await burst(kinds, kinds.length);
  });

  it('property: any mix and any moment of the close: every run ends, no listener and no timer left', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.constantFrom<Kind>('fails', 'silent', 'one-event'), { minLength: 1, maxLength: 1_500 }), fc.nat({ max: 1_600 }), (kinds, closeAfter) => burst(kinds, closeAfter)),
      { numRuns: 30, seed: 77 },
    );
  });
});
