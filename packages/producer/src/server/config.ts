/**
 * Service configuration from environment variables, parsed once with zod at
 * start-up (nothing below main.ts reads process.env).
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { TenantsConfigError, parseTenantsConfig, quotaSettingsOf, type TenantsConfig } from './tenants.ts';
import { JournalDurabilityEnvironment, MillisecondsSchema, RedisUrlSchema, isClusterUrl } from '@durable-a2a/shared';
import { QUOTAS_ON_CLUSTER_REASON } from '../errors.ts';
import { anyQuota } from '../tenancy.ts';
import { DEFAULT_HTTP_LIMITS, type HttpLimits } from './http-limits.ts';
import type { SessionOptions } from './session.ts';

const Flag = z.enum(['true', 'false', '1', '0']).transform((value) => value === 'true' || value === '1');

const Count = z.coerce.number({ error: 'a whole positive number' }).int('a whole positive number').positive('a whole positive number');

const Milliseconds = MillisecondsSchema;

export const ServerEnvironmentSchema = z.object({
  REDIS_URL: RedisUrlSchema.default('redis://127.0.0.1:6379'),
  /** Every request answered within this; 503 + Retry-After past it (R30). */
  DA2A_REQUEST_TIMEOUT_MS: Milliseconds.default(5_000),
  /** Producer fail-fast Redis command timeout. */
  DA2A_COMMAND_TIMEOUT_MS: Milliseconds.default(2_000),
  /** SIGTERM: longest graceful close; past it the process exits 1 and says what it abandoned. */
  DA2A_CLOSE_TIMEOUT_MS: Milliseconds.default(10_000),
  /** Connection bounds (http-limits.ts; docs/http-api.md "HTTP settings, headers and limits"): request headers complete within this, default 10 s. */
  DA2A_HTTP_HEADERS_TIMEOUT_MS: Milliseconds.default(DEFAULT_HTTP_LIMITS.headersTimeoutMs),
  /** The whole request (headers and body) received within this, default 30 s. */
  DA2A_HTTP_BODY_TIMEOUT_MS: Milliseconds.default(DEFAULT_HTTP_LIMITS.bodyTimeoutMs),
  /** An idle keep-alive connection is closed after this, default 5 s. */
  DA2A_HTTP_KEEP_ALIVE_TIMEOUT_MS: Milliseconds.default(DEFAULT_HTTP_LIMITS.keepAliveTimeoutMs),
  /** Open connections overall, default 2,000. */
  DA2A_HTTP_MAX_CONNECTIONS: Count.default(DEFAULT_HTTP_LIMITS.maxConnections),
  /** Open connections from one client address, default 200. */
  DA2A_HTTP_MAX_CONNECTIONS_PER_ADDRESS: Count.default(DEFAULT_HTTP_LIMITS.maxConnectionsPerAddress),
  /** Bull Board: `true` shows queues without retry/remove/promote buttons and refuses every write. */
  DA2A_ADMIN_READ_ONLY: z.enum(['true', 'false', '1', '0'], { error: 'true or false' }).transform((value) => value === 'true' || value === '1').default(false),
  /** Key material of the browser session cookies (session.ts); changing it signs everyone out. Unset: the API tokens alone key them. */
  DA2A_SESSION_SECRET: z.string().min(16, 'at least 16 characters').optional(),
  /** How long a browser session lasts, default 8 h. */
  DA2A_SESSION_LIFETIME_MS: Milliseconds.default(8 * 3600 * 1000),
  /** The session cookie's Secure flag: `auto` (set when the request came over https, itself or X-Forwarded-Proto), `true` or `false`. */
  DA2A_SESSION_COOKIE_SECURE: z.enum(['auto', 'true', 'false'], { error: 'auto, true or false' }).transform((value) => (value === 'auto' ? ('auto' as const) : value === 'true')).default('auto'),
  DA2A_PREFIX: z.string().regex(/^[A-Za-z0-9._-]+$/).default('da2a'),
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  HOST: z.string().min(1).default('0.0.0.0'),
  /** Comma-separated API tokens; at least one. */
  DA2A_API_TOKENS: z
    .string({ error: 'DA2A_API_TOKENS is required (comma-separated API tokens)' })
    .transform((text) => text.split(',').map((token) => token.trim()).filter(Boolean))
    .refine((tokens) => tokens.length > 0, 'DA2A_API_TOKENS holds no token'),
  /** Tenants, roles and quotas (docs/tenants.md): the JSON document inline; or `DA2A_TENANTS_FILE`, its path (not both). */
  DA2A_TENANTS: z.string().min(1, 'a JSON document (unset the variable for no tenants)').optional(),
  DA2A_TENANTS_FILE: z.string().min(1, 'the path of a JSON document (unset the variable for no tenants)').optional(),
  /** Bearer token `GET /metrics` requires (docs/observability.md "Observability"); unset: open (the probes always are). */
  DA2A_METRICS_TOKEN: z.string().min(1, 'a token (unset the variable to leave /metrics open)').optional(),
  /** Address policy for registered agents (R19): allow loopback / private addresses, hosts always allowed. */
  DA2A_ALLOW_LOOPBACK: Flag.default(false),
  DA2A_ALLOW_PRIVATE: Flag.default(false),
  DA2A_ALLOWED_AGENT_HOSTS: z
    .string()
    .optional()
    .transform((text) => (text ? text.split(',').map((host) => host.trim()).filter(Boolean) : [])),
  /** Largest Agent Card `registerAgent` reads, in bytes (default 1 MiB); see docs/operations.md "Limits and deadlines". */
  DA2A_LIMIT_AGENT_CARD_BYTES: z.coerce.number().int().positive().optional(),
  /** Signed answer links (docs/people.md "Signed answer links"): the HMAC key (as the workers') and this service's public URL. */
  DA2A_LINK_SECRET: z.string().min(32, 'at least 32 characters, e.g. $(openssl rand -base64 32)').optional(),
  DA2A_PUBLIC_URL: z.url({ protocol: /^https?$/, error: 'the http(s) base URL of this service, e.g. https://durable-a2a.example' }).optional(),
  DA2A_ANSWER_LINK_TTL_MS: z.coerce.number().int().positive().optional(),
  ...JournalDurabilityEnvironment,
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});

