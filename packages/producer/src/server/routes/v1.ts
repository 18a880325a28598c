/**
 * /v1: workflows, delegations, replies, cancellation and agents. Bodies are
 * validated by the route schemas, then again by the producer (which is the
 * contract for library callers too).
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AddressPolicyOptions } from '@durable-a2a/shared';
import type { Producer } from '../../producer.ts';
import { checkAgentAddresses } from '../agent-addresses.ts';
import {
  CreatedSchema,
  DelegateInputSchema,
  ListWorkflowsQuerySchema,
  RegisterAgentBodySchema,
  ReplyBodySchema,
  ResolveBodySchema,
  StepParamsSchema,
  WorkflowDefinitionSchema,
  WorkflowParamsSchema,
} from '../schemas.ts';

const security = [{ bearer: [] }];

/** `addressPolicy`: checked on every fixed agent URL of a request body before anything is written. */
export function v1Routes(producer: Producer, addressPolicy: AddressPolicyOptions = {}): FastifyPluginAsyncZod {
  const checkAddresses = async (request: { body: unknown }) => checkAgentAddresses(request.body as Parameters<typeof checkAgentAddresses>[0], addressPolicy);
  return async (app) => {
    app.post(
      '/workflows',
      {
        schema: { tags: ['workflows'], summary: 'Start a workflow (idempotent on workflowId)', security, body: WorkflowDefinitionSchema, response: { 200: CreatedSchema, 201: CreatedSchema } },
        preHandler: checkAddresses,
      },
      async (request, reply) => {
        const result = await producer.startWorkflow(request.body as Parameters<Producer['startWorkflow']>[0]);
        return reply.code(result.created ? 201 : 200).send(result);
      },
    );

    app.post(
      '/delegations',
      {
        schema: { tags: ['workflows'], summary: 'Delegate one message to one agent (idempotent on idempotencyKey)', security, body: DelegateInputSchema, response: { 200: CreatedSchema, 201: CreatedSchema } },
        preHandler: checkAddresses,
      },
      async (request, reply) => {
        const result = await producer.delegate(request.body);
        return reply.code(result.created ? 201 : 200).send(result);
      },
    );

    app.get(
      '/workflows',
      { schema: { tags: ['workflows'], summary: 'List workflow ids, optionally by state, paged by cursor', security, querystring: ListWorkflowsQuerySchema } },
      async (request) => producer.listWorkflows(request.query),
    );

    app.get(
      '/workflows/:id',
      { schema: { tags: ['workflows'], summary: 'The journal view of a workflow: every step and attempt', security, params: WorkflowParamsSchema } },
      async (request) => producer.get(request.params.id),
    );

    app.post(
      '/workflows/:id/steps/:step/reply',
      { schema: { tags: ['workflows'], summary: 'Answer the open question (INPUT_REQUIRED / AUTH_REQUIRED) of a step', security, params: StepParamsSchema, body: ReplyBodySchema } },
      async (request, reply) => {
        const { id, step } = request.params;
        const answer = request.body.text ?? { parts: request.body.parts! };
        const result = await producer.reply(id, answer, step);
        return reply.code(result.created ? 202 : 200).send(result);
      },
    );

    app.post(
      '/workflows/:id/cancel',
      { schema: { tags: ['workflows'], summary: 'Cancel a workflow (CancelTask for running tasks, then compensation)', security, params: WorkflowParamsSchema } },
      async (request, reply) => {
        await producer.cancel(request.params.id);
        return reply.code(202).send({ id: request.params.id, cancelRequested: true });
      },
    );

  app.post(
      '/workflows/:id/resolve',
      { schema: { tags: ['workflows'], summary: 'A person decides on a workflow in NEEDS_ATTENTION: retry the AMBIGUOUS attempts, or abandon (compensate)', security, params: WorkflowParamsSchema, body: ResolveBodySchema } },
      async (request, reply) => {
        const result = await producer.resolve(request.params.id, request.body.action);
        return reply.code(202).send({ id: request.params.id, ...result });
      },
    );

    app.post(
      '/agents',
      { schema: { tags: ['agents'], summary: 'Register (or refresh) an agent by its Agent Card URL', security, body: RegisterAgentBodySchema }, preHandler: checkAddresses },
      async (request, reply) => reply.code(201).send(await producer.registerAgent(request.body.cardUrl)),
    );

    app.get('/agents', { schema: { tags: ['agents'], summary: 'Registered agents', security } }, async () => ({ agents: await producer.listAgents() }));
  };
}
