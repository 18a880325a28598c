/**
 * The /ui workflows list: a state filter (including "waiting for a person"),
 * the open questions across workflows, and workflow summaries newest first,
 * paged by the listing cursor. `listPanel` is the live part the page polls.
 */
import { WORKFLOW_STATES, type CorruptListing, type Page } from '@durable-a2a/shared';
import type { OpenQuestionSummaryView, WorkflowSummaryView } from '../../view.ts';
import { badge, html, page, time, type Safe } from './html.ts';
import { waitingForText } from './workflow-page.ts';

/** The list's filter as the page's query string carries it. */
export interface ListQuery {
  state?: string;
  waiting?: boolean;
  cursor?: string;
  /** Search: workflow ids starting with this. */
  idPrefix?: string;
  /** Search: one metadata pair `key=value`. */
  meta?: string;
}

/** True when the query searches (id prefix or metadata) rather than lists. */
export const isSearch = (query: ListQuery): boolean => Boolean(query.idPrefix || query.meta);

const FILTERS: { value: string; label: string }[] = [
  { value: '', label: 'All workflows' },
  { value: 'waiting', label: 'Waiting for a person (questions, needs attention)' },
  { value: 'INPUT_REQUIRED', label: 'With an open question (INPUT_REQUIRED)' },
  { value: 'AUTH_REQUIRED', label: 'Waiting for a credential (AUTH_REQUIRED)' },
  ...WORKFLOW_STATES.map((state) => ({ value: state, label: state })),
];

const selectedFilter = (query: ListQuery) => (query.waiting ? 'waiting' : (query.state ?? ''));

/** Query string of the list for a filter (and optional cursor). */
export function listSearch(query: ListQuery): string {
  const params = new URLSearchParams();
  if (query.waiting) params.set('waiting', 'true');
  if (query.state) params.set('state', query.state);
  if (query.idPrefix) params.set('idPrefix', query.idPrefix);
  if (query.meta) params.set('meta', query.meta);
  if (query.cursor) params.set('cursor', query.cursor);
  const text = params.toString();
  return text ? `?${text}` : '';
}

function questionsSection(questions: OpenQuestionSummaryView[]): Safe {
  if (questions.length === 0) return html`<section aria-labelledby="questions-heading"><h2 id="questions-heading">Open questions</h2><p>No agent is waiting for an answer.</p></section>`;
  return html`<section aria-labelledby="questions-heading"><h2 id="questions-heading">Open questions (${questions.length})</h2>
<ul class="questions">${questions.map(
    (question) => html`<li class="question-summary"><a href="/ui/workflows/${encodeURIComponent(question.workflowId)}#question-${question.delegationId}">${question.workflowId} · ${question.step}</a>
<span class="muted">waits for ${waitingForText(question.state)}:</span> <q>${question.text || '(no text)'}</q> <span class="muted">asked ${time(question.askedAt)}</span></li>`,
  )}</ul></section>`;
}

/** Workflows left out because their record does not parse: named with the key a person should inspect. */
function corruptSection(corrupt: readonly CorruptListing[]): Safe {
  if (corrupt.length === 0) return html``;
  return html`<section aria-labelledby="corrupt-heading" class="corrupt"><h2 id="corrupt-heading">Unreadable records (${corrupt.length})</h2>
<p>These workflows are left out of the list: their record in Redis does not parse (CORRUPT_RECORD).</p>
<ul>${corrupt.map((entry) => html`<li>${entry.workflowId}: <code>${entry.key}</code></li>`)}</ul></section>`;
}

function workflowsTable(workflows: Page<WorkflowSummaryView>, query: ListQuery): Safe {
  const rows = workflows.items.map(
    (workflow) => html`<tr>
<th scope="row"><a href="/ui/workflows/${encodeURIComponent(workflow.workflowId)}">${workflow.workflowId}</a></th>
<td>${badge(workflow.state)}</td>
<td>${workflow.waitingFor ? waitingForText(workflow.waitingFor) : ''}${workflow.attention ? html` <span class="muted">${workflow.attention.message}</span>` : ''}</td>
<td class="number">${workflow.openQuestions}</td>
<td>${time(workflow.updatedAt)}</td>
<td>${time(workflow.createdAt)}</td>
</tr>`,
  );
  const next = workflows.cursor ? html`<a rel="next" href="/ui${listSearch({ ...query, cursor: workflows.cursor })}">Next page</a>` : '';
  const first = query.cursor ? html`<a href="/ui${listSearch({ ...query, cursor: undefined })}">First page</a>` : '';
  const heading = isSearch(query) ? `Workflows matching ${[query.idPrefix ? `id ${query.idPrefix}…` : '', query.meta ? `metadata ${query.meta}` : ''].filter(Boolean).join(' and ')}` : 'Workflows';
  return html`<section aria-labelledby="workflows-heading"><h2 id="workflows-heading">${heading}</h2>
${rows.length === 0 ? html`<p>No workflow matches.</p>` : html`<table class="workflows"><caption class="visually-hidden">Workflows, newest first</caption>
<thead><tr><th scope="col">Workflow</th><th scope="col">State</th><th scope="col">Waiting for</th><th scope="col">Open questions</th><th scope="col">Updated</th><th scope="col">Created</th></tr></thead>
<tbody>${rows}</tbody></table>`}
<nav aria-label="Pages" class="pager">${first} ${next}</nav></section>`;
}

/** The live part of the list page (polled with ETag). */
export function listPanel(workflows: Page<WorkflowSummaryView> & { corrupt?: readonly CorruptListing[]; refused?: string }, questions: OpenQuestionSummaryView[], query: ListQuery): Safe {
  const refused = workflows.refused ? html`<p class="notice notice-refused" role="alert">Search refused: ${workflows.refused}</p>` : '';
  return html`${questionsSection(questions)}${refused}${workflowsTable(workflows, query)}${corruptSection(workflows.corrupt ?? [])}`;
}

/** The whole list page. */
export function listPage(panel: Safe, query: ListQuery): string {
  const selected = selectedFilter(query);
  const body = html`<h1>Workflows</h1>
<p><a href="/ui/bulk">Act on many workflows: cancel, resolve or retry by filter (dry run first)</a></p>
<form class="filter" method="get" action="/ui">
<label for="filter">Show</label>
<select id="filter" name="filter">${FILTERS.map((filter) => html`<option value="${filter.value}"${filter.value === selected ? html` selected` : ''}>${filter.label}</option>`)}</select>
<button type="submit">Filter</button>
</form>
<form class="search" method="get" action="/ui" role="search" aria-label="Search workflows">
<p><label for="search-id">Workflow id starts with</label><br><input id="search-id" name="idPrefix" value="${query.idPrefix ?? ''}" size="24"></p>
<p><label for="search-meta">Metadata (key=value)</label><br><input id="search-meta" name="meta" value="${query.meta ?? ''}" size="32" placeholder="customer=acme"></p>
${query.waiting ? html`<input type="hidden" name="waiting" value="true">` : query.state ? html`<input type="hidden" name="state" value="${query.state}">` : ''}
<p><button type="submit">Search</button>${isSearch(query) ? html` <a href="/ui">Clear</a>` : ''}</p>
</form>
<div id="live">${panel}</div>`;
  return page('Workflows', body, { live: `/ui/panel${listSearch(query)}` });
}
