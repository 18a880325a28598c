/**
 * /v1/agents: the agent registry. An agent is named in a path by its id (`GET /v1/agents` shows it: the first 16 hex
 * digits of the SHA-256 of its normalized card URL) or by its card URL, URL-encoded, in any spelling. Registering
 * another spelling of a registered card URL refreshes that one agent. Disabling keeps an agent listed but never
 * picked for a skill; removing forgets it. Delegations already bound to an agent go on either way.
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Producer } from '../../producer.ts';
import { producerFor } from '../callers.ts';
import { AgentListSchema, AgentParamsSchema, AgentRemovedSchema, AgentSchema, DisableAgentBodySchema, RegisterAgentBodySchema, problemResponses } from '../schemas.ts';

const security = [{ bearer: [] }];
const tags = ['agents'];

/** `checkAddresses`: refuses a card URL the address policy does not allow (422), before the card is fetched. */
export function agentRoutes(producer: Producer, checkAddresses: (request: { body: unknown }) => Promise<void>): FastifyPluginAsyncZod {
  return async (app) => {
    app.post(
      '/agents',
      {
        schema: {
          operationId: 'registerAgent',
          tags,
          summary: 'Register (or refresh) an agent by its Agent Card URL or base URL (normalized: one agent per card URL)',
          security,
          body: RegisterAgentBodySchema,
          response: { 201: AgentSchema.describe('Registered'), ...problemResponses(400, 403, 422, 502) },
        },
        preHandler: checkAddresses,
      },
      async (request, reply) => reply.code(201).send(await producerFor(request, producer).registerAgent(request.body.cardUrl, request.body.tenant === undefined ? {} : { tenant: request.body.tenant })),
    );

    app.get(
      '/agents',
      { schema: { operationId: 'listAgents', tags, summary: 'Registered agents, with status and health', security, response: { 200: AgentListSchema.describe('Every registered agent'), ...problemResponses() } } },
      async (request) => ({ agents: await producerFor(request, producer).listAgents() }),
    );

    app.get(
      '/agents/:id',
      { schema: { operationId: 'getAgent', tags, summary: 'One registered agent', security, params: AgentParamsSchema, response: { 200: AgentSchema, ...problemResponses(400, 404) } } },
      async (request) => producerFor(request, producer).getAgent(request.params.id),
    );

    for (const [verb, disabled] of [['disable', true], ['enable', false]] as const) {
      app.post(
        `/agents/:id/${verb}`,
        {
          schema: {
            operationId: `${verb}Agent`,
            tags,
            summary: disabled ? 'Disable an agent: never picked for a skill; delegations bound to it go on' : 'Enable a disabled agent',
            security,
            params: AgentParamsSchema,
            ...(disabled ? { body: DisableAgentBodySchema.nullish() } : {}),
            response: { 200: AgentSchema, ...problemResponses(400, 403, 404) },
          },
        },
        async (request) => producerFor(request, producer).setAgentDisabled(request.params.id, disabled, (request.body as { reason?: string } | null | undefined)?.reason),
      );
    }

    app.delete(
      '/agents/:id',
      {
        schema: {
          operationId: 'removeAgent',
          tags,
          summary: 'Remove an agent (its card, disabled mark and health); delegations bound to it go on',
          security,
          params: AgentParamsSchema,
          response: { 200: AgentRemovedSchema, ...problemResponses(400, 403, 404) },
        },
      },
      async (request) => ({ ...(await producerFor(request, producer).removeAgent(request.params.id)), removed: true as const }),
    );
  };
}
