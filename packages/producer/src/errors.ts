/**
 * Typed producer errors, each with a stable `code` (also used as the
 * problem+json code by the HTTP service).
 */
import type { ZodError } from 'zod';

/** Invalid input: nothing was written. `field` names the offending field (dotted path). */
export class ProducerInputError extends Error {
  override readonly name = 'ProducerInputError';
  readonly code = 'INVALID_INPUT';
  constructor(
    message: string,
    readonly field: string,
    readonly issues: { field: string; message: string }[] = [{ field, message }],
  ) {
    super(message);
  }
}

export class NotFoundError extends Error {
  override readonly name = 'NotFoundError';
  readonly code = 'NOT_FOUND';
}

/** The idempotency key (or workflowId) is already used for a different request. Nothing was written. */
export class IdempotencyConflictError extends Error {
  override readonly name = 'IdempotencyConflictError';
  readonly code = 'IDEMPOTENCY_CONFLICT';
}

/** The workflow already finished: there is nothing left to cancel or answer. */
export class WorkflowFinishedError extends Error {
  override readonly name = 'WorkflowFinishedError';
  readonly code = 'WORKFLOW_FINISHED';
}

export class NoOpenQuestionError extends Error {
  override readonly name = 'NoOpenQuestionError';
  readonly code = 'NO_OPEN_QUESTION';
}

/** Turns a zod error into a ProducerInputError naming the first bad field. */
export function fromZodError(error: ZodError): ProducerInputError {
  const issues = error.issues.map((issue) => ({ field: issue.path.join('.') || '(input)', message: issue.message }));
  const first = issues[0] ?? { field: '(input)', message: 'invalid input' };
  return new ProducerInputError(`invalid ${first.field}: ${first.message}`, first.field, issues);
}

/**
 * Redis could not be reached or did not answer within the command timeout.
 * Nothing is queued for later: the call either wrote before failing (a retry
 * with the same idempotency key is safe) or wrote nothing. Retryable.
 */
export class RedisUnavailableError extends Error {
  override readonly name = 'RedisUnavailableError';
  readonly code = 'REDIS_UNAVAILABLE';
  readonly retryable = true;
}
