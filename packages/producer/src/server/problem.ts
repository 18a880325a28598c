/**
 * Errors as RFC 9457 `application/problem+json`: `{type, title, status,
 * detail, code, field?}`. `code` is stable (tests and clients match on it);
 * one table maps each code to its HTTP status and title.
 */
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { A2AError, AgentCardError, BlockedAddressError } from '@durable-a2a/a2a';
import { CorruptRecordError, JournalError, ReplicationTimeoutError } from '@durable-a2a/shared';
import { AgentAddressRefusedError } from '../agent-addresses.ts';
import { AnswerLimitError, describeIssues, ForbiddenError, QuotaExceededError, IdempotencyConflictError, NoOpenQuestionError, NotFoundError, ProducerInputError, ResolutionNotAllowedError, WorkflowFinishedError } from '../errors.ts';
import { redisProblemOf } from './redis-problem.ts';

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/** Every problem code the service answers with: HTTP status and title. */
export const PROBLEMS = {
  INVALID_INPUT: { status: 400, title: 'Invalid input' },
  UNAUTHORIZED: { status: 401, title: 'Unauthorized' },
  FORBIDDEN: { status: 403, title: 'Forbidden' },
  TASK_MISMATCH: { status: 403, title: 'Task does not belong to this delegation' },
  NOT_FOUND: { status: 404, title: 'Not found' },
  NO_OPEN_QUESTION: { status: 409, title: 'No open question' },
  ANSWER_LIMIT: { status: 409, title: 'The workflow holds its most answers; nothing was written' },
  IDEMPOTENCY_CONFLICT: { status: 409, title: 'Idempotency key already used for another request' },
  WORKFLOW_FINISHED: { status: 409, title: 'Workflow already finished' },
  RESOLUTION_NOT_ALLOWED: { status: 409, title: 'This decision is not possible for what the workflow needs attention for' },
  PAYLOAD_TOO_LARGE: { status: 413, title: 'Payload too large' },
  QUOTA_EXCEEDED: { status: 429, title: 'The tenant is at a quota; nothing was written' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, title: 'Unsupported media type' },
  AGENT_CARD_REJECTED: { status: 422, title: 'Agent Card rejected' },
  AGENT_ADDRESS_REFUSED: { status: 422, title: 'Agent address refused by the address policy' },
  /** A stored record does not parse: retrying cannot help, a person must inspect the key (the detail names it). Not 500: the service works, one record does not. */
  CORRUPT_RECORD: { status: 422, title: 'The stored record does not parse' },
  AGENT_CARD_UNREACHABLE: { status: 502, title: 'Agent Card could not be fetched' },
  UNAVAILABLE: { status: 503, title: 'Service unavailable' },
  REDIS_UNAVAILABLE: { status: 503, title: 'Redis unavailable; retry with the same idempotency key' },
  REDIS_REFUSING_WRITES: { status: 503, title: 'Redis refusing writes; retry with the same idempotency key' },
  REQUEST_TIMEOUT: { status: 503, title: 'The request did not finish in time; retry with the same idempotency key' },
  REPLICATION_TIMEOUT: { status: 503, title: 'Not yet acknowledged by the Redis replicas; retry with the same idempotency key' },
  INTERNAL: { status: 500, title: 'Internal error' },
} as const satisfies Record<string, { status: number; title: string }>;
export type ProblemCode = keyof typeof PROBLEMS;

export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: ProblemCode;
  field?: string;
  /** Every invalid field, when there are several. */
  issues?: { field: string; message: string }[];
  /** RESOLUTION_NOT_ALLOWED: the workflow's attention code and the actions `resolve` accepts for it. */
  attentionCode?: string;
  allowedActions?: readonly string[];
  /** CORRUPT_RECORD: the Redis key of the record that does not parse. */
  key?: string;
  /** QUOTA_EXCEEDED: when to try again, in seconds (also sent as Retry-After). */
  retryAfterSeconds?: number;
}

export function problem(code: ProblemCode, detail: string, extra: Pick<Problem, 'field' | 'issues' | 'attentionCode' | 'allowedActions' | 'key' | 'retryAfterSeconds'> = {}): Problem {
  const { status, title } = PROBLEMS[code];
  return { type: `urn:durable-a2a:problem:${code.toLowerCase().replaceAll('_', '-')}`, title, status, detail, code, ...extra };
}

/** `Retry-After` (seconds) on every 503: long enough for a Redis failover or restart. */
export const RETRY_AFTER_SECONDS = 5;

export function sendProblem(reply: FastifyReply, body: Problem): FastifyReply {
  body = withRetryAdvice(body, reply.request.method);
  if (body.code === 'UNAUTHORIZED') reply.header('www-authenticate', 'Bearer');
  if (body.status === 503) reply.header('retry-after', String(RETRY_AFTER_SECONDS));
  if (body.retryAfterSeconds !== undefined) reply.header('retry-after', String(body.retryAfterSeconds));
  return reply.code(body.status).type(PROBLEM_CONTENT_TYPE).send(body);
}

