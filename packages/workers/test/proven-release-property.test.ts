/**
 * Property (release37, the kind "a proven absence read as a send that may have left"): a search that PROVED our
 * message absent and released the row for a resend (releaseForResend-1.lua with proof: `provenAbsentSends`) covers
 * every send before it; only a send it does not cover (released without proof: a deduplicating agent that cannot list
 * tasks, or made after it) may still be at the agent. So a later unbound try's unreachable give-up, the attempt
 * deadline, a permanent refusal and a missing verifier are a person (AMBIGUOUS) iff such an uncovered send may have
 * left, else FAILED (re-delegable). Before, every released send counted, proven or not: a person was asked needlessly.
 * Over: histories of tries (unmarked and marked unreachable, marks given back, sends left and released with or
 * without proof) × this try marked or not. The row's counters are written as the scripts write them; the expectation
 * comes from a model that tracks each send.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { earlierSendsMayHaveLeft, type Policy } from '../src/delegation/core/policy.ts';
import type { SearchFinding } from '../src/delegation/core/observation.ts';
import { transition } from '../src/delegation/core/transitions.ts';
import { stepRow } from './step-row.ts';

const NOW = 5_000_000;
const policy = { now: () => NOW, random: () => 0.5, unreachableBackoff: { baseMs: 100, capMs: 1_000 }, sendAttempts: 50, sendSettleMs: 31_000, notFoundThreshold: 3, notFoundWindowMs: 30_000, reconcileIntervalMs: 1_000, unacceptableAnswerLimit: 3 } as unknown as Policy;

/**
 * One earlier try: before its mark, the agent unreachable (noteUnreachable-1.lua unmarked); marked, never left
 * (noteUnreachable-1.lua marked); a mark given back (giveBackMark-1.lua); a SendMessage that left and was released
 * for a resend without proof (`left-unproven`) or on a search that proved our message absent (`left-proven`).
 */
type Try = 'card-refused' | 'send-refused' | 'given-back' | 'left-unproven' | 'left-proven';
const tryArb = fc.constantFrom<Try>('card-refused', 'send-refused', 'given-back', 'left-unproven', 'left-proven');

/** The row's counters as the scripts write them, and the model's answer: a send not covered by a proof may have left. */
function replay(tries: readonly Try[], marked: boolean) {
  let sendCount = 0;
  let resendCount = 0;
  let unreachableCount = 0;
  let unsentTries = 0;
  let provenAbsentSends = 0;
  const sends: { left: boolean; covered: boolean }[] = [];
  for (const each of tries) {
    if (each === 'card-refused') (unreachableCount += 1), (unsentTries += 1);
    if (each === 'send-refused') (sendCount += 1), (unreachableCount += 1), sends.push({ left: false, covered: false });
    if (each === 'left-unproven' || each === 'left-proven') (sendCount += 1), (resendCount += 1), sends.push({ left: true, covered: false });
    if (each === 'left-proven') {
      // releaseForResend-1.lua ARGV[5] '1': every send so far, as `earlierSendsMayHaveLeft` counts them.
      provenAbsentSends = Math.max(sendCount - (unreachableCount - unsentTries), provenAbsentSends, 0);
      for (const send of sends) send.covered = true;
    }
  }
  if (marked) sendCount += 1;
  const record = stepRow({
    sendStartedAt: marked ? 4_900_000 : undefined,
    sendCount,
    resendCount,
    unreachableCount,
    unsentTries,
    provenAbsentSends,
    unreachableSince: NOW - 100_000,
    suspectsLost: 0,
    error: { code: 'NETWORK_ERROR', message: 'ECONNREFUSED', retryable: true, delivery: 'not-sent' },
  });
  return { record, mayHaveLeft: sends.some((send) => send.left && !send.covered) };
}

const isFailed = (write: unknown) => (write as { kind?: string; state?: string } | undefined)?.kind === 'outcome' && (write as { state?: string }).state === 'FAILED';

describe('release37 property: a proven release covers every send before it', () => {
  it('tries × this try marked: give-up, deadline, permanent refusal and missing verifier are a person iff a send not covered by a proof may have left', () => {
    fc.assert(
      fc.property(fc.array(tryArb, { maxLength: 10 }), fc.boolean(), (tries, marked) => {
        const { record, mayHaveLeft } = replay(tries, marked);
        expect(earlierSendsMayHaveLeft(record) > 0).toBe(mayHaveLeft);
        expect(earlierSendsMayHaveLeft(record)).toBeGreaterThanOrEqual(0);
        const refused = { code: 'NETWORK_ERROR' as const, message: 'ECONNREFUSED', retryable: true, delivery: 'not-sent' as const };
        const steps = [
          transition(record, { kind: 'send-failed', afterMark: marked, delivery: 'none', effect: 'none', error: refused, permanent: false, lastAttempt: false, unreachable: { deadlineAt: NOW - 1 } }, policy),
          transition(record, { kind: 'send-failed', afterMark: marked, delivery: marked ? 'received' : 'none', effect: 'none', error: { code: 'INVALID_PARAMS', message: 'refused', retryable: false, delivery: marked ? 'received' : 'not-sent' }, permanent: true, lastAttempt: false }, policy),
          ...(marked ? [] : [transition(record, { kind: 'deadline-passed', deadlineAt: NOW - 1 }, policy), transition(record, { kind: 'verifier-missing', verifier: 'v1' }, policy)]),
        ];
        for (const step of steps) {
          if (mayHaveLeft) {
            expect(step.write).toBeUndefined();
            expect(step.next).toMatchObject({ kind: 'needs-person', code: 'AMBIGUOUS' });
          } else {
            expect(isFailed(step.write)).toBe(true);
          }
        }
      }),
      { numRuns: 1_000 },
    );
  });

  it('the search row releases with proof exactly when its verdict is proven: a conclusive empty search, not a deduplicating agent that cannot list tasks', () => {
    fc.assert(
      fc.property(fc.array(tryArb, { maxLength: 6 }), fc.boolean(), fc.boolean(), (tries, listable, contextRefused) => {
        const { record } = replay(tries, true);
        const finding: SearchFinding = listable ? { kind: 'not-found', inconclusive: false, contextRefused, candidates: [], paginationBroken: false } : { kind: 'unsupported' };
        const step = transition(record, { kind: 'search-result', purpose: 'reconcile', finding, deduplicates: true }, policy);
        expect(step.write).toMatchObject({ kind: 'release-for-resend', provenAbsent: listable });
        expect(step.next).toMatchObject({ kind: 'resend' });
      }),
      { numRuns: 300 },
    );
  });
});
