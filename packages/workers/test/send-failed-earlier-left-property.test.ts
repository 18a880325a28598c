/**
 * Property (review36, the kind "a refused resend read as the attempt's end"): after a SendMessage of ours left and the
 * row was released for a resend without proof of absence (`earlierSendsMayHaveLeft` > 0: a deduplicating agent that
 * cannot list tasks, attack36), a later try that fails (a refusal proving THIS try created nothing, an error before its
 * mark, or the job's last attempt) is never FAILED: the agent may hold our earlier message and be doing the step, and
 * FAILED would let the step go to another agent. A person decides (AMBIGUOUS, delivery maybe). Without such an earlier
 * send, FAILED as before. Before, `send-failed` with `permanent` or `lastAttempt` was FAILED on the fence alone.
 * The same for a resend refused before it left because this worker lacks the step's verifier (`verifier-missing`: a
 * worker of another release). Over: earlier sends left and released × this try marked or not × permanent × last attempt.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { earlierSendsMayHaveLeft, type Policy } from '../src/delegation/core/policy.ts';
import { transition } from '../src/delegation/core/transitions.ts';
import { stepRow } from './step-row.ts';

const NOW = 5_000_000;
const policy = { now: () => NOW, random: () => 0.5, unreachableBackoff: { baseMs: 100, capMs: 1_000 }, sendAttempts: 5, sendSettleMs: 31_000, notFoundThreshold: 3, notFoundWindowMs: 30_000, reconcileIntervalMs: 1_000, unacceptableAnswerLimit: 3 } as unknown as Policy;

describe('review36 property: a failed try after an unproven release is never FAILED', () => {
  it('released sends × marked × permanent × last attempt: FAILED only when no earlier send may have left', () => {
    fc.assert(
      fc.property(fc.nat(2), fc.boolean(), fc.boolean(), fc.boolean(), (released, marked, permanent, lastAttempt) => {
        fc.pre(permanent || lastAttempt);
        const record = stepRow({ sendStartedAt: marked ? 4_900_000 : undefined, sendCount: released + (marked ? 1 : 0), resendCount: released, unreachableCount: 0, unsentTries: 0, suspectsLost: 0 });
        expect(earlierSendsMayHaveLeft(record) > 0).toBe(released > 0);
        const error = { code: 'INVALID_PARAMS' as const, message: 'refused', retryable: !permanent, delivery: marked ? ('received' as const) : ('not-sent' as const) };
        const step = transition(record, { kind: 'send-failed', afterMark: marked, delivery: marked ? 'received' : 'none', effect: 'none', error, permanent, lastAttempt }, policy);
        const failed = step.write !== undefined && !Array.isArray(step.write) && (step.write as { kind: string; state?: string }).kind === 'outcome' && (step.write as { state?: string }).state === 'FAILED';
        const verifier = transition(record, { kind: 'verifier-missing', verifier: 'v1' }, policy);
        expect(verifier.write === undefined).toBe(released > 0);
        if (released > 0) {
          expect(verifier.next).toMatchObject({ kind: 'needs-person', code: 'AMBIGUOUS' });
          expect(failed).toBe(false);
          expect(step.next).toMatchObject({ kind: 'needs-person', code: 'AMBIGUOUS' });
        } else {
          expect(failed).toBe(true);
        }
      }),
      { numRuns: 300 },
    );
  });
});
