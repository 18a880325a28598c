/**
 * `setLongTimeout` fires once, after exactly its delay, for any delay: in Node's timer range and past it (where a
 * plain `setTimeout` fires after 1 ms). Fake timers (vitest's, which overflow past 2^31 − 1 ms as Node does) move the
 * clock; a property over delays up to four times the range, and clears at any point.
 */
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { MAX_TIMER_DELAY_MS, setLongTimeout } from '../src/long-timer.ts';

beforeEach(() => void vi.useFakeTimers());
afterEach(() => void vi.useRealTimers());

describe('setLongTimeout', () => {
  it('the fake clock overflows a plain setTimeout past the range, as Node does (the reason for the helper)', () => {
    let fired = false;
    setTimeout(() => (fired = true), MAX_TIMER_DELAY_MS + 1);
    vi.advanceTimersByTime(1);
    expect(fired).toBe(true);
  });

  it('property: fires once, after exactly delayMs, for delays up to 4× the range', () => {
    fc.assert(
      fc.property(fc.oneof(fc.integer({ min: 0, max: 4 * MAX_TIMER_DELAY_MS }), fc.constantFrom(MAX_TIMER_DELAY_MS, MAX_TIMER_DELAY_MS + 1, 2 * MAX_TIMER_DELAY_MS, 0, 1)), (delayMs) => {
        let fired = 0;
        setLongTimeout(() => fired++, delayMs);
        if (delayMs > 0) {
          vi.advanceTimersByTime(delayMs - 1);
          expect(fired).toBe(0);
        }
        vi.advanceTimersByTime(1);
        expect(fired).toBe(1);
        vi.advanceTimersByTime(4 * MAX_TIMER_DELAY_MS);
        expect(fired).toBe(1);
        vi.clearAllTimers();
      }),
      { numRuns: 200 },
    );
  });

  it('property: cleared at any point before it fires, it never fires', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 3 * MAX_TIMER_DELAY_MS }), fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }), (delayMs, at) => {
        let fired = 0;
        const timer = setLongTimeout(() => fired++, delayMs);
        vi.advanceTimersByTime(Math.floor(delayMs * at));
        timer.clear();
        timer.clear();
        vi.advanceTimersByTime(4 * MAX_TIMER_DELAY_MS);
        expect(fired).toBe(0);
        vi.clearAllTimers();
      }),
      { numRuns: 200 },
    );
  });

  it('Infinity never fires; below 0 and NaN fire as soon as the timers run', () => {
    const fired: string[] = [];
    setLongTimeout(() => fired.push('infinity'), Number.POSITIVE_INFINITY);
    setLongTimeout(() => fired.push('negative'), -5);
    setLongTimeout(() => fired.push('nan'), Number.NaN);
    vi.advanceTimersByTime(1);
    expect(fired.sort()).toEqual(['nan', 'negative']);
    vi.advanceTimersByTime(10 * MAX_TIMER_DELAY_MS);
    expect(fired.sort()).toEqual(['nan', 'negative']);
    vi.clearAllTimers();
  });
});
