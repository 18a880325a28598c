/**
 * Property (issue 13, truthful outcomes; the kind behind R31, V6, RT1): over random workflows (steps,
 * dependencies, compensations, verifiers, read-only steps, names that look like compensations) and random
 * attempt outcomes (COMPLETED, FAILED, REJECTED, CANCELED, AMBIGUOUS, LOST, still WORKING; effects present,
 * absent, unknown; cancel requests at random points; a person retrying or abandoning), the final decision of
 * the pure decider never contradicts the journaled attempts. The oracle below is written from docs/concepts.md's
 * rule, not from decide's helpers.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { WorkflowDefinitionSchema, delegationIdOf, firstAttempts, type DelegationRecord, type Step, type WorkflowDefinition } from '@durable-a2a/shared';
import { decide, type AttemptView, type Decision } from '../src/workflow/decide.ts';
import { undoPlan } from '../src/workflow/compensation.ts';

const NAMES = ['a', 'b', 'c', 'undo.a', 'a.1', 'a.1.undo'] as const;
const OUTCOMES = ['COMPLETED', 'FAILED', 'REJECTED', 'CANCELED', 'AMBIGUOUS', 'LOST', 'WORKING'] as const;

const stepArb = fc.record({
  kind: fc.constantFrom('plain', 'readOnly', 'compensated', 'verified', 'both'),
  agents: fc.integer({ min: 0, max: 3 }),
  afterMask: fc.option(fc.nat(15), { nil: undefined }),
});
const workflowArb = fc.record({
  names: fc.uniqueArray(fc.constantFrom(...NAMES), { minLength: 1, maxLength: 4 }),
  steps: fc.array(stepArb, { minLength: 4, maxLength: 4 }),
  maxAttemptsPerStep: fc.integer({ min: 1, max: 3 }),
});
const eventArb = fc.record({
  pick: fc.nat(),
  outcome: fc.constantFrom(...OUTCOMES),
  effect: fc.constantFrom('present', 'absent', 'unknown'),
  cancel: fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
  person: fc.constantFrom('retry', 'abandon', 'leave'),
});

interface WorkflowInput {
  names: string[];
  steps: { kind: string; agents: number; afterMask?: number }[];
  maxAttemptsPerStep: number;
}
interface Event {
  pick: number;
  outcome: (typeof OUTCOMES)[number];
  effect: 'present' | 'absent' | 'unknown';
  cancel: boolean;
  person: string;
}

function definitionOf(input: WorkflowInput): WorkflowDefinition {
  const steps = input.names.map((name, index) => {
    const shape = input.steps[index]!;
    const earlier = input.names.slice(0, index);
    const after = shape.afterMask === undefined ? undefined : earlier.filter((_, bit) => (shape.afterMask! >> bit) & 1);
    return {
      name,
      skill: `skill-${index}`,
      message: { text: name },
      ...(after ? { after } : {}),
      ...(shape.kind === 'readOnly' ? { readOnly: true } : {}),
      ...(shape.kind === 'compensated' || shape.kind === 'both' ? { compensation: { skill: `undo-${index}`, message: { text: 'CANCEL' } } } : {}),
      ...(shape.kind === 'verified' || shape.kind === 'both' ? { verifier: { name: 'booking' } } : {}),
    };
  });
  return WorkflowDefinitionSchema.parse({ workflowId: 'wf', steps, maxAttemptsPerStep: input.maxAttemptsPerStep });
}

/** The oracle: an attempt had, or may have had, an effect (docs/concepts.md "Workflow states"). */
function hadEffect(attempt: AttemptView, step: Step): boolean {
  if (step.readOnly) return false;
  if (attempt.effect === 'present' || attempt.effect === 'unknown') return true;
  if (attempt.effect === 'absent') return false;
  return attempt.state === 'COMPLETED' || (attempt.state === 'AMBIGUOUS' && !attempt.retryApproved);
}
const FINISHED = new Set(['COMPLETED', 'FAILED', 'REJECTED', 'CANCELED', 'AMBIGUOUS', 'LOST']);

