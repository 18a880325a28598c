/**
 * Property (attack37, the kind "nothing of ours left read from the mark alone"): a row with no task bound whose
 * evidence says the agent may hold our message though no mark is on it (`unboundEvidence`: an earlier SendMessage
 * that may have left and was released for a resend, suspects, a refused result) is never closed as "nothing was
 * sent": a workflow cancel (`cancel-before-task`) is a person (AMBIGUOUS), never CANCELED before it was sent (its
 * compensation skipped); the deadline is a person, never FAILED; the verify run never finds `absent` without its
 * verifier (`provenUnsent` false). A marked row asks the reconciler. Without any of it, CANCELED / FAILED as before.
 * Over: released sends × unreachable tries (marked or not) × marked × suspects lost × refused result.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { earlierSendsMayHaveLeft, provenUnsent, unboundEvidence, type Policy } from '../src/delegation/core/policy.ts';
import { transition } from '../src/delegation/core/transitions.ts';
import { stepRow } from './step-row.ts';

const NOW = 5_000_000;
const policy = { now: () => NOW, random: () => 0.5, unreachableBackoff: { baseMs: 100, capMs: 1_000 }, sendAttempts: 5, sendSettleMs: 31_000, notFoundThreshold: 3, notFoundWindowMs: 30_000, reconcileIntervalMs: 1_000, unacceptableAnswerLimit: 3 } as unknown as Policy;

const outcomeOf = (step: ReturnType<typeof transition>) => {
  const write = step.write as { kind?: string; state?: string } | undefined;
  return write?.kind === 'outcome' ? write.state : undefined;
};

describe('attack37 property: an unbound row that may hold our message is never closed as never sent', () => {
  it('released × unreachable (marked or not) × marked × suspects lost × refused result: CANCELED / FAILED only on proof nothing left', () => {
    fc.assert(
      fc.property(fc.nat(2), fc.nat(2), fc.nat(2), fc.boolean(), fc.nat(1), fc.boolean(), (released, unsentTries, markedUnreachable, marked, suspectsLost, refused) => {
        // Each mark counted once: the released ones, the marked tries journaled unreachable, the current one.
        const record = stepRow({
          sendStartedAt: marked ? 4_900_000 : undefined,
          sendCount: released + markedUnreachable + (marked ? 1 : 0),
          resendCount: released,
          unreachableCount: unsentTries + markedUnreachable,
          unsentTries,
          suspectsLost,
          ...(refused ? { refusedResult: { code: 'LIMIT_EXCEEDED', message: 'the SendMessage answer is over responseBytes', delivery: 'received' } } : {}),
        });
        const evidence = released > 0 || suspectsLost > 0 || refused;
        expect(earlierSendsMayHaveLeft(record)).toBe(released);
        expect(unboundEvidence(record)).toBe(evidence);
        expect(provenUnsent(record)).toBe(!evidence && !marked);
        const cancel = transition(record, { kind: 'cancel-before-task', mayHaveSent: marked }, policy);
        const deadline = transition(record, { kind: 'deadline-passed', deadlineAt: NOW - 1 }, policy);
        if (marked) expect(cancel.next.kind).toBe('ask-reconciler');
        else if (evidence) {
          expect(cancel.write).toBeUndefined();
          expect(cancel.next).toMatchObject({ kind: 'needs-person', code: 'AMBIGUOUS', delivery: 'maybe' });
        } else expect(outcomeOf(cancel)).toBe('CANCELED');
        if (evidence) expect(deadline.next).toMatchObject({ kind: 'needs-person', code: 'AMBIGUOUS' });
        if (evidence || marked) expect(outcomeOf(deadline)).toBeUndefined();
        // The cancel observation's own flag may lag the row (an older worker's job): the row decides.
        expect(transition(record, { kind: 'cancel-before-task', mayHaveSent: false }, policy).next.kind).toBe(cancel.next.kind);
      }),
      { numRuns: 400 },
    );
  });
});
