/**
 * The fleet-wide resubscribe rate's slots (takeToken-1.lua) are reserved several per script call: the
 * resubscriptions of a process that ask in one turn share one call (a fresh worker reattaching 10,000 streams after
 * a whole-fleet crash made one call per stream; docs/performance.md, recovery). The limit stays exact: a call of k
 * slots hands out what k calls of one slot would at that instant, so no window of the rate ever holds more than
 * `max` slots, however the calls are batched.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Journal, type DelegationRef } from '@durable-a2a/shared';
import type { Fleet } from '@durable-a2a/workers';
import { ResubscribeTokens } from '../../packages/workers/src/delegation/runs/resubscribe-tokens.ts';
import { followDelegation } from '../../packages/workers/src/delegation/runs/follow.ts';
import { closeKeptAfterEach } from '../harness/lifecycle.ts';
import { startLongTasks } from '../harness/long-tasks.ts';
import { startMonitor, useRedisClient, useRedisServer } from '../harness/redis.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';

const redisServer = useRedisServer();
const redis = useRedisClient(redisServer);
const keep = closeKeptAfterEach();
let counter = 0;

/** Redis's clock, ms since the epoch (the script's clock). */
async function redisNow(): Promise<number> {
  const [seconds, micros] = (await redis().call('TIME')) as [string, string];
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}

describe('ResubscribeTokens (several slots per script call)', () => {
  it('takes asked in one turn share one call, each answered with its own slot in the order it asked', async () => {
    const counts: number[] = [];
    const tokens = new ResubscribeTokens(async (count) => {
      counts.push(count);
      return Array.from({ length: count }, (_, index) => index * 100);
    });
    expect(await Promise.all(Array.from({ length: 5 }, () => tokens.take()))).toEqual([0, 100, 200, 300, 400]);
    expect(counts).toEqual([5]);
    expect(await tokens.take()).toBe(0);
    expect(counts).toEqual([5, 1]);
  });

  it('splits the takes of one turn into calls of at most mostPerCall slots', async () => {
    const counts: number[] = [];
    const tokens = new ResubscribeTokens(async (count) => {
      counts.push(count);
      return Array.from({ length: count }, () => 0);
    }, 2);
    await Promise.all(Array.from({ length: 5 }, () => tokens.take()));
    expect(counts).toEqual([2, 2, 1]);
  });

  it('a failed call rejects every take it answers for, with its error; the next turn calls again', async () => {
    const failure = new Error('NOSCRIPT');
    let fail = true;
    const tokens = new ResubscribeTokens(async (count) => {
      if (fail) throw failure;
      return Array.from({ length: count }, () => 0);
    });
    const answers = await Promise.allSettled([tokens.take(), tokens.take()]);
    expect(answers).toEqual([
      { status: 'rejected', reason: failure },
      { status: 'rejected', reason: failure },
    ]);
    fail = false;
    expect(await tokens.take()).toBe(0);
  });

  it('a call answering a different number of slots than asked rejects every take of it (no take goes without a slot)', async () => {
    const tokens = new ResubscribeTokens(async () => [0]);
    const answers = await Promise.allSettled([tokens.take(), tokens.take()]);
    expect(answers.map(({ status }) => status)).toEqual(['rejected', 'rejected']);
  });
});

describe('takeTokens (takeToken-1.lua, count slots per call)', () => {
  it('refuses a count that is not a positive integer', async () => {
    const journal = new Journal(redis(), { prefix: `tokens${++counter}`, retentionMs: 60_000 });
    await expect(journal.takeTokens('test', 10, 1_000, 0)).rejects.toThrow(RangeError);
    await expect(journal.takeTokens('test', 10, 1_000, 1.5)).rejects.toThrow(RangeError);
  });

  it('one call of 5 slots: the first now, each next one window/max later, as 5 calls of one would be', async () => {
    const journal = new Journal(redis(), { prefix: `tokens${++counter}`, retentionMs: 60_000 });
    const waits = await journal.takeTokens('test', 2, 1_000, 5);
    expect(waits).toEqual([0, 500, 1000, 1500, 2000]);
    // The next call (one slot) goes after them: the schedule moved on by 5 slots.
    const next = await journal.takeToken('test', 2, 1_000);
    expect(next).toBeGreaterThan(2000);
    expect(next).toBeLessThanOrEqual(2500);
  });

  it('a batch that would reach past maxWaitMs restarts the schedule from now mid-batch, as single calls would', async () => {
    const journal = new Journal(redis(), { prefix: `tokens${++counter}`, retentionMs: 60_000 });
    // 1 per 100 ms, waits of at most 250 ms: slots at 0, 100, 200, then 300 > 250 restarts from now.
    expect(await journal.takeTokens('test', 10, 1_000, 5, 250)).toEqual([0, 100, 200, 0, 100]);
  });

  /** A longest wait no batch of the property reaches (8 × 30 slots at most 5 s apart: 20 minutes). */
  const NO_RESTART_MS = 24 * 3600 * 1000;
  it('property: however the slots are batched, no window of windowMs holds more than max of them', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 20 }),
        fc.integer({ min: 200, max: 5_000 }),
        fc.array(fc.integer({ min: 1, max: 30 }), { minLength: 1, maxLength: 8 }),
        async (max, windowMs, batches) => {
          const journal = new Journal(redis(), { prefix: `tokens${++counter}`, retentionMs: 60_000 });
          // Each slot's time (Redis's clock) lies between the Redis time read before its call and the one read after.
          const slots: { earliest: number; latest: number }[] = [];
          for (const count of batches) {
            const before = await redisNow();
            // Past maxWaitMs the schedule restarts from now by design (a backlog that large must not push slots out for
            // ever: the restart cases above); up to 240 slots 5 s apart reach 20 minutes, past the default 10: this
            // property is about the spacing, so the restart is out of its reach.
            const waits = await journal.takeTokens('test', max, windowMs, count, NO_RESTART_MS);
            const after = await redisNow();
            expect(waits).toHaveLength(count);
            for (const waitMs of waits) slots.push({ earliest: before + waitMs, latest: after + waitMs });
          }
          // Slot k + max comes at least a window after slot k (a window holds at most max slots); 1 ms for the rounding of
          // window/max added up max times.
          for (let index = 0; index + max < slots.length; index++) {
            expect(slots[index + max]!.latest - slots[index]!.earliest).toBeGreaterThanOrEqual(windowMs - 1);
          }
        },
      ),
      // The longest schedule the arbitraries allow (240 slots 5 s apart): past the default longest wait.
      { numRuns: 40, examples: [[1, 5_000, [30, 30, 30, 30, 30, 30, 30, 30]]] },
    );
  });
});

