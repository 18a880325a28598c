/**
 * Who calls: API tokens by name, so a workflow's history says who answered, cancelled or decided (docs/people.md "History").
 * `DA2A_API_TOKENS` entries are `name:token` (a name of letters, digits, ".", "_" or "-", at most 64) or a bare
 * token, which is named `token-<first 8 hex digits of its SHA-256>` (stable while the token is; it does not give the
 * token away). The name, never the token, is what the journal keeps. Each token acts for a tenant with a role (its
 * scope, tenants.ts): by default the `default` tenant's operator.
 */
import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { bearerOf, secretEquals } from './auth.ts';
import { problem, sendProblem } from './problem.ts';
import { scopeOfTokenName, type TenantsConfig } from './tenants.ts';
import type { ProducerScope } from '../tenancy.ts';
import type { Producer } from '../producer.ts';

/** An accepted API token, its name and the tenant and role it acts with. */
export interface NamedToken {
  name: string;
  token: string;
  scope: ProducerScope;
}

const NAMED_ENTRY = /^([A-Za-z0-9._-]{1,64}):(.+)$/;

/** The name of a bare token: `token-` and the first 8 hex digits of its SHA-256. */
export const fingerprintName = (token: string): string => `token-${createHash('sha256').update(token, 'utf8').digest('hex').slice(0, 8)}`;

/**
 * `DA2A_API_TOKENS` entries (or `ServerOptions.apiTokens`) as named tokens: `name:token`, else the entry is the
 * token itself (named by `fingerprintName`), each with its scope from `tenants` (`scopeOfTokenName`). Empty entries are skipped.
 * @throws Error when two entries share a name (a history would not say which one acted), or `tenants` names a token
 *   no entry has (a typo would leave that token an operator)
 */
export function parseApiTokens(entries: readonly string[], tenants?: TenantsConfig): NamedToken[] {
  const named = entries
    .filter((entry) => entry.length > 0)
    .map((entry) => {
      const match = NAMED_ENTRY.exec(entry);
      const { name, token } = match ? { name: match[1]!, token: match[2]! } : { name: fingerprintName(entry), token: entry };
      return { name, token, scope: scopeOfTokenName(tenants, name) };
    });
  const names = new Set(named.map(({ name }) => name));
  if (names.size !== named.length) throw new Error('API tokens: two tokens share a name (DA2A_API_TOKENS entries are name:token)');
  const unknown = Object.keys(tenants?.tokens ?? {}).filter((name) => !names.has(name));
  if (unknown.length > 0) throw new Error(`tenants: no API token is named ${unknown.join(', ')} (DA2A_API_TOKENS entries are name:token)`);
  return named;
}

/** The named token whose secret is `given` (compared with every one, constant-time each), or undefined. */
export function namedTokenOf(given: string | undefined, tokens: readonly NamedToken[]): NamedToken | undefined {
  if (given === undefined) return undefined;
  let found: NamedToken | undefined;
  for (const named of tokens) if (secretEquals(given, named.token) && found === undefined) found = named;
  return found;
}

/** The name of the token `given` among `tokens` (compared with every one, constant-time each), or undefined. */
export const tokenNameOf = (given: string | undefined, tokens: readonly NamedToken[]): string | undefined => namedTokenOf(given, tokens)?.name;

/** The header /ui sets when it forwards a signed-in person's action to /v1 (value `session`): the history says `session <name>`. */
export const UI_FORWARD_HEADER = 'x-da2a-via';

const callers = new WeakMap<FastifyRequest, string>();
const scopes = new WeakMap<FastifyRequest, ProducerScope>();

/** Notes who made `request` (the auth hook). */
export function recordCaller(request: FastifyRequest, caller: string): void {
  callers.set(request, caller);
}

/** Notes the tenant and role `request` acts with (the auth hooks of /v1 and /ui). */
export function recordScope(request: FastifyRequest, scope: ProducerScope): void {
  scopes.set(request, scope);
}

/**
 * `producer` acting for the caller of `request` (its token's tenant and role).
 * @throws Error when no auth hook recorded a scope (a route outside the authenticated contexts: a bug)
 */
export function producerFor(request: FastifyRequest, producer: Producer): Producer {
  const scope = scopes.get(request);
  if (!scope) throw new Error(`no caller scope for ${request.method} ${request.routeOptions.url ?? ''}: the route is outside an authenticated context`);
  return producer.forScope(scope);
}

/** The tenant and role `request` acts with, once an auth hook ran. */
export const scopeOf = (request: FastifyRequest): ProducerScope | undefined => scopes.get(request);

/** Who made `request` (`token <name>` or `session <name>`), once the auth hook ran; undefined before. */
export const callerOf = (request: FastifyRequest): string | undefined => callers.get(request);

/**
 * onRequest hook for /v1: a configured API token as Bearer, else 401 problem+json. The request's caller
 * (`callerOf`) is `token <name>`, or `session <name>` when /ui forwards a signed-in person's action (the header
 * `UI_FORWARD_HEADER`: a channel label only, the name is the token's).
 */
export function requireApiToken(apiTokens: readonly NamedToken[]) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const named = namedTokenOf(bearerOf(request), apiTokens);
    if (named === undefined) {
      await sendProblem(reply, problem('UNAUTHORIZED', 'a valid API token is required as Authorization: Bearer <token>'));
      return;
    }
    recordCaller(request, `${request.headers[UI_FORWARD_HEADER] === 'session' ? 'session' : 'token'} ${named.name}`);
    recordScope(request, named.scope);
  };
}
