/**
 * The kind behind the new-user trial's loop (abandon on COMPENSATION_FAILED answered RUNNING, then the
 * same NEEDS_ATTENTION again, forever): a person's decision on NEEDS_ATTENTION always ends or moves the
 * workflow, never back to the same attention. Every attention code × both actions, over random later
 * outcomes of the agents (they may fail the same way again): pure, no Redis (attention-world.ts).
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { ATTENTION_CODES, RESOLVE_ACTIONS, WorkflowDefinitionSchema, type AttentionCode, type ResolveAction, type Step } from '@durable-a2a/shared';
import { allowedNow, isTerminal, resolve, runUntilSettled, type Outcome, type World } from './attention-world.ts';

const undo = { skill: 'undo', message: { text: 'CANCEL' } };
const verifier = { name: 'booking' };
const agents: Record<string, string[]> = { book: ['https://book.example/'], pay: ['https://pay.example/'], undo: ['https://undo.example/'] };
const lookup = (step: Step) => agents[step.skill!] ?? [];
const book = (extra: object = {}) => ({ name: 'book', skill: 'book', message: { text: 'book' }, ...extra });
const pay = { name: 'pay', skill: 'pay', message: { text: 'pay' } };

interface Scenario {
  steps: object[];
  scripted: Record<string, Outcome>;
  cancelAt?: string;
  /** Written by an older release: the attention is rewritten as prose (UNSPECIFIED, no delegation named). */
  legacy?: boolean;
}
const ambiguous = (errorCode: string): Scenario => ({ steps: [book({ compensation: undo }), pay], scripted: { 'book.1': { state: 'AMBIGUOUS', errorCode } } });
const undoRejected: Scenario = { steps: [book({ compensation: undo }), pay], scripted: { 'book.1': { state: 'COMPLETED' }, 'pay.1': { state: 'REJECTED' }, 'book.1.undo': { state: 'REJECTED' } } };

/** A run that reaches each attention code (the code is asserted, so a scenario cannot drift). */
const SCENARIOS: Record<AttentionCode, Scenario[]> = {
  AMBIGUOUS_SEND: [ambiguous('SEND_UNPROVEN')],
  NO_PROGRESS: [ambiguous('NO_PROGRESS')],
  PROTOCOL_ERROR: [ambiguous('PROTOCOL_ERROR')],
  AUTH: [ambiguous('AUTH')],
  SEARCH_UNAVAILABLE: [ambiguous('SEARCH_UNAVAILABLE')],
  // The workers' own address policy refused the URL (nothing sent): a person, a read-only step too.
  ADDRESS_REFUSED: [ambiguous('ADDRESS_REFUSED'), { steps: [book({ readOnly: true }), pay], scripted: { 'book.1': { state: 'AMBIGUOUS', errorCode: 'ADDRESS_REFUSED' } } }],
  EFFECT_UNKNOWN: [{ steps: [book({ verifier, compensation: undo }), pay], scripted: { 'book.1': { state: 'COMPLETED', effect: 'unknown' } } }],
  EFFECT_WITHOUT_COMPENSATION: [{ steps: [book({ verifier }), pay], scripted: { 'book.1': { state: 'FAILED', effect: 'present' } } }],
  COMPENSATION_FAILED: [
    undoRejected,
    // Two effects: the later one's undo fails; the earlier one's is still to run after the person decides.
    { steps: [book({ compensation: undo }), { ...pay, compensation: undo }, { name: 'ship', skill: 'pay', message: { text: 'ship' } }], scripted: { 'book.1': { state: 'COMPLETED' }, 'pay.1': { state: 'COMPLETED' }, 'ship.1': { state: 'REJECTED' }, 'pay.1.undo': { state: 'FAILED' } } },
  ],
  CANCEL_LOST_RACE: [{ steps: [book(), pay], scripted: { 'book.1': { state: 'COMPLETED' }, 'pay.1': { state: 'CANCELED' } }, cancelAt: 'pay.1' }],
  UNSPECIFIED: [{ ...undoRejected, legacy: true }, { ...ambiguous('SEND_UNPROVEN'), legacy: true }],
};

