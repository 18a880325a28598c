/**
 * HTML building for /ui: every interpolated value is escaped by `html`
 * (tagged template) unless it is itself the result of `html` (`Safe`).
 * Agents' text is shown as text, never as markup.
 */

/** Markup that is already escaped. */
export class Safe {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Escapes text for element content and quoted attribute values. */
export const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (char) => ESCAPES[char]!);

type Value = string | number | boolean | undefined | null | Safe | readonly Value[];

function render(value: Value): string {
  if (value === undefined || value === null || value === false) return '';
  if (value instanceof Safe) return value.value;
  if (Array.isArray(value)) return value.map(render).join('');
  return escapeHtml(String(value));
}

/** Tagged template: `html\`<p>${text}</p>\`` escapes `text`; arrays are joined; undefined/false render nothing. */
export function html(strings: TemplateStringsArray, ...values: Value[]): Safe {
  let out = strings[0]!;
  values.forEach((value, index) => {
    out += render(value) + strings[index + 1]!;
  });
  return new Safe(out);
}

/**
 * The one time format of the pages: ISO 8601 in UTC to the second, written `2026-12-04 22:31:05 UTC`, inside
 * <time datetime>; `ms` since epoch or an ISO 8601 string; a dash when absent.
 */
export function time(at: number | string | undefined | null): Safe {
  const ms = typeof at === 'string' ? Date.parse(at) : at;
  if (ms === undefined || ms === null || !Number.isFinite(ms) || ms <= 0) return html`<span aria-label="none">–</span>`;
  const iso = new Date(ms).toISOString();
  return html`<time datetime="${iso}">${iso.replace('T', ' ').replace(/\.\d+Z$/, ' UTC')}</time>`;
}

/** A state badge; the class carries the colour, the text carries the meaning. */
export const badge = (state: string): Safe => html`<span class="badge badge-${state.toLowerCase().replaceAll('_', '-')}">${state}</span>`;

/** What the page shell shows besides the body. */
export interface PageOptions {
  /** URL of the live region the script polls. */
  live?: string;
  /** Show the navigation and the sign-out button. Default true. */
  signedIn?: boolean;
  /** A confirmation shown at the top (e.g. after a form post without script). */
  notice?: string;
  /** The notice says why something was refused (styled as an error). */
  noticeRefused?: boolean;
}

/**
 * The page shell: one <main>, a skip link, the stylesheet and script (both served by /ui, no CDN), and the notice
 * region `#notice` where every action's confirmation or refusal is shown, visibly, until the next action.
 */
export function page(title: string, body: Safe, options: PageOptions = {}): string {
  const nav =
    options.signedIn === false
      ? html``
      : html`<nav aria-label="Main"><a href="/ui">Workflows</a> <a href="/ui?waiting=true">Waiting for a person</a> <a href="/ui/agents">Agents</a> <a href="/admin/queues">Queues (Bull Board)</a></nav>
<form class="sign-out" method="post" action="/ui/sign-out"><button type="submit">Sign out</button></form>`;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · durable-a2a</title>
<link rel="stylesheet" href="/ui/assets/ui.css">
<script src="/ui/assets/ui.js" defer></script>
</head>
<body${options.live ? new Safe(` data-live="${escapeHtml(options.live)}"`) : ''}>
<a class="skip" href="#main">Skip to content</a>
<header class="top">${nav}</header>
<main id="main">
<p id="notice" class="notice${options.noticeRefused ? ' notice-refused' : ''}" role="status" aria-live="polite"${options.notice ? '' : new Safe(' hidden')}>${options.notice ?? ''}</p>
${body}
</main>
</body>
</html>`.value;
}
