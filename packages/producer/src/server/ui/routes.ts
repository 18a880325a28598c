/**
 * /ui: the page for people. Behind the same browser auth as Bull Board
 * (token once → HttpOnly cookie). Reads come from the journal; the two
 * actions (answer a question, resolve NEEDS_ATTENTION) go through the /v1
 * routes themselves (`inject` with a configured API token), so they get the
 * same validation, idempotency and problem answers as API clients.
 *
 * Forms post `application/x-www-form-urlencoded`. A cross-site post cannot
 * carry the SameSite=Strict cookie, and a request whose Origin or
 * Sec-Fetch-Site says another site is refused anyway.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ID_PATTERN, listOpenQuestions, listWorkflowSummaries, nextChecks } from '@durable-a2a/shared';
import type { Producer } from '../../producer.ts';
import { UI_BASE_PATH, browserAuth } from '../admin.ts';
import { problem, sendProblem } from '../problem.ts';
import { ListingCursorSchema, WORKFLOW_FILTER_STATES } from '../routes/summaries.ts';
import { UI_SCRIPT, UI_STYLE } from './assets.ts';
import { html, page, type Safe } from './html.ts';
import { agentsPage, agentsPanel } from './agents-page.ts';
import { listPage, listPanel, type ListQuery } from './list-page.ts';
import { workflowPage, workflowPanel } from './workflow-page.ts';
import { registerBulkUi } from './bulk-page.ts';

export interface UiOptions {
  producer: Producer;
  apiTokens: readonly string[];
  /** The root server, to send the actions through the /v1 routes. */
  server: FastifyInstance;
}

/** Workflows and questions per list page. */
const PAGE_SIZE = 25;
/** Form bodies are an answer's text at most: 64 KiB. */
const FORM_BODY_LIMIT_BYTES = 64 * 1024;

const Id = z.string().regex(ID_PATTERN);
const ListQuerySchema = z.object({
  /** From the filter form: `waiting`, a state, or empty for all. */
  filter: z.union([z.literal(''), z.literal('waiting'), z.enum(WORKFLOW_FILTER_STATES)]).optional(),
  state: z.enum(WORKFLOW_FILTER_STATES).optional(),
  waiting: z.enum(['true', 'false']).optional(),
  cursor: ListingCursorSchema.optional(),
});
const WorkflowParams = z.object({ id: Id });
const StepParams = z.object({ id: Id, step: Id });

function parseListQuery(raw: unknown): ListQuery | undefined {
  const parsed = ListQuerySchema.safeParse(raw);
  if (!parsed.success) return undefined;
  const { filter, state, waiting, cursor } = parsed.data;
  if (filter !== undefined) return filter === 'waiting' ? { waiting: true, cursor } : { state: filter || undefined, cursor };
  return { state, waiting: waiting === 'true', cursor };
}

/** Sends an HTML fragment or page with a strong ETag of its bytes; 304 when the browser has it. */
function sendWithEtag(request: FastifyRequest, reply: FastifyReply, body: string, type: string): FastifyReply {
  const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
  reply.header('etag', etag).header('cache-control', 'private, no-cache').type(type);
  if (request.headers['if-none-match'] === etag) return reply.code(304).send();
  return reply.send(body);
}

/** True when the request comes from another site (Origin or Sec-Fetch-Site says so). */
function crossSite(request: FastifyRequest): boolean {
  const site = request.headers['sec-fetch-site'];
  if (typeof site === 'string' && site !== 'same-origin' && site !== 'none') return true;
  const origin = request.headers.origin;
  if (typeof origin !== 'string') return false;
  try {
    return new URL(origin).host !== request.headers.host;
  } catch {
    return true;
  }
}

const HIDDEN = { schema: { hide: true } };
const HTML = 'text/html; charset=utf-8';
const invalid = (reply: FastifyReply, what: string) => sendProblem(reply, problem('INVALID_INPUT', `invalid ${what}`));

/** What the pages need: the journal reads and the producer's view. */
function renderers(producer: Producer) {
  const journal = producer.journal;
  return {
    async list(query: ListQuery): Promise<Safe> {
      const [workflows, questions] = await Promise.all([
        listWorkflowSummaries(journal, { state: query.state, waiting: query.waiting }, { cursor: query.cursor, limit: PAGE_SIZE }),
        listOpenQuestions(journal, { limit: PAGE_SIZE }),
      ]);
      return listPanel(workflows, questions.items, query);
    },
    async agents(): Promise<Safe> {
      return agentsPanel(await producer.listAgents());
    },
    async workflow(id: string) {
      const view = await producer.get(id);
      const ids = view.steps.flatMap((step) => [...step.attempts, ...step.compensations]).map((attempt) => attempt.delegationId);
      return { view, panel: workflowPanel(view, await nextChecks(journal, id, ids)) };
    },
  };
}