function worldOf(scenario: Scenario, later: Outcome[]): World {
  const definition = WorkflowDefinitionSchema.parse({ workflowId: 'wf', maxAttemptsPerStep: 1, steps: scenario.steps });
  return {
    definition,
    row: { state: 'RUNNING', cancelRequested: false, retryApproved: [], abandonedCompensations: [] },
    records: [],
    scripted: scenario.scripted,
    later: [...later],
    cancelAt: scenario.cancelAt,
  };
}

/** Runs a scenario to its first attention (asserting the code), as an older release would have written it when `legacy`. */
function atAttention(code: AttentionCode, scenario: Scenario, later: Outcome[]): World {
  const world = worldOf(scenario, later);
  expect(runUntilSettled(world, lookup)).toBe('NEEDS_ATTENTION');
  if (scenario.legacy) world.row.attention = { code: 'UNSPECIFIED', message: world.row.attention!.message };
  expect(world.row.attention!.code).toBe(code);
  return world;
}

const outcomeArb: fc.Arbitrary<Outcome> = fc.record({
  state: fc.constantFrom('COMPLETED', 'FAILED', 'REJECTED', 'AMBIGUOUS', 'CANCELED'),
  effect: fc.option(fc.constantFrom('present', 'absent', 'unknown'), { nil: undefined }),
  errorCode: fc.constantFrom('AGENT', 'NO_PROGRESS', 'PROTOCOL_ERROR', 'AUTH', 'SEARCH_UNAVAILABLE', 'ADDRESS_REFUSED'),
});
const cases = ATTENTION_CODES.flatMap((code) => SCENARIOS[code].map((scenario, index) => [code, index, scenario] as const));
const signature = (world: World) => JSON.stringify([world.row.attention?.code, world.row.attention?.delegationId, world.row.attention?.message]);

describe('every attention code × both actions: a decision never loops back to the same attention', () => {
  it.each(cases)('%s (scenario %i): retry is allowed exactly when there is something to send again', (code, _index, scenario) => {
    const world = atAttention(code, scenario, []);
    const expected: ResolveAction[] = ['AMBIGUOUS_SEND', 'NO_PROGRESS', 'PROTOCOL_ERROR', 'AUTH', 'SEARCH_UNAVAILABLE', 'ADDRESS_REFUSED', 'COMPENSATION_FAILED', 'UNSPECIFIED'].includes(code) ? ['retry', 'abandon'] : ['abandon'];
    // An older release's prose names no delegation: a failed compensation cannot be told apart from another, so only abandon.
    const legacyCompensation = scenario.legacy && world.records.some((record) => record.kind === 'compensation');
    expect(allowedNow(world)).toEqual(legacyCompensation ? ['abandon'] : expected);
    expect(RESOLVE_ACTIONS[code]).toEqual(expect.arrayContaining(allowedNow(world)));
  });

  it.each(cases)('%s (scenario %i): each allowed action moves the workflow; a person who then abandons ends it, FAILED with the reason or COMPENSATED, never CANCELED', (code, _index, scenario) => {
    fc.assert(
      fc.property(fc.constantFrom<ResolveAction>('retry', 'abandon'), fc.array(outcomeArb, { maxLength: 8 }), (first, later) => {
        const world = atAttention(code, scenario, later);
        if (!allowedNow(world).includes(first)) return;
        let action = first;
        // A person decides, then abandons whatever comes next: at most one decision per delegation that can fail, plus one.
        for (let decisions = 0; decisions <= world.records.length + 4; decisions++) {
          const before = signature(world);
          resolve(world, action);
          const state = runUntilSettled(world, lookup);
          expect(state).not.toBe('STALLED');
          if (isTerminal(state)) {
            expect(state === 'COMPENSATED' || state === 'FAILED' || (first === 'retry' && decisions === 0)).toBe(true);
            // FAILED after a person's abandon says so, and names every effect left in place by its compensation.
            if (action === 'abandon' && state === 'FAILED') expect(world.row.failure!.join('\n')).toContain('abandoned by a person (');
            for (const id of world.row.abandonedCompensations) expect(world.row.failure!.join('\n')).toContain(`its compensation ${id} (`);
            return;
          }
          expect(signature(world), 'the same attention again after a decision').not.toBe(before);
          action = 'abandon';
        }
        throw new Error(`still ${world.row.state} after ${world.records.length + 5} decisions: ${signature(world)}`);
      }),
      { numRuns: 150 },
    );
  });
});
