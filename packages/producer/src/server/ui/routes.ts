/**
 * /ui: the page for people. Signed in with the form (`sign-in-page.ts`: the API token posted once → a session
 * cookie; see `session.ts` and `browser-auth.ts`), or with `Authorization: Bearer`. Reads come from the journal;
 * the actions (answer a question, resolve NEEDS_ATTENTION, cancel) go through the /v1 routes themselves (`inject`
 * with a configured API token), so they get the same validation, idempotency and problem answers as API clients.
 *
 * Forms post `application/x-www-form-urlencoded`. Every post must come from this origin (`browserAuth`). With the
 * script, a post answers the API's JSON and the page shows a visible confirmation; without it, a post redirects
 * back with `?done=<action>` (the page shows the same confirmation) or answers the page with the refusal.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { normalizeAgentCardUrl } from '@durable-a2a/a2a';
import { ID_PATTERN, listOpenQuestions, listWorkflowSummaries, nextChecks } from '@durable-a2a/shared';
import type { Producer } from '../../producer.ts';
import { ProducerInputError } from '../../errors.ts';
import type { WorkflowFilterInput } from '../../calls/search.ts';
import { UI_BASE_PATH } from '../admin.ts';
import { browserAuth } from '../browser-auth.ts';
import { problem, sendProblem, type Problem } from '../problem.ts';
import { SESSION_COOKIE, type Sessions } from '../session.ts';
import { bearerOf, cookieOf, oneOf } from '../auth.ts';
import { UI_FORWARD_HEADER } from '../callers.ts';
import { ListingCursorSchema, WORKFLOW_FILTER_STATES } from '../routes/summaries.ts';
import { BLANK_ANSWER_MESSAGE, UI_SCRIPT, UI_STYLE } from './assets.ts';
import type { Safe } from './html.ts';
import { LIMITS_NOTICES, agentsPage, agentsPanel, type LimitsDone } from './agents-page.ts';
import { registerAgentLimitsUi } from './agent-limits-routes.ts';
import { isSearch, listPage, listPanel, type ListQuery } from './list-page.ts';
import { DONE_NOTICES, workflowPage, workflowPanel, type DoneAction } from './workflow-page.ts';
import { registerBulkUi } from './bulk-page.ts';
import { openQuestionSummaryView, workflowSummaryView } from '../../view.ts';
import { registerSignIn } from './sign-in-routes.ts';

export interface UiOptions {
  producer: Producer;
  apiTokens: readonly string[];
  /** Browser sessions (shared with Bull Board). */
  sessions: Sessions;
  /** The root server, to send the actions through the /v1 routes. */
  server: FastifyInstance;
}

/** Workflows and questions per list page. */
const PAGE_SIZE = 25;
/** Form bodies are an answer's text at most: 64 KiB. */
const FORM_BODY_LIMIT_BYTES = 64 * 1024;

const Id = z.string().regex(ID_PATTERN);
const Blank = z.literal('').transform(() => undefined);
const ListQuerySchema = z.object({
  /** From the filter form: `waiting`, a state, or empty for all. */
  filter: z.union([z.literal(''), z.literal('waiting'), z.enum(WORKFLOW_FILTER_STATES)]).optional(),
  state: z.enum(WORKFLOW_FILTER_STATES).optional(),
  waiting: z.enum(['true', 'false']).optional(),
  cursor: ListingCursorSchema.optional(),
  /** Search: an id prefix and one metadata pair `key=value` (checked by the producer's filter schema). */
  idPrefix: z.string().max(128).optional().or(Blank),
  meta: z.string().max(200).optional().or(Blank),
});
const WorkflowParams = z.object({ id: Id });
const StepParams = z.object({ id: Id, step: Id });
const AgentsDoneQuery = z.object({ done: z.enum(Object.keys(LIMITS_NOTICES) as [LimitsDone, ...LimitsDone[]]).optional().catch(undefined) });
const DoneQuery = z.object({ done: z.enum(Object.keys(DONE_NOTICES) as [DoneAction, ...DoneAction[]]).optional().catch(undefined) });

function parseListQuery(raw: unknown): ListQuery | undefined {
  const parsed = ListQuerySchema.safeParse(raw);
  if (!parsed.success) return undefined;
  const { filter, state, waiting, cursor, idPrefix, meta } = parsed.data;
  const search = { idPrefix: idPrefix?.trim() || undefined, meta: meta?.trim() || undefined };
  if (filter !== undefined) return filter === 'waiting' ? { waiting: true, cursor, ...search } : { state: filter || undefined, cursor, ...search };
  return { state, waiting: waiting === 'true', cursor, ...search };
}

/** Sends an HTML fragment or page with a strong ETag of its bytes; 304 when the browser has it. */
function sendWithEtag(request: FastifyRequest, reply: FastifyReply, body: string, type: string): FastifyReply {
  const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
  reply.header('etag', etag).header('cache-control', 'private, no-cache').type(type);
  if (request.headers['if-none-match'] === etag) return reply.code(304).send();
  return reply.send(body);
}

