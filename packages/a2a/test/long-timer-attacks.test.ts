/**
 * `setLongTimeout` and the idle watchdog that uses it (`ChunkReader` past Node's timer range), attacked with the
 * delays at and around the range (2^31 − 1 ms), the largest safe integer, fractions, a clear at the exact moment a
 * hop re-arms, a clear in its own callback, and the `unref` of every hop. vitest's fake timers overflow past the range
 * as Node does, so a missing hop shows as a fire after 1 ms. These held; they guard the behaviour.
 */
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { StreamIdleError } from '../src/errors.ts';
import { MAX_TIMER_DELAY_MS, setLongTimeout } from '../src/long-timer.ts';
import { ChunkReader } from '../src/sse.ts';

beforeEach(() => void vi.useFakeTimers());
afterEach(() => {
  vi.clearAllTimers();
  vi.useRealTimers();
  vi.restoreAllMocks();
});

describe('setLongTimeout under attack', () => {
  it('fires once at exactly 2^31 − 1, 2^31 and 2 × (2^31 − 1) ms, never a millisecond early', () => {
    for (const delayMs of [MAX_TIMER_DELAY_MS - 1, MAX_TIMER_DELAY_MS, MAX_TIMER_DELAY_MS + 1, 2 * MAX_TIMER_DELAY_MS, 2 * MAX_TIMER_DELAY_MS + 1]) {
      let fired = 0;
      setLongTimeout(() => fired++, delayMs);
      vi.advanceTimersByTime(delayMs - 1);
      expect(fired, String(delayMs)).toBe(0);
      vi.advanceTimersByTime(1);
      expect(fired, String(delayMs)).toBe(1);
      vi.advanceTimersByTime(3 * MAX_TIMER_DELAY_MS);
      expect(fired, String(delayMs)).toBe(1);
      expect(vi.getTimerCount(), String(delayMs)).toBe(0);
    }
  });

  it('Number.MAX_SAFE_INTEGER: still waiting after a thousand hops, one timer at a time', () => {
    let fired = 0;
    const timer = setLongTimeout(() => fired++, Number.MAX_SAFE_INTEGER);
    for (let hop = 0; hop < 1_000; hop++) {
      vi.advanceTimersByTime(MAX_TIMER_DELAY_MS);
      expect(vi.getTimerCount()).toBe(1);
    }
    expect(fired).toBe(0);
    timer.clear();
    expect(vi.getTimerCount()).toBe(0);
  });

  it('property: cleared exactly when a hop re-arms (at k × (2^31 − 1) ms), or twice, or after it fired: it never fires (again) and leaves no timer', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 4 }), fc.integer({ min: 0, max: 3 }), fc.constantFrom('once', 'twice'), (hops, clearAfterHops, clears) => {
        let fired = 0;
        const delayMs = hops * MAX_TIMER_DELAY_MS + 5;
        const timer = setLongTimeout(() => fired++, delayMs);
        vi.advanceTimersByTime(Math.min(clearAfterHops, hops) * MAX_TIMER_DELAY_MS);
        timer.clear();
        if (clears === 'twice') timer.clear();
        vi.advanceTimersByTime(5 * MAX_TIMER_DELAY_MS);
        expect(fired).toBe(0);
        expect(vi.getTimerCount()).toBe(0);
        timer.clear();
      }),
      { numRuns: 100 },
    );
  });

  it('a clear from inside its own callback, and fractional delays (past the range too): once, no error', () => {
    const fired: number[] = [];
    const timer = setLongTimeout(() => {
      fired.push(1);
      timer.clear();
    }, MAX_TIMER_DELAY_MS + 0.5);
    setLongTimeout(() => fired.push(2), 0.25);
    vi.advanceTimersByTime(1);
    expect(fired).toEqual([2]);
    vi.advanceTimersByTime(MAX_TIMER_DELAY_MS + 1);
    expect(fired).toEqual([2, 1]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('property: with unref, every hop is unref (the first and each re-armed one); without it, every hop keeps the process alive', () => {
    const made: NodeJS.Timeout[] = [];
    const real = globalThis.setTimeout;
    vi.spyOn(globalThis, 'setTimeout').mockImplementation(((callback: () => void, ms?: number) => {
      const timer = (real as unknown as (callback: () => void, ms?: number) => NodeJS.Timeout)(callback, ms);
      made.push(timer);
      return timer;
    }) as typeof setTimeout);
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 3 }), fc.boolean(), (hops, unref) => {
        made.length = 0;
        const timer = setLongTimeout(() => undefined, hops * MAX_TIMER_DELAY_MS + 7, { unref });
        vi.advanceTimersByTime(hops * MAX_TIMER_DELAY_MS);
        expect(made.length).toBe(hops + 1);
        for (const hop of made) expect(hop.hasRef()).toBe(!unref);
        timer.clear();
      }),
      { numRuns: 40 },
    );
  });
});

describe('ChunkReader past the timer range (one long watchdog per read)', () => {
  /** An async iterator whose `next` waits until the test pushes a chunk. */
  function controlledChunks() {
    const waiting: { resolve(result: IteratorResult<string>): void }[] = [];
    return { iterator: { next: () => new Promise<IteratorResult<string>>((resolve) => waiting.push({ resolve })) } as AsyncIterator<string>, push: (value: string) => waiting.shift()!.resolve({ value, done: false }) };
  }

  it('property: a read waits its whole idle timeout past the range, then fails; a chunk in time resets it; an abort stops it; nothing is left after close', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: MAX_TIMER_DELAY_MS + 1, max: 3 * MAX_TIMER_DELAY_MS }), fc.double({ min: 0, max: 0.99, noNaN: true }), async (idleMs, at) => {
        const source = controlledChunks();
        const controller = new AbortController();
        const reader = new ChunkReader(source.iterator, idleMs, controller.signal, 'agent');
        // A chunk before the watchdog: the read resolves; the next read has the whole timeout again.
        const first = reader.next();
        vi.advanceTimersByTime(Math.floor(idleMs * at));
        source.push('a');
        expect(await first).toEqual({ value: 'a', done: false });
        const second = reader.next();
        const failure = second.catch((error: unknown) => error);
        vi.advanceTimersByTime(idleMs - 1);
        await Promise.resolve();
        let settled = false;
        void failure.then(() => (settled = true));
        await Promise.resolve();
        expect(settled).toBe(false);
        vi.advanceTimersByTime(1);
        expect(await failure).toBeInstanceOf(StreamIdleError);
        // A third read, aborted: its long watchdog goes with it.
        const third = reader.next().catch((error: unknown) => error);
        controller.abort(new Error('stop'));
        expect(((await third) as Error).message).toBe('stop');
        vi.advanceTimersByTime(4 * MAX_TIMER_DELAY_MS);
        reader.close();
        expect(vi.getTimerCount()).toBe(0);
      }),
      { numRuns: 30 },
    );
  });
});