interface World {
  definition: WorkflowDefinition;
  attempts: AttemptView[];
  cancelRequested: boolean;
  stopping?: string[];
}

/** Checks a final decision against the journal it was made from; returns the violations. */
function contradictions(world: World, decision: Decision): string[] {
  const stepOf = (attempt: AttemptView) => world.definition.steps.find((step) => step.name === attempt.step)!;
  const effects = world.attempts.filter((attempt) => hadEffect(attempt, stepOf(attempt)));
  const toUndo = effects.filter((attempt) => stepOf(attempt).compensation !== undefined);
  const running = world.attempts.filter((attempt) => !attempt.held && !FINISHED.has(attempt.state));
  const problems: string[] = [];
  const expectNothingRunning = () => running.length > 0 && problems.push(`${decision.kind} while ${running.map((a) => a.delegationId)} run`);
  if (decision.kind === 'complete') {
    expectNothingRunning();
    for (const step of world.definition.steps) {
      const latest = world.attempts.filter((attempt) => attempt.step === step.name).sort((x, y) => x.attempt - y.attempt).at(-1);
      // A LOST task whose effect a verifier found present did its work (the agent only forgot it).
      const lostButDone = latest?.state === 'LOST' && latest.effect === 'present';
      if (lostButDone) continue;
      if (latest?.state !== 'COMPLETED') problems.push(`COMPLETED but ${step.name} is ${latest?.state ?? 'not started'}`);
      else if (step.verifier && latest.effect !== 'present') problems.push(`COMPLETED but ${step.name}'s effect is ${latest.effect}`);
    }
    if (world.cancelRequested && effects.length > 0) problems.push(`COMPLETED after a cancel although ${effects.map((a) => a.delegationId)} had effects`);
  }
  if (decision.kind === 'fail') {
    expectNothingRunning();
    if (decision.canceled && !world.cancelRequested) problems.push('CANCELED without a cancel');
    if (decision.canceled && effects.length > 0) problems.push(`CANCELED although ${effects.map((a) => a.delegationId)} had or may have had effects`);
    if (toUndo.length > 0) problems.push(`FAILED/CANCELED with ${toUndo.map((a) => a.delegationId)} left to undo`);
  }
  if (decision.kind === 'compensate') {
    expectNothingRunning();
    const records = world.attempts.map((attempt) => ({ ...attempt, workflowId: 'wf' }) as unknown as DelegationRecord);
    const retryApproved = world.attempts.filter((attempt) => attempt.retryApproved).map((attempt) => attempt.delegationId);
    const planned = undoPlan(world.definition.steps, records, retryApproved).map(({ original }) => original.delegationId);
    if (planned.length === 0) problems.push('COMPENSATING with nothing to undo');
    if ([...planned].sort().join() !== toUndo.map((a) => a.delegationId).sort().join()) problems.push(`undo plan ${planned} is not ${toUndo.map((a) => a.delegationId)}`);
    // The compensations' ids (RT1) never name a step attempt, whatever the step names.
    const taken = new Set(world.attempts.map((attempt) => attempt.delegationId));
    for (const original of toUndo) {
      const id = delegationIdOf('compensation', original.step, original.attempt);
      if (taken.has(id)) problems.push(`the compensation of ${original.delegationId} would reuse the id of a step attempt (${id})`);
    }
    const lost = effects.filter((attempt) => !stepOf(attempt).compensation);
    if (world.cancelRequested && !world.stopping && lost.length > 0) problems.push(`a cancel compensates but ${lost.map((a) => a.delegationId)} cannot be undone`);
  }
  if (decision.kind === 'needs-attention' && decision.code === 'CANCEL_LOST_RACE') {
    expectNothingRunning();
    const named = world.attempts.find((attempt) => attempt.delegationId === decision.delegationId);
    if (!world.cancelRequested) problems.push('CANCEL_LOST_RACE without a cancel');
    if (!named || !hadEffect(named, stepOf(named)) || stepOf(named).compensation) problems.push(`CANCEL_LOST_RACE names ${decision.delegationId}, which an undo covers or had no effect`);
  }
  return problems;
}


