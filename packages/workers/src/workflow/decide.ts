/**
 * The decider lives in `@durable-a2a/shared` (`packages/shared/src/decide.ts`) so that the producer,
 * which journals first attempts, and the workers, which decide every later one, ask the same pure
 * function. Re-exported here for the workers' public surface.
 */
export { decide, firstAttempts, classifyFailure, failureOf, needsUndo } from '@durable-a2a/shared';
export type { Decision, WorkflowSnapshot, AttemptView, PreviousAttempt, CandidateLookup, FailureKind, FirstAttempt } from '@durable-a2a/shared';
