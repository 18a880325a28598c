/**
 * Attacks on the send queue's fair order (sendOrder-2.lua, docs/flow-control.md "Tenants"): the virtual clock and the
 * tenants' entries are one hash (`v` and `ms` fields + `t:<tenant>` fields) moved by Redis's clock. Tenant names that
 * look like the hash's own fields or carry odd bytes, Redis's clock behind the stored one (stepped back, or a promoted
 * replica whose clock is behind the old primary's: simulated by writing an `ms` ahead of this server's clock),
 * entries written by hand, weights written by hand (NaN, infinite, negative, fractional), a place length of 0, many
 * tenants, and concurrent producers. What must hold: places are taken per tenant, the clock never goes back and a
 * tenant's places never go down, stale tenants' entries go and the hash expires, a weight counts as a whole number 1
 * to 100, and bad input at the boundary is a typed error.
 */
import { Redis } from 'ioredis';
import fc from 'fast-check';
import { ZodError } from 'zod';
import { afterEach, describe, expect, it } from 'vitest';
import { createProducer } from '@durable-a2a/producer';
import { SendOrder } from '@durable-a2a/shared';
import { useRedisServer } from '../harness/redis.ts';
import { eventually } from '../harness/fleet.ts';

const redisServer = useRedisServer();
const open: { close(): Promise<unknown> }[] = [];
let counter = 0;

afterEach(async () => {
  for (const resource of open.splice(0).reverse()) await resource.close().catch(() => undefined);
});

const connect = (): Redis => {
  const redis = new Redis(redisServer().url);
  open.push({ close: () => redis.quit() });
  return redis;
};
const newPrefix = (name: string) => `order-attack-${name}-${++counter}`;
const keysOf = (prefix: string) => ({ clock: `${prefix}:{send-order}:clock`, weights: `${prefix}:{send-order}:weights` });
/** Redis's clock, ms. */
async function redisNow(redis: Redis): Promise<number> {
  const [seconds, micros] = await redis.time();
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}
async function places(order: SendOrder, tenant: string, count: number): Promise<number[]> {
  const seen: number[] = [];
  for (let index = 0; index < count; index++) seen.push(await order.place(tenant));
  return seen;
}

describe('tenant names', () => {
  it('tenants named `v`, `ms`, `at`, `window`, one with ":" or odd bytes, one 64 characters long: each placed apart; the clock\'s fields untouched', async () => {
    const redis = connect();
    const prefix = newPrefix('names');
    const order = new SendOrder(redis, prefix);
    const odd = ['v', 'ms', 'at', 'window', 't', 'a:b', 't:v', 'é\u0000\u{1F600}', 'x'.repeat(64)];
    await order.place('seed');
    const clock = await redis.hmget(keysOf(prefix).clock, 'v', 'ms');
    for (const tenant of odd) expect(await places(order, tenant, 3)).toEqual([0, 1, 2]);
    expect(await redis.hmget(keysOf(prefix).clock, 'v', 'ms')).toEqual(clock);
    // `v`, `ms`, `at` (the last place's time, for a rebase's quiet check), the seed and each tenant.
    expect(await redis.hlen(keysOf(prefix).clock)).toBe(4 + odd.length);
  });

  it('the producer\'s boundary refuses a tenant that is not 1 to 32 letters, digits, "_" or "-" with a ZodError; `window` is a tenant like any other', async () => {
    for (const tenant of ['a:b', '', 'x'.repeat(33), 'é', 'a b', 'a~b']) {
      expect(() => createProducer({ redis: redisServer().url, prefix: newPrefix('boundary'), tenant })).toThrow(ZodError);
    }
    const producer = createProducer({ redis: redisServer().url, prefix: newPrefix('boundary') });
    open.push(producer);
    expect(() => producer.forScope({ tenant: 'a:b', role: 'service' })).toThrow(ZodError);
    expect(producer.forScope({ tenant: 'window', role: 'service' })).toBeDefined();
  });
});

