/**
 * The one decider: what happens next in a workflow, a pure function of the
 * journal (the workflow definition and every delegation attempt). The producer
 * asks it for the first attempts (`firstAttempts`), the workers after each
 * transition (`decide`, applied by the workers' `workflow/advance.ts`). No I/O
 * here, and no imports of anything that does I/O (dependency-cruiser rule
 * `decide-is-pure`).
 */
import { dependenciesOf, type Step, type WorkflowDefinition } from './workflow.ts';
import { agentKeyOf } from '@durable-a2a/a2a/pure';
import { UNSUCCESSFUL_STATES, isFinished } from './journal/states.ts';
import { personOutcomeOf } from './journal/error-codes.ts';
import { cancelOutcome, effectOf, needsUndo, pendingAttempt } from './decide-effects.ts';
import type { AttemptView, CandidateLookup, Decision, FailureKind, FirstAttempt, PreviousAttempt, WorkflowSnapshot } from './decide-types.ts';

export { needsUndo, mayHaveEffect, pendingAttempt, effectOf, artifactsShowWork } from './decide-effects.ts';
export type { AttemptView, CandidateLookup, Decision, Effect, FailureKind, FirstAttempt, PreviousAttempt, WorkflowSnapshot } from './decide-types.ts';

const FAILED_STATES = UNSUCCESSFUL_STATES;

/** How an attempt failed (kind and reason), or undefined if it did not fail. */
export function classifyFailure(attempt: AttemptView, step: Step): { kind: FailureKind; reason: string } | undefined {
  if (FAILED_STATES.has(attempt.state)) {
    return { kind: attempt.state === 'LOST' ? 'lost' : 'failed', reason: `${attempt.state}: ${attempt.error?.message ?? 'no reason given'}` };
  }
  if (runsAgain(attempt, step)) {
    const reason = `AMBIGUOUS (${step.readOnly ? 'read-only step' : 'a person approved'}, run again): ${attempt.error?.message ?? ''}`;
    return { kind: 'ambiguous', reason };
  }
  if (attempt.state === 'COMPLETED' && step.verifier && attempt.effect === 'absent') {
    return { kind: 'no-effect', reason: 'COMPLETED without effect: the verifier found nothing' };
  }
  return undefined;
}

/**
 * Whether an AMBIGUOUS attempt runs again without a person: one a person sent back (retry approved), or one of a
 * read-only step unless its code says another try would end the same way (`personOutcomeOf(…).readOnlyRunsAgain`,
 * error-codes.ts: ADDRESS_REFUSED, our own configuration refused the address).
 */
function runsAgain(attempt: AttemptView, step: Step): boolean {
  if (attempt.state !== 'AMBIGUOUS') return false;
  return attempt.retryApproved === true || (step.readOnly === true && personOutcomeOf(attempt.error?.code)?.readOnlyRunsAgain !== false);
}

/** Why an attempt counts as failed, or undefined if it did not fail. */
export function failureOf(attempt: AttemptView, step: Step): string | undefined {
  return classifyFailure(attempt, step)?.reason;
}

/** Decides the next action of a workflow (the first one, in step order; `advance` asks again after applying it). */
export function decide(snapshot: WorkflowSnapshot, candidates: CandidateLookup): Decision {
  if (snapshot.state !== 'RUNNING') return { kind: 'wait', reason: `workflow is ${snapshot.state}` };
  // Canceled: the outcome waits for what every attempt did, then never contradicts it (decide-effects.ts).
  // A stop already decided (a step failed for good, or a person abandoned the workflow) takes precedence.
  if (snapshot.cancelRequested && !snapshot.stopping) return cancelOutcome(snapshot);
  if (snapshot.stopping) return stoppingOutcome(snapshot, snapshot.stopping);
  const stepAttempts = snapshot.attempts.filter((attempt) => attempt.kind === 'step');
  const rules: StepRules = {
    snapshot,
    candidates,
    stepAttempts,
    running: stepAttempts.filter((attempt) => !attempt.held && !isFinished(attempt.state)),
    done: new Set<string>(),
  };
  const steps = snapshot.definition.steps;
  let waiting: Decision | undefined;
  for (const [index, step] of steps.entries()) {
    if (!dependenciesOf(steps, index).every((name) => rules.done.has(name))) continue;
    const outcome = decideStep(rules, step);
    if (outcome === 'done') rules.done.add(step.name);
    else if (outcome.kind === 'wait') waiting ??= outcome;
    else return outcome;
  }
  if (waiting) return waiting;
  if (steps.every((step) => rules.done.has(step.name))) return { kind: 'complete' };
  return { kind: 'wait', reason: 'steps are waiting for earlier steps' };
}

