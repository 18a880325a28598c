/**
 * `@durable-a2a/shared/pure`: the vocabulary a pure module needs (journal states, "is a question open", task
 * state predicates) without the rest of the package (no Redis client, no transports). The workers' delegation
 * core imports only this and types (dependency-cruiser rule `delegation-core-is-pure`).
 */
export { isFinished, isParked, isUnsuccessful, journalStateOf, FINISHED_STATES, PARKED_STATES } from './journal/states.ts';
export { isAwaitingAnswer } from './journal/record.ts';
export { keepsSuspects, lostUntold, suspectsPending, type SuspectFields, type SuspectRoundFields } from './journal/suspects.ts';
export { historyHolds, isTerminalTaskState, isInterruptedTaskState, taskShownOurs } from '@durable-a2a/a2a/pure';
export { OUTCOME_CODES, type OutcomeCode } from './journal/error-codes.ts';
export { limitRefusalOf, refusedResultOf, refusedResultShown, refusedArtifactsMissing, withRefusal, type LimitRefusal } from './journal/refused-result.ts';
