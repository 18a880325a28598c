/**
 * The local outcome codes: the `code` of a `RecordedError` that durable-a2a itself journals (as opposed to an
 * agent's A2A error code, which is journaled as the agent sent it). The list lives with the journal's record
 * (`RECORDED_ERROR_CODES` in `@durable-a2a/shared`, read through `/pure`, which `RecordedError.code` narrows to); the core reads it here.
 */
export { OUTCOME_CODES, type OutcomeCode } from '@durable-a2a/shared/pure';