/** Plays the workflow: applies each decision, lets one thing happen per `wait`; returns the final decision. */
function play(world: World, events: Event[], lookup: (step: Step) => string[]): { decision: Decision; problems: string[] } {
  let resolves = 0;
  for (let round = 0; round < 300; round++) {
    const event = events[round % events.length]!;
    if (event.cancel) world.cancelRequested = true;
    const decision = decide({ definition: world.definition, state: 'RUNNING', cancelRequested: world.cancelRequested, stopping: world.stopping, attempts: world.attempts }, lookup);
    if (decision.kind === 'start-attempt') {
      if (world.cancelRequested || world.stopping) return { decision, problems: ['an attempt started after a cancel or a stop'] };
      world.attempts.push({ delegationId: delegationIdOf('step', decision.step, decision.attempt), step: decision.step, kind: 'step', attempt: decision.attempt, agentCardUrl: decision.agentCardUrl, state: 'INTENT' });
    } else if (decision.kind === 'release') {
      world.attempts.find((attempt) => attempt.delegationId === decision.delegationId)!.held = false;
    } else if (decision.kind === 'cancel-running') {
      world.stopping = decision.reasons;
    } else if (decision.kind === 'wait') {
      const stepOf = (attempt: AttemptView) => world.definition.steps.find((step) => step.name === attempt.step)!;
      const open = world.attempts.filter(
        (attempt) =>
          (!attempt.held && !FINISHED.has(attempt.state)) || (FINISHED.has(attempt.state) && attempt.state !== 'AMBIGUOUS' && stepOf(attempt).verifier && attempt.effect === undefined),
      );
      if (open.length === 0) return { decision, problems: [`waits for nothing: ${decision.reason}`] };
      const chosen = open[event.pick % open.length]!;
      if (!FINISHED.has(chosen.state)) chosen.state = event.outcome;
      else chosen.effect = event.effect;
    } else {
      const problems = contradictions(world, decision);
      if (problems.length > 0 || decision.kind !== 'needs-attention' || event.person === 'leave' || resolves++ >= 2) return { decision, problems };
      // A person resolves (producer.resolve): retry sends AMBIGUOUS attempts back; abandon stops the workflow.
      if (event.person === 'retry') for (const attempt of world.attempts) if (attempt.state === 'AMBIGUOUS') attempt.retryApproved = true;
      if (event.person === 'abandon') {
        world.cancelRequested = true;
        world.stopping = [`abandoned by a person (${decision.code})`];
      }
    }
  }
  return { decision: { kind: 'wait', reason: 'bounded' }, problems: [] };
}

describe('truthful outcomes (property over random workflows)', () => {
  it('the final state from decide never contradicts the journaled steps, compensations and verifications', () => {
    fc.assert(
      fc.property(workflowArb, fc.array(eventArb, { minLength: 1, maxLength: 40 }), (input, events) => {
        const definition = definitionOf(input);
        const agents = new Map(definition.steps.map((step, index) => [step.skill!, Array.from({ length: input.steps[index]!.agents }, (_, n) => `https://agent-${index}-${n}.example/`)]));
        const lookup = (step: Step) => agents.get(step.skill!) ?? [];
        const attempts: AttemptView[] = firstAttempts(definition, lookup).map(({ step, agentCardUrl, held }) => ({
          delegationId: delegationIdOf('step', step.name, 1),
          step: step.name,
          kind: 'step',
          attempt: 1,
          agentCardUrl,
          state: 'INTENT',
          held,
        }));
        const { problems } = play({ definition, attempts, cancelRequested: false }, events, lookup);
        expect(problems).toEqual([]);
      }),
      { numRuns: 2000 },
    );
  });
});
