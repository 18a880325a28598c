/**
 * Attacks on the send queue's fair order (sendOrder-2.lua) that test/flow/send-order-attacks.test.ts does not make:
 * weights the registry changes in the middle of a window, and the order a real BullMQ queue then serves two bursting
 * tenants of different weights in (the places are only half of the promise: the queue must turn them into a share).
 * What must hold: a tenant's place moves on once `its weight at that send` sends took it (a weight changed applies from
 * the tenant's current place on: its places never go down, first in, first out), the other tenant's places never move, and while both tenants have sends waiting, every prefix of the served order gives
 * each tenant its weighted share to within one place. These held; they guard the behaviour.
 */
import fc from 'fast-check';
import { Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { AgentRegistry, FairSendQueue, SendOrder } from '@durable-a2a/shared';
import { useRedisServer } from '../harness/redis.ts';
import { eventually } from '../harness/fleet.ts';

const redisServer = useRedisServer();
const open: { close(): Promise<unknown> }[] = [];
let counter = 0;
afterEach(async () => {
  for (const resource of open.splice(0).reverse()) await resource.close().catch(() => undefined);
});
const connect = (options: { maxRetriesPerRequest?: null } = {}): Redis => {
  const redis = new Redis(redisServer().url, options);
  open.push({ close: () => redis.quit() });
  return redis;
};
/** A place of the clock lasts a week: the clock does not move during a run in practice. */
const WEEK = 7 * 86_400_000;

describe('weights changed while the clock stands', () => {
  it('property: the registry sets, changes and clears weights between sends: a place takes `the weight then` sends, places never go down, the other tenant untouched', async () => {
    const redis = connect();
    const step = fc.oneof(
      fc.record({ kind: fc.constant('send' as const), tenant: fc.constantFrom('acme', 'beta') }),
      fc.record({ kind: fc.constant('weigh' as const), tenant: fc.constantFrom('acme', 'beta'), weight: fc.option(fc.integer({ min: 1, max: 100 }), { nil: undefined }) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 40 }), async (steps) => {
        const prefix = `order-weights-${++counter}`;
        const registry = new AgentRegistry(redis, { prefix });
        const order = new SendOrder(redis, prefix, WEEK);
        // The model: each tenant's current place and its sends at it (includes/sendPlaces.lua).
        const at = new Map<string, { place: number; sends: number }>();
        const weights = new Map<string, number>();
        for (const s of steps) {
          if (s.kind === 'weigh') {
            await registry.setTenantWeight(s.tenant, s.weight);
            if (s.weight === undefined) weights.delete(s.tenant);
            else weights.set(s.tenant, s.weight);
            continue;
          }
          const current = at.get(s.tenant) ?? { place: 0, sends: 0 };
          const next = current.sends >= (weights.get(s.tenant) ?? 1) ? { place: current.place + 1, sends: 0 } : current;
          expect(await order.place(s.tenant)).toBe(next.place);
          at.set(s.tenant, { place: next.place, sends: next.sends + 1 });
        }
      }),
      { numRuns: 40, seed: 9_090 },
    );
  });
});

describe('the served order of two bursting tenants', () => {
  it('property: weights w and 1, the heavier tenant enqueuing its whole burst first: while both wait, every prefix of the served order holds each tenant to its share within one place', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 4 }), fc.integer({ min: 4, max: 16 }), fc.integer({ min: 2, max: 6 }), async (weight, heavyCount, lightCount) => {
        const prefix = `order-served-${++counter}`;
        const redis = connect({ maxRetriesPerRequest: null });
        await new AgentRegistry(redis, { prefix }).setTenantWeight('heavy', weight);
        const connection = { connection: redis, prefix: `{${prefix}}` };
        const queue = new FairSendQueue('send', connection, new SendOrder(redis, prefix, WEEK));
        open.push(queue);
        // Both bursts are waiting before anything is served (paused), the heavy tenant's first.
        await queue.pause();
        for (let index = 0; index < heavyCount; index++) await queue.add('send', { kind: 'message', tenant: 'heavy', index });
        for (let index = 0; index < lightCount; index++) await queue.add('send', { kind: 'message', tenant: 'light', index });
        const served: string[] = [];
        const worker = new Worker('send', async (job) => void served.push(job.data.tenant as string), { ...connection, connection: connect({ maxRetriesPerRequest: null }), concurrency: 1 });
        open.push(worker);
        await queue.resume();
        await eventually(async () => served.length === heavyCount + lightCount, 'every send served', 30_000, 20);
        // Served by place (heavy: floor(i / weight), light: i), heavy first within a place: within each prefix
        // where both still had sends waiting, heavy has at most weight × (light + 1) and light at most heavy / weight + 1.
        let heavy = 0;
        let light = 0;
        for (const tenant of served) {
          if (tenant === 'heavy') heavy++;
          else light++;
          if (heavy === heavyCount || light === lightCount) break;
          expect(heavy, JSON.stringify(served)).toBeLessThanOrEqual(weight * (light + 1));
          expect(light, JSON.stringify(served)).toBeLessThanOrEqual(Math.floor(heavy / weight) + 1);
        }
      }),
      { numRuns: 10, seed: 1_717 },
    );
  }, 120_000);
});