describe("a fleet's resubscriptions", () => {
  it('asking in one turn share one takeToken call, which reserves one slot each', async () => {
    const prefix = `tokens-fleet${++counter}`;
    const fleet: Fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, queues: ['follow'], subscribeRateLimit: { max: 4, durationMs: 1_000 } });
    keep(fleet);
    const monitor = await startMonitor(redisServer().url);
    const tokenCalls: string[][] = [];
    monitor.on('monitor', (_time: string, args: string[]) => {
      if (args[0]?.toLowerCase().startsWith('eval') && args.some((arg) => arg.endsWith(':rate:resubscribe'))) tokenCalls.push(args);
    });
    let waits: number[];
    try {
      waits = await Promise.all(Array.from({ length: 6 }, () => fleet.context.resubscribeTokens.take()));
      await eventually(async () => tokenCalls.length > 0, 'the monitor saw the takeToken call', 10_000);
    } finally {
      monitor.disconnect();
    }
    expect(tokenCalls).toHaveLength(1);
    expect(tokenCalls[0]!.at(-1)).toBe('6');
    expect(waits).toEqual([0, 250, 500, 750, 1000, 1250]);
  }, 30_000);
});

describe('a resubscription whose slot is a few ms away', () => {
  /** A fleet without a follow queue (the follow job the send routed to waits) and one delegation whose task is known. */
  async function setUp(name: string) {
    const prefix = `${name}${++counter}`;
    const { agent, producer } = await startLongTasks(redisServer().url, prefix);
    const fleet: Fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, queues: ['send'], reconcileIntervalMs: 600_000, streamIdleTimeoutMs: 600_000 });
    keep(agent, producer, fleet);
    const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'a long job' });
    const ref: DelegationRef = { workflowId: id, delegationId: 'main.1' };
    await eventually(async () => (await producer.journal.getDelegation(ref))?.taskId !== undefined, 'the task id journaled', 20_000);
    return { fleet, producer, ref };
  }

  /** Runs a resubscription by hand whose fleet-wide slot is `slotWaitMs` away; what it asked `deferUntilSlot` for. */
  function resubscribe(fleet: Fleet, ref: DelegationRef, slotWaitMs: number) {
    const deferred: number[] = [];
    const context = { ...fleet.context, resubscribeTokens: new ResubscribeTokens(async (count) => Array.from({ length: count }, () => slotWaitMs)) };
    const run = { id: 'by-hand', attemptsMade: 0, attempts: 1 };
    const outcome = followDelegation(context, { ...ref, resubscription: 1, again: true, slotTaken: false }, run, async (waitMs) => {
      deferred.push(waitMs);
      return 'deferred';
    });
    return { deferred, outcome };
  }

  it('3 ms away: waits for it in place and opens its stream (the lease taken), no delayed job', async () => {
    const { fleet, producer, ref } = await setUp('inline-slot');
    const { deferred, outcome } = resubscribe(fleet, ref, 3);
    const leaseKey = producer.journal.keys.followLease(ref.workflowId, ref.delegationId);
    await eventually(async () => (await redis().get(leaseKey)) === `${fleet.context.workerId}/by-hand` || deferred.length > 0, 'the stream opened or the follow deferred', 20_000);
    expect(deferred).toEqual([]);
    expect(await redis().get(leaseKey)).toBe(`${fleet.context.workerId}/by-hand`);
    // The stream ends when the fleet closes (afterEach); its outcome is not this test's.
    void outcome.catch(() => undefined);
  }, 60_000);

  it('5 s away: deferred to a job for that wait, the next check moved past it, no stream', async () => {
    const { fleet, producer, ref } = await setUp('deferred-slot');
    const before = Date.now();
    const { deferred, outcome } = resubscribe(fleet, ref, 5_000);
    expect(await outcome).toBe('deferred');
    expect(deferred).toEqual([5_000]);
    const checkAt = Number(await redis().zscore(producer.journal.keys.unfinished(), `${ref.workflowId}|${ref.delegationId}`));
    expect(checkAt).toBeGreaterThanOrEqual(before + 5_000);
    expect(await redis().get(producer.journal.keys.followLease(ref.workflowId, ref.delegationId))).toBeNull();
  }, 60_000);
});
