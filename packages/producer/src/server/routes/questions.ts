/**
 * `GET /v1/questions`: the open questions (INPUT_REQUIRED / AUTH_REQUIRED
 * without a journaled reply) across workflows, newest first, paged. Answer
 * one with `POST /v1/workflows/:id/steps/:step/reply`.
 */
import { problemResponses } from '../schemas.ts';
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { TenantSchema, listOpenQuestions, type Journal } from '@durable-a2a/shared';
import { listedTenant } from '../../tenancy.ts';
import { scopeOf } from '../callers.ts';
import { ListingCursorSchema } from './summaries.ts';
import { openQuestionSummaryView } from '../../view.ts';

export const QuestionsQuerySchema = z.object({
  cursor: ListingCursorSchema.optional(),
  tenant: TenantSchema.optional().describe("the workflows' tenant (operators; anyone else sees their own tenant's only)"),
  limit: z.coerce.number().int().min(1).max(500).default(50),
});

export const QuestionSummarySchema = z.object({
  workflowId: z.string(),
  step: z.string(),
  delegationId: z.string(),
  state: z.enum(['INPUT_REQUIRED', 'AUTH_REQUIRED']),
  taskId: z.string().optional(),
  text: z.string(),
  askedAt: z.iso.datetime().describe('When the agent asked (ISO 8601): its status timestamp, else when the row last changed'),
});

export const QuestionsPageSchema = z.object({ questions: z.array(QuestionSummarySchema), cursor: z.string().optional() });

export function questionRoutes(journal: Journal): FastifyPluginAsyncZod {
  return async (app) => {
    app.get(
      '/questions',
      {
        schema: {
          operationId: 'listQuestions',
          tags: ['workflows'],
          summary: 'Open questions across workflows, newest first, paged by cursor',
          security: [{ bearer: [] }],
          querystring: QuestionsQuerySchema,
          response: { 200: QuestionsPageSchema, ...problemResponses(400) },
        },
      },
      async (request) => {
        const tenant = listedTenant(scopeOf(request)!, request.query.tenant);
        if (tenant === 'none') return { questions: [] };
        const page = await listOpenQuestions(journal, { cursor: request.query.cursor, limit: request.query.limit, ...(tenant !== undefined ? { tenant } : {}) });
        return { questions: page.items.map(openQuestionSummaryView), ...(page.cursor ? { cursor: page.cursor } : {}) };
      },
    );
  };
}
