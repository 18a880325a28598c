/**
 * Request schemas of the HTTP API. The same zod schemas validate requests
 * (fastify-type-provider-zod) and generate /openapi.json.
 */
import { z } from 'zod';
import { PartSchema } from '@durable-a2a/a2a';
import { AgentLimitsSchema, AttentionSchema, ID_PATTERN, RecordedErrorSchema, TenantNameSchema, TenantSchema, TenantWeightSchema, WORKFLOW_ID_PATTERN, WORKFLOW_STATES } from '@durable-a2a/shared';
import { StrictWorkflowDefinitionSchema as WorkflowDefinitionSchema } from '../definition.ts';
import { DelegateInputSchema } from '../producer.ts';
import { AnswerPartsSchema, AnswerTextSchema } from '../calls/reply.ts';

const Id = z.string().regex(ID_PATTERN, 'letters, digits, ".", "_" or "-", 1 to 128 characters');
/** A workflow id as a route takes it: the caller's own id, or a stored one (`<tenant>~<id>`, tenant.ts). */
const WorkflowId = z.string().regex(WORKFLOW_ID_PATTERN, 'a workflow id: letters, digits, ".", "_" or "-", 1 to 128 characters, optionally after "<tenant>~"');

export { WorkflowDefinitionSchema, DelegateInputSchema };

export const WorkflowParamsSchema = z.object({ id: WorkflowId });
export const StepParamsSchema = z.object({ id: WorkflowId, step: Id });

/** Redis SCAN cursors are unsigned 64-bit numbers. */
const MAX_CURSOR = 2n ** 64n - 1n;

export const ListWorkflowsQuerySchema = z.strictObject({
  state: z.enum(WORKFLOW_STATES).optional(),
  /** Opaque cursor from the previous page. */
  cursor: z
    .string()
    .regex(/^(0|[1-9]\d{0,19})$/, 'a cursor returned by the previous page')
    .refine((text) => /^\d{1,20}$/.test(text) && BigInt(text) <= MAX_CURSOR, 'a cursor returned by the previous page (an unsigned 64-bit number)')
    .optional(),
  limit: z.coerce.number().int().min(1).max(500).default(50),
});

export const ReplyBodySchema = z
  .strictObject({
    text: AnswerTextSchema.optional(),
    parts: AnswerPartsSchema.optional(),
    messageId: Id.optional()
      .describe("The reply's identity (idempotency key): sent again, the reply journaled under it is the answer (200), whatever question is open now; other content under it is 409 IDEMPOTENCY_CONFLICT. Default: a new one"),
  })
  .refine((body) => (body.text === undefined) !== (body.parts === undefined), { message: 'give exactly one of text or parts', path: ['text'] });

export const RegisterAgentBodySchema = z.strictObject({
  cardUrl: z.url({ protocol: /^https?$/, error: 'an http(s) Agent Card URL' }),
  tenant: TenantSchema.nullable().optional().describe('Register for this tenant only (no other tenant sees or uses it); null: shared by every tenant; absent: as it was (a new agent is shared)'),
});

export const PushParamsSchema = z.object({ workflowId: WorkflowId, delegationId: Id });

/** `{id, created}` of an idempotent create: 201 when created, 200 when it existed. */
export const CreatedSchema = z.object({ id: z.string(), created: z.boolean(), messageId: z.string().optional() });

/** `POST /v1/workflows/:id/resolve`: a person's decision on a workflow in NEEDS_ATTENTION. */
export const ResolveBodySchema = z.strictObject({ action: z.enum(['retry', 'abandon']) });

/** RFC 9457 problem details, as every error response carries them (see problem.ts). */
export const ProblemSchema = z.looseObject({
  type: z.string(),
  title: z.string(),
  status: z.number().int(),
  detail: z.string(),
  code: z.string().describe('Stable code to match on, e.g. INVALID_INPUT, REDIS_UNAVAILABLE'),
  field: z.string().optional().describe('The offending field, dotted'),
  issues: z.array(z.object({ field: z.string(), message: z.string() })).optional(),
  attentionCode: z.string().optional().describe('RESOLUTION_NOT_ALLOWED: what the workflow needs attention for'),
  allowedActions: z.array(z.enum(['retry', 'abandon'])).optional().describe('RESOLUTION_NOT_ALLOWED: the decisions possible for that attention code'),
  retryAfterSeconds: z.number().int().optional().describe('QUOTA_EXCEEDED: when to try again (also the Retry-After header)'),
});