describe('the clock', () => {
  it("Redis's clock a day behind the stored one (a promoted replica's): the clock does not go back, the tenant's places do not go down, and the clock moves on from the new now", async () => {
    const redis = connect();
    const prefix = newPrefix('behind');
    const { clock } = keysOf(prefix);
    const now = await redisNow(redis);
    // The old primary's hash, its clock a day ahead: place 1,440 began there "now", a busy tenant far ahead.
    await redis.hset(clock, 'v', '1440', 'ms', String(now + 86_400_000), 't:busy', '9000:1', 't:quiet', '1440:1');
    const order = new SendOrder(redis, prefix, 200);
    expect(await order.place('busy')).toBe(9001);
    expect(await order.place('quiet')).toBe(1441);
    expect(await order.place('new')).toBe(1440);
    expect(Number(await redis.hget(clock, 'v'))).toBe(1440);
    expect(Number(await redis.hget(clock, 'ms'))).toBeLessThanOrEqual((await redisNow(redis)) + 1);
    // And it moves on at this clock's pace: two places (400 ms) later a new tenant starts at 1,442 or after.
    const from = await redisNow(redis);
    await eventually(async () => (await redisNow(redis)) >= from + 450, 'two places went by', 10_000, 20);
    expect(await order.place('later')).toBeGreaterThanOrEqual(1442);
    expect(await redis.pttl(clock)).toBeLessThanOrEqual(20_002 * 200);
  });

  it("Redis's clock a year ahead of the stored one (a clock set wrong): the clock moves on 20,002 places at most, not to the band's end for good", async () => {
    const redis = connect();
    const prefix = newPrefix('ahead');
    const { clock } = keysOf(prefix);
    await redis.hset(clock, 'v', '5', 'ms', String((await redisNow(redis)) - 365 * 86_400_000), 't:busy', '30:1');
    const order = new SendOrder(redis, prefix);
    expect(await order.place('new')).toBe(5 + 20_002);
    expect(await order.place('busy')).toBe(5 + 20_002);
    expect(Number(await redis.hget(clock, 'ms'))).toBeGreaterThan((await redisNow(redis)) - 60_000);
  });

  it('a place length that is not a whole number of ms >= 1 is a RangeError at construction (0 would never move the clock, without expiry)', () => {
    const redis = connect();
    for (const windowMs of [0, -1, Number.NaN, 1.5, Number.POSITIVE_INFINITY]) expect(() => new SendOrder(redis, newPrefix('length'), windowMs)).toThrow(RangeError);
  });

  it('many tenants, each sending once a place and never again: the hash holds at most about twice the tenants at or ahead of the clock; it expires after 20,002 places', async () => {
    const redis = connect();
    const prefix = newPrefix('many');
    const { clock } = keysOf(prefix);
    const order = new SendOrder(redis, prefix, 200);
    const sizes: number[] = [];
    const liveMissing: string[] = [];
    for (let round = 0; round < 8; round++) {
      const from = await redisNow(redis);
      const tenants = Array.from({ length: 300 }, (_, index) => `r${round}-${index}`);
      const taken = await Promise.all(tenants.map((tenant) => order.place(tenant)));
      const hash = await redis.hgetall(clock);
      sizes.push(Object.keys(hash).length);
      // A tenant at or ahead of the clock is never removed (however the round's calls spread over the clock's moves).
      const now = Number(hash.v);
      tenants.forEach((tenant, index) => {
        if (taken[index]! >= now && hash[`t:${tenant}`] === undefined) liveMissing.push(`${tenant}@${taken[index]} (clock ${now})`);
      });
      // The round's tenants are stale once the clock has moved past their place.
      await eventually(async () => (await redisNow(redis)) >= from + 450, 'the clock moved past the round', 10_000, 20);
    }
    expect(await redis.pttl(clock)).toBeLessThanOrEqual(20_002 * 200);
    // Without the removal: 8 × 300 + 2. Each start samples two fields (a simulation settles near 350).
    for (const size of sizes) expect(size, JSON.stringify(sizes)).toBeLessThanOrEqual(2 * 300 + 2);
    expect(liveMissing).toEqual([]);
  });
});

