/**
 * Request schemas of the HTTP API. The same zod schemas validate requests
 * (fastify-type-provider-zod) and generate /openapi.json.
 */
import { z } from 'zod';
import { ID_PATTERN, PartSchema, WORKFLOW_STATES } from '@durable-a2a/shared';
import { StrictWorkflowDefinitionSchema as WorkflowDefinitionSchema } from '../definition.ts';
import { DelegateInputSchema } from '../producer.ts';

const Id = z.string().regex(ID_PATTERN, 'letters, digits, ".", "_" or "-", 1 to 128 characters');

export { WorkflowDefinitionSchema, DelegateInputSchema };

export const WorkflowParamsSchema = z.object({ id: Id });
export const StepParamsSchema = z.object({ id: Id, step: Id });

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
    text: z.string().min(1, 'must not be empty').optional(),
    parts: z.array(PartSchema).min(1, 'must not be empty').optional(),
  })
  .refine((body) => (body.text === undefined) !== (body.parts === undefined), { message: 'give exactly one of text or parts', path: ['text'] });

export const RegisterAgentBodySchema = z.strictObject({ cardUrl: z.url({ protocol: /^https?$/, error: 'an http(s) Agent Card URL' }) });

export const PushParamsSchema = z.object({ workflowId: Id, delegationId: Id });

/** `{id, created}` of an idempotent create: 201 when created, 200 when it existed. */
export const CreatedSchema = z.object({ id: z.string(), created: z.boolean(), messageId: z.string().optional() });

/** `POST /v1/workflows/:id/resolve`: a person's decision on a workflow in NEEDS_ATTENTION. */
export const ResolveBodySchema = z.strictObject({ action: z.enum(['retry', 'abandon']) });
