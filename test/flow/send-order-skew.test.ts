/**
 * The send queue's fairness between tenants (docs/flow-control.md "Tenants") when the processes that enqueue sends
 * disagree about the time: places are counted per tenant and window (sendOrder-2.lua), and the window is numbered by
 * the enqueuing process's clock.
 */
import { describe, expect, it } from 'vitest';
import { SEND_ORDER_WINDOW_MS, SendOrder } from '@durable-a2a/shared';
import { useRedisClient, useRedisServer } from '../harness/redis.ts';

const redisServer = useRedisServer();
const redis = useRedisClient(redisServer);
const TEN_MINUTES_MS = 600_000;
let counter = 0;

/** Places of `count` sends of `tenant`, enqueued in turn through each of `producers`. */
async function placesThrough(producers: readonly SendOrder[], tenant: string, count: number): Promise<number[]> {
  const places: number[] = [];
  for (let index = 0; index < count; index++) places.push(await producers[index % producers.length]!.place(tenant));
  return places;
}

describe('tenant fairness with skewed producer clocks', () => {
  it('a quiet tenant behind a skewed producer is not starved: its next send takes place 0 whatever the other tenants did', async () => {
    const prefix = `skew${++counter}`;
    const onTime = new SendOrder(redis(), prefix);
    const behind = new SendOrder(redis(), prefix, SEND_ORDER_WINDOW_MS, () => Date.now() - TEN_MINUTES_MS);
    expect(await placesThrough([onTime], 'burst', 200)).toEqual(Array.from({ length: 200 }, (_, index) => index));
    expect(await placesThrough([behind], 'quiet', 3)).toEqual([0, 1, 2]);
    expect(await placesThrough([onTime], 'quiet', 1)).toEqual([0]);
  });

  // Known defect, not fixed here: the window is numbered by each producer's own clock, so a tenant whose sends go
  // through producers whose clocks differ by a window or more (60 s) is counted in one window per clock, and gets
  // that many sends at each place: two producers ten minutes apart give it twice another tenant's share while both
  // have a backlog (not forever: each window's counts start again). Fixing it means numbering the window by Redis's
  // clock inside sendOrder-2.lua (TIME), which costs one more command per send or a key named inside the script.
  it.fails('a tenant enqueuing through two producers ten minutes apart is counted once: its places are 0, 1, 2, … as through one', async () => {
    const prefix = `skew${++counter}`;
    const onTime = new SendOrder(redis(), prefix);
    const ahead = new SendOrder(redis(), prefix, SEND_ORDER_WINDOW_MS, () => Date.now() + TEN_MINUTES_MS);
    // A window boundary between two sends would restart the count (documented): none falls inside 20 quick sends
    // unless the test starts in the window's last second; then the first place after it is 0 for both producers.
    const places = await placesThrough([onTime, ahead], 'burst', 20);
    expect([...places].sort((left, right) => left - right)).toEqual(Array.from({ length: 20 }, (_, index) => index));
  });
});