/** GET routes: the pages, their live panels (ETag), the script and the stylesheet. */
function registerPages(ui: FastifyInstance, render: ReturnType<typeof renderers>): void {
  ui.get('/assets/ui.js', HIDDEN, async (request, reply) => sendWithEtag(request, reply, UI_SCRIPT, 'text/javascript; charset=utf-8'));
  ui.get('/assets/ui.css', HIDDEN, async (request, reply) => sendWithEtag(request, reply, UI_STYLE, 'text/css; charset=utf-8'));
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
      const panel = await render.agents();
      return sendWithEtag(request, reply, whole ? agentsPage(panel) : panel.value, HTML);
    });
  }
  for (const [path, whole] of [['/workflows/:id', true], ['/workflows/:id/panel', false]] as const) {
    ui.get(path, HIDDEN, async (request, reply) => {
      const params = WorkflowParams.safeParse(request.params);
      if (!params.success) return invalid(reply, 'workflow id');
      const { view, panel } = await render.workflow(params.data.id);
      return sendWithEtag(request, reply, whole ? workflowPage(view, panel) : panel.value, HTML);
    });
  }
}

/** The problem's detail of a refused action (`application/problem+json`), else a generic line. */
function refusalOf(body: string): string {
  try {
    const detail = (JSON.parse(body) as { detail?: unknown }).detail;
    return typeof detail === 'string' && detail !== '' ? detail : 'the request was refused';
  } catch {
    return 'the request was refused';
  }
}

/** The page a plain form post gets when its action was refused: the reason, visible, and the way back. */
const refusedPage = (body: string, back: string): string =>
  page('Not done', html`<h1>Not done</h1><p role="alert" class="error">Refused: ${refusalOf(body)}</p><p><a href="${back}">Back</a></p>`);

/** POST routes: each forwards to its /v1 route; a script gets the API's answer, a plain form a redirect back. */
function registerActions(ui: FastifyInstance, server: FastifyInstance, token: string): void {
  const forward = async (request: FastifyRequest, reply: FastifyReply, url: string, payload: Record<string, string>, back: string) => {
    if (crossSite(request)) return sendProblem(reply, problem('UNAUTHORIZED', 'cross-site form posts are refused'));
    const response = await server.inject({ method: 'POST', url, payload, headers: { authorization: `Bearer ${token}` } });
    if (request.headers['x-da2a-ui'] === 'fetch') {
      return reply.code(response.statusCode).type(String(response.headers['content-type'] ?? 'application/json')).send(response.body);
    }
    // A plain form post that was refused (a blank answer, a closed question): a page that says why, not raw JSON.
    if (response.statusCode >= 400) return reply.code(response.statusCode).type(HTML).send(refusedPage(response.body, back));
    return reply.redirect(back, 303);
  };
  const field = (request: FastifyRequest, name: string) => (request.body as Record<string, string> | undefined)?.[name] ?? '';
  ui.post('/workflows/:id/steps/:step/reply', HIDDEN, async (request, reply) => {
    const params = StepParams.safeParse(request.params);
    if (!params.success) return invalid(reply, 'workflow or step id');
    const { id, step } = params.data;
    return forward(request, reply, `/v1/workflows/${id}/steps/${step}/reply`, { text: field(request, 'text') }, `${UI_BASE_PATH}/workflows/${id}`);
  });
  ui.post('/workflows/:id/resolve', HIDDEN, async (request, reply) => {
    const params = WorkflowParams.safeParse(request.params);
    if (!params.success) return invalid(reply, 'workflow id');
    const { id } = params.data;
    return forward(request, reply, `/v1/workflows/${id}/resolve`, { action: field(request, 'action') }, `${UI_BASE_PATH}/workflows/${id}`);
  });
}

/** Registers /ui (pages and actions) in its own context with the browser auth hook and a form body parser. */
export async function registerUi(root: FastifyInstance, options: UiOptions): Promise<void> {
  await root.register(
    async (ui) => {
      ui.addHook('onRequest', browserAuth(options.apiTokens, UI_BASE_PATH));
      ui.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: FORM_BODY_LIMIT_BYTES }, (_request, body, done) => {
        done(null, Object.fromEntries(new URLSearchParams(String(body))));
      });
      registerPages(ui, renderers(options.producer));
      registerActions(ui, options.server, options.apiTokens[0]!);
      registerBulkUi(ui, options.server, options.apiTokens[0]!, crossSite);
    },
    { prefix: UI_BASE_PATH },
  );
}
