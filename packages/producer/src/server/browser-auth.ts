/**
 * Who may use the browser pages (/ui and Bull Board at /admin/queues), and which of their writes are trusted.
 *
 * - Credentials: the session cookie the sign-in form sets (`session.ts`), or `Authorization: Bearer <API token>`
 *   (API clients, scripts). A token in the URL (`?token=`) is never a credential: a GET or HEAD is redirected to
 *   the same URL without it (so it leaves the address bar; the request log never holds it, see `log-url.ts`),
 *   any other method is 400.
 * - Without credentials a browser asking for a page (`Accept: text/html`) gets the sign-in form (401, HTML); any
 *   other request gets a 401 problem+json.
 * - Writes (every method but GET, HEAD, OPTIONS) made with the cookie must prove they come from a page of this
 *   origin (`isSameOrigin`): the SameSite=Strict cookie already stays home on cross-site requests, this is the
 *   second lock (cross-site request forgery). A Bearer header cannot be forged by another site, but a request a
 *   browser marks cross-site is refused whatever it carries.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { bearerOf, cookieOf, oneOf } from './auth.ts';
import { problem, sendProblem } from './problem.ts';
import { SESSION_COOKIE, type Session, type Sessions } from './session.ts';
import { signInPage } from './ui/sign-in-page.ts';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Who made a browser-page request: a signed-in session, or an API client with a Bearer token. */
export type BrowserCredentials = { kind: 'session'; session: Session } | { kind: 'bearer' };

const credentialsOf = new WeakMap<FastifyRequest, BrowserCredentials>();

/** The credentials `browserAuth` accepted for `request` (undefined before the hook ran or on a public route). */
export const browserCredentials = (request: FastifyRequest): BrowserCredentials | undefined => credentialsOf.get(request);

/** True when a browser request provably comes from a page of the same origin (`Sec-Fetch-Site`, else `Origin`). */
export function isSameOrigin(request: FastifyRequest): boolean {
  const site = request.headers['sec-fetch-site'];
  if (typeof site === 'string') return site === 'same-origin';
  const origin = request.headers.origin;
  if (typeof origin !== 'string') return false;
  const forwarded = request.headers['x-forwarded-proto'];
  const protocol = typeof forwarded === 'string' ? forwarded.split(',')[0]!.trim() : request.protocol;
  return origin === `${protocol}://${request.headers.host ?? ''}`;
}

/** True when the browser says the request comes from another site (`Sec-Fetch-Site`, else a foreign `Origin`). */
export function isCrossSite(request: FastifyRequest): boolean {
  const site = request.headers['sec-fetch-site'];
  if (typeof site === 'string') return site !== 'same-origin' && site !== 'none';
  const origin = request.headers.origin;
  if (typeof origin !== 'string') return false;
  try {
    return new URL(origin).host !== request.headers.host;
  } catch {
    return true;
  }
}

/** True when the request is a browser navigation that wants a page rather than JSON. */
export const wantsHtml = (request: FastifyRequest): boolean => SAFE_METHODS.has(request.method) && /\btext\/html\b/.test(String(request.headers.accept ?? ''));

/**
 * onRequest hook that refuses a token in the URL: a GET/HEAD is redirected (303) to the same URL without the
 * `token` parameter (no cookie is set), anything else is 400. True when it answered.
 */
export async function refuseTokenInUrl(request: FastifyRequest, reply: FastifyReply): Promise<boolean> {
  const url = new URL(request.url, 'http://localhost');
  if (!url.searchParams.has('token')) return false;
  url.searchParams.delete('token');
  if (!SAFE_METHODS.has(request.method)) {
    await sendProblem(reply, problem('INVALID_INPUT', 'a token in the URL is never accepted: sign in with the form at /ui/sign-in, or send Authorization: Bearer <API token>', { field: 'token' }));
    return true;
  }
  await reply.header('cache-control', 'no-store').redirect(`${url.pathname}${url.search}`, 303);
  return true;
}

export interface BrowserAuthOptions {
  /** Refuse every write (Bull Board's read-only mode). Default false. */
  readOnly?: boolean;
}

/** onRequest hook for the browser pages (see the file header): a Bearer token or a session of one of `apiTokens`. */
export function browserAuth(apiTokens: readonly string[], sessions: Sessions, options: BrowserAuthOptions = {}) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    if (await refuseTokenInUrl(request, reply)) return;
    const bearer = oneOf(bearerOf(request), apiTokens);
    const cookie = cookieOf(request, SESSION_COOKIE);
    // A session counts only when signed in with one of `apiTokens` (Bull Board admits operators' alone).
    const session = bearer || !oneOf(sessions.tokenOf(cookie), apiTokens) ? undefined : sessions.check(cookie);
    const credentials: BrowserCredentials | undefined = bearer ? { kind: 'bearer' } : session ? { kind: 'session', session } : undefined;
    if (!credentials) {
      if (wantsHtml(request)) return void (await reply.code(401).header('cache-control', 'no-store').type('text/html; charset=utf-8').send(signInPage({ next: request.url })));
      return void (await sendProblem(reply, problem('UNAUTHORIZED', 'sign in at /ui/sign-in (a browser), or send Authorization: Bearer <API token>')));
    }
    credentialsOf.set(request, credentials);
    if (SAFE_METHODS.has(request.method)) return;
    if (options.readOnly) return void (await sendProblem(reply, problem('FORBIDDEN', 'the admin board is read-only (DA2A_ADMIN_READ_ONLY)')));
    if (isCrossSite(request) || (credentials.kind === 'session' && !isSameOrigin(request))) {
      return void (await sendProblem(reply, problem('FORBIDDEN', 'writes with a session must come from this service’s own pages (same origin)')));
    }
  };
}
