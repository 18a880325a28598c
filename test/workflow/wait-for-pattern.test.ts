/**
 * The change subscriber's pattern subscription (journal/changes.ts): from `patternFromWaiters` waits at once it hears
 * every workflow's channel through one PSUBSCRIBE instead of a SUBSCRIBE and an UNSUBSCRIBE per wait, keeps it while
 * anyone waits and `lingerMs` after, and still misses no change (registered, then read back; a replacement connection
 * subscribes the pattern again, then wakes every waiter).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { createProducer, type Producer, type WorkflowView } from '@durable-a2a/producer';
import { Redis } from 'ioredis';
import { createRedisClient } from '@durable-a2a/shared';
import { WorkflowChangeSubscriber, waitForWorkflow, workflowChangeChannel, workflowChangePattern } from '../../packages/producer/src/wait.ts';
import { onEveryServer, useRedisServer } from '../harness/redis.ts';
import { eventually } from '../harness/fleet.ts';

const redisServer = useRedisServer();
const PREFIX = 'wait-pattern';
const NOWHERE = 'http://127.0.0.1:9/.well-known/agent-card.json';
let idle: Producer;
let base: Redis;
let sequence = 0;

beforeAll(() => {
  idle = createProducer({ addressPolicy: { allowLoopback: true }, redis: redisServer().url, prefix: PREFIX });
  base = createRedisClient(redisServer().url) as Redis;
});
afterAll(async () => {
  await idle?.close();
  await base?.quit();
});

/** What is subscribed under PREFIX on any server: its channels, and how many pattern subscriptions exist. */
async function subscribed(): Promise<{ channels: string[]; patterns: number }> {
  const answers = await onEveryServer(redisServer(), async (server) => ({ channels: (await server.pubsub('CHANNELS', `${PREFIX}:*`)) as string[], patterns: Number(await server.pubsub('NUMPAT')) }));
  return { channels: answers.flatMap((answer) => answer.channels), patterns: answers.reduce((sum, answer) => sum + answer.patterns, 0) };
}

/** A RUNNING workflow nobody works on (no fleet runs on PREFIX): only the test moves it. */
async function parkedWorkflow(): Promise<string> {
  const workflowId = `parked-${++sequence}`;
  await idle.startWorkflow({ workflowId, steps: [{ name: 'main', agent: NOWHERE, message: { text: 'never sent' } }] });
  return workflowId;
}

const read = (workflowId: string): Promise<WorkflowView> => idle.get(workflowId);
/** The states a wait resolves on, and how long after the wait starts the change lands (ms). */
const settledStates = fc.constantFrom('COMPLETED', 'FAILED', 'CANCELED', 'NEEDS_ATTENTION');
const delaysMs = fc.integer({ min: 0, max: 30 });

