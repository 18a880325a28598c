/**
 * Typed producer errors, each with a stable `code` (also used as the
 * problem+json code by the HTTP service).
 */
import type { ZodError } from 'zod';
import { redisErrorKind, type RedisErrorKind, type ResolveAction } from '@durable-a2a/shared';

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

/** What `resolve` may do on a workflow in NEEDS_ATTENTION (`RESOLVE_ACTIONS` per attention code). */
export type { ResolveAction };

/**
 * `resolve(id, action)` with an action that would change nothing for the workflow's attention code
 * (e.g. `retry` on CANCEL_LOST_RACE: nothing to send again). Nothing was written; `allowedActions`
 * names what a person can do instead.
 */
export class ResolutionNotAllowedError extends Error {
  override readonly name = 'ResolutionNotAllowedError';
  readonly code = 'RESOLUTION_NOT_ALLOWED';
  constructor(
    message: string,
    readonly attentionCode: string,
    readonly allowedActions: readonly ResolveAction[],
  ) {
    super(message);
  }
}

/** The caller's role does not allow this action (a viewer writing, a service changing the agent registry). Nothing was written. */
export class ForbiddenError extends Error {
  override readonly name = 'ForbiddenError';
  readonly code = 'FORBIDDEN';
}

/**
 * The tenant is at a quota (`quota`: unfinished workflows `inFlight`, or kept ones `stored`): nothing was written.
 * Retryable after `retryAfterMs` (a hint: a place frees when a workflow finishes, or retention removes one).
 */
export class QuotaExceededError extends Error {
  override readonly name = 'QuotaExceededError';
  readonly code = 'QUOTA_EXCEEDED';
  readonly retryable = true;
  constructor(
    message: string,
    readonly tenant: string,
    readonly quota: 'inFlight' | 'stored',
    readonly retryAfterMs: number,
  ) {
    super(message);
  }
}

/**
 * Quotas configured on a Redis Cluster connection: refused at start-up, never ignored. A tenant's quota sets live in
 * their own hash slot and the workflow in its own (`{wf:<id>}`), so the one script that creates a workflow cannot
 * check and count it atomically there. Not retryable: remove the quotas or use one server (or Sentinel).
 */
export class QuotasOnClusterError extends Error {
  override readonly name = 'QuotasOnClusterError';
  readonly code = 'QUOTAS_ON_CLUSTER';
  constructor(readonly setting: string) {
    super(`${setting}: ${QUOTAS_ON_CLUSTER_REASON}`);
  }
}

/** Why quotas are refused on a Redis Cluster, in the words every refusal uses (`QuotasOnClusterError`, the API's start-up check). */
export const QUOTAS_ON_CLUSTER_REASON =
  "tenant quotas cannot be applied on a Redis Cluster (a tenant's quota counters live in another hash slot than its workflows, so the script that creates a workflow cannot check and count it atomically); remove the quotas or use one Redis server or Sentinel";

export class NoOpenQuestionError extends Error {
  override readonly name = 'NoOpenQuestionError';
  readonly code = 'NO_OPEN_QUESTION';
}

/**
 * The workflow holds its most answers (`limit`, `ANSWERS_PER_WORKFLOW_MAX`): its answer index refuses a new one rather
 * than forget an older one's messageId (docs/people.md "Answers and their identity"). Nothing was journaled; not
 * retryable: cancel or resolve the workflow.
 */
export class AnswerLimitError extends Error {
  override readonly name = 'AnswerLimitError';
  readonly code = 'ANSWER_LIMIT';
  constructor(
    readonly workflowId: string,
    readonly limit: number,
  ) {
    super(`workflow ${workflowId} holds its most answers (${limit}): no further answer is journaled; cancel or resolve it`);
  }
}

/** The parts of a zod issue this module reads (also what fastify-type-provider-zod keeps in `params`). */
export interface IssueLike {
  code?: string;
  path: readonly PropertyKey[];
  message: string;
  /** `unrecognized_keys`: the unknown field names. */
  keys?: readonly string[];
  /** `invalid_union`: the issues of each alternative. */
  errors?: readonly (readonly IssueLike[])[];
}

/**
 * One `{field, message}` per problem, with dotted full paths. An unknown key
 * is named by its own path (`steps.0.idempotency_key: unknown field`); a union
 * that no alternative matched is explained by its closest alternative (fewest issues).
 */
export function describeIssues(issues: readonly IssueLike[], base: readonly PropertyKey[] = []): { field: string; message: string }[] {
  return issues.flatMap((issue) => {
    const path = [...base, ...issue.path];
    if (issue.code === 'unrecognized_keys' && issue.keys) {
      return issue.keys.map((key) => ({ field: [...path, key].map(String).join('.'), message: 'unknown field' }));
    }
    if (issue.code === 'invalid_union' && issue.errors && issue.errors.length > 0) {
      const closest = [...issue.errors].sort((a, b) => a.length - b.length)[0]!;
      if (closest.length > 0) return describeIssues(closest, path);
    }
    return [{ field: path.map(String).join('.') || '(input)', message: issue.message }];
  });
}

/** Turns a zod error into a ProducerInputError naming the first bad field. */
export function fromZodError(error: ZodError): ProducerInputError {
  const issues = describeIssues(error.issues as unknown as IssueLike[]);
  const first = issues[0] ?? { field: '(input)', message: 'invalid input' };
  return new ProducerInputError(`invalid ${first.field}: ${first.message}`, first.field, issues);
}

/**
 * Redis could not be reached or did not answer within the command timeout (`kind` `unreachable`), or its
 * slots were moving or a script could not be loaded (`moving`, `script-missing`; see `redisErrorKind`).
 * Nothing is queued for later: the call either wrote before failing (a retry
 * with the same idempotency key is safe) or wrote nothing. Retryable.
 */
export class RedisUnavailableError extends Error {
  override readonly name = 'RedisUnavailableError';
  readonly code = 'REDIS_UNAVAILABLE';
  readonly retryable = true;
  constructor(
    message: string,
    options?: ErrorOptions,
    readonly kind: Exclude<RedisErrorKind, 'refusing-writes' | 'other'> = 'unreachable',
  ) {
    super(message, options);
  }
}

/**
 * Redis answered but refused the write (`kind` `refusing-writes`: OOM at maxmemory with noeviction, READONLY on
 * a replica, MISCONF after a failed save, NOREPLICAS). A refused command did not run, so nothing of it is
 * written; an earlier command of the same call may have been (a retry with the same idempotency key is safe).
 * Retryable once the server takes writes again.
 */
export class RedisRefusingWritesError extends Error {
  override readonly name = 'RedisRefusingWritesError';
  readonly code = 'REDIS_REFUSING_WRITES';
  readonly retryable = true;
}

/**
 * The typed producer error for a Redis error of any kind but `other` (cause kept), or undefined for `other`
 * (and for an error already typed here). One rule for every producer call (`redisErrorKind` decides).
 */
export function producerErrorOfRedis(error: unknown): RedisUnavailableError | RedisRefusingWritesError | undefined {
  if (error instanceof RedisUnavailableError || error instanceof RedisRefusingWritesError) return undefined;
  const kind = redisErrorKind(error);
  const reason = error instanceof Error ? error.message : String(error);
  if (kind === 'other') return undefined;
  if (kind === 'refusing-writes') return new RedisRefusingWritesError(`Redis refusing writes: ${reason}`, { cause: error });
  return new RedisUnavailableError(`Redis unavailable (${kind}): ${reason}`, { cause: error }, kind);
}
