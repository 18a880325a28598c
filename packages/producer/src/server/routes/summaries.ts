/**
 * `GET /v1/workflows`: workflow summaries (id, state, createdAt, updatedAt,
 * open question count, what a person is needed for), newest first (or, searching
 * by metadata or id prefix, by id), found through the search index and paged by
 * an opaque keyset cursor; workflows whose record does not parse are named in
 * `corrupt` instead of failing the listing. `ids` repeats the page's workflow ids for callers
 * of the earlier id-only listing.
 */
import { problemResponses } from '../schemas.ts';
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { AttentionSchema, decodeListingCursor, listWorkflowSummaries, type Journal } from '@durable-a2a/shared';
import { WORKFLOW_FILTER_STATES, WorkflowFilterSchema, journalFilter } from '../../calls/search.ts';
import { fromZodError } from '../../errors.ts';
import { workflowSummaryView } from '../../view.ts';
import { scopedFilter } from '../../tenancy.ts';
import { scopeOf } from '../callers.ts';

export { WORKFLOW_FILTER_STATES };

/** An opaque cursor from the previous page (base64url of the last row's sort key). */
export const ListingCursorSchema = z
  .string()
  .max(600)
  .refine((cursor) => decodeListingCursor(cursor) !== undefined, 'a cursor returned by the previous page');

/** `meta=key=value` (repeat the parameter for more pairs): a metadata pair, as the search index holds it. */
const MetaPairs = z
  .union([z.string(), z.array(z.string())])
  .transform((value) => (typeof value === 'string' ? [value] : value))
  .pipe(z.array(z.string().regex(/^[A-Za-z0-9._-]{1,64}=.{1,128}$/, 'key=value (key: 1 to 64 letters, digits, ".", "_" or "-"; value 1 to 128 characters)')).max(16));

export const WorkflowSummariesQuerySchema = z.object({
  state: z.enum(WORKFLOW_FILTER_STATES).optional(),
  /** Only workflows waiting for a person: an open question, or NEEDS_ATTENTION. */
  waiting: z.enum(['true', 'false']).transform((value) => value === 'true').optional(),
  attentionCode: WorkflowFilterSchema.shape.attentionCode,
  agent: WorkflowFilterSchema.shape.agent,
  meta: MetaPairs.optional().describe('a metadata pair key=value; repeat for more (every pair must match)'),
  idPrefix: WorkflowFilterSchema.shape.idPrefix,
  createdAfter: WorkflowFilterSchema.shape.createdAfter.describe('created at or after this instant (ISO 8601)'),
  createdBefore: WorkflowFilterSchema.shape.createdBefore.describe('created before this instant (ISO 8601)'),
  tenant: WorkflowFilterSchema.shape.tenant,
  cursor: ListingCursorSchema.optional(),
  limit: z.coerce.number().int().min(1).max(500).default(50),
});

/** The filter of a listing's query, checked by the one filter schema (a bad pair is a 400 naming it). */
function filterOfQuery(query: z.output<typeof WorkflowSummariesQuerySchema>) {
  const { cursor: _cursor, limit: _limit, meta, ...rest } = query;
  const metadata = meta && Object.fromEntries(meta.map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]));
  const parsed = WorkflowFilterSchema.safeParse({ ...rest, ...(metadata ? { metadata } : {}) });
  if (!parsed.success) throw fromZodError(parsed.error);
  return journalFilter(parsed.data);
}

export const WorkflowSummarySchema = z.object({
  workflowId: z.string(),
  tenant: z.string().describe('The tenant that owns the workflow'),
  state: z.string(),
  createdAt: z.iso.datetime().describe('When the workflow was created (ISO 8601)'),
  updatedAt: z.iso.datetime().describe('When its workflow row last changed (ISO 8601)'),
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
          summary: 'Workflow summaries matching a filter (state, waiting, attention code, agent, metadata pairs, id prefix, created range), through the search index, paged by cursor',
          description: 'Newest workflow-level change first; with `meta` or `idPrefix`, by workflow id. One call reads at most 2,000 candidates: a page may hold fewer than `limit` rows and still carry a `cursor`; continue while one is returned.',
          security: [{ bearer: [] }],
          querystring: WorkflowSummariesQuerySchema,
          response: { 200: WorkflowSummariesSchema, ...problemResponses(400) },
        },
      },
      async (request) => {
        const { cursor, limit } = request.query;
        // What the caller's tenant and role see (tenancy.ts): another tenant's workflows are not candidates at all.
        const filter = scopedFilter(scopeOf(request)!, filterOfQuery(request.query));
        if (!filter) return { workflows: [], ids: [] };
        const page = await listWorkflowSummaries(journal, filter, { cursor, limit });
        return {
          workflows: page.items.map(workflowSummaryView),
          ids: page.items.map((item) => item.workflowId),
          ...(page.cursor ? { cursor: page.cursor } : {}),
          ...(page.corrupt.length > 0 ? { corrupt: page.corrupt } : {}),
        };
      },
    );
  };
}
