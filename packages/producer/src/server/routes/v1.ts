/**
 * /v1: workflows, delegations, replies, cancellation and agents. Bodies are
 * validated by the route schemas, then again by the producer (which is the
 * contract for library callers too).
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Producer } from '../../producer.ts';
import { LongPollQuerySchema, viewAfterWaiting } from '../../wait.ts';
import {
  CreatedSchema,
  DelegateInputSchema,
  RegisterAgentBodySchema,
  ReplyBodySchema,
  ResolveBodySchema,
  StepParamsSchema,
  WorkflowDefinitionSchema,
  WorkflowParamsSchema,
} from '../schemas.ts';
import { questionRoutes } from './questions.ts';
import { summaryRoutes } from './summaries.ts';

const security = [{ bearer: [] }];

export function v1Routes(producer: Producer): FastifyPluginAsyncZod {
  return async (app) => {
    app.post(
      '/workflows',
      {
        schema: { tags: ['workflows'], summary: 'Start a workflow (idempotent on workflowId)', security, body: WorkflowDefinitionSchema, response: { 200: CreatedSchema, 201: CreatedSchema } },
      },
      async (request, reply) => {
        const result = await producer.startWorkflow(request.body);
        return reply.code(result.created ? 201 : 200).send(result);
      },
    );

    app.post(
      '/delegations',
      {
        schema: { tags: ['workflows'], summary: 'Delegate one message to one agent (idempotent on idempotencyKey)', security, body: DelegateInputSchema, response: { 200: CreatedSchema, 201: CreatedSchema } },
      },
      async (request, reply) => {
        const result = await producer.delegate(request.body);
        return reply.code(result.created ? 201 : 200).send(result);
      },
    );

    await app.register(summaryRoutes(producer.journal));
    await app.register(questionRoutes(producer.journal));

    app.get(
      '/workflows/:id',
      {
        schema: {
          tags: ['workflows'],
          summary: 'The journal view of a workflow: every step and attempt. With waitMs (capped at 30000), a long poll: answers once the workflow is finished or needs a person (or, with untilQuestion=true, asks a question), else after waitMs',
          security,
          params: WorkflowParamsSchema,
          querystring: LongPollQuerySchema,
        },
      },
      async (request, reply) => {
        const clientGone = new AbortController();
        reply.raw.once('close', () => clientGone.abort()); // before the answer: the client left
        return viewAfterWaiting(producer, request.params.id, request.query, clientGone.signal);
      },
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
      { schema: { tags: ['agents'], summary: 'Register (or refresh) an agent by its Agent Card URL', security, body: RegisterAgentBodySchema } },
      async (request, reply) => reply.code(201).send(await producer.registerAgent(request.body.cardUrl)),
    );

    app.get('/agents', { schema: { tags: ['agents'], summary: 'Registered agents', security } }, async () => ({ agents: await producer.listAgents() }));
  };
}
