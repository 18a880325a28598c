/**
 * What a workflow's attempts did to the world, and the outcome of a cancel: the part of the decider
 * that keeps a workflow's final state truthful (docs/concepts.md "Workflow states"). Pure, like `decide.ts`.
 *
 * The rule, once nothing runs and nothing awaits verification:
 * - nothing had (or may have had) an effect → CANCELED, or COMPLETED when every step had already completed
 *   (read-only steps: the cancel lost the race and there is nothing to undo);
 * - every attempt that had or may have had an effect declares a compensation → compensate (COMPENSATED
 *   only once the compensations ran);
 * - otherwise → NEEDS_ATTENTION `CANCEL_LOST_RACE`, naming the attempt whose effect nothing can undo.
 * A cancel never ends CANCELED while any attempt has, or may have, an effect.
 * Steps and compensations are told apart by the attempt's `kind`, never by their names.
 */
import type { Step } from './workflow.ts';
import { isFinished } from './journal/states.ts';
import type { JournalState } from './journal/states.ts';
import type { AttemptView, Decision, Effect, WorkflowSnapshot } from './decide-types.ts';

/**
 * The attempt states that end without success yet may follow work: the task states in which an agent ended a task
 * unsuccessfully (spec §5.5 TaskState: REJECTED, FAILED, CANCELED), and LOST (the agent proved it no longer knows the
 * task: artifacts journaled from it before show it did work, then lost the task, e.g. an in-memory store restarted).
 */
const ENDED_WITHOUT_SUCCESS: ReadonlySet<JournalState> = new Set(['REJECTED', 'FAILED', 'CANCELED', 'LOST']);

/**
 * What the workflow knows of an attempt's effect: a verifier's finding when there is one; else `unknown` for a task
 * the agent ended REJECTED, FAILED or CANCELED, or an attempt LOST, that carries one or more artifacts (`artifactCount`: the agent produced
 * output, so it did work, attack33a); else none (undefined). A verifier's `absent` outranks the artifacts: it is the
 * independent read of the world.
 */
export function effectOf(attempt: Pick<AttemptView, 'effect' | 'state' | 'artifactCount'>): Effect | undefined {
  if (attempt.effect !== undefined) return attempt.effect;
  return artifactsShowWork(attempt) ? 'unknown' : undefined;
}

/** True when an attempt ended unsuccessfully by the agent's word yet its task carries artifacts (`effectOf`). */
export function artifactsShowWork(attempt: Pick<AttemptView, 'state' | 'artifactCount'>): boolean {
  return ENDED_WITHOUT_SUCCESS.has(attempt.state) && (attempt.artifactCount ?? 0) > 0;
}

/**
 * True when a step attempt had, or may have had, a side effect: the effect known (`effectOf`: a verifier's finding,
 * or `unknown` for an unsuccessful task carrying artifacts) decides when there is one (`present` / `unknown` yes,
 * `absent` no); otherwise COMPLETED, and AMBIGUOUS that no person sent back (`retryApproved`), count. A read-only
 * step never has an effect; FAILED/REJECTED/CANCELED/LOST without a finding or an artifact count as none (the agent
 * said it did nothing).
 */
export function mayHaveEffect(attempt: AttemptView, step: Step): boolean {
  if (attempt.kind !== 'step' || step.readOnly) return false;
  const effect = effectOf(attempt);
  if (effect !== undefined) return effect !== 'absent';
  if (attempt.state === 'AMBIGUOUS') return !attempt.retryApproved;
  return attempt.state === 'COMPLETED';
}

/** True when a step attempt left an effect (or may have) that its step's compensation must undo. */
export function needsUndo(attempt: AttemptView, step: Step): boolean {
  return step.compensation !== undefined && mayHaveEffect(attempt, step);
}

/**
 * The first step attempt the workflow must still wait for: one running (not held, not finished), or a
 * finished one whose step declares a verifier that has not reported yet (an AMBIGUOUS one is never verified).
 */
export function pendingAttempt(snapshot: WorkflowSnapshot): AttemptView | undefined {
  const steps = new Map(snapshot.definition.steps.map((step) => [step.name, step]));
  return snapshot.attempts.find((attempt) => {
    if (attempt.kind !== 'step' || attempt.held) return false;
    if (!isFinished(attempt.state)) return true;
    const step = steps.get(attempt.step);
    return step?.verifier !== undefined && attempt.effect === undefined && attempt.state !== 'AMBIGUOUS';
  });
}

/** Every step attempt that had or may have had an effect, with its step (attempts of unknown steps skipped). */
export function effectAttempts(snapshot: WorkflowSnapshot): { attempt: AttemptView; step: Step }[] {
  return snapshot.attempts.flatMap((attempt) => {
    const step = snapshot.definition.steps.find((candidate) => candidate.name === attempt.step);
    return step && mayHaveEffect(attempt, step) ? [{ attempt, step }] : [];
  });
}

/** True when every step's latest attempt COMPLETED (and was not verified `absent`). */
function everyStepCompleted(snapshot: WorkflowSnapshot): boolean {
  return snapshot.definition.steps.every((step) => {
    const latest = snapshot.attempts
      .filter((attempt) => attempt.kind === 'step' && attempt.step === step.name)
      .sort((a, b) => a.attempt - b.attempt)
      .at(-1);
    return latest?.state === 'COMPLETED' && latest.effect !== 'absent';
  });
}

/** The outcome of a canceled workflow once nothing runs (the rule in the module header). */
export function cancelOutcome(snapshot: WorkflowSnapshot): Decision {
  const pending = pendingAttempt(snapshot);
  if (pending) return { kind: 'wait', reason: `cancel requested; ${pending.delegationId} is ${pending.state}${isFinished(pending.state) ? ', awaiting verification' : ''}` };
  const effects = effectAttempts(snapshot);
  if (effects.length === 0) {
    if (everyStepCompleted(snapshot)) return { kind: 'complete' };
    return { kind: 'fail', canceled: true, reasons: ['canceled by the user before any step had an effect'] };
  }
  const lost = effects.find(({ step }) => step.compensation === undefined);
  if (lost) {
    const { attempt } = lost;
    const had = attempt.state === 'AMBIGUOUS' || effectOf(attempt) === 'unknown' ? 'may have had' : 'had';
    return {
      kind: 'needs-attention',
      step: attempt.step,
      code: 'CANCEL_LOST_RACE',
      reason: `canceled by the user, but ${attempt.delegationId} (${attempt.state}) ${had} an effect and step ${attempt.step} declares no compensation`,
      delegationId: attempt.delegationId,
      evidence: { state: attempt.state, taskId: attempt.taskId, effect: attempt.effect ?? null, agentCardUrl: attempt.agentCardUrl },
    };
  }
  const undone = effects.map(({ attempt }) => attempt.delegationId).join(', ');
  return { kind: 'compensate', reason: `canceled by the user: undoing ${undone}` };
}
