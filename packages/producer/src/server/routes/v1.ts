/**
 * /v1: workflows, delegations, replies, cancellation, agents and flow control (agent limits, tenant weights). Bodies are
 * validated by the route schemas (strict: unknown fields are refused), then
 * again by the producer (which is the contract for library callers too).
 * Every route declares its real statuses; 401 and 503 apply to all.
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { z } from 'zod';
import type { AddressPolicyOptions } from '@durable-a2a/a2a';
import type { Producer } from '../../producer.ts';
import { LongPollQuerySchema, viewAfterWaiting } from '../../wait.ts';
import { checkAgentAddresses } from '../../agent-addresses.ts';
import type { DeadlineConfig } from '../deadline.ts';
import {
  CancelResultSchema,
  CreatedSchema,
  DelegateInputSchema,
  ReplyBodySchema,
  ReplyResultSchema,
  ResolveBodySchema,
  ResolveResultSchema,
  StepParamsSchema,
  WorkflowDefinitionSchema,
  WorkflowParamsSchema,
  WorkflowViewSchema,
  problemResponses,
} from '../schemas.ts';
import { agentRoutes } from './agents.ts';
import { callerOf, producerFor } from '../callers.ts';
import { questionRoutes } from './questions.ts';
import { summaryRoutes } from './summaries.ts';
import { bulkRoutes } from './bulk.ts';
import { flowRoutes } from './flow.ts';

const security = [{ bearer: [] }];
const created = { 200: CreatedSchema.describe('Already existed (same idempotency key, same request)'), 201: CreatedSchema.describe('Created') };

/** The Fastify instance a /v1 route group is added to (zod type provider). */
type V1App = Parameters<FastifyPluginAsyncZod>[0];
/** Refuses a body naming an agent address the policy does not allow (before anything is written). */
type AddressCheck = (request: { body: unknown }) => Promise<void>;

/** `addressPolicy`: checked on every fixed agent URL of a request body before anything is written. */
export function v1Routes(producer: Producer, addressPolicy: AddressPolicyOptions = {}): FastifyPluginAsyncZod {
  const checkAddresses: AddressCheck = async (request) => checkAgentAddresses(request.body as Parameters<typeof checkAgentAddresses>[0], addressPolicy);
  return async (app) => {
    startRoutes(app, producer);
    await app.register(summaryRoutes(producer.journal));
    await app.register(questionRoutes(producer.journal));
    await app.register(bulkRoutes(producer));
    workflowViewRoute(app, producer);
    replyRoute(app, producer);
    decisionRoutes(app, producer);
    await app.register(agentRoutes(producer, checkAddresses));
    await app.register(flowRoutes(producer));
  };
}

/** POST /workflows and POST /delegations: start work (idempotent). The producer checks every agent address (422) before anything is written. */
function startRoutes(app: V1App, producer: Producer): void {
  app.post(
    '/workflows',
    {
      schema: {
        operationId: 'startWorkflow',
        tags: ['workflows'],
        summary: 'Start a workflow (idempotent on workflowId)',
        description: 'The definition is checked fully before anything is written: unknown fields, unique step names without ".", "|", ":" or a reserved prefix, `after` naming earlier steps only, at most 100 steps, every agent address.',
        security,
        body: WorkflowDefinitionSchema,
        response: { ...created, ...problemResponses(400, 403, 409, 413, 415, 422, 429) },
      },
    },
    async (request, reply) => {
      const result = await producerFor(request, producer).startWorkflow(request.body as Parameters<Producer['startWorkflow']>[0]);
      return reply.code(result.created ? 201 : 200).send(result);
    },
  );

  app.post(
    '/delegations',
    {
      schema: {
        operationId: 'delegate',
        tags: ['workflows'],
        summary: 'Delegate one message to one agent (idempotent on idempotencyKey)',
        security,
        body: DelegateInputSchema,
        response: { ...created, ...problemResponses(400, 403, 409, 413, 415, 422, 429) },
      },
    },
    async (request, reply) => {
      const result = await producerFor(request, producer).delegate(request.body);
      return reply.code(result.created ? 201 : 200).send(result);
    },
  );
}

