/** The workflow decision is a pure function of the journal: tested without Redis. */
import { describe, expect, it } from 'vitest';
import { PERSON_OUTCOME_CODES, RESOLVE_ACTIONS, WorkflowDefinitionSchema } from '@durable-a2a/shared';
import { classifyFailure, decide, firstAttempts, type AttemptView, type WorkflowSnapshot } from '../src/workflow/decide.ts';

const definition = (overrides: object = {}) =>
  WorkflowDefinitionSchema.parse({
    workflowId: 'trip',
    maxAttemptsPerStep: 3,
    steps: [
      { name: 'flight', skill: 'book-flight', message: { text: 'fly' }, verifier: { name: 'booking' }, compensation: { skill: 'book-flight', message: { text: 'cancel' } } },
      { name: 'car', skill: 'rent-car', message: { text: 'car' } },
    ],
    ...overrides,
  });
const attempt = (step: string, n: number, state: AttemptView['state'], extra: Partial<AttemptView> = {}): AttemptView => ({
  delegationId: `${step}.${n}`,
  step,
  kind: 'step',
  attempt: n,
  agentCardUrl: `https://${step}-${n}.example`,
  state,
  ...extra,
});
const snapshot = (attempts: AttemptView[], extra: Partial<WorkflowSnapshot> = {}): WorkflowSnapshot => ({
  definition: definition(),
  state: 'RUNNING',
  cancelRequested: false,
  attempts,
  ...extra,
});
const agents = { 'book-flight': ['https://flight-1.example', 'https://flight-2.example'], 'rent-car': ['https://car-1.example', 'https://car-2.example', 'https://car-3.example'] };
const lookup = (step: { skill?: string }) => agents[step.skill as keyof typeof agents] ?? [];

