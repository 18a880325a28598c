/**
 * Journal states of one delegation attempt. The remote task states (spec §5.5
 * TaskState) without their prefix, plus INTENT (journaled, maybe not sent yet)
 * and two local outcomes: AMBIGUOUS (a send may have happened and cannot be
 * proven either way: a person decides) and LOST (the agent repeatedly denies a
 * task it once had). Finished states never change again.
 */
import type { TaskState } from '../a2a/schema.ts';

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
export const PARKED_STATES: ReadonlySet<JournalState> = new Set(['INPUT_REQUIRED', 'AUTH_REQUIRED']);

export const isFinished = (state: JournalState): boolean => FINISHED_STATES.has(state);
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
