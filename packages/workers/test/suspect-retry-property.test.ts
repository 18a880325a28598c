/**
 * The schedule of suspect reads after rounds that could not read some (policy.ts `suspectRetryAt`): every asker's job
 * is the one the round's ender asked for, never an earlier read. The ender (`afterSuspectReads` from the round's
 * time), a renewal tick or a follow run starting at any later moment (`suspectReadDueAt`) name the same job
 * (`suspectReadJob`'s id) while the backoff runs, and a later one is due no sooner than the backoff's end; the next
 * round's job is another one (a job asked for by an older round never reads: suspect-reads.ts compares ids).
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { DEFAULT_JOB_OPTIONS, suspectReadJob } from '@durable-a2a/shared';
import { afterSuspectReads, suspectReadDueAt, suspectRetryAt } from '../src/delegation/core/policy.ts';

const ref = { workflowId: 'wf', delegationId: 'main.1' };
const { attempts, backoff } = DEFAULT_JOB_OPTIONS.reconcile;

describe('suspect reads keep the backoff whoever asks', () => {
  it('property: the ender and any tick during the backoff name one job, due no sooner than the backoff; the next round names another', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: attempts - 1 }),
        fc.integer({ min: 1_700_000_000_000, max: 1_800_000_000_000 }),
        fc.integer({ min: 0, max: 10_000 }),
        fc.integer({ min: 0, max: 5_000 }),
        (rounds, roundAt, tickAfter, nextRoundLate) => {
          const row = { suspectReadRounds: rounds, suspectReadRoundAt: roundAt };
          const retryAt = suspectRetryAt(row, backoff.delay)!;
          expect(retryAt).toBe(roundAt + backoff.delay * 2 ** (rounds - 1));
          const ender = afterSuspectReads({ pending: 1, lost: 0, rounds }, roundAt, backoff.delay);
          expect(ender).toEqual({ kind: 'read-again', at: retryAt });
          const tickAt = roundAt + tickAfter;
          const due = suspectReadDueAt(row, tickAt, backoff.delay);
          expect(due).toBeGreaterThanOrEqual(retryAt);
          if (tickAt <= retryAt) expect(suspectReadJob(ref, due).id).toBe(suspectReadJob(ref, retryAt).id);
          expect(suspectReadJob(ref, due).dueAt).toBeGreaterThanOrEqual(retryAt);
          // The scheduled job read and failed again (no sooner than its due time): the next round's job is another.
          const next = { suspectReadRounds: rounds + 1, suspectReadRoundAt: suspectReadJob(ref, retryAt).dueAt + nextRoundLate };
          expect(suspectReadJob(ref, suspectRetryAt(next, backoff.delay)!).id).not.toBe(suspectReadJob(ref, retryAt).id);
        },
      ),
      { examples: [[1, 1_700_000_000_999, 0, 0], [1, 1_700_000_000_000, 1_000, 0], [2, 1_700_000_000_500, 2_600, 0], [1, 1_700_000_000_001, 10_000, 5_000]] },
    );
  });

  it('case: no failed round counted: read at once (no retry time), the tick due now', () => {
    expect(suspectRetryAt({ suspectReadRounds: 0, suspectReadRoundAt: 5 }, backoff.delay)).toBeUndefined();
    expect(suspectRetryAt({ suspectReadRounds: 2 }, backoff.delay)).toBeUndefined();
    expect(suspectReadDueAt({ suspectReadRounds: 0 }, 42, backoff.delay)).toBe(42);
  });
});
