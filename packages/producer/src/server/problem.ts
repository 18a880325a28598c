/**
 * Errors as RFC 9457 `application/problem+json`: `{type, title, status,
 * detail, code, field?}`. `code` is stable (tests and clients match on it);
 * one table maps each code to its HTTP status and title.
 */
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { AgentCardError, JournalError, ReplicationTimeoutError } from '@durable-a2a/shared';
import { IdempotencyConflictError, NoOpenQuestionError, NotFoundError, ProducerInputError, WorkflowFinishedError } from '../errors.ts';

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/** Every problem code the service answers with: HTTP status and title. */
export const PROBLEMS = {
  INVALID_INPUT: { status: 400, title: 'Invalid input' },
  UNAUTHORIZED: { status: 401, title: 'Unauthorized' },
  TASK_MISMATCH: { status: 403, title: 'Task does not belong to this delegation' },
  NOT_FOUND: { status: 404, title: 'Not found' },
  NO_OPEN_QUESTION: { status: 409, title: 'No open question' },
  IDEMPOTENCY_CONFLICT: { status: 409, title: 'Idempotency key already used for another request' },
  WORKFLOW_FINISHED: { status: 409, title: 'Workflow already finished' },
  PAYLOAD_TOO_LARGE: { status: 413, title: 'Payload too large' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, title: 'Unsupported media type' },
  AGENT_CARD_REJECTED: { status: 422, title: 'Agent Card rejected' },
  UNAVAILABLE: { status: 503, title: 'Service unavailable' },
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
}

export function problem(code: ProblemCode, detail: string, extra: Pick<Problem, 'field' | 'issues'> = {}): Problem {
  const { status, title } = PROBLEMS[code];
  return { type: `urn:durable-a2a:problem:${code.toLowerCase().replaceAll('_', '-')}`, title, status, detail, code, ...extra };
}

export function sendProblem(reply: FastifyReply, body: Problem): FastifyReply {
  if (body.code === 'UNAUTHORIZED') reply.header('www-authenticate', 'Bearer');
  return reply.code(body.status).type(PROBLEM_CONTENT_TYPE).send(body);
}

/** A zod issue path (`/steps/0/name`) as a dotted field name (`steps.0.name`). */
const fieldOf = (instancePath: string) => instancePath.replace(/^\//, '').replaceAll('/', '.') || '(input)';

/** Maps anything thrown by a route (or by fastify before it) to a problem. */
export function toProblem(error: unknown): Problem {
  if (hasZodFastifySchemaValidationErrors(error)) {
    const issues = error.validation.map((issue) => ({ field: fieldOf(issue.instancePath), message: issue.message ?? 'invalid' }));
    const first = issues[0]!;
    const where = (error as FastifyError).validationContext ?? 'body';
    return problem('INVALID_INPUT', `invalid ${where} ${first.field}: ${first.message}`, { field: first.field, issues });
  }
  if (error instanceof ProducerInputError) return problem('INVALID_INPUT', error.message, { field: error.field, issues: error.issues });
  if (error instanceof NotFoundError) return problem('NOT_FOUND', error.message);
  if (error instanceof NoOpenQuestionError) return problem('NO_OPEN_QUESTION', error.message);
  if (error instanceof IdempotencyConflictError) return problem('IDEMPOTENCY_CONFLICT', error.message);
  if (error instanceof WorkflowFinishedError) return problem('WORKFLOW_FINISHED', error.message);
  if (error instanceof AgentCardError) return problem('AGENT_CARD_REJECTED', error.message, { field: 'cardUrl' });
  if (error instanceof ReplicationTimeoutError) return problem('REPLICATION_TIMEOUT', error.message);
  if (error instanceof JournalError && error.code === 'DELEGATION_MISSING') return problem('NOT_FOUND', error.message);
  const fastifyError = error as Partial<FastifyError>;
  // fastify's own client errors (malformed JSON, empty body, size, media type).
  if (fastifyError.statusCode === 413) return problem('PAYLOAD_TOO_LARGE', fastifyError.message ?? 'body too large');
  if (fastifyError.statusCode === 415) return problem('UNSUPPORTED_MEDIA_TYPE', fastifyError.message ?? 'unsupported media type');
  if (fastifyError.statusCode === 400) return problem('INVALID_INPUT', fastifyError.message ?? 'bad request', { field: '(body)' });
  return problem('INTERNAL', 'internal error');
}

/** fastify error handler: problem+json; 5xx are logged with their cause, 4xx are not. */
export function problemErrorHandler(error: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const body = toProblem(error);
  if (body.status >= 500) request.log.error({ err: error }, 'request failed');
  return sendProblem(reply, body);
}
