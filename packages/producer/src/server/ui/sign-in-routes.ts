/**
 * The routes that sign in and out of the browser pages (see `session.ts`, `browser-auth.ts`).
 *
 * GET  /ui/sign-in   the form (`sign-in-page.ts`)
 * POST /ui/sign-in   `token` (an API token) and `next` (where to go after); same origin only. A right token sets
 *                    the session cookie and redirects (303) to `next`; a wrong one answers the form again, 401,
 *                    with a visible "not accepted" message.
 * POST /ui/sign-out  same origin only: revokes the session here, clears the cookie, shows the form ("Signed out").
 * `next` is only ever a path of /ui or /admin/queues (never another site: no open redirect).
 */
import { z } from 'zod';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { cookieOf, oneOf } from '../auth.ts';
import { isSameOrigin, refuseTokenInUrl } from '../browser-auth.ts';
import { problem, sendProblem } from '../problem.ts';
import { SESSION_COOKIE, type Sessions } from '../session.ts';
import { safeNext, signInPage } from './sign-in-page.ts';

const HTML = 'text/html; charset=utf-8';

const SignInForm = z.object({ token: z.string().max(4_096).default(''), next: z.string().max(2_048).optional() });

/** Registers the sign-in and sign-out routes on a /ui context that has no auth hook (they are how one gets in). */
export function registerSignIn(ui: FastifyInstance, apiTokens: readonly string[], sessions: Sessions): void {
  const refuseForeign = (request: FastifyRequest, reply: FastifyReply) =>
    isSameOrigin(request) ? undefined : sendProblem(reply, problem('FORBIDDEN', 'sign-in and sign-out must come from this service’s own page (same origin)'));
  ui.addHook('onRequest', async (request, reply) => {
    await refuseTokenInUrl(request, reply);
  });
  ui.get('/sign-in', { schema: { hide: true } }, async (request, reply) => {
    const next = (request.query as { next?: unknown } | undefined)?.next;
    return reply.header('cache-control', 'no-store').type(HTML).send(signInPage({ next: safeNext(next) }));
  });
  ui.post('/sign-in', { schema: { hide: true } }, async (request, reply) => {
    const refused = refuseForeign(request, reply);
    if (refused) return refused;
    const form = SignInForm.safeParse(request.body ?? {});
    const next = safeNext(form.success ? form.data.next : undefined);
    if (!form.success || !oneOf(form.data.token.trim(), apiTokens)) {
      return reply.code(401).header('cache-control', 'no-store').type(HTML).send(signInPage({ next, message: 'That token was not accepted. Check it and try again.', refused: true }));
    }
    const { value } = sessions.create(form.data.token.trim());
    return reply.header('set-cookie', sessions.cookies(request, value)).header('cache-control', 'no-store').redirect(next, 303);
  });
  ui.post('/sign-out', { schema: { hide: true } }, async (request, reply) => {
    const refused = refuseForeign(request, reply);
    if (refused) return refused;
    const session = sessions.check(cookieOf(request, SESSION_COOKIE));
    if (session) sessions.revocations.revoke(session, sessions.options.now());
    return reply.header('set-cookie', sessions.cookies(request, undefined)).header('cache-control', 'no-store').type(HTML).send(signInPage({ message: 'Signed out.' }));
  });
}
