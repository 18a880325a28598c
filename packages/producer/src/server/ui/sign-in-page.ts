/**
 * The sign-in form of the browser pages (what any page answers, with 401, to a browser without a session), and
 * where a sign-in may lead. The routes that sign in and out are in `sign-in-routes.ts`.
 */
import { html, page } from './html.ts';

/** Where a sign-in may lead: a path on /ui or Bull Board, without a scheme, host or `//`. */
const NEXT_PATH = /^\/(ui|admin\/queues)(?:[/?#][^\\]*)?$/;

/** `next` if it is a path of the browser pages, else /ui. */
export function safeNext(next: unknown): string {
  return typeof next === 'string' && next.length <= 2_048 && NEXT_PATH.test(next) && !next.includes('//') ? next : '/ui';
}

/** The sign-in page; `message` is shown visibly in the page's notice above the form (signed out, token not accepted). */
export function signInPage(options: { next?: string; message?: string; refused?: boolean } = {}): string {
  const body = html`<h1>Sign in</h1>
<form class="sign-in" method="post" action="/ui/sign-in">
<input type="hidden" name="next" value="${safeNext(options.next)}">
<label for="token">API token</label>
<input id="token" name="token" type="password" autocomplete="current-password" required size="40">
<p class="muted">One of the service's API tokens (<code>DA2A_API_TOKENS</code>). It is checked once; the browser then keeps a session cookie (HttpOnly), never the token.</p>
<button type="submit">Sign in</button>
</form>`;
  return page('Sign in', body, { signedIn: false, notice: options.message, noticeRefused: options.refused });
}

