/**
 * Browser sessions for /ui and Bull Board: signed, stateless cookies.
 *
 * A person posts an API token once to the sign-in form (`/ui/sign-in`); the answer sets the cookie `da2a_session`
 * (paths /ui and /admin/queues; HttpOnly, SameSite=Strict, Secure per `secureCookie`, Max-Age = the lifetime).
 * Its value is `<expiresAtMs>.<sessionId>.<MAC>`, where MAC = HMAC-SHA256 keyed by HMAC-SHA256(secret, token) over
 * the expiry and the session id. So:
 * - the token itself never sits in the cookie jar, and nothing is stored server-side: every replica accepts the
 *   cookie, a restart signs nobody out;
 * - removing a token from the configured ones ends its sessions, and changing `secret` ends them all;
 * - after `expiresAtMs` no replica accepts it, whatever the browser keeps.
 * Why stateless rather than a session table: sessions must survive a deploy and work on every replica, and the
 * producer keeps no Redis keys of its own outside the journal and registry. The price: signing out clears the
 * browser's cookie and revokes the session id on the replica that answered (`SessionRevocations`, bounded in
 * memory); a copy of the cookie taken before sign-out stays valid on other replicas until it expires.
 */
import { createHmac, randomBytes } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { secretEquals } from './auth.ts';

/** The cookie's name. */
export const SESSION_COOKIE = 'da2a_session';
/** Paths the cookie is set for: one sign-in opens /ui and Bull Board. */
export const SESSION_COOKIE_PATHS = ['/ui', '/admin/queues'] as const;
/** Default session lifetime: one working day. */
export const DEFAULT_SESSION_LIFETIME_MS = 8 * 3600 * 1000;
/** Signed-out session ids remembered per process (each until its expiry); past this the oldest are forgotten. */
export const SESSION_REVOCATION_LIMIT = 10_000;

/** How sessions are made and checked (`ServerOptions.session`). */
export interface SessionOptions {
  /** Key material mixed into every session's MAC; changing it signs everyone out. Default: a fixed string (the API tokens alone key the MAC). */
  secret?: string;
  /** How long a session lasts, in ms. Default 8 h. */
  lifetimeMs?: number;
  /** The cookie's Secure flag: `auto` (default) sets it when the request came over https (itself or `X-Forwarded-Proto`). */
  secureCookie?: 'auto' | boolean;
  /** Clock. Default Date.now. */
  now?: () => number;
}

/** `SessionOptions` with defaults applied. */
export interface ResolvedSessionOptions {
  secret: string;
  lifetimeMs: number;
  secureCookie: 'auto' | boolean;
  now: () => number;
}

export function resolveSessionOptions(options: SessionOptions = {}): ResolvedSessionOptions {
  return { secret: options.secret ?? 'durable-a2a session', lifetimeMs: options.lifetimeMs ?? DEFAULT_SESSION_LIFETIME_MS, secureCookie: options.secureCookie ?? 'auto', now: options.now ?? Date.now };
}

/** A checked session: its id (for sign-out and for saying who acted) and its expiry. */
export interface Session {
  sessionId: string;
  expiresAtMs: number;
}

const macOf = (secret: string, token: string, expiresAtMs: number, sessionId: string) =>
  createHmac('sha256', createHmac('sha256', secret).update(token, 'utf8').digest()).update(`durable-a2a session:${expiresAtMs}:${sessionId}`, 'utf8').digest('base64url');

const VALUE = /^(\d{1,15})\.([A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]{43})$/;

/** Signed-out session ids, each kept until its expiry, at most SESSION_REVOCATION_LIMIT (oldest dropped first). */
export class SessionRevocations {
  private readonly expiries = new Map<string, number>();
  constructor(private readonly limit = SESSION_REVOCATION_LIMIT) {}
  revoke(session: Session, nowMs: number): void {
    for (const [id, expiresAtMs] of this.expiries) if (expiresAtMs <= nowMs) this.expiries.delete(id);
    this.expiries.set(session.sessionId, session.expiresAtMs);
    while (this.expiries.size > this.limit) this.expiries.delete(this.expiries.keys().next().value!);
  }
  has(sessionId: string): boolean {
    return this.expiries.has(sessionId);
  }
}

/** Makes and checks sessions for a set of API tokens. */
export class Sessions {
  readonly options: ResolvedSessionOptions;
  readonly revocations = new SessionRevocations();
  constructor(
    private readonly apiTokens: readonly string[],
    options: SessionOptions = {},
  ) {
    this.options = resolveSessionOptions(options);
  }

  /** A new session's cookie value for `token` (which must be one of the API tokens: checked by the caller). */
  create(token: string): { value: string; session: Session } {
    const expiresAtMs = this.options.now() + this.options.lifetimeMs;
    const sessionId = randomBytes(16).toString('base64url');
    return { value: `${expiresAtMs}.${sessionId}.${macOf(this.options.secret, token, expiresAtMs, sessionId)}`, session: { sessionId, expiresAtMs } };
  }

  /** The session a cookie value proves: well-formed, unexpired (at most one lifetime ahead), signed with a configured token, not signed out here. */
  check(value: string | undefined): Session | undefined {
    const proven = this.proven(value);
    return proven && { sessionId: proven.sessionId, expiresAtMs: proven.expiresAtMs };
  }

  /**
   * The API token a valid session (`check`) was signed in with, so an action a person takes through /ui is forwarded
   * as theirs (the workflow's history names them); undefined for anything `check` refuses. Never logged.
   */
  tokenOf(value: string | undefined): string | undefined {
    return this.proven(value)?.token;
  }

  /** `check`, with the token whose key signed the value (every token is compared: constant time over the set). */
  private proven(value: string | undefined): (Session & { token: string }) | undefined {
    const match = value === undefined ? null : VALUE.exec(value);
    if (!match) return undefined;
    const expiresAtMs = Number(match[1]);
    const sessionId = match[2]!;
    const now = this.options.now();
    if (expiresAtMs <= now || expiresAtMs > now + this.options.lifetimeMs) return undefined;
    let token: string | undefined;
    for (const candidate of this.apiTokens) if (secretEquals(match[3]!, macOf(this.options.secret, candidate, expiresAtMs, sessionId)) && token === undefined) token = candidate;
    if (token === undefined || this.revocations.has(sessionId)) return undefined;
    return { sessionId, expiresAtMs, token };
  }

  /** The Set-Cookie values that store `value` (or, with `undefined`, clear the cookie) on every cookie path. */
  cookies(request: FastifyRequest, value: string | undefined): string[] {
    const secure = this.options.secureCookie === 'auto' ? isHttps(request) : this.options.secureCookie;
    const maxAge = value === undefined ? 0 : Math.floor(this.options.lifetimeMs / 1000);
    return SESSION_COOKIE_PATHS.map((path) => `${SESSION_COOKIE}=${value ?? ''}; Path=${path}; HttpOnly; SameSite=Strict; Max-Age=${maxAge}${secure ? '; Secure' : ''}`);
  }
}

/** True when the request came over https, itself or (behind a TLS-terminating proxy) by `X-Forwarded-Proto`; a spoofed header only adds Secure. */
function isHttps(request: FastifyRequest): boolean {
  const forwarded = request.headers['x-forwarded-proto'];
  return request.protocol === 'https' || (typeof forwarded === 'string' && forwarded.split(',')[0]!.trim() === 'https');
}
