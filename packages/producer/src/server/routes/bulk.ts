/**
 * `POST /v1/bulk/workflows/{cancel|resolve|retry}`: one action on one page (at most 500) of the workflows a filter
 * matches, each through the single-workflow call (`Producer.bulk`); `dryRun: true` lists what would change and
 * writes nothing. Not under `/v1/workflows/…`: there `bulk` would shadow a workflow named `bulk`.
 */
import { z } from 'zod';
import { callerOf, producerFor } from '../callers.ts';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Producer } from '../../producer.ts';
import { BULK_ACTIONS, BulkInputSchema, type BulkItem } from '../../calls/bulk.ts';
import { ListingCursorSchema } from './summaries.ts';
import { problemResponses } from '../schemas.ts';

const BulkParamsSchema = z.object({ action: z.enum(BULK_ACTIONS) });

/** The body: the bulk input with a cursor checked like a listing's. */
export const BulkBodySchema = BulkInputSchema.extend({ cursor: ListingCursorSchema.optional().describe('from the previous answer: continue after its last workflow') });

const BulkItemSchema = z.object({
  workflowId: z.string(),
  state: z.string().describe('the state the call read'),
  outcome: z.enum(['done', 'would', 'skipped']).describe('done; would (dry run); skipped, with the code of why not'),
  code: z.string().optional().describe('WORKFLOW_FINISHED, NOT_WAITING, RESOLUTION_NOT_ALLOWED, NOT_FOUND'),
  detail: z.string().optional(),
  resultState: z.string().optional().describe('resolve/retry: the state after the decision'),
  allowedActions: z.array(z.enum(['retry', 'abandon'])).optional().describe('RESOLUTION_NOT_ALLOWED: what a person may decide instead'),
}) satisfies z.ZodType<BulkItem>;

export const BulkResultSchema = z.object({
  action: z.enum(BULK_ACTIONS),
  dryRun: z.boolean(),
  items: z.array(BulkItemSchema),
  cursor: z.string().optional().describe('more workflows may match: call again with it'),
});

export function bulkRoutes(producer: Producer): FastifyPluginAsyncZod {
  return async (app) => {
    app.post(
      '/bulk/workflows/:action',
      {
        schema: {
          operationId: 'bulkWorkflowAction',
          tags: ['workflows'],
          summary: 'Cancel, resolve or retry every workflow a filter matches, one page (at most 500) per call, each through the single-workflow call; dryRun lists what would change',
          description:
            'The filter must name at least one criterion. `resolve` takes `resolution` (retry or abandon); `retry` is resolve with retry. The answer lists per workflow what was done (or, dry run, would be) or why not; `cursor` continues.',
          security: [{ bearer: [] }],
          params: BulkParamsSchema,
          body: BulkBodySchema,
          response: { 200: BulkResultSchema.describe('What was done (or would be) per workflow'), ...problemResponses(400, 403, 413, 415) },
        },
      },
      async (request) => producerFor(request, producer).bulk(request.params.action, request.body, { by: callerOf(request) }),
    );
  };
}
