/**
 * `NextJobGuess` (`next-job-guess.ts`): a finish asks BullMQ for the next job while asking finds one, and only every
 * `probeEvery`-th finish after one that found none.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { NextJobGuess } from '../src/next-job-guess.ts';

/** Plays `found` (what each asking finish would get) through a guess; returns whether each finish asked. */
function play(guess: NextJobGuess, found: readonly boolean[]): boolean[] {
  return found.map((got) => {
    const asked = guess.ask();
    if (asked) guess.record(got);
    return asked;
  });
}

describe('NextJobGuess', () => {
  it('asks on every finish while each finds a job, and at first', () => {
    expect(play(new NextJobGuess(), Array.from({ length: 20 }, () => true))).toEqual(Array.from({ length: 20 }, () => true));
  });

  it('after a finish that found none, asks again on the probeEvery-th finish only', () => {
    expect(play(new NextJobGuess(4), Array.from({ length: 10 }, () => false))).toEqual([true, false, false, false, true, false, false, false, true, false]);
  });

  it('refuses a probe interval that is not a whole number >= 1', () => {
    for (const bad of [0, -1, 1.5, Number.NaN]) expect(() => new NextJobGuess(bad)).toThrow(RangeError);
    expect(play(new NextJobGuess(1), [false, false, false])).toEqual([true, true, true]);
  });

  it('property: asks right after a found job; while none is found, at most one finish in probeEvery asks', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 16 }), fc.array(fc.boolean(), { maxLength: 200 }), (probeEvery, found) => {
        const asked = play(new NextJobGuess(probeEvery), found);
        let lastAskFound = true;
        let sinceAsk = 0;
        for (const [index, didAsk] of asked.entries()) {
          // Right after an ask that found a job (or at the start), the next finish asks.
          if (lastAskFound) expect(didAsk).toBe(true);
          // After one that found none, the next ask comes exactly probeEvery finishes later.
          else expect(didAsk).toBe(sinceAsk + 1 === probeEvery);
          if (didAsk) {
            lastAskFound = found[index]!;
            sinceAsk = 0;
          } else sinceAsk += 1;
        }
      }),
    );
  });
});
