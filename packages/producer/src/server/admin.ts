/**
 * Bull Board at /admin/queues for the five queues, behind the API tokens.
 *
 * Browser access: open `/admin/queues?token=<API token>` (or `/ui?token=…`)
 * once. The server checks the token, sets the HttpOnly, SameSite=Strict cookie
 * `da2a_admin` (paths /admin/queues and /ui, 8 h; Secure on https) and
 * redirects to the same URL without the token, so it stays out of history and
 * logs. API clients may send `Authorization: Bearer <token>` instead.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Queue } from 'bullmq';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import { ADMIN_COOKIE, adminCookieValue, bearerOf, cookieOf, oneOf } from './auth.ts';
import { problem, sendProblem } from './problem.ts';

export const ADMIN_BASE_PATH = '/admin/queues';
/** The page for people (workflows, questions); same cookie as Bull Board. */
export const UI_BASE_PATH = '/ui';
/** Paths the browser cookie is set for: a login on either page opens both. */
const COOKIE_PATHS = [ADMIN_BASE_PATH, UI_BASE_PATH];
/** Admin cookie lifetime: one working day. */
const COOKIE_MAX_AGE_SECONDS = 8 * 3600;

/** onRequest hook for browser pages: `?token=` once sets the cookie (and redirects), then the cookie or a Bearer token. */
export function browserAuth(apiTokens: readonly string[], basePath: string) {
  const cookieValues = apiTokens.map(adminCookieValue);
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const url = new URL(request.url, 'http://localhost');
    const queryToken = url.searchParams.get('token');
    if (queryToken !== null) {
      if (!oneOf(queryToken, apiTokens)) return void (await sendProblem(reply, problem('UNAUTHORIZED', 'wrong admin token')));
      url.searchParams.delete('token');
      // Behind a TLS-terminating proxy the request itself is http; a spoofed header only adds Secure.
      const secure = request.protocol === 'https' || request.headers['x-forwarded-proto'] === 'https' ? '; Secure' : '';
      const value = adminCookieValue(queryToken);
      reply.header('set-cookie', COOKIE_PATHS.map((path) => `${ADMIN_COOKIE}=${value}; Path=${path}; HttpOnly; SameSite=Strict; Max-Age=${COOKIE_MAX_AGE_SECONDS}${secure}`));
      return void (await reply.redirect(`${url.pathname}${url.search}`, 303));
    }
    if (oneOf(bearerOf(request), apiTokens) || oneOf(cookieOf(request, ADMIN_COOKIE), cookieValues)) return;
    await sendProblem(reply, problem('UNAUTHORIZED', `open ${basePath}?token=<API token> once, or send Authorization: Bearer <API token>`));
  };
}

/** Registers Bull Board under ADMIN_BASE_PATH in an encapsulated context with its own auth hook. */
export async function registerAdmin(app: FastifyInstance, queues: readonly Queue[], apiTokens: readonly string[]): Promise<void> {
  const serverAdapter = new FastifyAdapter();
  serverAdapter.setBasePath(ADMIN_BASE_PATH);
  createBullBoard({
    queues: queues.map((queue) => new BullMQAdapter(queue, { readOnlyMode: false })),
    serverAdapter,
    options: { uiConfig: { boardTitle: 'durable-a2a queues', miscLinks: [{ text: 'Workflows and questions', url: UI_BASE_PATH }] } },
  });
  await app.register(async (admin) => {
    admin.addHook('onRequest', browserAuth(apiTokens, ADMIN_BASE_PATH));
    await admin.register(serverAdapter.registerPlugin(), { prefix: ADMIN_BASE_PATH });
  });
}
