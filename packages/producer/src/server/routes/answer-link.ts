/**
 * `/answer/<token>`: the page a signed answer link opens (docs/people.md "Signed answer links"). A person answers that one
 * open question without an API token: the token is the credential, checked before anything is read (signature in
 * constant time, then expiry). GET shows the question and a form; POST journals the answer (answerByLink-2.lua:
 * single use, compare-and-set on the question the link names, recorded as answered by `link <id>`), then hands it
 * to the send queue as any reply. Answers:
 *   401 the token is not one of ours (malformed or a wrong signature)
 *   410 the link expired, or its question already has an answer (the link is used)
 *   409 the question is closed (the attempt moved on, was canceled or finished, or asks something else now), or the
 *       workflow holds its most answers (`ANSWERS_PER_WORKFLOW_MAX`: nothing written)
 *   400 a blank answer (the form again, with the message)
 * Server-rendered, no script and nothing from outside the deployment; the security headers of every page apply
 * (security-headers.ts), and the token never reaches a log line (log-url.ts).
 */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { ANSWERS_PER_WORKFLOW_MAX, JournalError, enqueueReply, isParked, verifyAnswerLink, type AnswerLinkClaim, type DelegationRecord, type Journal, type TypedQueues } from '@durable-a2a/shared';
import { html, type Safe } from '../ui/html.ts';
import type { AnswerLinkSettings } from '../../view.ts';

export interface AnswerLinkRouteOptions {
  journal: Journal;
  queues: Pick<TypedQueues, 'send'>;
  links: AnswerLinkSettings;
  /** Clock (ms); default `Date.now`. */
  now?: () => number;
}

/** An answer is a person's text: 16 KiB is pages of it; the form body limit is this plus the field name. */
const ANSWER_MAX_CHARACTERS = 16 * 1024;
const FORM_BODY_LIMIT_BYTES = 64 * 1024;
const HIDDEN = { schema: { hide: true } };

type Checked = { open: true; claim: AnswerLinkClaim; linkId: string; record: DelegationRecord } | { open: false; status: 401 | 409 | 410; title: string; detail: string };

const refused = (status: 401 | 409 | 410, title: string, detail: string): Checked => ({ open: false, status, title, detail });

/** The token's question as the journal has it now, or why the link is refused (see the module header). */
async function check(options: AnswerLinkRouteOptions, token: string): Promise<Checked> {
  const verified = verifyAnswerLink(options.links.secret, token, (options.now ?? Date.now)());
  if (!verified.ok) {
    return verified.reason === 'expired'
      ? refused(410, 'This link has expired', 'Ask for a new link, or answer from the workflow page.')
      : refused(401, 'This link is not valid', 'Open the link exactly as you received it.');
  }
  const { claim, linkId } = verified;
  const record = await options.journal.getDelegation({ workflowId: claim.workflowId, delegationId: claim.delegationId });
  if (record && record.replyForQuestion === claim.questionKey && record.replyMessageId) return refused(410, 'This question was already answered', 'The link has been used.');
  if (!record || !isParked(record.state) || record.questionKey !== claim.questionKey) return refused(409, 'This question is closed', 'The work no longer waits for this answer.');
  return { open: true, claim, linkId, record };
}

/** The question's text parts, joined. */
const questionText = (record: DelegationRecord): string =>
  (record.question?.parts ?? record.statusMessage?.parts ?? []).map((part) => ('text' in part && typeof part.text === 'string' ? part.text : '')).filter(Boolean).join('\n');

const STYLE = 'body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem}textarea{width:100%;min-height:8rem;font:inherit}blockquote{white-space:pre-wrap;border-left:4px solid #888;margin:1rem 0;padding:.25rem 1rem}.error{color:#a00}';

function page(reply: FastifyReply, status: number, title: string, body: Safe): FastifyReply {
  const document = html`<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><meta name="robots" content="noindex"><title>${title}</title><style>${STYLE}</style></head><body><main><h1>${title}</h1>${body}</main></body></html>`;
  return reply.code(status).header('cache-control', 'no-store').type('text/html; charset=utf-8').send(document.value);
}

