/**
 * The workflow page's history section (docs/people.md "History"): every entry of the view's history, oldest first, each
 * with its time, what happened and by whom (the entry's `summary`), and the whole text of a question (with the
 * request it belongs to), an answer, or the default answer an expired question sent. Everything an agent or a person wrote is escaped (`html`).
 */
import type { HistoryEntryView } from '../../history-view.ts';
import type { WorkflowView } from '../../view.ts';
import { html, time, type Safe } from './html.ts';

/** Texts are shown up to this many characters (the API view has them whole, within the history's bounds). */
const TEXT_LIMIT = 4_000;

const cut = (text: string) => (text.length > TEXT_LIMIT ? `${text.slice(0, TEXT_LIMIT)}…` : text);

function entryItem(entry: HistoryEntryView): Safe {
  const kind = entry.kind.replace(/[^a-z-]/g, '');
  const quote = (entry.kind === 'question' || entry.kind === 'answer' || entry.kind === 'question-expired') && entry.text !== undefined;
  return html`<li class="history-entry history-${kind}">${time(Date.parse(entry.at))} <span class="history-summary">${entry.summary}</span>
${quote ? html`<blockquote class="agent-text">${cut(entry.text!) || '(no text)'}</blockquote>` : ''}${entry.request ? html`<p class="muted">asked about the request: ${cut(entry.request.text)}</p>` : ''}${entry.cut ? html`<p class="muted">(cut to fit the history)</p>` : ''}</li>`;
}

/** The history section of the workflow page; nothing when the workflow has no history yet. */
export function historySection(view: Pick<WorkflowView, 'history'>): Safe {
  if (view.history.length === 0) return html``;
  return html`<section aria-labelledby="history-heading"><h2 id="history-heading">History</h2><ol class="history">${view.history.map(entryItem)}</ol></section>`;
}
