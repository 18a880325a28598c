/**
 * Evidence (a verifier's, an attention's) as people read it: an object is a definition list (key, value), an
 * array a list, text as text; nested values the same way, to a bounded depth and size (the API has all of it).
 */
import { html, type Safe } from './html.ts';

/** Deepest nesting shown; deeper values are written as compact JSON. */
const MAX_DEPTH = 3;
/** Entries shown per object or array; the rest are counted. */
const MAX_ENTRIES = 30;
/** Characters of one text value; longer ones are cut with an ellipsis. */
const MAX_TEXT = 500;

const cut = (text: string) => (text.length > MAX_TEXT ? `${text.slice(0, MAX_TEXT)}…` : text);

function value(of: unknown, depth: number): Safe {
  if (of === null || of === undefined) return html`<span class="muted">none</span>`;
  if (typeof of !== 'object') return html`${cut(String(of))}`;
  if (depth >= MAX_DEPTH) return html`<code>${cut(JSON.stringify(of))}</code>`;
  const entries = Array.isArray(of) ? of.map((item, index) => [String(index + 1), item] as const) : Object.entries(of as Record<string, unknown>);
  if (entries.length === 0) return html`<span class="muted">empty</span>`;
  const more = entries.length > MAX_ENTRIES ? html`<p class="muted">and ${entries.length - MAX_ENTRIES} more</p>` : '';
  const shown = entries.slice(0, MAX_ENTRIES);
  if (Array.isArray(of)) return html`<ol>${shown.map(([, item]) => html`<li>${value(item, depth + 1)}</li>`)}</ol>${more}`;
  return html`<dl class="evidence">${shown.map(([key, item]) => html`<dt>${key}</dt><dd>${value(item, depth + 1)}</dd>`)}</dl>${more}`;
}

/** Evidence as a definition list (objects), a list (arrays) or text. */
export function evidenceList(evidence: unknown): Safe {
  if (evidence !== null && typeof evidence === 'object' && !Array.isArray(evidence)) return value(evidence, 0);
  return html`<div class="evidence">${value(evidence, 0)}</div>`;
}
