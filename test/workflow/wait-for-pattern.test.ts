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
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom('COMPLETED', 'FAILED', 'CANCELED', 'NEEDS_ATTENTION'),
          fc.constantFrom('before the wait', 'right after the first read', 'while waiting'),
          fc.integer({ min: 0, max: 30 }),
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
    } finally {
      await subscriber.close();
    }
  });

  it('a change published while the pattern subscriber reconnects is not lost', async () => {
    const subscriber = new WorkflowChangeSubscriber(base, { pattern: workflowChangePattern(idle.journal), patternFromWaiters: 1, lingerMs: 60_000 });
    try {
      const id = await parkedWorkflow();
      const waiting = waitForWorkflow(subscriber, idle.journal, read, id, { timeoutMs: 30_000 });
      await eventually(async () => (await subscribed()).patterns === 1, 'the pattern subscribed');
      // The subscriber connection is cut and the change lands while it connects again: the replacement subscribes the
      // pattern, then wakes the wait, which reads the change.
      await onEveryServer(redisServer(), (server) => server.client('KILL', 'TYPE', 'pubsub'));
      await idle.journal.updateWorkflow(id, { state: 'CANCELED' });
      expect((await waiting).state).toBe('CANCELED');
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