describe('decide', () => {
  it.each(PERSON_OUTCOME_CODES)('an AMBIGUOUS attempt with %s asks a person under that code (retry allowed); a read-only step runs again unless the code says it would end the same way', (code) => {
    const readOnly = snapshot([attempt('car', 1, 'AMBIGUOUS', { error: { code, message: 'why' } })], { definition: definition({ steps: [{ name: 'car', skill: 'rent-car', message: { text: 'car' }, readOnly: true }] }) });
    const written = snapshot([attempt('car', 1, 'AMBIGUOUS', { error: { code, message: 'why' } })], { definition: definition({ steps: [{ name: 'car', skill: 'rent-car', message: { text: 'car' } }] }) });
    const asked = { kind: 'needs-attention', step: 'car', code, reason: 'car.1: why' };
    expect(decide(written, lookup)).toEqual(asked);
    expect(decide(readOnly, lookup)).toMatchObject(code === 'ADDRESS_REFUSED' ? asked : { kind: 'start-attempt', step: 'car', attempt: 2 });
    expect(RESOLVE_ACTIONS[code]).toEqual(['retry', 'abandon']);
  });

  it('starts the first step with the first agent that has the skill', () => {
    expect(decide(snapshot([]), lookup)).toMatchObject({ kind: 'start-attempt', step: 'flight', attempt: 1, agentCardUrl: 'https://flight-1.example', previous: [] });
  });

  it('waits while a step runs, and for verification of a COMPLETED step that declares a verifier', () => {
    expect(decide(snapshot([attempt('flight', 1, 'WORKING')]), lookup)).toMatchObject({ kind: 'wait' });
    expect(decide(snapshot([attempt('flight', 1, 'COMPLETED')]), lookup)).toMatchObject({ kind: 'wait', reason: expect.stringContaining('verification') });
  });

  it('moves on after a verified step; completes when every step is done', () => {
    const flight = attempt('flight', 1, 'COMPLETED', { effect: 'present' });
    expect(decide(snapshot([flight]), lookup)).toMatchObject({ kind: 'start-attempt', step: 'car', agentCardUrl: 'https://car-1.example' });
    expect(decide(snapshot([flight, attempt('car', 1, 'COMPLETED')]), lookup)).toEqual({ kind: 'complete' });
  });

  it('an unsuccessful task carrying artifacts is effect unknown (attack33a): a person, or the compensation; never re-delegated; a verifier still decides', () => {
    const car = (state: AttemptView['state'], artifactCount: number) => snapshot([attempt('flight', 1, 'COMPLETED', { effect: 'present' }), attempt('car', 1, state, { taskId: 'T1', artifactCount })]);
    for (const state of ['REJECTED', 'FAILED', 'CANCELED'] as const) {
      expect(decide(car(state, 2), lookup)).toEqual({
        kind: 'needs-attention',
        step: 'car',
        code: 'EFFECT_WITHOUT_COMPENSATION',
        reason: `car.1 ended ${state} but its task T1 carries 2 artifacts: its effect is unknown and the step has no compensation`,
      });
      expect(decide(car(state, 0), lookup)).toMatchObject({ kind: 'start-attempt', step: 'car', attempt: 2 });
    }
    // The flight declares a compensation and a verifier: the verifier's finding is awaited, then decides.
    const flight = (extra: Partial<AttemptView>) => snapshot([attempt('flight', 1, 'REJECTED', { taskId: 'F1', artifactCount: 1, ...extra })]);
    expect(decide(flight({}), lookup)).toMatchObject({ kind: 'wait', reason: expect.stringContaining('verification') });
    expect(decide(flight({ effect: 'absent' }), lookup)).toMatchObject({ kind: 'start-attempt', step: 'flight', attempt: 2 });
    expect(decide(flight({ effect: 'unknown' }), lookup)).toMatchObject({ kind: 'compensate' });
    // Without a verifier, the compensation undoes it (mayHaveEffect counts the artifacts).
    const noVerifier = definition({ steps: [{ name: 'flight', skill: 'book-flight', message: { text: 'fly' }, compensation: { skill: 'book-flight', message: { text: 'cancel' } } }] });
    expect(decide(snapshot([attempt('flight', 1, 'FAILED', { taskId: 'F1', artifactCount: 1 })], { definition: noVerifier }), lookup)).toMatchObject({ kind: 'compensate' });
  });

  it('re-delegates a rejected step to an untried agent, carrying the task and reason forward', () => {
    const flight = attempt('flight', 1, 'COMPLETED', { effect: 'present' });
    const rejected = attempt('car', 1, 'REJECTED', { agentCardUrl: 'https://car-1.example', taskId: 'T1', error: { code: 'TASK_REJECTED', message: 'no cars' } });
    expect(decide(snapshot([flight, rejected]), lookup)).toMatchObject({
      kind: 'start-attempt',
      step: 'car',
      attempt: 2,
      agentCardUrl: 'https://car-2.example',
      previous: [{ taskId: 'T1', agentCardUrl: 'https://car-1.example', reason: 'REJECTED: no cars' }],
    });
  });

  it('the budget is per step across all agents: 3 failures stop the step and the flight is compensated', () => {
    const flight = attempt('flight', 1, 'COMPLETED', { effect: 'present' });
    const cars = [1, 2, 3].map((n) => attempt('car', n, 'FAILED', { agentCardUrl: `https://car-${n}.example`, error: { code: 'TASK_FAILED', message: `broken ${n}` } }));
    const decision = decide(snapshot([flight, ...cars]), lookup);
    expect(decision.kind).toBe('compensate');
    expect(decision.kind === 'compensate' && decision.reason).toContain('exhausted its budget of 3');
    expect(decision.kind === 'compensate' && decision.reason).toContain('broken 3');
  });

  it('fails without compensation when nothing needs undoing, and when no agent is left', () => {
    const verifiedAbsent = attempt('flight', 1, 'COMPLETED', { effect: 'absent', agentCardUrl: 'https://flight-1.example' });
    const onlyOneAgent = (step: { skill?: string }) => (step.skill === 'book-flight' ? ['https://flight-1.example'] : []);
    expect(decide(snapshot([verifiedAbsent]), onlyOneAgent)).toMatchObject({ kind: 'fail', step: 'flight' });
  });

  it('a COMPLETED claim whose effect is absent counts as a failure (re-delegated)', () => {
    const liar = attempt('flight', 1, 'COMPLETED', { effect: 'absent', agentCardUrl: 'https://flight-1.example' });
    expect(decide(snapshot([liar]), lookup)).toMatchObject({ kind: 'start-attempt', step: 'flight', attempt: 2, agentCardUrl: 'https://flight-2.example' });
  });

  it('AMBIGUOUS and unknown effects need a person', () => {
    expect(decide(snapshot([attempt('flight', 1, 'AMBIGUOUS')]), lookup)).toMatchObject({ kind: 'needs-attention', step: 'flight' });
    expect(decide(snapshot([attempt('flight', 1, 'COMPLETED', { effect: 'unknown' })]), lookup)).toMatchObject({ kind: 'needs-attention' });
  });

  it('a delegation stopped by the progress rule needs a person with its own code, not AMBIGUOUS_SEND', () => {
    const stuck = (code: string) => attempt('flight', 1, 'AMBIGUOUS', { error: { code, message: 'nothing new for 30 min' } });
    expect(decide(snapshot([stuck('NO_PROGRESS')]), lookup)).toMatchObject({ kind: 'needs-attention', code: 'NO_PROGRESS', reason: expect.stringContaining('nothing new') });
    expect(decide(snapshot([stuck('PROTOCOL_ERROR')]), lookup)).toMatchObject({ kind: 'needs-attention', code: 'PROTOCOL_ERROR' });
    expect(decide(snapshot([stuck('AMBIGUOUS')]), lookup)).toMatchObject({ kind: 'needs-attention', code: 'AMBIGUOUS_SEND' });
  });

  it('cancel waits for running attempts, then compensates what has an effect', () => {
    const flight = attempt('flight', 1, 'COMPLETED', { effect: 'present' });
    expect(decide(snapshot([flight, attempt('car', 1, 'WORKING')], { cancelRequested: true }), lookup)).toMatchObject({ kind: 'wait' });
    expect(decide(snapshot([flight, attempt('car', 1, 'CANCELED')], { cancelRequested: true }), lookup)).toMatchObject({ kind: 'compensate' });
    expect(decide(snapshot([], { cancelRequested: true }), lookup)).toMatchObject({ kind: 'fail' });
  });

  it('DAG: held intents are released when their steps are done; parallel steps start together', () => {
    const parallel = definition({
      steps: [
        { name: 'flight', skill: 'book-flight', message: { text: 'fly' }, after: [] },
        { name: 'hotel', skill: 'book-flight', message: { text: 'sleep' }, after: [] },
        { name: 'car', skill: 'rent-car', message: { text: 'car' }, after: ['flight', 'hotel'] },
      ],
    });
    const held = attempt('car', 1, 'INTENT', { held: true });
    const running = snapshot([attempt('flight', 1, 'WORKING'), held], { definition: parallel });
    expect(decide(running, lookup)).toMatchObject({ kind: 'start-attempt', step: 'hotel' });
    const bothDone = snapshot([attempt('flight', 1, 'COMPLETED'), attempt('hotel', 1, 'COMPLETED'), held], { definition: parallel });
    expect(decide(bothDone, lookup)).toEqual({ kind: 'release', step: 'car', delegationId: 'car.1' });
  });

  it('a LOST task may go back to the same agent when no other has the skill', () => {
    const single = (step: { skill?: string }) => (step.skill === 'book-flight' ? ['https://flight-1.example'] : []);
    const lost = attempt('flight', 1, 'LOST', { agentCardUrl: 'https://flight-1.example', effect: 'absent', error: { code: 'TASK_LOST', message: 'denied 3 times' } });
    expect(decide(snapshot([{ ...lost, effect: undefined }]), single)).toMatchObject({ kind: 'wait', reason: expect.stringContaining('verification') });
    expect(decide(snapshot([lost]), single)).toMatchObject({ kind: 'start-attempt', attempt: 2, agentCardUrl: 'https://flight-1.example' });
  });

  it('a read-only step that ended AMBIGUOUS is simply run again (same agent allowed, budget counted)', () => {
    const readOnly = definition({ steps: [{ name: 'quote', skill: 'book-flight', message: { text: 'price?' }, readOnly: true }] });
    const single = () => ['https://flight-1.example'];
    const ambiguous = attempt('quote', 1, 'AMBIGUOUS', { agentCardUrl: 'https://flight-1.example', error: { code: 'AMBIGUOUS', message: 'history too short' } });
    expect(decide(snapshot([ambiguous], { definition: readOnly }), lookup)).toMatchObject({ kind: 'start-attempt', step: 'quote', attempt: 2, agentCardUrl: 'https://flight-2.example' });
    expect(decide(snapshot([ambiguous], { definition: readOnly }), single)).toMatchObject({ kind: 'start-attempt', attempt: 2, agentCardUrl: 'https://flight-1.example' });
    expect(() => definition({ steps: [{ name: 'quote', skill: 'x', message: { text: 'q' }, readOnly: true, verifier: { name: 'v' } }] })).toThrow(/readOnly/);
  });

  it('a step that fails for good cancels the steps still running (even one parked on a question) before undoing', () => {
    const parallel = definition({
      steps: [
        { name: 'hotel', skill: 'book-flight', message: { text: 'sleep' }, after: [] },
        { name: 'car', skill: 'rent-car', message: { text: 'car' }, after: [] },
      ],
      maxAttemptsPerStep: 1,
    });
    const parked = attempt('hotel', 1, 'INPUT_REQUIRED');
    const rejected = attempt('car', 1, 'REJECTED', { error: { code: 'TASK_REJECTED', message: 'no cars' } });
    const decision = decide(snapshot([parked, rejected], { definition: parallel }), lookup);
    expect(decision).toMatchObject({ kind: 'cancel-running', delegationIds: ['hotel.1'] });
    const reasons = decision.kind === 'cancel-running' ? decision.reasons : [];
    expect(reasons.join(' ')).toContain('no cars');
    // Once stopping is journaled, nothing new starts, even for a step with budget and agents left.
    const roomy = definition({ steps: parallel.steps, maxAttemptsPerStep: 3 });
    const canceled = { ...parked, state: 'CANCELED' as const };
    expect(decide(snapshot([parked, rejected], { definition: roomy, stopping: reasons }), lookup)).toMatchObject({ kind: 'wait' });
    expect(decide(snapshot([canceled, rejected], { definition: roomy, stopping: reasons }), lookup)).toMatchObject({ kind: 'fail', reasons: expect.arrayContaining([expect.stringContaining('no cars')]) });
  });

  it('rejects `after` naming a later step (the graph stays acyclic)', () => {
    expect(() => definition({ steps: [{ name: 'a', skill: 'x', message: { text: 'a' }, after: ['b'] }, { name: 'b', skill: 'x', message: { text: 'b' } }] })).toThrow(/earlier steps/);
  });

  it('the producer\'s first attempts come from the same choice as decide\'s attempt 1 (one decider)', () => {
    const def = definition();
    const firsts = firstAttempts(def, lookup);
    expect(firsts.map(({ step, agentCardUrl, held }) => ({ step: step.name, agentCardUrl, held }))).toEqual([
      { step: 'flight', agentCardUrl: lookup(def.steps[0]!)[0], held: false },
      { step: 'car', agentCardUrl: lookup(def.steps[1]!)[0], held: true },
    ]);
    const decided = decide(snapshot([]), lookup);
    expect(decided).toMatchObject({ kind: 'start-attempt', step: 'flight', attempt: 1, agentCardUrl: firsts[0]!.agentCardUrl });
    // A step no agent can run is left to the workers, which fail it with a reason.
    expect(firstAttempts(def, () => [])).toEqual([]);
  });

  it('failure kinds are typed, never read from the reason text', () => {
    const step = definition().steps[0]!;
    const lying = attempt('flight', 1, 'FAILED', { error: { code: 'X', message: 'LOST: not really' } });
    expect(classifyFailure(lying, step)).toMatchObject({ kind: 'failed' });
    expect(classifyFailure(attempt('flight', 1, 'LOST'), step)).toMatchObject({ kind: 'lost' });
    expect(classifyFailure(attempt('flight', 1, 'COMPLETED', { effect: 'absent' }), step)).toMatchObject({ kind: 'no-effect' });
    expect(classifyFailure(attempt('flight', 1, 'COMPLETED', { effect: 'present' }), step)).toBeUndefined();
    // A failed (not lost) attempt never goes back to the same agent, whatever its message says.
    const only = () => ['https://flight-1.example'];
    const failedOnce = attempt('flight', 1, 'FAILED', { agentCardUrl: 'https://flight-1.example', effect: 'absent', error: { code: 'X', message: 'LOST: not really' } });
    expect(decide(snapshot([failedOnce]), only)).toMatchObject({ kind: 'fail' });
  });
});
