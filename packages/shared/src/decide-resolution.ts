/**
 * A person's decision on a workflow in NEEDS_ATTENTION (`producer.resolve`, docs/concepts.md "Workflow states"):
 * which actions each attention code allows, and what an accepted one writes on the workflow row. Pure,
 * like `decide.ts`: the producer applies the patch compare-and-set, the workers decide from it.
 *
 * The rule: a person's decision always ends or moves the workflow, never back to the same attention.
 * - `retry` sends something again with a new messageId: the AMBIGUOUS step attempts (approved), or for
 *   `COMPENSATION_FAILED` the failed compensation (a new compensation attempt, `<step>.<attempt>.undo-<n>`).
 * - `abandon` stops the workflow: what can be undone is, the rest ends FAILED with the reason (never
 *   CANCELED). For `COMPENSATION_FAILED` the failed compensation is given up (`abandonedCompensations`): its
 *   effect is knowingly left in place, the chain undoes the others, and the workflow ends FAILED naming it.
 */
import type { Attention, AttentionCode, WorkflowPatch } from './journal/workflow-record.ts';
import type { Effect } from './decide-types.ts';
import { FINISHED_STATES, type JournalState } from './journal/states.ts';
import { PERSON_OUTCOME_CODES, type PersonOutcomeCode } from './journal/error-codes.ts';

/** What `resolve` may do on a workflow in NEEDS_ATTENTION. */
export type ResolveAction = 'retry' | 'abandon';

const RETRY_OR_ABANDON: readonly ResolveAction[] = ['retry', 'abandon'];

/**
 * What `resolve` can do per attention code. `retry` needs something to send again: an AMBIGUOUS step
 * attempt, or the failed compensation; a cancel that came too late or an effect nobody can verify or
 * undo has nothing to send again: only `abandon` applies.
 */
export const RESOLVE_ACTIONS: Readonly<Record<AttentionCode, readonly ResolveAction[]>> = {
  // An AMBIGUOUS step attempt's own code: the attempt is there to send again.
  ...(Object.fromEntries(PERSON_OUTCOME_CODES.map((code) => [code, RETRY_OR_ABANDON])) as Record<PersonOutcomeCode, readonly ResolveAction[]>),
  AMBIGUOUS_SEND: ['retry', 'abandon'],
  UNSPECIFIED: ['retry', 'abandon'],
  EFFECT_UNKNOWN: ['abandon'],
  EFFECT_WITHOUT_COMPENSATION: ['abandon'],
  COMPENSATION_FAILED: ['retry', 'abandon'],
  CANCEL_LOST_RACE: ['abandon'],
};

/** The parts of an attempt (step or compensation) a resolution reads. */
export interface ResolutionAttempt {
  delegationId: string;
  kind: 'step' | 'compensation';
  state: string;
  effect?: Effect;
}

/** The workflow row fields a resolution reads (absent lists read as empty). */
export interface ResolutionWorkflow {
  attention?: Attention;
  stopping?: string[];
  failure?: string[];
  retryApproved?: readonly string[];
  abandonedCompensations?: readonly string[];
}


/**
 * The compensations the attention is about: the one it names; else (an older row, or `named` false: a
 * name not found) every finished one not yet retried or given up that did not undo.
 */
function failedCompensations(workflow: ResolutionWorkflow, attempts: readonly ResolutionAttempt[], named = true): string[] {
  const given = new Set([...(workflow.retryApproved ?? []), ...(workflow.abandonedCompensations ?? [])]);
  const open = attempts.filter((attempt) => attempt.kind === 'compensation' && FINISHED_STATES.has(attempt.state as JournalState) && !given.has(attempt.delegationId));
  const found = open.find((attempt) => attempt.delegationId === workflow.attention?.delegationId);
  if (found) return [found.delegationId];
  if (named && workflow.attention?.delegationId) return [];
  return open.filter((attempt) => attempt.state !== 'COMPLETED' || (attempt.effect !== undefined && attempt.effect !== 'absent')).map((attempt) => attempt.delegationId);
}

/** What `retry` would send again: the failed compensation (COMPENSATION_FAILED), else the AMBIGUOUS step attempts not yet sent back. */
function retryTargets(workflow: ResolutionWorkflow, attempts: readonly ResolutionAttempt[]): string[] {
  if (workflow.attention?.code === 'COMPENSATION_FAILED') return failedCompensations(workflow, attempts).slice(0, 1);
  const approved = new Set(workflow.retryApproved ?? []);
  return attempts.filter((attempt) => attempt.kind === 'step' && attempt.state === 'AMBIGUOUS' && !approved.has(attempt.delegationId)).map((attempt) => attempt.delegationId);
}

/** The actions `resolve` accepts now: the attention code's, and `retry` only while there is something to send again. */
export function allowedResolveActions(workflow: ResolutionWorkflow, attempts: readonly ResolutionAttempt[]): ResolveAction[] {
  const code = workflow.attention?.code ?? 'UNSPECIFIED';
  return RESOLVE_ACTIONS[code].filter((action) => action !== 'retry' || retryTargets(workflow, attempts).length > 0);
}

/**
 * The workflow row patch for an accepted action (the caller checked `allowedResolveActions`). The
 * workflow goes back to RUNNING; the workers' decider then starts the approved attempts, or (stopping
 * set) undoes what can be undone: a compensation retried gets a new attempt, one abandoned is skipped.
 */
export function resolutionPatch(workflow: ResolutionWorkflow, attempts: readonly ResolutionAttempt[], action: ResolveAction): WorkflowPatch {
  const code = workflow.attention?.code ?? 'UNSPECIFIED';
  const compensationFailed = code === 'COMPENSATION_FAILED';
  // Why the workflow was stopping (a compensation runs only once it is): kept, so the decider undoes again, never resumes.
  const earlier = workflow.stopping ?? workflow.failure ?? [];
  if (action === 'retry') {
    const retryApproved = [...new Set([...(workflow.retryApproved ?? []), ...retryTargets(workflow, attempts)])];
    return { state: 'RUNNING', attention: null, retryApproved, ...(compensationFailed ? { stopping: earlier.length > 0 ? earlier : [workflow.attention!.message] } : {}) };
  }
  const abandoned = `abandoned by a person (${code}): ${workflow.attention?.message ?? 'no reason recorded'}`;
  return {
    state: 'RUNNING',
    attention: null,
    cancelRequested: true,
    stopping: [abandoned, ...earlier.filter((reason) => reason !== abandoned)],
    ...(compensationFailed ? { abandonedCompensations: [...new Set([...(workflow.abandonedCompensations ?? []), ...failedCompensations(workflow, attempts, false)])] } : {}),
  };
}
