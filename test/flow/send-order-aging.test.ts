/**
 * The send order under a backlog longer than a place of the clock (sendOrder-2.lua, docs/flow-control.md "Tenants"):
 * the places of an earlier design restarted at 0 every window, so a tenant's newer sends and every other tenant's
 * passed its older backlog each window, for ever (its tail could wait until its attempt deadline and fail unsent).
 * What must hold now: a tenant's sends are served in the order it enqueued them, and a waiting send is behind no send
 * enqueued once the clock reached its place. Real Redis, a real BullMQ queue and worker; the clock's place lasts a
 * short time here (`SendOrder`'s `windowMs`), waited for on Redis's clock, never slept.
 */
import fc from 'fast-check';
import { Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { AgentRegistry, FairSendQueue, SendOrder, journalKeys } from '@durable-a2a/shared';
import { useRedisServer } from '../harness/redis.ts';
import { closedAtEnd, redisNow } from '../harness/send-order.ts';
import { eventually } from '../harness/fleet.ts';

const redisServer = useRedisServer();
let counter = 0;
const connect = (): Redis => closedAtEnd(new Redis(redisServer().url, { maxRetriesPerRequest: null }));

/** A paused fair send queue whose clock's place lasts `placeMs`, and a way to serve it (concurrency 1) in order. */
function pausedQueue(prefix: string, placeMs: number) {
  const redis = connect();
  const connection = { connection: redis, prefix: `{${prefix}}` };
  const queue = closedAtEnd(new FairSendQueue('send', connection, new SendOrder(redis, prefix, placeMs)));
  return {
    redis,
    queue,
    add: (tenant: string, index: number) => queue.add('send', { kind: 'message', tenant, index }),
    /** Resumes the queue and returns `count` sends as `<tenant> <index>`, in the order the worker started them. */
    async serve(count: number): Promise<string[]> {
      const served: string[] = [];
      closedAtEnd(new Worker('send', async (job) => void served.push(`${job.data.tenant} ${job.data.index}`), { ...connection, connection: connect(), concurrency: 1 }));
      await queue.resume();
      await eventually(async () => served.length === count, `${count} sends served`, 30_000, 20);
      return served;
    },
  };
}

describe('a backlog longer than a place of the clock', () => {
  it("a tenant's newer sends, enqueued places later, are served after its older backlog (first in, first out)", async () => {
    const prefix = `order-aging-fifo-${++counter}`;
    const { redis, queue, add, serve } = pausedQueue(prefix, 100);
    await queue.pause();
    for (let index = 0; index < 12; index++) await add('a', index);
    // Three places of the clock later (the old design: three windows later, its count started again at 0).
    const start = await redisNow(redis);
    await eventually(async () => (await redisNow(redis)) >= start + 300, 'three places of the clock went by', 10_000, 20);
    for (let index = 12; index < 16; index++) await add('a', index);
    expect(await serve(16)).toEqual(Array.from({ length: 16 }, (_, index) => `a ${index}`));
  }, 60_000);

  it("a waiting send is not passed by another tenant's sends enqueued once the clock has reached its place", async () => {
    const prefix = `order-aging-tail-${++counter}`;
    const { redis, queue, add, serve } = pausedQueue(prefix, 50);
    await queue.pause();
    const before = await redisNow(redis);
    for (let index = 0; index < 10; index++) await add('a', index);
    // a's places are 0 to 9: the clock reaches 10 ten places (500 ms) after its first send.
    await eventually(async () => (await redisNow(redis)) >= before + 11 * 50, 'the clock went past the backlog', 10_000, 20);
    for (let index = 0; index < 3; index++) await add('b', index);
    const served = await serve(13);
    expect(served.slice(0, 10)).toEqual(Array.from({ length: 10 }, (_, index) => `a ${index}`));
    expect(served.slice(10)).toEqual(['b 0', 'b 1', 'b 2']);
  }, 60_000);

  it("a tenant starting while another's burst waits is still served among the burst's first places (fairness kept)", async () => {
    const prefix = `order-aging-fair-${++counter}`;
    const { queue, add, serve } = pausedQueue(prefix, 60_000);
    await queue.pause();
    for (let index = 0; index < 20; index++) await add('a', index);
    for (let index = 0; index < 2; index++) await add('b', index);
    const served = await serve(22);
    expect(served.indexOf('b 0')).toBeLessThanOrEqual(2);
    expect(served.indexOf('b 1')).toBeLessThanOrEqual(4);
  }, 60_000);
});

const PLACE_MS = 25;

describe('property: arrivals of several tenants and weights, with the clock moving between them', () => {
  it('per tenant first in, first out; no send enqueued once the clock reached a place goes ahead of it; a tenant takes its weight in sends a place and starts at the clock', async () => {
    const redis = connect();
    // A place lasts 25 ms of Redis's clock: a tick waits (on Redis's clock) for that many places to go by; sends in
    // one step may see the clock move too.
    const tenant = fc.constantFrom('a', 'b', 'c');
    const step = fc.oneof(
      { weight: 4, arbitrary: fc.record({ kind: fc.constant('send' as const), tenant, count: fc.integer({ min: 1, max: 5 }) }) },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant('tick' as const), places: fc.integer({ min: 1, max: 4 }) }) },
    );
    await fc.assert(
      fc.asyncProperty(fc.record({ a: fc.integer({ min: 1, max: 3 }), b: fc.integer({ min: 1, max: 3 }), c: fc.integer({ min: 1, max: 3 }) }), fc.array(step, { minLength: 1, maxLength: 30 }), async (weights, steps) => {
        const prefix = `order-aging-property-${++counter}`;
        const registry = new AgentRegistry(redis, { prefix });
        for (const [name, weight] of Object.entries(weights)) await registry.setTenantWeight(name, weight);
        const order = new SendOrder(redis, prefix, PLACE_MS);
        const { clock: clockKey } = journalKeys(prefix).sendOrder();
        const placed: { tenant: 'a' | 'b' | 'c'; place: number; clock: number }[] = [];
        for (const s of steps) {
          if (s.kind === 'tick') {
            const from = await redisNow(redis);
            await eventually(async () => (await redisNow(redis)) >= from + s.places * PLACE_MS, 'places of the clock went by', 10_000, 5);
            continue;
          }
          for (let index = 0; index < s.count; index++) {
            const place = await order.place(s.tenant);
            // The clock this call placed on (only this run moves it, and only by its calls).
            placed.push({ tenant: s.tenant, place, clock: Number((await redis.hget(clockKey, 'v')) ?? 0) });
          }
        }
        const trace = JSON.stringify(placed);
        for (const [index, send] of placed.entries()) {
          // Never behind the clock, never far ahead of it.
          expect(send.place, trace).toBeGreaterThanOrEqual(send.clock);
          expect(send.place, trace).toBeLessThanOrEqual(send.clock + 20_000);
          for (const later of placed.slice(index + 1)) {
            // First in, first out within a tenant.
            if (later.tenant === send.tenant) expect(later.place, trace).toBeGreaterThanOrEqual(send.place);
            // Aging: enqueued once the clock reached this place, it goes after it (same place: in the order added).
            if (later.clock >= send.place) expect(later.place, trace).toBeGreaterThanOrEqual(send.place);
          }
        }
        // Weighted shares: a tenant takes at most its weight in sends a place, and moves to a later place only with its
        // place full (its weight taken) or to the clock's (it had fallen behind it, or starts).
        for (const name of ['a', 'b', 'c'] as const) {
          const own = placed.filter((send) => send.tenant === name);
          const at = new Map<number, number>();
          for (const send of own) at.set(send.place, (at.get(send.place) ?? 0) + 1);
          for (const taken of at.values()) expect(taken, trace).toBeLessThanOrEqual(weights[name]);
          for (const [index, send] of own.entries()) {
            const previous = own[index - 1];
            if (previous === undefined || send.place === previous.place) continue;
            if (send.place === send.clock && previous.place < send.clock) continue;
            expect({ place: send.place, from: previous.place, taken: at.get(previous.place) }, trace).toEqual({ place: previous.place + 1, from: previous.place, taken: weights[name] });
          }
          if (own[0]) expect(own[0].place, trace).toBe(own[0].clock);
        }
      }),
      { numRuns: 30, seed: 6_606 },
    );
  }, 120_000);
});
