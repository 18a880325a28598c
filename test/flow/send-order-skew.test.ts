/**
 * The send queue's fairness between tenants (docs/flow-control.md "Tenants") when the processes that enqueue sends
 * disagree about the time: places are counted per tenant and window (sendOrder-2.lua), and the window is numbered by
 * Redis's clock, not by the clock of the process that enqueues. A process's clock here is the faked `Date` (only
 * `Date` is faked), set before each of its calls.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { SendOrder } from '@durable-a2a/shared';
import { useRedisClient, useRedisServer } from '../harness/redis.ts';

const redisServer = useRedisServer();
const redis = useRedisClient(redisServer);
const TEN_MINUTES_MS = 600_000;
let counter = 0;

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['Date'] });
});
afterEach(() => {
  vi.useRealTimers();
});

/** The real time (ms since epoch): `performance` is not faked. */
const realNow = () => performance.timeOrigin + performance.now();

/** A producer whose clock is `offsetMs` off the real time. */
const producerAt = (prefix: string, offsetMs: number) => ({ order: new SendOrder(redis(), prefix), offsetMs });

/** Places of `count` sends of `tenant`, enqueued in turn through each of `producers`, each on its own clock. */
async function placesThrough(producers: readonly { order: SendOrder; offsetMs: number }[], tenant: string, count: number): Promise<number[]> {
  const places: number[] = [];
  for (let index = 0; index < count; index++) {
    const producer = producers[index % producers.length]!;
    vi.setSystemTime(realNow() + producer.offsetMs);
    places.push(await producer.order.place(tenant));
  }
  return places;
}

describe('tenant fairness with skewed producer clocks', () => {
  it('a quiet tenant behind a skewed producer is not starved: its first send takes place 0 whatever the other tenants did, and its sends count once whichever producer enqueues them', async () => {
    const prefix = `skew${++counter}`;
    const onTime = producerAt(prefix, 0);
    const behind = producerAt(prefix, -TEN_MINUTES_MS);
    expect(await placesThrough([onTime], 'burst', 200)).toEqual(Array.from({ length: 200 }, (_, index) => index));
    expect(await placesThrough([behind], 'quiet', 3)).toEqual([0, 1, 2]);
    expect(await placesThrough([onTime], 'quiet', 1)).toEqual([3]);
  });

  it('a tenant enqueuing through two producers ten minutes apart is counted once: its places are 0, 1, 2, … as through one', async () => {
    const prefix = `skew${++counter}`;
    const onTime = producerAt(prefix, 0);
    const ahead = producerAt(prefix, TEN_MINUTES_MS);
    // A window boundary (Redis's clock) between two sends would restart the count (documented): none falls inside
    // 20 quick sends unless the test starts in the window's last moments.
    const places = await placesThrough([onTime, ahead], 'burst', 20);
    expect([...places].sort((left, right) => left - right)).toEqual(Array.from({ length: 20 }, (_, index) => index));
  });
});
