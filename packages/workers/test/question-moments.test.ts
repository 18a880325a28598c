/**
 * The moments of a question's life (`core/policy.ts` questionMoments): the expiry, the reminders (bounded, only
 * before the expiry, the latest due one only) and the next moment to check, without Redis.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { MAX_QUESTION_REMINDERS, questionMoments } from '../src/delegation/core/policy.ts';

const ASKED = 1_800_000_000_000;

describe('questionMoments', () => {
  it('expiry only: expires at asked + expiresAfterMs; the next moment is the expiry until it passed', () => {
    expect(questionMoments(ASKED, { expiresAfterMs: 1_000 }, ASKED + 10)).toEqual({ expiresAt: ASKED + 1_000, nextAt: ASKED + 1_000 });
    expect(questionMoments(ASKED, { expiresAfterMs: 1_000 }, ASKED + 1_000)).toEqual({ expiresAt: ASKED + 1_000 });
  });

  it('reminders every remindEveryMs before the expiry, never at or after it', () => {
    const policy = { expiresAfterMs: 900, remindEveryMs: 300 };
    expect(questionMoments(ASKED, policy, ASKED + 299)).toEqual({ expiresAt: ASKED + 900, nextAt: ASKED + 300 });
    expect(questionMoments(ASKED, policy, ASKED + 300)).toEqual({ expiresAt: ASKED + 900, dueReminder: 1, nextAt: ASKED + 600 });
    expect(questionMoments(ASKED, policy, ASKED + 650)).toEqual({ expiresAt: ASKED + 900, dueReminder: 2, nextAt: ASKED + 900 });
    expect(questionMoments(ASKED, policy, ASKED + 5_000)).toEqual({ expiresAt: ASKED + 900, dueReminder: 2 });
  });

  it('property: the due reminder is bounded, before the expiry, and the next moment is after now', () => {
    fc.assert(
      fc.property(fc.option(fc.integer({ min: 1, max: 10_000_000 }), { nil: undefined }), fc.option(fc.integer({ min: 1, max: 1_000_000 }), { nil: undefined }), fc.integer({ min: -1_000, max: 100_000_000 }), (expiresAfterMs, remindEveryMs, elapsed) => {
        const policy = { ...(expiresAfterMs !== undefined ? { expiresAfterMs } : {}), ...(remindEveryMs !== undefined ? { remindEveryMs } : {}) };
        const now = ASKED + elapsed;
        const moments = questionMoments(ASKED, policy, now);
        if (moments.dueReminder !== undefined) {
          expect(remindEveryMs).toBeDefined();
          expect(moments.dueReminder).toBeGreaterThanOrEqual(1);
          expect(moments.dueReminder).toBeLessThanOrEqual(MAX_QUESTION_REMINDERS);
          expect(ASKED + moments.dueReminder * remindEveryMs!).toBeLessThanOrEqual(now);
          if (moments.expiresAt !== undefined) expect(ASKED + moments.dueReminder * remindEveryMs!).toBeLessThan(moments.expiresAt);
        }
        if (moments.nextAt !== undefined) expect(moments.nextAt).toBeGreaterThan(now);
        if (moments.expiresAt !== undefined && moments.expiresAt > now) expect(moments.nextAt).toBeLessThanOrEqual(moments.expiresAt);
      }),
      { numRuns: 1_000 },
    );
  });
});
