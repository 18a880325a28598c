/**
 * Property (attack36, the kind "the attempt deadline over a SendMessage that may have left"): a marked INTENT row
 * (`sendStartedAt`: a SendMessage may have left under that mark) with no task bound is never ended FAILED (re-delegable)
 * by the attempt deadline, whatever error an earlier try left on the row (markSending-2.lua keeps it: a `not-sent`
 * there may be the try before this mark): the deadline is not enforced on it (`mayHaveReachedAgent`, so the reconciler's
 * search decides), and the `deadline-passed` row itself writes nothing and asks the reconciler. An unmarked row
 * without evidence is FAILED as before, only over the row as read (`unsent: 'as-read'`). Before, a marked row whose
 * error said `not-sent` was FAILED DEADLINE_EXCEEDED and the step went to a second agent.
 * Over: marked or not × the row's error (none, or any code with delivery not-sent / maybe / received) × unreachable
 * tries × resends × the deadline's distance.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { RecordedError } from '@durable-a2a/shared';
import { earlierSendsMayHaveLeft, mayHaveReachedAgent, type Policy } from '../src/delegation/core/policy.ts';
import { transition } from '../src/delegation/core/transitions.ts';
import { stepRow } from './step-row.ts';

const NOW = 5_000_000;
const policy = { now: () => NOW, random: () => 0.5, unreachableBackoff: { baseMs: 100, capMs: 1_000 }, sendAttempts: 3, sendSettleMs: 31_000, notFoundThreshold: 3, notFoundWindowMs: 30_000, reconcileIntervalMs: 1_000, unacceptableAnswerLimit: 3 } as unknown as Policy;

const errorArb: fc.Arbitrary<RecordedError | undefined> = fc.option(
  fc.record({
    code: fc.constantFrom('AGENT_UNREACHABLE', 'NETWORK_ERROR', 'INTERNAL_ERROR'),
    message: fc.constantFrom('ECONNREFUSED', 'UND_ERR_SOCKET', 'timed out'),
    retryable: fc.boolean(),
    delivery: fc.constantFrom('not-sent', 'maybe', 'received') as fc.Arbitrary<'not-sent' | 'maybe' | 'received'>,
  }),
  { nil: undefined },
);

describe('attack36 property: the attempt deadline never FAILs a marked row', () => {
  it('marked × error × tries × resends × deadline: a marked unbound row is never FAILED at its deadline; an unmarked one without evidence FAILED only as read', () => {
    fc.assert(
      fc.property(fc.boolean(), errorArb, fc.nat(4), fc.nat(2), fc.integer({ min: 1, max: 10 * 86_400_000 }), (marked, error, tries, resends, pastBy) => {
        const record = stepRow({ sendStartedAt: marked ? 4_900_000 : undefined, ...(error ? { error } : {}), unreachableCount: tries, resendCount: resends, suspectsLost: 0 });
        expect(mayHaveReachedAgent(record)).toBe(marked);
        const step = transition(record, { kind: 'deadline-passed', deadlineAt: NOW - pastBy }, policy);
        if (marked) {
          expect(step.write).toBeUndefined();
          expect(step.next).toEqual({ kind: 'ask-reconciler' });
          return;
        }
        expect(step.write).toMatchObject({ kind: 'outcome', state: 'FAILED', guard: 'version', unsent: 'as-read' });
      }),
      { numRuns: 500 },
    );
  });

  /**
   * One earlier try of the attempt, as the journal counts it: a try before its mark that could not reach the agent
   * (noteUnreachable-1.lua unmarked: unreachableCount and unsentTries), a marked try whose SendMessage never left (its
   * mark cleared: unreachableCount; the mark counted in sendCount), a mark given back (giveBackMark-1.lua: counted,
   * then uncounted), a SendMessage that left and was released for a resend (releaseForResend-1.lua: sendCount, resendCount).
   */
  type Try = 'card-refused' | 'send-refused' | 'given-back' | 'left-released';
  const rowAfter = (tries: readonly Try[], marked: boolean) => {
    const count = (kind: Try) => tries.filter((each) => each === kind).length;
    const unmarkedTries = count('card-refused');
    const markedTries = count('send-refused');
    return stepRow({
      sendStartedAt: marked ? 4_900_000 : undefined,
      sendCount: markedTries + count('left-released') + (marked ? 1 : 0),
      resendCount: count('left-released'),
      unreachableCount: unmarkedTries + markedTries,
      unsentTries: unmarkedTries,
      unreachableSince: NOW - 100_000,
      suspectsLost: 0,
      error: { code: 'NETWORK_ERROR', message: 'ECONNREFUSED', retryable: true, delivery: 'not-sent' },
    });
  };

  it('tries × this try marked or not: after a send that left and was released (no proof of absence), neither the deadline nor the unreachable give-up is FAILED; without one, FAILED as before', () => {
    const tryArb = fc.constantFrom<Try>('card-refused', 'send-refused', 'given-back', 'left-released');
    fc.assert(
      fc.property(fc.array(tryArb, { maxLength: 8 }), fc.boolean(), (tries, marked) => {
        const left = tries.includes('left-released');
        const record = rowAfter(tries, marked);
        expect(earlierSendsMayHaveLeft(record) > 0).toBe(left);
        const refused = { code: 'NETWORK_ERROR' as const, message: 'ECONNREFUSED', retryable: true, delivery: 'not-sent' as const };
        const giveUp = transition(record, { kind: 'send-failed', afterMark: marked, delivery: 'none', effect: 'none', error: refused, permanent: false, lastAttempt: false, unreachable: { deadlineAt: NOW - 1 } }, policy);
        if (left) {
          expect(giveUp.write).toBeUndefined();
          expect(giveUp.next).toMatchObject({ kind: 'needs-person', code: 'AMBIGUOUS' });
        } else {
          expect(giveUp.write).toMatchObject({ kind: 'outcome', state: 'FAILED', unsent: marked ? 'marked' : 'unmarked' });
        }
        if (marked) return;
        const deadline = transition(record, { kind: 'deadline-passed', deadlineAt: NOW - 1 }, policy);
        if (left) {
          expect(deadline.write).toBeUndefined();
          expect(deadline.next).toMatchObject({ kind: 'needs-person', code: 'AMBIGUOUS' });
        } else {
          expect(deadline.write).toMatchObject({ kind: 'outcome', state: 'FAILED', unsent: 'as-read' });
        }
      }),
      { numRuns: 500 },
    );
  });
});
