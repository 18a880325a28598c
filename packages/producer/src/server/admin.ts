/**
 * Bull Board at /admin/queues for the five queues, behind the API tokens.
 *
 * Browser access: open `/admin/queues?token=<API token>` (or `/ui?token=…`) once. The server
 * checks the token, sets the HttpOnly, SameSite=Strict cookie `da2a_admin`
 * (paths /admin/queues and /ui; Secure on https) holding a session that expires
 * server-side after 8 h (see `adminSessionValue`), and redirects to the same
 * URL without the token, so it stays out of history and logs. API clients
 * may send `Authorization: Bearer <token>` instead.
 *
 * Writes (retry, remove, promote, clean, pause: every method but GET, HEAD
 * and OPTIONS) made with the cookie must prove they come from the board's own
 * page: `Sec-Fetch-Site: same-origin`, or without it an `Origin` equal to the
 * request's own origin. Anything else is 403 (cross-site request forgery).
 * With `readOnly` the board shows no write buttons and every write is 403.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Queue } from 'bullmq';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import { ADMIN_COOKIE, adminSessionValue, bearerOf, cookieOf, isValidAdminSession, oneOf } from './auth.ts';
import { problem, sendProblem } from './problem.ts';

export const ADMIN_BASE_PATH = '/admin/queues';
/** The page for people (workflows, questions); same session cookie as Bull Board. */
export const UI_BASE_PATH = '/ui';
/** Paths the browser cookie is set for: a login on either page opens both. */
const COOKIE_PATHS = [ADMIN_BASE_PATH, UI_BASE_PATH];
/** Admin session lifetime: one working day. */
export const ADMIN_SESSION_MS = 8 * 3600 * 1000;

export interface AdminOptions {
  /** No write actions at all. Default false. */
  readOnly?: boolean;
  /** Clock for session expiry. Default Date.now. */
  now?: () => number;
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** True when a browser request provably comes from a page of the same origin. */
export function isSameOrigin(request: FastifyRequest): boolean {
  const site = request.headers['sec-fetch-site'];
  if (typeof site === 'string') return site === 'same-origin';
  const origin = request.headers.origin;
  if (typeof origin !== 'string') return false;
  const forwarded = request.headers['x-forwarded-proto'];
  const protocol = typeof forwarded === 'string' ? forwarded.split(',')[0]!.trim() : request.protocol;
  return origin === `${protocol}://${request.headers.host ?? ''}`;
}

/**
 * onRequest hook for browser pages (Bull Board, /ui): `?token=` once sets the session cookie for both
 * pages (and redirects), then the cookie or a Bearer token; cookie writes must be same-origin.
 */
export function browserAuth(apiTokens: readonly string[], basePath: string, options: AdminOptions = {}) {
  const now = options.now ?? Date.now;
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const url = new URL(request.url, 'http://localhost');
    const queryToken = url.searchParams.get('token');
    if (queryToken !== null) {
      if (!oneOf(queryToken, apiTokens)) return void (await sendProblem(reply, problem('UNAUTHORIZED', 'wrong admin token')));
      url.searchParams.delete('token');
      // Behind a TLS-terminating proxy the request itself is http; a spoofed header only adds Secure.
      const secure = request.protocol === 'https' || request.headers['x-forwarded-proto'] === 'https' ? '; Secure' : '';
      const session = adminSessionValue(queryToken, ADMIN_SESSION_MS, now());
      reply.header('set-cookie', COOKIE_PATHS.map((path) => `${ADMIN_COOKIE}=${session}; Path=${path}; HttpOnly; SameSite=Strict; Max-Age=${ADMIN_SESSION_MS / 1000}${secure}`));
      return void (await reply.redirect(`${url.pathname}${url.search}`, 303));
    }
    const bearer = oneOf(bearerOf(request), apiTokens);
    const session = !bearer && isValidAdminSession(cookieOf(request, ADMIN_COOKIE), apiTokens, ADMIN_SESSION_MS, now());
    if (!bearer && !session) {
      return void (await sendProblem(reply, problem('UNAUTHORIZED', `open ${basePath}?token=<API token> once (the session lasts 8 h), or send Authorization: Bearer <API token>`)));
    }
    if (SAFE_METHODS.has(request.method)) return;
    if (options.readOnly) return void (await sendProblem(reply, problem('FORBIDDEN', 'the admin board is read-only (DA2A_ADMIN_READ_ONLY)')));
    // A cookie rides along with any cross-site request; a Bearer header cannot be forged by another site.
    if (session && !isSameOrigin(request)) return void (await sendProblem(reply, problem('FORBIDDEN', 'admin writes must come from the board itself (same origin)')));
  };
}

/** Registers Bull Board under ADMIN_BASE_PATH in an encapsulated context with its own auth hook. */
export async function registerAdmin(app: FastifyInstance, queues: readonly Queue[], apiTokens: readonly string[], options: AdminOptions = {}): Promise<void> {
  const serverAdapter = new FastifyAdapter();
  serverAdapter.setBasePath(ADMIN_BASE_PATH);
  createBullBoard({
    queues: queues.map((queue) => new BullMQAdapter(queue, { readOnlyMode: options.readOnly ?? false })),
    serverAdapter,
    options: { uiConfig: { boardTitle: 'durable-a2a queues', miscLinks: [{ text: 'Workflows and questions', url: UI_BASE_PATH }] } },
  });
  await app.register(async (admin) => {
    admin.addHook('onRequest', browserAuth(apiTokens, ADMIN_BASE_PATH, options));
    await admin.register(serverAdapter.registerPlugin(), { prefix: ADMIN_BASE_PATH });
  });
}
