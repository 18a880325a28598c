/**
 * Bull Board at /admin/queues for the five queues, behind the browser sessions of /ui (`browser-auth.ts`): sign in
 * once with the form at /ui/sign-in and both pages open; API clients may send `Authorization: Bearer <token>`.
 * A browser without a session gets the sign-in form. Writes (retry, remove, promote, clean, pause) made with the
 * cookie must come from the board's own origin; with `readOnly` the board shows no write buttons and every write
 * is 403.
 *
 * The board's page is adjusted so it requests nothing from outside the deployment and links visibly to /ui:
 * its Google Fonts stylesheet link is dropped (the board falls back to the system fonts; the Content-Security-Policy
 * allows no other origin), the docs icon (an external link) is hidden, and a link to /ui sits in its header.
 */
import type { FastifyInstance } from 'fastify';
import type { Queue } from 'bullmq';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import { browserAuth, browserCredentials } from './browser-auth.ts';
import type { Sessions } from './session.ts';

export const ADMIN_BASE_PATH = '/admin/queues';
/** The page for people (workflows, questions); the same session as Bull Board. */
export const UI_BASE_PATH = '/ui';

export interface AdminOptions {
  /** No write actions at all. Default false. */
  readOnly?: boolean;
}

/** The text of the board header's link to /ui. */
export const BOARD_UI_LINK_TEXT = 'Workflows and questions (/ui)';

/**
 * The visible link to /ui, placed over the board's header (outside the board's React root, which would replace
 * it). Inline styles: the board's own page already needs `style-src 'unsafe-inline'`.
 */
const UI_LINK = `<a id="da2a-ui-link" href="${UI_BASE_PATH}" style="position:fixed;top:0.6rem;left:50%;transform:translateX(-50%);z-index:1000;padding:0.35rem 0.9rem;border-radius:6px;background:#0b57d0;color:#fff;font:600 14px/1.4 system-ui,sans-serif;text-decoration:none">${BOARD_UI_LINK_TEXT}</a>`;

/** A `<link>` to any stylesheet not served by the board itself (Google Fonts). */
const EXTERNAL_STYLESHEET = /<link\b[^>]*href="https?:\/\/[^"]*"[^>]*>\s*/g;

/** The board's HTML page without external stylesheets and with the link to /ui after `<body>`. */
export function adjustBoardPage(page: string): string {
  return page.replace(EXTERNAL_STYLESHEET, '').replace(/<body([^>]*)>/, `<body$1>${UI_LINK}`);
}

/** Registers Bull Board under ADMIN_BASE_PATH in an encapsulated context with its own auth hook. */
export async function registerAdmin(app: FastifyInstance, queues: readonly Queue[], apiTokens: readonly string[], sessions: Sessions, options: AdminOptions = {}): Promise<void> {
  const serverAdapter = new FastifyAdapter();
  serverAdapter.setBasePath(ADMIN_BASE_PATH);
  createBullBoard({
    queues: queues.map((queue) => new BullMQAdapter(queue, { readOnlyMode: options.readOnly ?? false })),
    serverAdapter,
    options: { uiConfig: { boardTitle: 'durable-a2a queues', hideDocsLink: true, miscLinks: [{ text: BOARD_UI_LINK_TEXT, url: UI_BASE_PATH }] } },
  });
  await app.register(async (admin) => {
    admin.addHook('onRequest', browserAuth(apiTokens, sessions, options));
    admin.addHook('onSend', async (request, reply, payload) => {
      if (typeof payload !== 'string' || !browserCredentials(request) || !String(reply.getHeader('content-type') ?? '').startsWith('text/html')) return payload;
      return adjustBoardPage(payload);
    });
    await admin.register(serverAdapter.registerPlugin(), { prefix: ADMIN_BASE_PATH });
  });
}