describe('the change subscriber with a pattern', () => {
  it('workflowChangePattern matches every change channel of its prefix and escapes the prefix', () => {
    expect(workflowChangePattern(idle.journal)).toBe(`${PREFIX}:{wf:*}:changed`);
    const odd = createProducer({ redis: redisServer().url, prefix: 'a*b?[c]\\d' });
    try {
      expect(workflowChangePattern(odd.journal)).toBe('a\\*b\\?\\[c\\]\\\\d:{wf:*}:changed');
    } finally {
      void odd.close();
    }
  });

  it('many waits at once: one PSUBSCRIBE, no SUBSCRIBE from the threshold on, every wait woken; given up lingerMs after the last', async () => {
    const subscriber = new WorkflowChangeSubscriber(base, { pattern: workflowChangePattern(idle.journal), patternFromWaiters: 2, lingerMs: 300 });
    try {
      const [keeper, ...ids] = await Promise.all(Array.from({ length: 7 }, () => parkedWorkflow()));
      // The first wait (below the threshold) SUBSCRIBEs its channel; the second starts the pattern, the rest use it.
      const kept = waitForWorkflow(subscriber, idle.journal, read, keeper!, { timeoutMs: 30_000 });
      await eventually(async () => (await subscribed()).channels.length === 1, 'the first wait subscribed');
      const waits = ids.map((id) => waitForWorkflow(subscriber, idle.journal, read, id, { timeoutMs: 30_000 }));
      await eventually(async () => (await subscribed()).patterns === 1, 'the pattern subscribed');
      expect((await subscribed()).channels).toEqual([workflowChangeChannel(idle.journal, keeper!)]);
      for (const id of ids) await idle.journal.updateWorkflow(id, { state: 'COMPLETED' });
      expect((await Promise.all(waits)).map((view) => view.state)).toEqual(ids.map(() => 'COMPLETED'));
      // While anyone waits the pattern stays, and a new wait sends nothing: no channel of its own.
      const late = await parkedWorkflow();
      const lateWait = waitForWorkflow(subscriber, idle.journal, read, late, { timeoutMs: 30_000 });
      await idle.journal.updateWorkflow(late, { state: 'FAILED' });
      expect((await lateWait).state).toBe('FAILED');
      expect(await subscribed()).toEqual({ channels: [workflowChangeChannel(idle.journal, keeper!)], patterns: 1 });
      await idle.journal.updateWorkflow(keeper!, { state: 'CANCELED' });
      expect((await kept).state).toBe('CANCELED');
      // Nobody waits: the first channel is given up at once, the pattern lingerMs later.
      await eventually(async () => (await subscribed()).channels.length === 0, 'the first channel given up');
      await eventually(async () => (await subscribed()).patterns === 0, 'the pattern given up');
    } finally {
      await subscriber.close();
    }
  });

  it('property: whenever the change lands (before the wait, during the read-back, while waiting), a wait through the pattern resolves with it', async () => {
    const subscriber = new WorkflowChangeSubscriber(base, { pattern: workflowChangePattern(idle.journal), patternFromWaiters: 1, lingerMs: 60_000 });
    // Once the pattern is confirmed a wait registers at once (`listenNow`): only the first wait awaits `listen`.
    let awaitedListens = 0;
    const listen = subscriber.listen.bind(subscriber);
    subscriber.listen = (...args) => {
      awaitedListens++;
      return listen(...args);
    };
    try {
      await fc.assert(
        fc.asyncProperty(
          settledStates,
          fc.constantFrom('before the wait', 'right after the first read', 'while waiting'),
          delaysMs,
          async (finalState, when, delayMs) => {
            const id = await parkedWorkflow();
            if (when === 'before the wait') await idle.journal.updateWorkflow(id, { state: finalState });
            // 'right after the first read': the state probe answers a stale RUNNING, and the change lands before the wait starts.
            const journal = new Proxy(idle.journal, {
              get(target, property) {
                if (property === 'workflowStates') {
                  return async (ids: string[]) => {
                    const states = await target.workflowStates(ids);
                    if (when === 'right after the first read') await target.updateWorkflow(ids[0]!, { state: finalState });
                    return states;
                  };
                }
                const value = Reflect.get(target, property) as unknown;
                return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
              },
            });
            const waiting = waitForWorkflow(subscriber, journal, read, id, { timeoutMs: 20_000 });
            if (when === 'while waiting') setTimeout(() => void idle.journal.updateWorkflow(id, { state: finalState }), delayMs);
            expect((await waiting).state).toBe(finalState);
          },
        ),
        { numRuns: 20 },
      );
      // Every wait went through the one pattern: no channel was subscribed.
      expect(await subscribed()).toEqual({ channels: [], patterns: 1 });
      expect(awaitedListens).toBe(1);
    } finally {
      await subscriber.close();
    }
  });

  it('listenNow registers only once the pattern is confirmed, and a wait so registered is woken by the next change', async () => {
    const subscriber = new WorkflowChangeSubscriber(base, { pattern: workflowChangePattern(idle.journal), patternFromWaiters: 1, lingerMs: 60_000 });
    try {
      const id = await parkedWorkflow();
      const channel = workflowChangeChannel(idle.journal, id);
      expect(subscriber.listenNow(channel, () => undefined)).toBeUndefined();
      const pending = subscriber.listen(channel, () => undefined);
      // Asked, not confirmed yet: nothing registers without waiting.
      expect(subscriber.listenNow(channel, () => undefined)).toBeUndefined();
      const unlistenFirst = await pending;
      const heard: (string | undefined)[] = [];
      const unlisten = subscriber.listenNow(channel, (message) => heard.push(message));
      expect(unlisten).toBeTypeOf('function');
      await idle.journal.updateWorkflow(id, { state: 'COMPLETED' });
      await eventually(async () => heard.length > 0, 'the change heard');
      await unlisten!();
      await unlistenFirst();
      // Given up (nobody waits, then closed): nothing registers at once any more.
      await subscriber.close();
      expect(subscriber.listenNow(channel, () => undefined)).toBeUndefined();
    } finally {
      await subscriber.close();
    }
  });

  it('property: a workflow this producer created while its pattern was confirmed is waited for with no state read, whenever its change lands', async () => {
    // A producer of its own: its subscriber takes the pattern from PATTERN_FROM_WAITERS (8) waits at once.
    const producer = createProducer({ addressPolicy: { allowLoopback: true }, redis: redisServer().url, prefix: PREFIX });
    let stateReads = 0;
    const workflowStates = producer.journal.workflowStates.bind(producer.journal);
    producer.journal.workflowStates = async (ids) => {
      stateReads++;
      return workflowStates(ids);
    };
    const start = async () => {
      const workflowId = `created-${++sequence}`;
      await producer.startWorkflow({ workflowId, steps: [{ name: 'main', agent: NOWHERE, message: { text: 'never sent' } }] });
      return workflowId;
    };
    const keepers = await Promise.all(Array.from({ length: 8 }, () => start()));
    const kept = keepers.map((id) => producer.waitFor(id, { timeoutMs: 60_000 }));
    try {
      // Once the pattern is confirmed, a workflow created now is waited for without a read of its state.
      let readsOfLast = 1;
      for (let attempt = 0; attempt < 200 && readsOfLast > 0; attempt++) {
        const id = await start();
        const before = stateReads;
        const waiting = producer.waitFor(id, { timeoutMs: 20_000 });
        await producer.journal.updateWorkflow(id, { state: 'COMPLETED' });
        expect((await waiting).state).toBe('COMPLETED');
        readsOfLast = stateReads - before;
      }
      expect(readsOfLast).toBe(0);
      await fc.assert(
        fc.asyncProperty(fc.record({ finalState: settledStates, when: fc.constantFrom('before the wait', 'while waiting', 'twice before the wait'), delayMs: delaysMs }), async ({ finalState, when, delayMs }) => {
            const id = await start();
            if (when === 'twice before the wait') await producer.journal.updateWorkflow(id, { state: 'COMPENSATING' });
            if (when !== 'while waiting') await producer.journal.updateWorkflow(id, { state: finalState });
            const waiting = producer.waitFor(id, { timeoutMs: 20_000 });
            if (when === 'while waiting') setTimeout(() => void producer.journal.updateWorkflow(id, { state: finalState }), delayMs);
            expect((await waiting).state).toBe(finalState);
        }),
        { numRuns: 30 },
      );
      const readsBefore = stateReads;
      // Created by another producer (an idempotent retry here creates nothing): its state is read.
      const elsewhere = await parkedWorkflow();
      const again = await start();
      await expect(producer.startWorkflow({ workflowId: again, steps: [{ name: 'main', agent: NOWHERE, message: { text: 'never sent' } }] })).resolves.toEqual({ id: again, created: false });
      await producer.journal.updateWorkflow(elsewhere, { state: 'COMPLETED' });
      await producer.journal.updateWorkflow(again, { state: 'FAILED' });
      expect((await producer.waitFor(elsewhere, { timeoutMs: 20_000 })).state).toBe('COMPLETED');
      expect((await producer.waitFor(again, { timeoutMs: 20_000 })).state).toBe('FAILED');
      expect(stateReads - readsBefore).toBe(2);
    } finally {
      await Promise.all(keepers.map((id) => producer.journal.updateWorkflow(id, { state: 'CANCELED' })));
      await Promise.allSettled(kept);
      await producer.close();
    }
  });

  it('a change published while the pattern subscriber reconnects is not lost, and the creations kept are forgotten', async () => {
    const subscriber = new WorkflowChangeSubscriber(base, { pattern: workflowChangePattern(idle.journal), patternFromWaiters: 1, lingerMs: 60_000 });
    try {
      const id = await parkedWorkflow();
      const waiting = waitForWorkflow(subscriber, idle.journal, read, id, { timeoutMs: 30_000 });
      await eventually(async () => (await subscribed()).patterns === 1, 'the pattern subscribed');
      // A creation kept for its first wait: after a replacement, what was published meanwhile may be lost, so it is not trusted.
      const created = workflowChangeChannel(idle.journal, 'created-before-the-cut');
      let watch: ReturnType<WorkflowChangeSubscriber['watchCreation']>;
      await eventually(async () => (watch = subscriber.watchCreation(created)) !== undefined, 'the pattern confirmed');
      subscriber.settleCreation(watch!, true);
      // The subscriber connection is cut and the change lands while it connects again: the replacement subscribes the
      // pattern, then wakes the wait, which reads the change.
      await onEveryServer(redisServer(), (server) => server.client('KILL', 'TYPE', 'pubsub'));
      await idle.journal.updateWorkflow(id, { state: 'CANCELED' });
      expect((await waiting).state).toBe('CANCELED');
      expect(subscriber.takeCreation(created)).toBeUndefined();
      // The replacement holds the pattern: a later wait is still woken through it.
      await eventually(async () => (await subscribed()).patterns === 1, 'the pattern subscribed again');
      const next = await parkedWorkflow();
      const again = waitForWorkflow(subscriber, idle.journal, read, next, { timeoutMs: 30_000 });
      await idle.journal.updateWorkflow(next, { state: 'COMPLETED' });
      expect((await again).state).toBe('COMPLETED');
      expect((await subscribed()).channels).toEqual([]);
    } finally {
      await subscriber.close();
    }
  });
});
