/**
 * Property (attack36, the kind "a resend permission read as a proof of absence"): the reconciler's search row ends a
 * maybe-sent INTENT FAILED (the step may go to another agent: SEND_ATTEMPTS_EXHAUSTED, DEADLINE_EXCEEDED, the agent's
 * own error) only when the search proved our message absent (a conclusive not-found). An agent that cannot list tasks
 * (`unsupported`) proves nothing: when it is listed as deduplicating by messageId, our message is resent to IT (the
 * same messageId, within `sendAttempts` and before the deadline), and past either bound a person decides (AMBIGUOUS),
 * never FAILED. Before, the deduplicating agent's resend verdict counted as absence: past `sendAttempts` FAILED
 * SEND_ATTEMPTS_EXHAUSTED and past the deadline FAILED DEADLINE_EXCEEDED "our message was proven absent", and the step
 * was booked again at a second agent.
 * Over: the search's finding × deduplicating or not × resends so far × the deadline (none, ahead, passed) × the row's
 * error (none, or any delivery, an error answer or not, retryable or not).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { RecordedError } from '@durable-a2a/shared';
import type { SearchFinding } from '../src/delegation/core/observation.ts';
import type { Policy } from '../src/delegation/core/policy.ts';
import { transition } from '../src/delegation/core/transitions.ts';
import { stepRow } from './step-row.ts';

const NOW = 5_000_000;
const SEND_ATTEMPTS = 3;
const policy = { now: () => NOW, random: () => 0.5, sendAttempts: SEND_ATTEMPTS, sendSettleMs: 31_000, notFoundThreshold: 3, notFoundWindowMs: 30_000, reconcileIntervalMs: 1_000, unacceptableAnswerLimit: 3 } as unknown as Policy;

const findingArb: fc.Arbitrary<Extract<SearchFinding, { kind: 'unsupported' | 'not-found' }>> = fc.oneof(
  fc.constant({ kind: 'unsupported' as const }),
  fc.record({ kind: fc.constant('not-found' as const), inconclusive: fc.boolean(), contextRefused: fc.boolean(), candidates: fc.constant([] as string[]), paginationBroken: fc.boolean() }),
);
const errorArb: fc.Arbitrary<RecordedError | undefined> = fc.option(
  fc.record({
    code: fc.constantFrom('NETWORK_ERROR', 'INTERNAL_ERROR'),
    message: fc.constant('no answer'),
    retryable: fc.boolean(),
    delivery: fc.constantFrom('not-sent', 'maybe', 'received') as fc.Arbitrary<'not-sent' | 'maybe' | 'received'>,
    answer: fc.constantFrom(undefined, 'error'),
  }).map((error) => (error.answer === undefined ? { code: error.code, message: error.message, retryable: error.retryable, delivery: error.delivery } : error) as RecordedError),
  { nil: undefined },
);

describe('attack36 property: FAILED from the search row only on a proven absence', () => {
  it('finding × deduplicating × resends × deadline × error: an unproven absence is never FAILED; a deduplicating agent is resent within both bounds, else a person', () => {
    fc.assert(
      fc.property(findingArb, fc.boolean(), fc.nat(SEND_ATTEMPTS + 1), fc.constantFrom(undefined, NOW + 60_000, NOW - 1), errorArb, (finding, deduplicates, resends, deadlineAt, error) => {
        const record = stepRow({ resendCount: resends, ...(error ? { error } : {}) });
        const step = transition(record, { kind: 'search-result', purpose: 'reconcile', finding, deduplicates, ...(deadlineAt !== undefined ? { deadlineAt } : {}) }, policy);
        const proven = finding.kind === 'not-found' && !finding.inconclusive && !finding.paginationBroken;
        const failed = step.write !== undefined && !Array.isArray(step.write) && (step.write as { kind: string; state?: string }).kind === 'outcome' && (step.write as { state?: string }).state === 'FAILED';
        if (!proven) expect(failed).toBe(false);
        if (finding.kind === 'unsupported' && deduplicates && error?.delivery !== 'received') {
          const withinBounds = resends + 1 < SEND_ATTEMPTS && (deadlineAt === undefined || NOW < deadlineAt);
          if (withinBounds) expect(step.next).toMatchObject({ kind: 'resend' });
          else expect(step.next).toMatchObject({ kind: 'needs-person', code: 'AMBIGUOUS' });
        }
      }),
      { numRuns: 1_000 },
    );
  });
});
