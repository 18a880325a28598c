/**
 * /ui/bulk: acting on many workflows by filter. The form (action, metadata pairs, state, attention code, agent, id
 * prefix) first shows a dry run (`GET /ui/bulk?…&preview=1`: what each workflow would get, nothing written), then a
 * Confirm button posts the same filter (`POST /ui/bulk`) and the page lists what was done. Both go through
 * `POST /v1/bulk/workflows/{action}` (`inject` with the UI's API token), so validation, the bound per call and the
 * answers are the API's; a page covers one call (at most 100 workflows here), Continue takes the next.
 */
import { z } from 'zod';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ATTENTION_CODES } from '@durable-a2a/shared';
import { BULK_ACTIONS, type BulkResult } from '../../calls/bulk.ts';
import { WORKFLOW_FILTER_STATES } from '../../calls/search.ts';
import { badge, html, page, type Safe } from './html.ts';

/** Workflows per bulk call from the page. */
const PAGE_LIMIT = 100;

const FormSchema = z.object({
  action: z.enum(BULK_ACTIONS).default('cancel'),
  resolution: z.enum(['retry', 'abandon']).optional().or(z.literal('').transform(() => undefined)),
  meta: z.string().max(4_096).default(''),
  state: z.enum(WORKFLOW_FILTER_STATES).optional().or(z.literal('').transform(() => undefined)),
  attentionCode: z.enum(ATTENTION_CODES).optional().or(z.literal('').transform(() => undefined)),
  agent: z.string().max(2_048).default(''),
  idPrefix: z.string().max(128).default(''),
  cursor: z.string().max(600).default(''),
  preview: z.string().optional(),
});
type Form = z.output<typeof FormSchema>;

/** The API's filter of the form: metadata one `key=value` per line. */
function filterOf(form: Form): Record<string, unknown> {
  const metadata = Object.fromEntries(
    form.meta
      .split(/\r?\n/)
      .map((line) => line.trim())
      .filter(Boolean)
      .map((line) => [line.slice(0, Math.max(0, line.indexOf('='))), line.slice(line.indexOf('=') + 1)]),
  );
  return {
    ...(Object.keys(metadata).length > 0 ? { metadata } : {}),
    ...(form.state ? { state: form.state } : {}),
    ...(form.attentionCode ? { attentionCode: form.attentionCode } : {}),
    ...(form.agent ? { agent: form.agent } : {}),
    ...(form.idPrefix ? { idPrefix: form.idPrefix } : {}),
  };
}

const option = (value: string, selected: string | undefined, label = value) => html`<option value="${value}"${value === (selected ?? '') ? html` selected` : ''}>${label}</option>`;

function formSection(form: Form): Safe {
  return html`<form class="bulk" method="get" action="/ui/bulk">
<input type="hidden" name="preview" value="1">
<p><label for="bulk-action">Action</label> <select id="bulk-action" name="action">${BULK_ACTIONS.map((action) => option(action, form.action))}</select>
<label for="bulk-resolution">Decision (resolve)</label> <select id="bulk-resolution" name="resolution">${option('', form.resolution, '–')}${option('retry', form.resolution)}${option('abandon', form.resolution)}</select></p>
<p><label for="bulk-meta">Metadata, one key=value per line</label><br><textarea id="bulk-meta" name="meta" rows="3" cols="40">${form.meta}</textarea></p>
<p><label for="bulk-state">State</label> <select id="bulk-state" name="state">${option('', form.state, 'any')}${WORKFLOW_FILTER_STATES.map((state) => option(state, form.state))}</select>
<label for="bulk-attention">Attention code</label> <select id="bulk-attention" name="attentionCode">${option('', form.attentionCode, 'any')}${ATTENTION_CODES.map((code) => option(code, form.attentionCode))}</select></p>
<p><label for="bulk-agent">Agent URL</label> <input id="bulk-agent" name="agent" value="${form.agent}" size="40">
<label for="bulk-prefix">Id prefix</label> <input id="bulk-prefix" name="idPrefix" value="${form.idPrefix}"></p>
<button type="submit">Preview (dry run)</button>
</form>`;
}

