/**
 * Duration options a timer waits for, attacked: every one of them refuses NaN, a negative value and a value past Node's
 * timer range (2^31 − 1 ms, about 24.8 days; Node fires a longer `setTimeout` after 1 ms and a longer `setInterval`
 * every ms), naming the option, and takes every value in the range. Not only `compileFleetOptions`' own list: the
 * `startFleet` options beyond it (the close bound, the agent-label refresh interval, the health write window) and the
 * notification request timeout (an `AbortSignal.timeout`, which overflows the same way).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAX_TIMER_DELAY_MS } from '@durable-a2a/a2a';
import { startFleet, type StartFleetOptions } from '@durable-a2a/workers';
import { compileFleetOptions } from '../../packages/workers/src/options.ts';
import { useRedisServer } from '../harness/redis.ts';

const redisServer = useRedisServer();
const UNREACHABLE = 'redis://127.0.0.1:1';

/** Options of `startFleet` beyond `compileFleetOptions`' own that a timer waits for. */
const FLEET_TIMERS = ['closeTimeoutMs', 'agentLabelRefreshMs', 'agentHealthWindowMs'] as const;

/** A value outside a timer's range, or NaN. */
const outOfRange = fc.oneof(
  fc.constantFrom(Number.NaN, -1, -0.5, MAX_TIMER_DELAY_MS + 1, 2 ** 31, 2 ** 32, Number.MAX_SAFE_INTEGER, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY),
  fc.integer({ min: MAX_TIMER_DELAY_MS + 1, max: Number.MAX_SAFE_INTEGER }),
  fc.integer({ min: Number.MIN_SAFE_INTEGER, max: -1 }),
);

describe('duration options a timer waits for, past the timer range', () => {
  it('property: notify.requestTimeoutMs out of range (or NaN) is refused, naming it; in range it is taken', () => {
    fc.assert(
      fc.property(outOfRange, (value) => {
        expect(() => compileFleetOptions({ redis: UNREACHABLE, notify: { requestTimeoutMs: value } })).toThrow(/notify\.requestTimeoutMs.*timer range/);
      }),
    );
    fc.assert(
      fc.property(fc.integer({ min: 0, max: MAX_TIMER_DELAY_MS }), (value) => {
        expect(compileFleetOptions({ redis: UNREACHABLE, notify: { requestTimeoutMs: value } }).notify.requestTimeoutMs).toBe(value);
      }),
    );
  });

  it('property: startFleet refuses closeTimeoutMs, agentLabelRefreshMs and agentHealthWindowMs out of range (or NaN), naming the option, before it connects', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...FLEET_TIMERS), outOfRange, async (name, value) => {
        await expect(startFleet({ redis: UNREACHABLE, [name]: value } as StartFleetOptions)).rejects.toThrow(new RegExp(`${name}.*timer range`));
      }),
      { numRuns: 60 },
    );
  });

  it('startFleet takes all three at exactly 2^31 − 1 ms (and closes)', async () => {
    const fleet = await startFleet({ redis: redisServer().url, prefix: 'timer-options', closeTimeoutMs: MAX_TIMER_DELAY_MS, agentLabelRefreshMs: MAX_TIMER_DELAY_MS, agentHealthWindowMs: MAX_TIMER_DELAY_MS, queues: ['notify'] });
    await fleet.close();
  }, 30_000);
});