/** What `decide` walks the steps with: the snapshot, its step attempts, those still running, the steps done so far. */
interface StepRules {
  snapshot: WorkflowSnapshot;
  candidates: CandidateLookup;
  stepAttempts: AttemptView[];
  running: AttemptView[];
  done: Set<string>;
}

/** Stopping: start nothing new, wait for what runs, then undo what can be undone, or FAILED: never CANCELED. */
function stoppingOutcome(snapshot: WorkflowSnapshot, stopping: string[]): Decision {
  const pending = pendingAttempt(snapshot);
  if (pending) return { kind: 'wait', reason: `stopping; ${pending.delegationId} is ${pending.state}` };
  return compensateOrFail(snapshot, stopping[0]!, stopping.slice(1));
}

/** One ready step: `done`, a wait (the walk goes on), or the decision to act on. */
function decideStep(rules: StepRules, step: Step): 'done' | Decision {
  const attempts = rules.stepAttempts.filter((attempt) => attempt.step === step.name).sort((a, b) => a.attempt - b.attempt);
  const latest = attempts.at(-1);
  if (!latest) return orCompensate(rules.snapshot, startAttempt(step, 1, [], rules.candidates), rules.running);
  if (latest.held) return { kind: 'release', step: step.name, delegationId: latest.delegationId };
  const effect = effectRule(rules, step, latest);
  if (effect) return effect;
  const outcome = stepOutcome(step, latest);
  return outcome === 'failed' ? nextAttemptOrFail(rules, step, attempts) : outcome;
}

/**
 * An attempt that failed after its side effect happened (verified present, or unknown) is not
 * re-delegated: a second agent would do it again. Undo what was done, or ask a person.
 * Unknown includes a task the agent ended REJECTED, FAILED or CANCELED that carries artifacts (`effectOf`).
 * LOST with its effect verified present: the agent forgot a task that did its work; decide from the effect.
 */
function effectRule(rules: StepRules, step: Step, latest: AttemptView): 'done' | Decision | undefined {
  if (latest.state === 'LOST' && latest.effect === 'present') return 'done';
  // A verifier's finding outranks the artifacts (`effectOf`): a step that declares one waits for it (`stepOutcome`).
  if (latest.effect === undefined && step.verifier) return undefined;
  const effect = effectOf(latest);
  if (!FAILED_STATES.has(latest.state) || (effect !== 'present' && effect !== 'unknown')) return undefined;
  const reason =
    latest.effect === undefined
      ? `${latest.delegationId} ended ${latest.state} but its task ${latest.taskId ?? '(no id)'} carries ${latest.artifactCount} artifact${latest.artifactCount === 1 ? '' : 's'}: its effect is unknown`
      : `${latest.delegationId} ended ${latest.state} but its effect is ${latest.effect}`;
  if (!step.compensation) {
    return { kind: 'needs-attention', step: step.name, code: 'EFFECT_WITHOUT_COMPENSATION', reason: `${reason} and the step has no compensation` };
  }
  return orCompensate(rules.snapshot, { kind: 'fail', step: step.name, reasons: [reason] }, rules.running);
}

/** The latest attempt failed: re-delegate with the failures carried, or fail the step when its budget is spent. */
function nextAttemptOrFail(rules: StepRules, step: Step, attempts: AttemptView[]): Decision {
  const { snapshot } = rules;
  const carried: PreviousAttempt[] = attempts.flatMap((attempt) => {
    const failure = classifyFailure(attempt, step);
    if (!failure) return [];
    return [{ delegationId: attempt.delegationId, agentCardUrl: attempt.agentCardUrl, taskId: attempt.taskId, contextId: attempt.contextId, ...failure }];
  });
  // An attempt a person sent back (AMBIGUOUS, retry approved) does not use up the budget.
  if (attempts.filter((attempt) => !attempt.retryApproved).length >= snapshot.definition.maxAttemptsPerStep) {
    const reasons = carried.map((entry) => `${entry.delegationId} (${entry.agentCardUrl}): ${entry.reason}`);
    const failed: Decision = { kind: 'fail', step: step.name, reasons: [...reasons, `step ${step.name} exhausted its budget of ${snapshot.definition.maxAttemptsPerStep}`] };
    return orCompensate(snapshot, failed, rules.running);
  }
  return orCompensate(snapshot, startAttempt(step, attempts.length + 1, carried, rules.candidates), rules.running);
}