/** The hidden fields that carry the form to the Confirm or Continue post. */
const hiddenFields = (form: Form, cursor: string) =>
  html`${(['action', 'resolution', 'meta', 'state', 'attentionCode', 'agent', 'idPrefix'] as const).map((name) => html`<input type="hidden" name="${name}" value="${form[name] ?? ''}">`)}<input type="hidden" name="cursor" value="${cursor}">`;

function resultSection(form: Form, result: BulkResult): Safe {
  const rows = result.items.map(
    (item) => html`<tr><th scope="row"><a href="/ui/workflows/${encodeURIComponent(item.workflowId)}">${item.workflowId}</a></th><td>${badge(item.state)}</td><td>${item.outcome}${item.resultState ? html` → ${badge(item.resultState)}` : ''}</td><td>${item.code ? html`<code>${item.code}</code> ${item.detail ?? ''}` : ''}</td></tr>`,
  );
  const changing = result.items.filter((item) => item.outcome !== 'skipped').length;
  const confirm = result.dryRun && changing > 0 ? html`<form method="post" action="/ui/bulk">${hiddenFields(form, form.cursor)}<button type="submit">Confirm: ${form.action} ${changing} workflow(s)</button></form>` : '';
  const next = result.cursor ? html`<form method="get" action="/ui/bulk"><input type="hidden" name="preview" value="1">${hiddenFields(form, result.cursor)}<button type="submit">Continue with the next ${PAGE_LIMIT}</button></form>` : '';
  return html`<section aria-labelledby="bulk-result"><h2 id="bulk-result">${result.dryRun ? `Dry run: ${changing} would change` : `Done: ${changing} changed`}, ${result.items.length - changing} skipped</h2>
${rows.length === 0 ? html`<p>No workflow matches.</p>` : html`<table class="workflows"><thead><tr><th scope="col">Workflow</th><th scope="col">State</th><th scope="col">Outcome</th><th scope="col">Why not</th></tr></thead><tbody>${rows}</tbody></table>`}
${confirm}${next}</section>`;
}

/** Registers GET /bulk (form and dry run) and POST /bulk (the real call) on the /ui context. */
export function registerBulkUi(ui: FastifyInstance, server: FastifyInstance, headersOf: (request: FastifyRequest) => Record<string, string> | undefined): void {
  const call = async (request: FastifyRequest, reply: FastifyReply, form: Form, dryRun: boolean) => {
    const payload = { filter: filterOf(form), dryRun, limit: PAGE_LIMIT, ...(form.cursor ? { cursor: form.cursor } : {}), ...(form.resolution ? { resolution: form.resolution } : {}) };
    const response = await server.inject({ method: 'POST', url: `/v1/bulk/workflows/${form.action}`, payload, headers: headersOf(request) ?? {} });
    const answer = response.statusCode === 200 ? (response.json() as BulkResult) : undefined;
    const refused = answer ? '' : html`<p class="refused" role="alert">${(response.json() as { detail?: string }).detail ?? `refused (${response.statusCode})`}</p>`;
    const body = html`<h1>Act on many workflows</h1>${formSection(form)}${refused}${answer ? resultSection(form, answer) : ''}`;
    return reply.code(answer ? 200 : response.statusCode).type('text/html; charset=utf-8').send(page('Bulk actions', body));
  };
  ui.get('/bulk', { schema: { hide: true } }, async (request, reply) => {
    const form = FormSchema.safeParse(request.query);
    if (!form.success) return reply.code(400).type('text/html; charset=utf-8').send(page('Bulk actions', html`<h1>Act on many workflows</h1><p role="alert">Invalid form.</p>`));
    if (!form.data.preview) return reply.type('text/html; charset=utf-8').send(page('Bulk actions', html`<h1>Act on many workflows</h1>${formSection(form.data)}`));
    return call(request, reply, form.data, true);
  });
  ui.post('/bulk', { schema: { hide: true } }, async (request, reply) => {
    const form = FormSchema.safeParse(request.body ?? {});
    if (!form.success) return reply.code(400).type('text/html; charset=utf-8').send(page('Bulk actions', html`<h1>Act on many workflows</h1><p role="alert">Invalid form.</p>`));
    return call(request, reply, form.data, false);
  });
}