const PROBLEM_DESCRIPTIONS: Record<number, string> = {
  400: 'Invalid input (INVALID_INPUT), naming the field',
  401: 'Missing or wrong credentials (UNAUTHORIZED)',
  403: "Forbidden (FORBIDDEN): the token's role does not allow this action (a viewer writing, a non-operator changing the agent registry)",
  404: "Not found (NOT_FOUND), also a workflow of another tenant (its existence is not revealed)",
  409: 'Conflict (IDEMPOTENCY_CONFLICT, WORKFLOW_FINISHED, NO_OPEN_QUESTION, ANSWER_LIMIT, RESOLUTION_NOT_ALLOWED with allowedActions)',
  413: 'Body too large (PAYLOAD_TOO_LARGE)',
  415: 'Unsupported media type',
  429: "The tenant is at a quota (QUOTA_EXCEEDED): nothing was written; Retry-After says when to try again",
  422: 'Agent address refused by the address policy (AGENT_ADDRESS_REFUSED), Agent Card rejected (AGENT_CARD_REJECTED), or a stored record that does not parse (CORRUPT_RECORD, naming its `key`)',
  502: 'The Agent Card could not be fetched (AGENT_CARD_UNREACHABLE)',
  503: 'Redis unavailable (REDIS_UNAVAILABLE), Redis refusing writes (REDIS_REFUSING_WRITES) or no answer in time (REQUEST_TIMEOUT); Retry-After says when to retry with the same idempotency key',
};

/** Problem responses for `statuses` (401 and 503 are added: every /v1 route can answer them). */
export function problemResponses(...statuses: number[]): Record<number, z.ZodType> {
  return Object.fromEntries([...new Set([...statuses, 401, 503])].map((status) => [status, ProblemSchema.describe(PROBLEM_DESCRIPTIONS[status] ?? 'Problem')]));
}

/** An instant of a view: ISO 8601, UTC (`toISOString()`). */
const Instant = z.iso.datetime().describe('ISO 8601 instant');

const AttemptSchema = z.looseObject({
  delegationId: z.string(),
  step: z.string(),
  kind: z.enum(['step', 'compensation']),
  attempt: z.number().int(),
  state: z.string(),
  taskId: z.string().optional(),
  contextId: z.string().optional(),
  finished: z.boolean(),
  resultText: z.string().optional().describe('Artifacts text, else the direct reply message, else the final status message'),
  progress: z.union([
    z.enum(['sending', 'waiting for the agent', 'held', 'following', 'polling', 'parked', 'waiting for a person', 'finished']),
    z.string().regex(/^waiting for a slot at \S+$/).describe("The send waits for its agent's limits (fleet-wide maxInFlight or rate, a worker's share, a pause the agent asked for); nothing was sent"),
  ]),
  createdAt: Instant.describe('When the attempt was journaled (ISO 8601)'),
  updatedAt: Instant.describe('When its journal row last changed (ISO 8601)'),
  sendStartedAt: Instant.optional().describe('When its first SendMessage started (ISO 8601)'),
  finishedAt: Instant.optional().describe('When it reached a terminal state (ISO 8601)'),
  verifiedAt: Instant.optional().describe('When its effect was verified (ISO 8601)'),
  questionAskedAt: Instant.optional().describe('When its current question was journaled (ISO 8601)'),
  questionExpiredAt: Instant.optional().describe('When a question expired unanswered (ISO 8601)'),
  firstNotFoundAt: Instant.optional().describe('When the agent first answered that the task was not found (ISO 8601)'),
  noProgressSince: Instant.optional().describe('Start of the current run of observations without progress (ISO 8601)'),
  replySendUntil: Instant.optional().describe("Deadline of the reply's sending lease (ISO 8601)"),
  tries: z.number().int().describe('Tries of this attempt: SendMessage calls made, plus tries that ended before one could be made (the Agent Card could not be fetched)'),
  lastError: RecordedErrorSchema.describe('The last classified error journaled for this attempt').optional(),
  nextTryAt: Instant.optional()
    .describe('While the attempt waits for an agent that could not be reached (progress "waiting for the agent"): when the next try is due (ISO 8601, in the future)'),
  unreachableSince: Instant.optional().describe('Since when the agent of this unfinished attempt could not be reached (ISO 8601)'),
  nextCheckAt: Instant.optional().describe('When the reconciler next checks this attempt (ISO 8601)'),
  abandoned: z.literal(true).optional().describe('A compensation a person gave up (resolve abandon on COMPENSATION_FAILED): its undo will never happen'),
});