/** What the latest attempt of a step means for the workflow. */
function stepOutcome(step: Step, latest: AttemptView): 'done' | 'failed' | Decision {
  if (runsAgain(latest, step)) return 'failed';
  if (latest.state === 'AMBIGUOUS') {
    const own = personOutcomeOf(latest.error?.code);
    if (own) return { kind: 'needs-attention', step: step.name, code: own.code, reason: `${latest.delegationId}: ${latest.error!.message}` };
    return { kind: 'needs-attention', step: step.name, code: 'AMBIGUOUS_SEND', reason: `${latest.delegationId} is AMBIGUOUS: a person must decide` };
  }
  if (latest.state === 'COMPLETED') {
    if (step.verifier && latest.effect === undefined) return { kind: 'wait', reason: `${latest.delegationId} awaits verification` };
    if (step.verifier && latest.effect === 'unknown') {
      return { kind: 'needs-attention', step: step.name, code: 'EFFECT_UNKNOWN', reason: `${latest.delegationId}: effect could not be verified` };
    }
    return failureOf(latest, step) ? 'failed' : 'done';
  }
  if (!FAILED_STATES.has(latest.state)) return { kind: 'wait', reason: `${latest.delegationId} is ${latest.state}` };
  // A FAILED step with a verifier is verified too: it may have done something before failing.
  if (step.verifier && latest.effect === undefined) {
    return { kind: 'wait', reason: `${latest.delegationId} failed; awaiting verification of its effect` };
  }
  return 'failed';
}

function startAttempt(step: Step, attempt: number, previous: PreviousAttempt[], candidates: CandidateLookup): Decision {
  // Tried agents by identity (`agentKeyOf`), not by spelling: another spelling of a tried agent is that agent.
  const tried = new Set(previous.map((entry) => agentKeyOf(entry.agentCardUrl)));
  const all = candidates(step);
  const last = previous.at(-1)?.kind;
  // An agent that forgot a task (LOST), or a read-only step we could not prove (AMBIGUOUS),
  // may go back to the same agent; one that refused or failed does not.
  const again = last === 'lost' || last === 'ambiguous';
  // Nothing tried yet (every first attempt): the first candidate, without a key per candidate.
  const untried = tried.size === 0 ? all[0] : all.find((url) => !tried.has(agentKeyOf(url)));
  const next = untried ?? (again ? previous.at(-1)!.agentCardUrl : undefined);
  if (!next) {
    const reasons = previous.map((entry) => `${entry.delegationId} (${entry.agentCardUrl}): ${entry.reason}`);
    const none = all.length === 0 ? `no available agent has skill ${step.skill ?? '(none)'} for step ${step.name}` : `no other agent can run step ${step.name}`;
    return { kind: 'fail', step: step.name, reasons: [...reasons, none] };
  }
  return { kind: 'start-attempt', step: step.name, attempt, agentCardUrl: next, previous };
}

function compensateOrFail(snapshot: WorkflowSnapshot, reason: string, reasons: string[], step?: string): Decision {
  const undo = snapshot.definition.steps.some((definition) =>
    snapshot.attempts.some((attempt) => attempt.step === definition.name && needsUndo(attempt, definition)),
  );
  if (undo) return { kind: 'compensate', reason: [reason, ...reasons].join('; ') };
  return { kind: 'fail', step, reasons: [reason, ...reasons] };
}

/**
 * A step that cannot go on fails the workflow, undoing what the other steps
 * did, once nothing else is in flight (an effect still being made would be
 * missed): running attempts are canceled first.
 */
function orCompensate(snapshot: WorkflowSnapshot, decision: Decision, running: AttemptView[]): Decision {
  if (decision.kind !== 'fail') return decision;
  if (running.length > 0) {
    // The workflow cannot finish: stop what still runs (a parked question would otherwise wait for nobody).
    return { kind: 'cancel-running', reasons: decision.reasons, delegationIds: running.map((attempt) => attempt.delegationId) };
  }
  return compensateOrFail(snapshot, decision.reasons.at(-1)!, decision.reasons.slice(0, -1), decision.step);
}

/**
 * The first attempt of every step whose agent is known now (the same choice `decide` makes for an
 * attempt 1); a step without one is left to the workers, whose `decide` fails it with a reason.
 */
export function firstAttempts(definition: WorkflowDefinition, candidates: CandidateLookup): FirstAttempt[] {
  return definition.steps.flatMap((step, index) => {
    const decision = startAttempt(step, 1, [], candidates);
    if (decision.kind !== 'start-attempt') return [];
    return [{ step, agentCardUrl: decision.agentCardUrl, held: dependenciesOf(definition.steps, index).length > 0 }];
  });
}
