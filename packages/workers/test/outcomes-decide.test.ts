/**
 * Truthful outcomes, at the decider: a workflow's final state never contradicts its steps.
 * R31 (cancel loses the race to completion), V6 (cancel while a send is held or AMBIGUOUS), RT1 (a step
 * named like a compensation): pure, no Redis.
 */
import { describe, expect, it } from 'vitest';
import { WorkflowDefinitionSchema, delegationIdOf, type DelegationRecord, type Step } from '@durable-a2a/shared';
import { decide, type AttemptView, type WorkflowSnapshot } from '../src/workflow/decide.ts';
import { compensationOf, undoPlan } from '../src/workflow/compensation.ts';

const A = 'https://a.example/';
const B = 'https://b.example/';
const single = (step: object = {}) =>
  WorkflowDefinitionSchema.parse({ workflowId: 'trip', steps: [{ name: 'book', agent: A, message: { text: 'book' }, ...step }] });
const attempt = (step: string, n: number, state: AttemptView['state'], extra: Partial<AttemptView> = {}): AttemptView => ({
  delegationId: delegationIdOf(extra.kind ?? 'step', step, n),
  step,
  kind: 'step',
  attempt: n,
  agentCardUrl: A,
  state,
  ...extra,
});
const canceled = (definition: WorkflowSnapshot['definition'], attempts: AttemptView[], extra: Partial<WorkflowSnapshot> = {}): WorkflowSnapshot => ({
  definition,
  state: 'RUNNING',
  cancelRequested: true,
  attempts,
  ...extra,
});
const fixed = (step: Step) => ('agent' in step && step.agent ? [step.agent] : []);
const compensation = { agent: A, message: { text: 'CANCEL' } };

describe('R31: a cancel that loses the race to completion', () => {
  it('a completed booking that nothing can undo is NEEDS_ATTENTION with the step as evidence, never CANCELED', () => {
    const booked = attempt('book', 1, 'COMPLETED', { taskId: 'T1' });
    expect(decide(canceled(single(), [booked]), fixed)).toMatchObject({
      kind: 'needs-attention',
      step: 'book',
      code: 'CANCEL_LOST_RACE',
      delegationId: 'book.1',
      evidence: { state: 'COMPLETED', taskId: 'T1' },
    });
  });

  it('a completed read-only step is simply COMPLETED (nothing happened that a cancel would have stopped)', () => {
    expect(decide(canceled(single({ readOnly: true }), [attempt('book', 1, 'COMPLETED')]), fixed)).toEqual({ kind: 'complete' });
  });

  it('with a compensation the completed booking is undone (COMPENSATED only after the undo)', () => {
    expect(decide(canceled(single({ compensation }), [attempt('book', 1, 'COMPLETED')]), fixed)).toMatchObject({ kind: 'compensate' });
  });

  it('a verifier that found nothing makes the cancel truthful: CANCELED', () => {
    const step = single({ verifier: { name: 'booking' } });
    const unverified = attempt('book', 1, 'CANCELED');
    expect(decide(canceled(step, [unverified]), fixed)).toMatchObject({ kind: 'wait', reason: expect.stringContaining('verification') });
    expect(decide(canceled(step, [{ ...unverified, effect: 'absent' }]), fixed)).toMatchObject({ kind: 'fail', canceled: true });
    expect(decide(canceled(step, [{ ...unverified, effect: 'present' }]), fixed)).toMatchObject({ kind: 'needs-attention', code: 'CANCEL_LOST_RACE' });
  });

  it('the agent canceled for real (nothing done): CANCELED', () => {
    expect(decide(canceled(single(), [attempt('book', 1, 'CANCELED')]), fixed)).toEqual({
      kind: 'fail',
      canceled: true,
      reasons: ['canceled by the user before any step had an effect'],
    });
  });
});