/** GET /workflows/:id: the journal view, optionally after a long poll. */
function workflowViewRoute(app: V1App, producer: Producer): void {
  app.get(
    '/workflows/:id',
    {
      schema: {
        operationId: 'getWorkflow',
        tags: ['workflows'],
        summary: 'The journal view of a workflow: every step and attempt, with progress, tries, last error and next check. With waitMs (capped at 30000), a long poll: answers once the workflow is finished or needs a person (or, with untilQuestion=true, asks a question), else after waitMs',
        security,
        params: WorkflowParamsSchema,
        querystring: LongPollQuerySchema,
        response: { 200: WorkflowViewSchema.describe('The workflow view'), ...problemResponses(400, 404, 422) },
      },
      // A long poll is answered within its wait plus the normal request deadline (deadline.ts).
      config: { deadlineExtensionMs: (request) => LongPollQuerySchema.safeParse(request.query).data?.waitMs ?? 0 } satisfies DeadlineConfig,
    },
    async (request, reply) => {
      const clientGone = new AbortController();
      reply.raw.once('close', () => clientGone.abort()); // before the answer: the client left
      // The view's own interface has no index signature; the schema is loose on purpose.
      return (await viewAfterWaiting(producerFor(request, producer), request.params.id, request.query, clientGone.signal)) as unknown as z.output<typeof WorkflowViewSchema>;
    },
  );
}

/** POST /workflows/:id/steps/:step/reply: answer a step's open question. */
function replyRoute(app: V1App, producer: Producer): void {
  app.post(
    '/workflows/:id/steps/:step/reply',
    {
      schema: {
        operationId: 'replyToStep',
        tags: ['workflows'],
        summary: 'Answer the open question (INPUT_REQUIRED / AUTH_REQUIRED) of a step',
        security,
        params: StepParamsSchema,
        body: ReplyBodySchema,
        response: { 200: ReplyResultSchema.describe('The same reply was already journaled: the earlier reply (a different reply to an answered question is 409 NO_OPEN_QUESTION)'), 202: ReplyResultSchema.describe('Reply journaled; it is sent on the same task'), ...problemResponses(400, 403, 404, 409, 422) },
      },
    },
    async (request, reply) => {
      const { id, step } = request.params;
      const answer = request.body.text ?? { parts: request.body.parts! };
      const result = await producerFor(request, producer).reply(id, answer, step, { by: callerOf(request), ...(request.body.messageId ? { messageId: request.body.messageId } : {}) });
      return reply.code(result.created ? 202 : 200).send(result);
    },
  );
}

/** POST /workflows/:id/cancel and /resolve: a person stops a workflow or decides on one that needs attention. */
function decisionRoutes(app: V1App, producer: Producer): void {
  app.post(
    '/workflows/:id/cancel',
    {
      schema: {
        operationId: 'cancelWorkflow',
        tags: ['workflows'],
        summary: 'Cancel a workflow (CancelTask for running tasks, then compensation)',
        security,
        params: WorkflowParamsSchema,
        response: { 202: CancelResultSchema.describe('Cancellation requested'), ...problemResponses(400, 403, 404, 409, 422) },
      },
    },
    async (request, reply) => {
      await producerFor(request, producer).cancel(request.params.id, { by: callerOf(request) });
      return reply.code(202).send({ id: request.params.id, cancelRequested: true as const });
    },
  );

  app.post(
    '/workflows/:id/resolve',
    {
      schema: {
        operationId: 'resolveWorkflow',
        tags: ['workflows'],
        summary: 'A person decides on a workflow in NEEDS_ATTENTION: retry (the AMBIGUOUS attempts, or the failed compensation, as new ones), or abandon (undo what can be undone, else FAILED)',
        security,
        params: WorkflowParamsSchema,
        body: ResolveBodySchema,
        response: { 202: ResolveResultSchema.describe('Decision recorded; the workflow runs again'), ...problemResponses(400, 403, 404, 409, 415, 422) },
      },
    },
    async (request, reply) => {
      const result = await producerFor(request, producer).resolve(request.params.id, request.body.action, { by: callerOf(request) });
      return reply.code(202).send({ id: request.params.id, ...result });
    },
  );
}