/** `GET /v1/workflows/:id`: the journal view of a workflow. */
/** One history entry of a workflow view (history-view.ts; docs/people.md "History"); the stored entry's other fields come along. */
export const HistoryEntrySchema = z.looseObject({
  kind: z.string().describe('question, answer, answer-refused, cancel, resolution, redelegation, verification, compensation, dropped (n older entries dropped), or a kind a later release writes'),
  at: Instant.describe('When it was journaled (ISO 8601)'),
  delegationId: z.string().optional(),
  step: z.string().optional(),
  text: z.string().optional().describe("A question's or an answer's text; a refused answer's reason; a dropped marker's sentence"),
  by: z.string().optional().describe('Who acted: token <name>, session <name>, link <id>, or what a library caller passed'),
  request: z.object({ messageId: z.string(), text: z.string() }).optional().describe('A question: the request it belongs to (the attempt\'s messageId and text)'),
  summary: z.string().describe('One line a person reads: what happened, to which attempt, by whom'),
});

export const WorkflowViewSchema = z.looseObject({
  workflowId: z.string().describe("The stored id: another tenant than `default` shows it as `<tenant>~<id>` (docs/tenants.md)"),
  tenant: z.string().describe('The tenant that owns the workflow'),
  state: z.string(),
  cancelRequested: z.boolean(),
  failure: z.array(z.string()).optional(),
  attention: AttentionSchema.describe('Why a person is needed (NEEDS_ATTENTION): stable code, message, the delegation to look at and the evidence').optional(),
  retryApproved: z.array(z.string()).optional().describe('Delegation ids a person approved to send again (resolve retry); absent when none'),
  abandonedCompensations: z
    .array(z.string())
    .optional()
    .describe('Compensation delegation ids a person gave up (resolve abandon on COMPENSATION_FAILED): their effect is left in place; absent when none'),
  createdAt: Instant.describe('When the workflow was created (ISO 8601)'),
  updatedAt: Instant.describe('When its workflow row last changed (ISO 8601)'),
  definition: z.looseObject({ workflowId: z.string(), steps: z.array(z.looseObject({ name: z.string() })) }),
  steps: z.array(z.object({ name: z.string(), attempts: z.array(AttemptSchema), compensations: z.array(AttemptSchema) })),
  openQuestions: z.array(
    z.looseObject({
      step: z.string(),
      delegationId: z.string(),
      state: z.enum(['INPUT_REQUIRED', 'AUTH_REQUIRED']),
      text: z.string(),
      askedAt: z.string().optional().describe('When the agent asked (ISO 8601, UTC; as the agent wrote it when it could not be read)'),
    }),
  ),
  history: z.array(HistoryEntrySchema).describe('What happened, oldest first, bounded (docs/people.md "History")'),
});

