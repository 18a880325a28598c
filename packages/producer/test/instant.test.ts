import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { instantOf } from '../src/instant.ts';

/** What a view showed before: the Date's own text, or its RangeError. */
const expected = (ms: number): string => {
  try {
    return new Date(ms).toISOString();
  } catch (error) {
    return `throws ${(error as Error).name}`;
  }
};
const actual = (ms: number): string => {
  try {
    return instantOf(ms);
  } catch (error) {
    return `throws ${(error as Error).name}`;
  }
};

describe('instantOf (an instant as a view shows it)', () => {
  it('gives the text of toISOString for any number, in any order (the day kept from the call before)', () => {
    const nearDay = fc.tuple(fc.integer({ min: -3, max: 3 }), fc.integer({ min: -86_400_000, max: 86_400_000 })).map(([days, offset]) => 1_796_000_000_000 + days * 86_400_000 + offset);
    const edges = fc.constantFrom(0, -0, -1, 1, 86_399_999, 86_400_000, -86_400_000, -86_400_001, 8.64e15, -8.64e15, 8.64e15 + 1, -8.64e15 - 1, 253_402_300_799_999, 253_402_300_800_000, -62_198_755_200_000);
    const any = fc.oneof(nearDay, edges, fc.integer({ min: -8.64e15 - 86_400_000 * 2, max: 8.64e15 + 86_400_000 * 2 }), fc.double(), fc.constantFrom(Number.NaN, Infinity, -Infinity, 0.5, -0.5, 1e300));
    fc.assert(
      fc.property(fc.array(any, { minLength: 1, maxLength: 20 }), (instants) => {
        for (const ms of instants) expect(actual(ms)).toBe(expected(ms));
      }),
      { numRuns: 2_000 },
    );
  });

  it('does not keep a day past the Date range from the last valid instant of that day', () => {
    expect(instantOf(8.64e15)).toBe('+275760-09-13T00:00:00.000Z');
    expect(() => instantOf(8.64e15 + 1)).toThrow(RangeError);
    expect(instantOf(-8.64e15)).toBe(new Date(-8.64e15).toISOString());
  });
});
