/**
 * Flow control over HTTP (docs/flow-control.md): an agent's fleet-wide limits (`PUT` / `DELETE
 * /v1/agents/:id/limits`; read back in the agent's view) and tenants' weights in the send queue's fairness
 * (`GET /v1/tenants/weights`, `GET` / `PUT` / `DELETE /v1/tenants/:tenant/weight`). Workers read agent limits every
 * `agentLabelRefreshMs` (30 s by default); a weight applies to the next send enqueued.
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Producer } from '../../producer.ts';
import { AgentLimitsBodySchema, AgentParamsSchema, AgentSchema, TenantParamsSchema, TenantWeightBodySchema, TenantWeightViewSchema, TenantWeightsSchema, problemResponses } from '../schemas.ts';

const security = [{ bearer: [] }];

/** The routes above, on the /v1 prefix. Every one needs an API token (the auth hook of /v1). */
export function flowRoutes(producer: Producer): FastifyPluginAsyncZod {
  return async (app) => {
    app.put(
      '/agents/:id/limits',
      {
        schema: {
          operationId: 'setAgentLimits',
          tags: ['agents'],
          summary: "Set an agent's fleet-wide limits (replacing any earlier ones): SendMessage calls in flight at once, sends and resubscriptions per second. Workers honour them within agentLabelRefreshMs (30 s by default)",
          security,
          params: AgentParamsSchema,
          body: AgentLimitsBodySchema,
          response: { 200: AgentSchema.describe('The agent, with its limits'), ...problemResponses(400, 404, 415) },
        },
      },
      async (request) => producer.setAgentLimits(request.params.id, request.body),
    );

    app.delete(
      '/agents/:id/limits',
      {
        schema: {
          operationId: 'clearAgentLimits',
          tags: ['agents'],
          summary: "Clear an agent's fleet-wide limits (the agent is then not limited; a fleet's defaultAgentLimits are for unregistered agents only)",
          security,
          params: AgentParamsSchema,
          response: { 200: AgentSchema.describe('The agent, limits null'), ...problemResponses(400, 404) },
        },
      },
      async (request) => producer.setAgentLimits(request.params.id, undefined),
    );

    app.get(
      '/tenants/weights',
      { schema: { operationId: 'listTenantWeights', tags: ['tenants'], summary: "Every tenant's weight in the send queue's fairness that was set; the others weigh 1", security, response: { 200: TenantWeightsSchema, ...problemResponses() } } },
      async () => ({ weights: await producer.tenantWeights(), defaultWeight: 1 as const }),
    );

    app.get(
      '/tenants/:tenant/weight',
      { schema: { operationId: 'getTenantWeight', tags: ['tenants'], summary: "One tenant's weight in the send queue's fairness (1 when none was set)", security, params: TenantParamsSchema, response: { 200: TenantWeightViewSchema, ...problemResponses(400) } } },
      async (request) => producer.tenantWeight(request.params.tenant),
    );

    app.put(
      '/tenants/:tenant/weight',
      {
        schema: {
          operationId: 'setTenantWeight',
          tags: ['tenants'],
          summary: "Set a tenant's weight in the send queue's fairness: a tenant of weight 2 gets two sends for another's one while both have sends waiting. Applies to sends enqueued from then on",
          security,
          params: TenantParamsSchema,
          body: TenantWeightBodySchema,
          response: { 200: TenantWeightViewSchema, ...problemResponses(400, 415) },
        },
      },
      async (request) => producer.setTenantWeight(request.params.tenant, request.body.weight),
    );

    app.delete(
      '/tenants/:tenant/weight',
      { schema: { operationId: 'clearTenantWeight', tags: ['tenants'], summary: "Clear a tenant's weight back to the default, 1", security, params: TenantParamsSchema, response: { 200: TenantWeightViewSchema, ...problemResponses(400) } } },
      async (request) => producer.setTenantWeight(request.params.tenant, undefined),
    );
  };
}