function form(reply: FastifyReply, checked: Extract<Checked, { open: true }>, status = 200, error?: string): FastifyReply {
  const { record } = checked;
  return page(
    reply,
    status,
    'A question for you',
    html`<p>Workflow <code>${record.workflowId}</code>, step <code>${record.step}</code> asks:</p>
<blockquote>${questionText(record) || '(no text)'}</blockquote>
<form method="post">
<label for="answer">Your answer</label>
<textarea id="answer" name="answer" required maxlength="${ANSWER_MAX_CHARACTERS}"></textarea>
${error ? html`<p class="error" role="alert">${error}</p>` : ''}
<p><button type="submit">Send answer</button></p>
</form>`,
  );
}

const refusal = (reply: FastifyReply, checked: Extract<Checked, { open: false }>) => page(reply, checked.status, checked.title, html`<p role="alert">${checked.detail}</p>`);

/**
 * The token: the rest of the path after `/answer/` (a wildcard, not a `:token` parameter, whose length the router
 * caps at 100 characters; `verifyAnswerLink` caps it at `ANSWER_LINK_TOKEN_MAX_LENGTH`).
 */
const tokenOf = (request: FastifyRequest): string => (request.params as { '*'?: string })['*'] ?? '';

async function answer(options: AnswerLinkRouteOptions, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const checked = await check(options, tokenOf(request));
  if (!checked.open) return refusal(reply, checked);
  const text = String((request.body as Record<string, unknown> | undefined)?.answer ?? '').trim();
  if (text.length === 0) return form(reply, checked, 400, 'Write an answer before sending.');
  if (text.length > ANSWER_MAX_CHARACTERS) return form(reply, checked, 400, `An answer is at most ${ANSWER_MAX_CHARACTERS} characters.`);
  const ref = { workflowId: checked.claim.workflowId, delegationId: checked.claim.delegationId };
  let recorded: { messageId: string; created: boolean };
  try {
    recorded = await options.journal.answerByLink(ref, { questionKey: checked.claim.questionKey, linkId: checked.linkId }, randomUUID(), { parts: [{ text }] });
  } catch (error) {
    if (error instanceof JournalError && (error.code === 'WRONG_STATE' || error.code === 'DELEGATION_MISSING')) {
      return refusal(reply, { open: false, status: 409, title: 'This question is closed', detail: 'The work no longer waits for this answer.' });
    }
    if (error instanceof JournalError && error.code === 'ANSWER_LIMIT') {
      return refusal(reply, { open: false, status: 409, title: 'This workflow holds its most answers', detail: `It holds ${ANSWERS_PER_WORKFLOW_MAX} answers; nothing was written. It must be canceled or resolved.` });
    }
    throw error;
  }
  if (!recorded.created) return refusal(reply, { open: false, status: 410, title: 'This question was already answered', detail: 'The link has been used.' });
  await enqueueReply(options.queues, ref, recorded.messageId);
  return page(reply, 200, 'Answer sent', html`<p role="status">Thank you: your answer was recorded and is on its way. You can close this page.</p>`);
}

/** Registers GET and POST `/answer/<token>` in their own context (with a form body parser). */
export function answerLinkRoutes(options: AnswerLinkRouteOptions): FastifyPluginAsync {
  return async (app: FastifyInstance) => {
    app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: FORM_BODY_LIMIT_BYTES }, (_request, body, done) => {
      done(null, Object.fromEntries(new URLSearchParams(String(body))));
    });
    app.get('/answer/*', HIDDEN, async (request, reply) => {
      const checked = await check(options, tokenOf(request));
      return checked.open ? form(reply, checked) : refusal(reply, checked);
    });
    app.post('/answer/*', HIDDEN, async (request, reply) => answer(options, request, reply));
  };
}