const HIDDEN = { schema: { hide: true } };
const HTML = 'text/html; charset=utf-8';
const invalid = (reply: FastifyReply, what: string) => sendProblem(reply, problem('INVALID_INPUT', `invalid ${what}`));

/** What the pages need: the journal reads and the producer's view. */
function renderers(producer: Producer) {
  const journal = producer.journal;
  /** One page of summaries: the search (id prefix, metadata) or the plain listing; a filter the producer refuses is said on the page. */
  const workflows = async (query: ListQuery) => {
    if (!isSearch(query)) {
      const page = await listWorkflowSummaries(journal, { state: query.state, waiting: query.waiting }, { cursor: query.cursor, limit: PAGE_SIZE });
      return { ...page, items: page.items.map(workflowSummaryView) };
    }
    const separator = query.meta?.indexOf('=') ?? -1;
    const metadata = query.meta ? { [query.meta.slice(0, Math.max(0, separator))]: query.meta.slice(separator + 1) } : undefined;
    try {
      return await producer.search({ idPrefix: query.idPrefix, metadata, state: query.state as WorkflowFilterInput['state'], waiting: query.waiting || undefined }, { cursor: query.cursor, limit: PAGE_SIZE });
    } catch (error) {
      if (error instanceof ProducerInputError) return { items: [], refused: `${error.field}: ${error.message}` };
      throw error;
    }
  };
  return {
    async list(query: ListQuery): Promise<Safe> {
      const [page, questions] = await Promise.all([workflows(query), listOpenQuestions(journal, { limit: PAGE_SIZE })]);
      return listPanel(page, questions.items.map(openQuestionSummaryView), query);
    },
    /** The agents panel and the agents it shows (the limits form lists them). */
    async agents() {
      const agents = await producer.listAgents();
      return { agents, panel: agentsPanel(agents) };
    },
    /** The workflow's view (one read) and the panel rendered from it. */
    async workflow(id: string) {
      const [view, agents] = await Promise.all([producer.get(id), producer.listAgents()]);
      const ids = view.steps.flatMap((step) => [...step.attempts, ...step.compensations]).map((attempt) => attempt.delegationId);
      const agentNames = new Map(agents.map((agent) => [normalizeAgentCardUrl(agent.cardUrl), agent.card.name]));
      return { view, panel: workflowPanel(view, { nextChecks: await nextChecks(journal, id, ids), agentNames }) };
    },
  };
}


/** GET routes: the pages and their live panels (ETag). */
function registerPages(ui: FastifyInstance, render: ReturnType<typeof renderers>): void {
  for (const [path, whole] of [['/', true], ['/panel', false]] as const) {
    ui.get(path, HIDDEN, async (request, reply) => {
      const query = parseListQuery(request.query);
      if (!query) return invalid(reply, 'list filter or cursor');
      const panel = await render.list(query);
      return sendWithEtag(request, reply, whole ? listPage(panel, query) : panel.value, HTML);
    });
  }
  for (const [path, whole] of [['/agents', true], ['/agents/panel', false]] as const) {
    ui.get(path, HIDDEN, async (request, reply) => {
      const { panel, agents } = await render.agents();
      const done = AgentsDoneQuery.parse(request.query ?? {}).done;
      return sendWithEtag(request, reply, whole ? agentsPage(panel, agents, done && { text: LIMITS_NOTICES[done] }) : panel.value, HTML);
    });
  }
  for (const [path, whole] of [['/workflows/:id', true], ['/workflows/:id/panel', false]] as const) {
    ui.get(path, HIDDEN, async (request, reply) => {
      const params = WorkflowParams.safeParse(request.params);
      if (!params.success) return invalid(reply, 'workflow id');
      const { view, panel } = await render.workflow(params.data.id);
      const done = DoneQuery.parse(request.query ?? {}).done;
      return sendWithEtag(request, reply, whole ? workflowPage(view, panel, done && { text: DONE_NOTICES[done] }) : panel.value, HTML);
    });
  }
}

/**
 * POST routes: each forwards to its /v1 route. A script gets the API's answer; a plain form a redirect back with
 * `?done=<action>`, or the workflow page with the refusal.
 */
/**
 * The headers an action is forwarded to /v1 with: the person's own token (their Bearer, or the one their session was
 * signed in with), so the workflow's history names them (`token <name>`, or `session <name>` through a session).
 */
export function forwardHeaders(request: FastifyRequest, tokens: readonly string[], sessions: Sessions): Record<string, string> {
  const bearer = bearerOf(request);
  if (bearer !== undefined && oneOf(bearer, tokens)) return { authorization: `Bearer ${bearer}` };
  const token = sessions.tokenOf(cookieOf(request, SESSION_COOKIE));
  // browserAuth let the request in with a session: its token is one of ours (the first only if it was signed out meanwhile).
  return { authorization: `Bearer ${token ?? tokens[0]!}`, [UI_FORWARD_HEADER]: 'session' };
}