describe('V6: a cancel while the send is held or AMBIGUOUS', () => {
  it('waits while the send is held (journaled, sent, no task id yet), whatever the cancel', () => {
    const held = attempt('book', 1, 'INTENT');
    expect(decide(canceled(single(), [held]), fixed)).toMatchObject({ kind: 'wait' });
    expect(decide(canceled(single(), [{ ...held, state: 'WORKING', taskId: 'T1' }]), fixed)).toMatchObject({ kind: 'wait' });
  });

  it('an AMBIGUOUS send may have had an effect: undone when it can be, else a person is told', () => {
    const ambiguous = attempt('book', 1, 'AMBIGUOUS');
    expect(decide(canceled(single(), [ambiguous]), fixed)).toMatchObject({ kind: 'needs-attention', code: 'CANCEL_LOST_RACE', delegationId: 'book.1' });
    expect(decide(canceled(single({ compensation }), [ambiguous]), fixed)).toMatchObject({ kind: 'compensate' });
    // A person sent it back (judged it did nothing): no effect left, CANCELED.
    expect(decide(canceled(single(), [{ ...ambiguous, retryApproved: true }]), fixed)).toMatchObject({ kind: 'fail', canceled: true });
  });

  it('a person who abandons a workflow that may have had an effect ends it FAILED with the reason, never CANCELED', () => {
    const ambiguous = attempt('book', 1, 'AMBIGUOUS');
    const abandoned = canceled(single(), [ambiguous], { stopping: ['abandoned by a person (AMBIGUOUS_SEND): book.1 is AMBIGUOUS'] });
    expect(decide(abandoned, fixed)).toMatchObject({ kind: 'fail', reasons: [expect.stringContaining('abandoned by a person')] });
    expect(decide(abandoned, fixed)).not.toHaveProperty('canceled');
  });
});

describe('RT1: a step named like a compensation', () => {
  const definition = WorkflowDefinitionSchema.parse({
    workflowId: 'rt1',
    maxAttemptsPerStep: 1,
    steps: [
      { name: 'flight', agent: A, message: { text: 'BOOK' }, compensation },
      { name: 'undo.flight', agent: A, message: { text: 'BOOK' } },
      { name: 'last', agent: B, message: { text: 'BOOK' } },
    ],
  });
  const flight = attempt('flight', 1, 'COMPLETED');
  const lookalike = attempt('undo.flight', 1, 'COMPLETED');
  const last = attempt('last', 1, 'REJECTED', { agentCardUrl: B });

  it('ids of the two kinds never collide, whatever the names', () => {
    expect(delegationIdOf('step', 'undo.flight', 1)).not.toBe(delegationIdOf('compensation', 'flight', 1));
    expect(delegationIdOf('step', 'flight.1', 1)).not.toBe(delegationIdOf('compensation', 'flight', 1));
  });

  it('the rejected last step compensates flight only: the look-alike step is a step, not its undo', () => {
    const snapshot = { definition, state: 'RUNNING' as const, cancelRequested: false, attempts: [flight, lookalike, last] };
    expect(decide(snapshot, fixed)).toMatchObject({ kind: 'compensate' });
    const records = [flight, lookalike, last].map((view) => ({ ...view, workflowId: 'rt1' }) as unknown as DelegationRecord);
    const plan = undoPlan(definition.steps, records);
    expect(plan.map(({ original }) => original.delegationId)).toEqual(['flight.1']);
    // The look-alike step's record is not flight's compensation: the compensation is still to be sent.
    expect(compensationOf(records, plan[0]!.original)).toBeUndefined();
    const undo = { ...flight, kind: 'compensation', delegationId: delegationIdOf('compensation', 'flight', 1), workflowId: 'rt1' } as unknown as DelegationRecord;
    expect(compensationOf([...records, undo], plan[0]!.original)).toBe(undo);
  });

  it('a canceled RT1 workflow: only flight is undone, the look-alike step (no compensation) is named to a person', () => {
    const decision = decide({ definition, state: 'RUNNING', cancelRequested: true, attempts: [flight, lookalike] }, fixed);
    expect(decision).toMatchObject({ kind: 'needs-attention', code: 'CANCEL_LOST_RACE', step: 'undo.flight', delegationId: 'undo.flight.1' });
  });
});