export type ServerEnvironment = z.output<typeof ServerEnvironmentSchema>;

/** Parses the environment; throws a ZodError naming each bad variable. */
export function parseServerEnvironment(environment: NodeJS.ProcessEnv): ServerEnvironment {
  return ServerEnvironmentSchema.refine((parsed) => !(parsed.DA2A_TENANTS && parsed.DA2A_TENANTS_FILE), { message: 'set DA2A_TENANTS or DA2A_TENANTS_FILE, not both', path: ['DA2A_TENANTS_FILE'] }).parse(environment);
}

/**
 * The tenants document the environment names (`ServerOptions.tenants`), read once at start-up, or undefined.
 * @throws TenantsConfigError naming the variable (or file) and every bad field, or the file that cannot be read, or
 *   its quotas when REDIS_URL is a Redis Cluster (they could not be applied there: `QuotasOnClusterError`)
 */
export function tenantsFrom(environment: ServerEnvironment): TenantsConfig | undefined {
  const tenants = readTenants(environment);
  if (isClusterUrl(environment.REDIS_URL) && anyQuota(quotaSettingsOf(tenants))) {
    const source = environment.DA2A_TENANTS ? 'DA2A_TENANTS' : 'DA2A_TENANTS_FILE';
    throw new TenantsConfigError([{ path: [source, 'quotas'], message: QUOTAS_ON_CLUSTER_REASON }]);
  }
  return tenants;
}

function readTenants(environment: ServerEnvironment): TenantsConfig | undefined {
  if (environment.DA2A_TENANTS) return parseTenantsConfig(environment.DA2A_TENANTS, 'DA2A_TENANTS');
  if (!environment.DA2A_TENANTS_FILE) return undefined;
  const path = environment.DA2A_TENANTS_FILE;
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new TenantsConfigError([{ path: ['DA2A_TENANTS_FILE'], message: `cannot read ${path} (${error instanceof Error ? error.message : String(error)})` }]);
  }
  return parseTenantsConfig(text, `DA2A_TENANTS_FILE ${path}`);
}

/** The browser session options the environment sets (`ServerOptions.session`). */
export function sessionFrom(environment: ServerEnvironment): SessionOptions {
  return { secret: environment.DA2A_SESSION_SECRET, lifetimeMs: environment.DA2A_SESSION_LIFETIME_MS, secureCookie: environment.DA2A_SESSION_COOKIE_SECURE };
}

/** The connection bounds the environment sets (`ServerOptions.httpLimits`). */
export function httpLimitsFrom(environment: ServerEnvironment): HttpLimits {
  return {
    headersTimeoutMs: environment.DA2A_HTTP_HEADERS_TIMEOUT_MS,
    bodyTimeoutMs: environment.DA2A_HTTP_BODY_TIMEOUT_MS,
    keepAliveTimeoutMs: environment.DA2A_HTTP_KEEP_ALIVE_TIMEOUT_MS,
    maxConnections: environment.DA2A_HTTP_MAX_CONNECTIONS,
    maxConnectionsPerAddress: environment.DA2A_HTTP_MAX_CONNECTIONS_PER_ADDRESS,
  };
}