function registerActions(ui: FastifyInstance, server: FastifyInstance, headersOf: (request: FastifyRequest) => Record<string, string>, render: ReturnType<typeof renderers>): void {
  const forward = async (request: FastifyRequest, reply: FastifyReply, call: { url: string; payload: Record<string, string>; workflowId: string; done: DoneAction }) => {
    const response = await server.inject({ method: 'POST', url: call.url, payload: call.payload, headers: headersOf(request) });
    if (request.headers['x-da2a-ui'] === 'fetch') {
      return reply.code(response.statusCode).type(String(response.headers['content-type'] ?? 'application/json')).send(response.body);
    }
    if (response.statusCode < 400) return reply.redirect(`${UI_BASE_PATH}/workflows/${encodeURIComponent(call.workflowId)}?done=${call.done}`, 303);
    return refuse(request, reply, call.workflowId, response.json() as Problem);
  };
  /** A refusal: the problem for a script, else the workflow page saying it (the refusal's status). */
  const refuse = async (request: FastifyRequest, reply: FastifyReply, workflowId: string, refusal: Problem) => {
    if (request.headers['x-da2a-ui'] === 'fetch') return sendProblem(reply, refusal);
    const { view, panel } = await render.workflow(workflowId);
    return reply.code(refusal.status).type(HTML).send(workflowPage(view, panel, { text: `Refused: ${refusal.detail}`, refused: true }));
  };
  const field = (request: FastifyRequest, name: string) => (request.body as Record<string, string> | undefined)?.[name] ?? '';
  ui.post('/workflows/:id/steps/:step/reply', HIDDEN, async (request, reply) => {
    const params = StepParams.safeParse(request.params);
    if (!params.success) return invalid(reply, 'workflow or step id');
    const { id, step } = params.data;
    const text = field(request, 'text');
    if (text.trim() === '') return refuse(request, reply, id, problem('INVALID_INPUT', BLANK_ANSWER_MESSAGE, { field: 'text' }));
    return forward(request, reply, { url: `/v1/workflows/${id}/steps/${step}/reply`, payload: { text }, workflowId: id, done: 'answered' });
  });
  ui.post('/workflows/:id/resolve', HIDDEN, async (request, reply) => {
    const params = WorkflowParams.safeParse(request.params);
    if (!params.success) return invalid(reply, 'workflow id');
    const action = field(request, 'action');
    const { id } = params.data;
    return forward(request, reply, { url: `/v1/workflows/${id}/resolve`, payload: { action }, workflowId: id, done: action === 'retry' ? 'retry' : 'abandon' });
  });
  ui.post('/workflows/:id/cancel', HIDDEN, async (request, reply) => {
    const params = WorkflowParams.safeParse(request.params);
    if (!params.success) return invalid(reply, 'workflow id');
    const { id } = params.data;
    return forward(request, reply, { url: `/v1/workflows/${id}/cancel`, payload: {}, workflowId: id, done: 'cancel' });
  });
}

/** Form posts become a plain object of their fields (at most FORM_BODY_LIMIT_BYTES). */
function parseForms(ui: FastifyInstance): void {
  ui.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: FORM_BODY_LIMIT_BYTES }, (_request, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(String(body))));
  });
}

/**
 * Registers /ui in two contexts: the public one (sign-in and sign-out, the stylesheet and script: what the sign-in
 * page itself needs) and the signed-in one (pages and actions) behind `browserAuth`.
 */
export async function registerUi(root: FastifyInstance, options: UiOptions): Promise<void> {
  await root.register(
    async (ui) => {
      parseForms(ui);
      registerSignIn(ui, options.apiTokens, options.sessions);
      ui.get('/assets/ui.js', HIDDEN, async (request, reply) => sendWithEtag(request, reply, UI_SCRIPT, 'text/javascript; charset=utf-8'));
      ui.get('/assets/ui.css', HIDDEN, async (request, reply) => sendWithEtag(request, reply, UI_STYLE, 'text/css; charset=utf-8'));
    },
    { prefix: UI_BASE_PATH },
  );
  await root.register(
    async (ui) => {
      ui.addHook('onRequest', browserAuth(options.apiTokens, options.sessions));
      parseForms(ui);
      const render = renderers(options.producer);
      registerPages(ui, render);
      const headersOf = (request: FastifyRequest) => forwardHeaders(request, options.apiTokens, options.sessions);
      registerActions(ui, options.server, headersOf, render);
      registerBulkUi(ui, options.server, headersOf);
      registerAgentLimitsUi(ui, options.server, headersOf, render.agents);
    },
    { prefix: UI_BASE_PATH },
  );
}
