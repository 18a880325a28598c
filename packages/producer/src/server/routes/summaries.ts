/**
 * `GET /v1/workflows`: workflow summaries (id, state, createdAt, updatedAt,
 * open question count, what a person is needed for), newest first, paged by
 * an opaque keyset cursor; workflows whose record does not parse are named in
 * `corrupt` instead of failing the listing. `ids` repeats the page's workflow ids for callers
 * of the earlier id-only listing.
 */
import { problemResponses } from '../schemas.ts';
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { AttentionSchema, WORKFLOW_STATES, decodeListingCursor, listWorkflowSummaries, type Journal } from '@durable-a2a/shared';

/** Workflow states, plus the two question states (workflows with such an open question). */
export const WORKFLOW_FILTER_STATES = [...WORKFLOW_STATES, 'INPUT_REQUIRED', 'AUTH_REQUIRED'] as const;

/** An opaque cursor from the previous page (base64url of the last row's sort key). */
export const ListingCursorSchema = z
  .string()
  .max(600)
  .refine((cursor) => decodeListingCursor(cursor) !== undefined, 'a cursor returned by the previous page');

export const WorkflowSummariesQuerySchema = z.object({
  state: z.enum(WORKFLOW_FILTER_STATES).optional(),
  /** Only workflows waiting for a person: an open question, or NEEDS_ATTENTION. */
  waiting: z.enum(['true', 'false']).transform((value) => value === 'true').optional(),
  cursor: ListingCursorSchema.optional(),
  limit: z.coerce.number().int().min(1).max(500).default(50),
});

export const WorkflowSummarySchema = z.object({
  workflowId: z.string(),
  state: z.string(),
  createdAt: z.number(),
  updatedAt: z.number(),
  openQuestions: z.number(),
  waitingFor: z.enum(['INPUT_REQUIRED', 'AUTH_REQUIRED', 'NEEDS_ATTENTION']).optional(),
  attention: AttentionSchema.optional(),
});

export const WorkflowSummariesSchema = z.object({
  workflows: z.array(WorkflowSummarySchema),
  ids: z.array(z.string()),
  cursor: z.string().optional(),
  /** Workflows left out because their record does not parse: the key to inspect; their own view answers `CORRUPT_RECORD`. */
  corrupt: z.array(z.object({ workflowId: z.string(), key: z.string(), code: z.literal('CORRUPT_RECORD') })).optional(),
});

export function summaryRoutes(journal: Journal): FastifyPluginAsyncZod {
  return async (app) => {
    app.get(
      '/workflows',
      {
        schema: {
          operationId: 'listWorkflows',
          tags: ['workflows'],
          summary: 'Workflow summaries, newest first, by state or waiting for a person, paged by cursor',
          security: [{ bearer: [] }],
          querystring: WorkflowSummariesQuerySchema,
          response: { 200: WorkflowSummariesSchema, ...problemResponses(400) },
        },
      },
      async (request) => {
        const { state, waiting, cursor, limit } = request.query;
        const page = await listWorkflowSummaries(journal, { state, waiting }, { cursor, limit });
        return {
          workflows: page.items,
          ids: page.items.map((item) => item.workflowId),
          ...(page.cursor ? { cursor: page.cursor } : {}),
          ...(page.corrupt.length > 0 ? { corrupt: page.corrupt } : {}),
        };
      },
    );
  };
}
