/**
 * Credentials checks. Every comparison is constant-time over equal-length
 * buffers: secrets are hashed to SHA-256 first, so their lengths never leak
 * and `timingSafeEqual` never throws on a length mismatch.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';

const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest();

/** Constant-time equality of two secrets (of any lengths). */
export function secretEquals(given: string, expected: string): boolean {
  return timingSafeEqual(digest(given), digest(expected));
}

/** True if `given` equals one of `expected`; compares against all of them, whatever matches. */
export function oneOf(given: string | undefined, expected: readonly string[]): boolean {
  if (given === undefined) return false;
  let match = false;
  for (const candidate of expected) match = secretEquals(given, candidate) || match;
  return match;
}

/** The credentials of `Authorization: Bearer <token>`, or undefined. */
export function bearerOf(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  const match = typeof header === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
  return match?.[1];
}

/**
 * Browser access to /admin/queues: `?token=<API token>` once sets this
 * HttpOnly cookie, a session that expires server-side: its value is
 * `<expiresAtMs>.<HMAC-SHA256 keyed by the API token over the expiry>`, so the
 * raw token never sits in the cookie jar, every replica accepts it without
 * shared storage, and after `expiresAtMs` no replica does, whatever the browser keeps.
 */
export const ADMIN_COOKIE = 'da2a_admin';

const sessionMac = (token: string, expiresAtMs: number) => createHmac('sha256', token).update(`durable-a2a admin session:${expiresAtMs}`, 'utf8').digest('base64url');

/** A new admin session value for `token`, valid for `lifetimeMs`. */
export function adminSessionValue(token: string, lifetimeMs: number, now: number = Date.now()): string {
  const expiresAtMs = now + lifetimeMs;
  return `${expiresAtMs}.${sessionMac(token, expiresAtMs)}`;
}

/** True when `value` is an unexpired session made with one of `tokens` (at most `lifetimeMs` ahead). */
export function isValidAdminSession(value: string | undefined, tokens: readonly string[], lifetimeMs: number, now: number = Date.now()): boolean {
  return sessionTokenOf(value, tokens, lifetimeMs, now) !== undefined;
}

/** The token of `tokens` an unexpired session `value` was made with (compared with every one), or undefined. */
export function sessionTokenOf(value: string | undefined, tokens: readonly string[], lifetimeMs: number, now: number = Date.now()): string | undefined {
  const match = value === undefined ? null : /^(\d{1,15})\.([A-Za-z0-9_-]{43})$/.exec(value);
  if (!match) return undefined;
  const expiresAtMs = Number(match[1]);
  if (expiresAtMs <= now || expiresAtMs > now + lifetimeMs) return undefined;
  let found: string | undefined;
  for (const token of tokens) if (secretEquals(match[2]!, sessionMac(token, expiresAtMs)) && found === undefined) found = token;
  return found;
}

/** The value of one cookie from the Cookie header, or undefined. */
export function cookieOf(request: FastifyRequest, name: string): string | undefined {
  const header = request.headers.cookie;
  if (!header) return undefined;
  for (const pair of header.split(';')) {
    const separator = pair.indexOf('=');
    if (separator > 0 && pair.slice(0, separator).trim() === name) return pair.slice(separator + 1).trim();
  }
  return undefined;
}
