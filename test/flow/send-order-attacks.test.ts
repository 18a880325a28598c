/**
 * Attacks on the send queue's fair order (sendOrder-2.lua, docs/flow-control.md "Tenants"): the current window's
 * counts are one hash (`window` field + `t:<tenant>` fields) numbered by Redis's clock. Tenant names that look like
 * the hash's own field or carry odd bytes, a promoted replica whose clock is behind the old primary's (simulated by
 * writing a window ahead of this server's clock into the hash, with the long expiry such a hash would then have),
 * weights written by hand (NaN, infinite, negative, fractional), a window length of 0, many tenants, and concurrent
 * producers. What must hold: places are counted per tenant, the counts never outlive two windows of the clock that
 * serves them, a weight counts as a whole number 1 to 100, and bad input at the boundary is a typed error.
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
const keysOf = (prefix: string) => ({ counts: `${prefix}:{send-order}:counts`, weights: `${prefix}:{send-order}:weights` });
/** The window number Redis's clock gives now for windows of `windowMs`. */
async function windowNow(redis: Redis, windowMs: number): Promise<number> {
  const [seconds, micros] = await redis.time();
  return Math.floor((Number(seconds) * 1000 + Math.floor(Number(micros) / 1000)) / windowMs);
}
async function places(order: SendOrder, tenant: string, count: number): Promise<number[]> {
  const seen: number[] = [];
  for (let index = 0; index < count; index++) seen.push(await order.place(tenant));
  return seen;
}

describe('tenant names', () => {
  it('a tenant named `window`, one with ":" or odd bytes, one 64 characters long: each counted apart; the window field untouched', async () => {
    const redis = connect();
    const prefix = newPrefix('names');
    const order = new SendOrder(redis, prefix);
    const odd = ['window', 't', 'a:b', 't:window', 'é\u0000\u{1F600}', 'x'.repeat(64)];
    await order.place('seed');
    const window = await redis.hget(keysOf(prefix).counts, 'window');
    for (const tenant of odd) expect(await places(order, tenant, 3)).toEqual([0, 1, 2]);
    expect(await redis.hget(keysOf(prefix).counts, 'window')).toBe(window);
    expect(await redis.hlen(keysOf(prefix).counts)).toBe(2 + odd.length);
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
  it('a promoted replica whose clock is behind: a stored window far ahead is emptied, not counted into for the skew\'s length', async () => {
    const redis = connect();
    const prefix = newPrefix('behind');
    const { counts } = keysOf(prefix);
    const now = await windowNow(redis, 60_000);
    // The old primary's hash, its clock a day ahead: window +1440, a busy tenant, and the expiry a day away on this clock.
    await redis.hset(counts, 'window', String(now + 1_440), 't:busy', '150000', 't:quiet', '3');
    await redis.pexpire(counts, 86_400_000 + 120_000);
    const order = new SendOrder(redis, prefix);
    expect(await order.place('busy')).toBe(0);
    expect(await order.place('quiet')).toBe(0);
    expect(Number(await redis.hget(counts, 'window'))).toBeLessThanOrEqual(now + 1);
    expect(await redis.pttl(counts)).toBeLessThanOrEqual(120_000);
  });

  it('a clock stepped back less than a window: its sends count into the stored window (no reset)', async () => {
    const redis = connect();
    const prefix = newPrefix('step-back');
    const { counts } = keysOf(prefix);
    const now = await windowNow(redis, 60_000);
    await redis.hset(counts, 'window', String(now + 1), 't:busy', '7');
    await redis.pexpire(counts, 120_000);
    expect(await new SendOrder(redis, prefix).place('busy')).toBe(7);
  });

  it('a window length that is not a whole number of ms >= 1 is a RangeError at construction (0 counted for ever, without expiry)', () => {
    const redis = connect();
    for (const windowMs of [0, -1, Number.NaN, 1.5, Number.POSITIVE_INFINITY]) expect(() => new SendOrder(redis, newPrefix('length'), windowMs)).toThrow(RangeError);
  });

  it('many tenants: a newer window empties the hash, and it never lives past two windows', async () => {
    const redis = connect();
    const prefix = newPrefix('many');
    const { counts } = keysOf(prefix);
    const order = new SendOrder(redis, prefix, 200);
    await Promise.all(Array.from({ length: 2_000 }, (_, index) => order.place(`tenant-${index}`)));
    const first = await redis.hget(counts, 'window');
    expect(await redis.pttl(counts)).toBeLessThanOrEqual(400);
    await eventually(async () => (await order.place('probe'), (await redis.hget(counts, 'window')) !== first), 'a newer window', 10_000, 50);
    expect(await redis.hlen(counts)).toBeLessThanOrEqual(2);
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
  it('any stored window (behind, equal, ahead), counts, expiry and weight text: the place is a whole number >= 0, the counts live at most two windows unless the stored window is at most one ahead', async () => {
    const redis = connect();
    const weightText = fc.constantFrom('nan', '-nan', 'inf', '-inf', '-1', '0', '0.25', '1', '3', '2.5', '100', '1e300', 'abc', '');
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: -3, max: 100_000 }), fc.nat({ max: 1_000_000 }), fc.integer({ min: 1_000, max: 86_400_000 * 30 }), weightText, async (offset, stored, expiryMs, weight) => {
        const prefix = newPrefix('hand');
        const { counts, weights } = keysOf(prefix);
        const now = await windowNow(redis, 60_000);
        await redis.hset(counts, 'window', String(now + offset), 't:acme', String(stored));
        await redis.pexpire(counts, expiryMs);
        if (weight !== '') await redis.hset(weights, 'acme', weight);
        const place = await new SendOrder(redis, prefix).place('acme');
        expect(Number.isSafeInteger(place) && place >= 0).toBe(true);
        // Counted into the stored window only when it is this clock's window, or one ahead of it (a step back).
        const keptStored = offset === 0 || offset === 1;
        const ttl = await redis.pttl(counts);
        if (keptStored) expect(place).toBeLessThanOrEqual(stored);
        else expect({ offset, place, expiresWithinTwoWindows: ttl > 0 && ttl <= 120_000 }).toEqual({ offset, place: 0, expiresWithinTwoWindows: true });
      }),
      { numRuns: 60, seed: 2_026 },
    );
  });
});

describe('property: concurrent producers', () => {
  it('sends placed at once through several connections: each tenant\'s places are floor(i / weight) for i = 0 … n-1', async () => {
    const connections = [connect(), connect(), connect()];
    // A window of a week: the run never crosses a window's end in practice (a crossing would restart a count).
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