/** A zod issue path (`/steps/0/name`) as a dotted field name (`steps.0.name`). */
const fieldOf = (instancePath: string) => instancePath.replace(/^\//, '').replaceAll('/', '.') || '(input)';

/** Maps anything thrown by a route (or by fastify before it) to a problem. */
export function toProblem(error: unknown): Problem {
  if (hasZodFastifySchemaValidationErrors(error)) {
    const where = (error as FastifyError).validationContext ?? 'body';
    const issues = describeIssues(
      error.validation.map((issue) => ({ ...(issue.params as object), code: issue.keyword, path: fieldOf(issue.instancePath) === '(input)' ? [] : fieldOf(issue.instancePath).split('.'), message: issue.message ?? 'invalid' })),
    );
    const first = issues[0] ?? { field: '(input)', message: 'invalid' };
    return problem('INVALID_INPUT', `invalid ${where} ${first.field}: ${first.message}`, { field: first.field, issues });
  }
  if (error instanceof ProducerInputError) return problem('INVALID_INPUT', error.message, { field: error.field, issues: error.issues });
  if (error instanceof NotFoundError) return problem('NOT_FOUND', error.message);
  if (error instanceof ForbiddenError) return problem('FORBIDDEN', error.message);
  if (error instanceof QuotaExceededError) return problem('QUOTA_EXCEEDED', error.message, { retryAfterSeconds: Math.ceil(error.retryAfterMs / 1000) });
  if (error instanceof NoOpenQuestionError) return problem('NO_OPEN_QUESTION', error.message);
  if (error instanceof AnswerLimitError) return problem('ANSWER_LIMIT', error.message);
  if (error instanceof IdempotencyConflictError) return problem('IDEMPOTENCY_CONFLICT', error.message);
  if (error instanceof WorkflowFinishedError) return problem('WORKFLOW_FINISHED', error.message);
  if (error instanceof ResolutionNotAllowedError) return problem('RESOLUTION_NOT_ALLOWED', error.message, { attentionCode: error.attentionCode, allowedActions: error.allowedActions });
  if (error instanceof AgentCardError) return problem('AGENT_CARD_REJECTED', error.message, { field: 'cardUrl' });
  // The message names the category, the addressPolicy switch that allows it and the executables' variable.
  if (error instanceof BlockedAddressError) return problem('AGENT_ADDRESS_REFUSED', error.message, { field: error instanceof AgentAddressRefusedError ? error.field : 'cardUrl' });
  // Anything else an agent's host did while we fetched its card (refused, reset, timeout, DNS).
  if (error instanceof A2AError) return problem('AGENT_CARD_UNREACHABLE', `${error.message}`, { field: 'cardUrl' });
  if (error instanceof CorruptRecordError) return problem('CORRUPT_RECORD', `${error.message}; it stays in Redis for a person to inspect or delete`, { key: error.key });
  if (error instanceof ReplicationTimeoutError) return problem('REPLICATION_TIMEOUT', error.message);
  if (error instanceof JournalError && error.code === 'DELEGATION_MISSING') return problem('NOT_FOUND', error.message);
  const redisProblem = redisProblemOf(error);
  if (redisProblem) return problem(redisProblem.code, redisProblem.detail);
  const fastifyError = error as Partial<FastifyError>;
  // fastify's own client errors (malformed JSON, empty body, size, media type).
  if (fastifyError.statusCode === 413) return problem('PAYLOAD_TOO_LARGE', fastifyError.message ?? 'body too large');
  if (fastifyError.statusCode === 415) return problem('UNSUPPORTED_MEDIA_TYPE', fastifyError.message ?? 'unsupported media type');
  if (fastifyError.statusCode === 400) return problem('INVALID_INPUT', fastifyError.message ?? 'bad request', { field: '(body)' });
  return problem('INTERNAL', 'internal error');
}

/**
 * fastify error handler: problem+json; 5xx are logged with their cause, 4xx are not. An agent's
 * card that cannot be fetched (502) is the agent's fault, not ours: one warn line without a stack.
 */
export function problemErrorHandler(error: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const body = toProblem(error);
  // An outage is logged once as a state change (logRedisConnectionState, readiness), not once per request.
  if (body.code === 'REDIS_UNAVAILABLE' || body.code === 'REDIS_REFUSING_WRITES') request.log.debug({ err: error, code: body.code }, 'request refused: Redis unavailable or refusing writes');
  else if (body.code === 'AGENT_CARD_UNREACHABLE') request.log.warn({ code: body.code, detail: body.detail }, 'Agent Card could not be fetched');
  else if (body.status >= 500) request.log.error({ err: error }, 'request failed');
  return sendProblem(reply, body);
}

/** A 503 to a read says "retry"; only a write has an idempotency key to retry with. */
function withRetryAdvice(body: Problem, method: string): Problem {
  if (body.status !== 503 || (method !== 'GET' && method !== 'HEAD')) return body;
  return { ...body, title: body.title.replace('; retry with the same idempotency key', '; retry'), detail: body.detail.replace(/ with the same idempotency key/g, '') };
}

