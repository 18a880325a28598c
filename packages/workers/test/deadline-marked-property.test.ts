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
import { mayHaveReachedAgent, type Policy } from '../src/delegation/core/policy.ts';
import { transition } from '../src/delegation/core/transitions.ts';
import { stepRow } from './step-row.ts';

const NOW = 5_000_000;
const policy = { now: () => NOW, random: () => 0.5, sendAttempts: 3, sendSettleMs: 31_000, notFoundThreshold: 3, notFoundWindowMs: 30_000, reconcileIntervalMs: 1_000, unacceptableAnswerLimit: 3 } as unknown as Policy;

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
});
