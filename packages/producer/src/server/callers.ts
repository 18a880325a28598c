/**
 * Who calls: API tokens by name, so a workflow's history says who answered, cancelled or decided (docs/people.md "History").
 * `DA2A_API_TOKENS` entries are `name:token` (a name of letters, digits, ".", "_" or "-", at most 64) or a bare
 * token, which is named `token-<first 8 hex digits of its SHA-256>` (stable while the token is; it does not give the
 * token away). The name, never the token, is what the journal keeps.
 */
import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { bearerOf, secretEquals } from './auth.ts';
import { problem, sendProblem } from './problem.ts';

/** An accepted API token and its name. */
export interface NamedToken {
  name: string;
  token: string;
}

const NAMED_ENTRY = /^([A-Za-z0-9._-]{1,64}):(.+)$/;

/** The name of a bare token: `token-` and the first 8 hex digits of its SHA-256. */
export const fingerprintName = (token: string): string => `token-${createHash('sha256').update(token, 'utf8').digest('hex').slice(0, 8)}`;

/**
 * `DA2A_API_TOKENS` entries (or `ServerOptions.apiTokens`) as named tokens: `name:token`, else the entry is the
 * token itself (named by `fingerprintName`). Empty entries are skipped.
 * @throws Error when two entries share a name (a history would not say which one acted)
 */
export function parseApiTokens(entries: readonly string[]): NamedToken[] {
  const named = entries
    .filter((entry) => entry.length > 0)
    .map((entry) => {
      const match = NAMED_ENTRY.exec(entry);
      return match ? { name: match[1]!, token: match[2]! } : { name: fingerprintName(entry), token: entry };
    });
  const names = new Set(named.map(({ name }) => name));
  if (names.size !== named.length) throw new Error('API tokens: two tokens share a name (DA2A_API_TOKENS entries are name:token)');
  return named;
}

/** The name of the token `given` among `tokens` (compared with every one, constant-time each), or undefined. */
export function tokenNameOf(given: string | undefined, tokens: readonly NamedToken[]): string | undefined {
  if (given === undefined) return undefined;
  let found: string | undefined;
  for (const { name, token } of tokens) if (secretEquals(given, token) && found === undefined) found = name;
  return found;
}

/** The header /ui sets when it forwards a signed-in person's action to /v1 (value `session`): the history says `session <name>`. */
export const UI_FORWARD_HEADER = 'x-da2a-via';

const callers = new WeakMap<FastifyRequest, string>();

/** Notes who made `request` (the auth hook). */
export function recordCaller(request: FastifyRequest, caller: string): void {
  callers.set(request, caller);
}

/** Who made `request` (`token <name>` or `session <name>`), once the auth hook ran; undefined before. */
export const callerOf = (request: FastifyRequest): string | undefined => callers.get(request);

/**
 * onRequest hook for /v1: a configured API token as Bearer, else 401 problem+json. The request's caller
 * (`callerOf`) is `token <name>`, or `session <name>` when /ui forwards a signed-in person's action (the header
 * `UI_FORWARD_HEADER`: a channel label only, the name is the token's).
 */
export function requireApiToken(apiTokens: readonly NamedToken[]) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const name = tokenNameOf(bearerOf(request), apiTokens);
    if (name === undefined) {
      await sendProblem(reply, problem('UNAUTHORIZED', 'a valid API token is required as Authorization: Bearer <token>'));
      return;
    }
    recordCaller(request, `${request.headers[UI_FORWARD_HEADER] === 'session' ? 'session' : 'token'} ${name}`);
  };
}
