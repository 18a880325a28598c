/**
 * Signed answer links: a URL that lets a person answer one open question without an API token. The token names the
 * question (workflow, delegation, question key) and when the link stops working, and carries an HMAC-SHA256 of
 * exactly that under the deployment's link secret (`DA2A_LINK_SECRET`). It is the same for the same question and
 * expiry, so the notification and the API view show one link. Single use is the journal's (answerByLink-2.lua
 * records the answer and the link that gave it in one compare-and-set): the token only proves it was issued by us.
 *
 * Token: `<payload>.<signature>`, both base64url; payload = JSON `[workflowId, delegationId, questionKey, expiresAtMs]`;
 * signature = HMAC-SHA256(secret, `durable-a2a answer link v1\n` + payload).
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { ID_PATTERN } from '../journal/keys.ts';
import { WORKFLOW_ID_PATTERN } from '../journal/tenant.ts';

/** Shortest accepted link secret (characters): 32 random characters carry well over 128 bits. */
export const ANSWER_LINK_SECRET_MIN_LENGTH = 32;
/** Longest token accepted (characters): a question key is at most a few hundred characters; anything longer is not ours. */
export const ANSWER_LINK_TOKEN_MAX_LENGTH = 2_048;
const DOMAIN = 'durable-a2a answer link v1\n';

/** What a link names: one question of one delegation, and when the link expires (ms since epoch). */
export interface AnswerLinkClaim {
  workflowId: string;
  delegationId: string;
  questionKey: string;
  expiresAtMs: number;
}

const Id = z.string().regex(ID_PATTERN);
const PayloadSchema = z.tuple([z.string().regex(WORKFLOW_ID_PATTERN), Id, z.string().min(1).max(1_024), z.number().int().positive()]);

/** The link's id (`lnk_` and 24 hex digits, SHA-256 of the question it names): what the journal records as "answered by link". */
export function answerLinkId(claim: Pick<AnswerLinkClaim, 'workflowId' | 'delegationId' | 'questionKey'>): string {
  return `lnk_${createHash('sha256').update([claim.workflowId, claim.delegationId, claim.questionKey].join('\n')).digest('hex').slice(0, 24)}`;
}

const signatureOf = (secret: string, payload: string): Buffer => createHmac('sha256', secret).update(DOMAIN).update(payload).digest();

/** The token of a link (see the module header). */
export function signAnswerLink(secret: string, claim: AnswerLinkClaim): string {
  const payload = Buffer.from(JSON.stringify([claim.workflowId, claim.delegationId, claim.questionKey, claim.expiresAtMs])).toString('base64url');
  return `${payload}.${signatureOf(secret, payload).toString('base64url')}`;
}

/** The page's URL for a token: `<baseUrl>/answer/<token>` (a trailing `/` of the base is dropped). */
export function answerLinkUrl(baseUrl: string, token: string): string {
  return `${baseUrl.replace(/\/+$/, '')}/answer/${token}`;
}

/** Why a token is refused: not one of ours (`malformed`, `signature`), or no longer valid (`expired`). */
export type AnswerLinkRefusal = 'malformed' | 'signature' | 'expired';

/**
 * Checks a token: shape, then signature (constant time), then expiry against `nowMs`. Nothing in the payload is
 * trusted before the signature holds.
 */
export function verifyAnswerLink(secret: string, token: string, nowMs: number): { ok: true; claim: AnswerLinkClaim; linkId: string } | { ok: false; reason: AnswerLinkRefusal } {
  if (token.length > ANSWER_LINK_TOKEN_MAX_LENGTH) return { ok: false, reason: 'malformed' };
  const match = /^([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]{43})$/.exec(token);
  if (!match) return { ok: false, reason: 'malformed' };
  const [, payload, signature] = match as unknown as [string, string, string];
  const given = Buffer.from(signature, 'base64url');
  // base64url decoding ignores stray low bits of the last character: compare the canonical spelling too.
  if (given.length !== 32 || given.toString('base64url') !== signature || !timingSafeEqual(given, signatureOf(secret, payload))) return { ok: false, reason: 'signature' };
  let parsed: z.infer<typeof PayloadSchema>;
  try {
    parsed = PayloadSchema.parse(JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')));
  } catch {
    return { ok: false, reason: 'malformed' };
  }
  const [workflowId, delegationId, questionKey, expiresAtMs] = parsed;
  if (nowMs >= expiresAtMs) return { ok: false, reason: 'expired' };
  const claim = { workflowId, delegationId, questionKey, expiresAtMs };
  return { ok: true, claim, linkId: answerLinkId(claim) };
}

/** The link to one open question, as the notification and the API view show it. */
export interface AnswerLink {
  id: string;
  url: string;
  /** ISO 8601. */
  expiresAt: string;
}

/**
 * The link of a parked delegation's open question: valid `ttlMs` from when it was asked (`askedAtMs`: the status
 * timestamp, else the row's last change), so every reader builds the same link.
 */
export function answerLinkFor(options: { secret: string; baseUrl: string; ttlMs: number }, question: { workflowId: string; delegationId: string; questionKey: string; askedAtMs: number }): AnswerLink {
  const claim = { workflowId: question.workflowId, delegationId: question.delegationId, questionKey: question.questionKey, expiresAtMs: question.askedAtMs + options.ttlMs };
  return { id: answerLinkId(claim), url: answerLinkUrl(options.baseUrl, signAnswerLink(options.secret, claim)), expiresAt: new Date(claim.expiresAtMs).toISOString() };
}
