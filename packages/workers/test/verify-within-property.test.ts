/**
 * Property (attack37, the kind "a verifier call that holds its verify slot for ever"): `verifyWithin` bounds any
 * verifier call: one that never settles (or settles only after the bound) rejects at `verifyTimeoutMs` with the
 * verifier named and its signal aborted, so the verify job counts a failed verification (retried, then `unknown`)
 * and frees its slot; one that settles first answers as it did (its finding, or its error), its signal left alone.
 * Over: never settles / resolves / rejects × bound (ms).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { verifyWithin } from '../src/workflow/verification.ts';

describe('attack37 property: a verifier call is bounded by verifyTimeoutMs', () => {
  it('never settles / resolves / rejects × bound: the bound rejects only a call that has not settled', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('never', 'resolves', 'rejects'), fc.integer({ min: 1, max: 20 }), async (behaviour, timeoutMs) => {
        let seen: AbortSignal | undefined;
        const call = (signal: AbortSignal) => {
          seen = signal;
          if (behaviour === 'never') return new Promise<string>(() => undefined);
          return behaviour === 'resolves' ? Promise.resolve('present') : Promise.reject(new Error('the record store said 500'));
        };
        const outcome = await verifyWithin(timeoutMs, 'ledger', call).then(
          (value) => ({ value }),
          (error: Error) => ({ error: error.message }),
        );
        if (behaviour === 'never') {
          expect(outcome).toEqual({ error: `verifier ledger did not answer within ${timeoutMs} ms (verifyTimeoutMs)` });
          expect(seen?.aborted).toBe(true);
        } else {
          expect(outcome).toEqual(behaviour === 'resolves' ? { value: 'present' } : { error: 'the record store said 500' });
          expect(seen?.aborted).toBe(false);
        }
      }),
      { numRuns: 60 },
    );
  });
});