describe('weights written by hand', () => {
  it('NaN, infinite, negative, zero, fractional, text: a weight counts as a whole number 1 to 100', async () => {
    const redis = connect();
    const cases: [string, number[]][] = [
      ['nan', [0, 1, 2, 3]],
      ['-nan', [0, 1, 2, 3]],
      ['-inf', [0, 1, 2, 3]],
      ['-5', [0, 1, 2, 3]],
      ['0', [0, 1, 2, 3]],
      ['0.5', [0, 1, 2, 3]],
      ['abc', [0, 1, 2, 3]],
      ['2.5', [0, 0, 1, 1]],
      ['inf', [0, 0, 0, 0]],
    ];
    for (const [weight, expected] of cases) {
      const prefix = newPrefix('weights');
      await redis.hset(keysOf(prefix).weights, 'acme', weight);
      expect({ weight, places: await places(new SendOrder(redis, prefix), 'acme', 4) }).toEqual({ weight, places: expected });
    }
    // Infinity counts as 100: place 1 at the 101st send.
    const prefix = newPrefix('weights-inf');
    await redis.hset(keysOf(prefix).weights, 'acme', 'inf');
    expect((await places(new SendOrder(redis, prefix), 'acme', 101)).at(-1)).toBe(1);
  });
});

describe('property: whatever a hand or another clock left in the hashes', () => {
  it("any stored clock, start time (behind, now, ahead), tenant entry and weight text: the place is a whole number >= 0, never behind the stored clock, never below the tenant's stored place, and the clock never goes back", async () => {
    const redis = connect();
    const weightText = fc.constantFrom('nan', '-nan', 'inf', '-inf', '-1', '0', '0.25', '1', '3', '2.5', '100', '1e300', 'abc', '');
    const entryText = fc.oneof(fc.tuple(fc.nat({ max: 200_000 }), fc.nat({ max: 200 })).map(([place, sends]) => `${place}:${sends}`), fc.constantFrom('', '150000', 'x:y', '-1:0', '1.5:2'));
    await fc.assert(
      fc.asyncProperty(fc.nat({ max: 100_000 }), fc.integer({ min: -86_400_000, max: 86_400_000 }), entryText, weightText, async (stored, offsetMs, entry, weight) => {
        const prefix = newPrefix('hand');
        const { clock, weights } = keysOf(prefix);
        await redis.hset(clock, 'v', String(stored), 'ms', String((await redisNow(redis)) + offsetMs));
        if (entry !== '') await redis.hset(clock, 't:acme', entry);
        if (weight !== '') await redis.hset(weights, 'acme', weight);
        const place = await new SendOrder(redis, prefix).place('acme');
        expect(Number.isSafeInteger(place) && place >= 0).toBe(true);
        const now = Number(await redis.hget(clock, 'v'));
        expect(now).toBeGreaterThanOrEqual(stored);
        expect(place).toBeGreaterThanOrEqual(now);
        const kept = /^(\d+):(\d+)$/.exec(entry);
        if (kept) expect(place).toBeGreaterThanOrEqual(Number(kept[1]));
        expect(place).toBeLessThanOrEqual(Math.max(now, kept ? Number(kept[1]) : 0) + 1);
      }),
      { numRuns: 60, seed: 2_026 },
    );
  });
});

describe('property: concurrent producers', () => {
  it('sends placed at once through several connections: each tenant\'s places are floor(i / weight) for i = 0 … n-1', async () => {
    const connections = [connect(), connect(), connect()];
    // A place of a week: the clock does not move during the run in practice.
    const WEEK = 7 * 86_400_000;
    const tenant = fc.constantFrom('window', 'acme', 'a-b', 't', 'default');
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(tenant, fc.nat({ max: 2 })), { minLength: 1, maxLength: 60 }), fc.dictionary(tenant, fc.integer({ min: 1, max: 3 })), async (sends, weights) => {
        const prefix = newPrefix('concurrent');
        for (const [name, weight] of Object.entries(weights)) await connections[0]!.hset(keysOf(prefix).weights, name, String(weight));
        const orders = connections.map((redis) => new SendOrder(redis, prefix, WEEK));
        const placed = await Promise.all(sends.map(async ([name, via]) => ({ name, place: await orders[via]!.place(name) })));
        const byTenant = new Map<string, number[]>();
        for (const { name, place } of placed) byTenant.set(name, [...(byTenant.get(name) ?? []), place]);
        for (const [name, seen] of byTenant) {
          const weight = weights[name] ?? 1;
          expect(seen.sort((a, b) => a - b)).toEqual(seen.map((_, index) => Math.floor(index / weight)));
        }
      }),
      { numRuns: 40, seed: 4_242 },
    );
  });
});