export const WorkflowListSchema = z.object({ ids: z.array(z.string()), cursor: z.string().optional() });
export const AgentSchema = z
  .object({
    id: z.string().describe('Stable id: the first 16 hex digits of the SHA-256 of the normalized card URL'),
    cardUrl: z.string().describe('The normalized Agent Card URL (any spelling of it names this agent)'),
    card: z.looseObject({ name: z.string(), description: z.string(), version: z.string(), skills: z.array(z.looseObject({ id: z.string() })), capabilities: z.looseObject({}), interfaces: z.array(z.looseObject({ url: z.string() })) }),
    status: z.enum(['active', 'disabled', 'unavailable']).describe('Only active agents are picked for a skill; delegations already bound to an agent go on'),
    statusReason: z.string().nullable().describe('Why the agent is not picked for a skill; null when active'),
    registeredAt: Instant,
    refreshedAt: Instant.describe('When the registered card was last written'),
    disabled: z.object({ since: Instant, reason: z.string().nullable() }).nullable(),
    unavailable: z.object({ reason: z.string(), since: Instant }).nullable(),
    tenant: z.string().nullable().optional().describe('The tenant the agent is registered for (no other tenant sees or uses it); null: shared by every tenant'),
    limits: z
      .object({ maxInFlight: z.number().int().optional(), rate: z.object({ sendsPerSecond: z.number().optional(), resubscribesPerSecond: z.number().optional() }).optional() })
      .nullable()
      .optional()
      .describe("The operator's fleet-wide limits of this agent (SendMessage calls in flight, sends and resubscriptions per second); null when none"),
    lastCardFetchAt: Instant.nullable().describe('The last card fetch (a worker or registration), null when none recorded'),
    lastCardFetchOk: z.boolean().nullable(),
    lastSuccessAt: Instant.nullable(),
    lastError: z.object({ kind: z.enum(['card', 'send']), message: z.string(), at: Instant }).nullable(),
    health: z
      .object({ window: z.number().int(), calls: z.number().int(), successes: z.number().int(), successRate: z.number().min(0).max(1).nullable() })
      .describe('Success rate over the last `window` calls (card fetches and SendMessages); null before any call'),
  })
  .describe('A registered agent');
export const AgentListSchema = z.object({ agents: z.array(AgentSchema) });
/** An agent by its id (`AgentSchema.id`) or its card URL (URL-encoded, any spelling). */
export const AgentParamsSchema = z.object({
  id: z
    .string()
    .max(2048)
    .refine((value) => /^[0-9a-f]{16}$/.test(value) || URL.canParse(value), 'an agent id (16 hex digits) or an http(s) Agent Card URL')
    .describe('Agent id, or its card URL URL-encoded'),
});
export const DisableAgentBodySchema = z.strictObject({ reason: z.string().max(500).optional().describe('Shown with the agent while it is disabled') });
export const AgentRemovedSchema = z.object({ id: z.string(), cardUrl: z.string(), removed: z.literal(true) });
export const ReplyResultSchema = z.object({ messageId: z.string(), created: z.boolean() });
export const CancelResultSchema = z.object({ id: z.string(), cancelRequested: z.literal(true) });
export const ResolveResultSchema = z.looseObject({ id: z.string(), state: z.string() });

/**
 * `PUT /v1/agents/:id/limits`: an agent's fleet-wide limits (the registry's `AgentLimitsSchema`), at least one of them;
 * `DELETE` clears them.
 */
export const AgentLimitsBodySchema = AgentLimitsSchema.refine(
  (limits) => limits.maxInFlight !== undefined || limits.rate?.sendsPerSecond !== undefined || limits.rate?.resubscribesPerSecond !== undefined,
  { message: 'give at least one limit: maxInFlight, rate.sendsPerSecond or rate.resubscribesPerSecond (DELETE clears them)', path: ['maxInFlight'] },
).describe('maxInFlight: SendMessage calls in flight at the agent at once, across every worker (1 to 100000); rate: sends and resubscriptions started per second');
/** A tenant as send jobs name it. */
export const TenantParamsSchema = z.object({ tenant: TenantNameSchema.describe('Tenant name, 1 to 64 characters (URL-encoded)') });
export const TenantWeightBodySchema = z.strictObject({ weight: TenantWeightSchema.describe('A whole number 1 to 100; default 1') });
export const TenantWeightViewSchema = z.object({
  tenant: z.string(),
  weight: z.number().int().describe('The weight its sends are placed with (1 when none was set)'),
  set: z.boolean().describe('False when the tenant has the default weight'),
});
export const TenantWeightsSchema = z.object({
  weights: z.record(z.string(), z.number().int()).describe('Every tenant whose weight was set, by name'),
  defaultWeight: z.literal(1).describe('The weight of every other tenant'),
});
