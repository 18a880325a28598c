/**
 * Journal states of one delegation attempt. The remote task states (spec §5.5
 * TaskState) without their prefix, plus INTENT (journaled, maybe not sent yet)
 * and two local outcomes: AMBIGUOUS (a send may have happened and cannot be
 * proven either way: a person decides) and LOST (the agent repeatedly denies a
 * task it once had). Finished states never change again.
 */
import type { TaskState } from '@durable-a2a/a2a/pure';

export const JOURNAL_STATES = [
  'INTENT',
  'SUBMITTED',
  'WORKING',
  'INPUT_REQUIRED',
  'AUTH_REQUIRED',
  'COMPLETED',
  'FAILED',
  'CANCELED',
  'REJECTED',
  'AMBIGUOUS',
  'LOST',
] as const;
export type JournalState = (typeof JOURNAL_STATES)[number];

export const FINISHED_STATES: ReadonlySet<JournalState> = new Set([
  'COMPLETED',
  'FAILED',
  'CANCELED',
  'REJECTED',
  'AMBIGUOUS',
  'LOST',
]);
/**
 * What was done with a question nobody answered in time (a step's `question.onExpiry`, journaled as
 * `questionExpiry` by expireQuestion-2.lua): the workflow canceled, the attempt FAILED, or the default answer sent.
 */
export const QUESTION_EXPIRY_ACTIONS = ['cancel', 'fail', 'answer'] as const;
export type QuestionExpiryAction = (typeof QUESTION_EXPIRY_ACTIONS)[number];

export const PARKED_STATES: ReadonlySet<JournalState> = new Set(['INPUT_REQUIRED', 'AUTH_REQUIRED']);

/**
 * Order of journal states for "forward only" (applyStatus-5.lua): an observed status never moves a record to a
 * lower rank; within one rank only a later status timestamp wins. Working and parked share a rank (an agent moves
 * between them freely); every finished state has the top rank, so nothing leaves one.
 */
export const JOURNAL_STATE_RANK: Readonly<Record<JournalState, number>> = Object.fromEntries(
  JOURNAL_STATES.map((state) => [state, FINISHED_STATES.has(state) ? 9 : state === 'INTENT' ? 0 : state === 'SUBMITTED' ? 1 : 2]),
) as Record<JournalState, number>;

/** Finished without success: the step may be re-delegated (AMBIGUOUS is finished but needs a person). */
export const UNSUCCESSFUL_STATES: ReadonlySet<JournalState> = new Set(['FAILED', 'REJECTED', 'CANCELED', 'LOST']);

/** Workflow states. Finished: COMPLETED, FAILED, COMPENSATED, CANCELED. NEEDS_ATTENTION waits for a person. */
export const WORKFLOW_STATES = ['RUNNING', 'COMPENSATING', 'COMPLETED', 'FAILED', 'COMPENSATED', 'CANCELED', 'NEEDS_ATTENTION'] as const;
export type WorkflowState = (typeof WORKFLOW_STATES)[number];
/** Workflow states that never change again (the scripts read this set from their generated prelude, script-codes.ts). */
export const FINISHED_WORKFLOW_STATES: ReadonlySet<WorkflowState> = new Set(['COMPLETED', 'FAILED', 'COMPENSATED', 'CANCELED']);

export const isFinished = (state: JournalState): boolean => FINISHED_STATES.has(state);
export const isUnsuccessful = (state: JournalState): boolean => UNSUCCESSFUL_STATES.has(state);
export const isWorkflowFinished = (state: WorkflowState): boolean => FINISHED_WORKFLOW_STATES.has(state);
export const isParked = (state: JournalState): boolean => PARKED_STATES.has(state);

/** Maps a wire TaskState to its journal state. UNSPECIFIED is treated as SUBMITTED. */
export function journalStateOf(state: TaskState): JournalState {
  if (state === 'TASK_STATE_UNSPECIFIED') return 'SUBMITTED';
  return state.slice('TASK_STATE_'.length) as JournalState;
}

/** Maps a journal state back to the wire state, for states that have one. */
export function taskStateOf(state: JournalState): TaskState | undefined {
  if (state === 'INTENT' || state === 'AMBIGUOUS' || state === 'LOST') return undefined;
  return `TASK_STATE_${state}` as TaskState;
}
