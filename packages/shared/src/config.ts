/**
 * Start-up configuration helper shared by the executables: parse the
 * environment once with a zod-backed parser, and on bad input print one
 * readable line per bad variable and exit with code 2 (no stack trace).
 */
import { z } from 'zod';
import { MAX_TIMER_DELAY_MS } from '@durable-a2a/a2a';
import { isSentinelUrl, parseSentinelUrl } from './redis-sentinel.ts';

/** A duration in the environment with no upper bound: a whole number of ms ≥ 1 (`DA2A_ATTEMPT_DEADLINE_MS`: its timers are `setLongTimeout`). */
export const LongMillisecondsSchema = z.coerce.number({ error: 'a whole number of milliseconds' }).int('a whole number of milliseconds').positive('a positive number of milliseconds');

/**
 * A duration in the environment that a timer waits for: a whole number of ms from 1 to `MAX_TIMER_DELAY_MS` (Node's
 * timer range, about 24.8 days; Node fires a longer one after 1 ms, so it is refused here with a clear error).
 */
export const MillisecondsSchema = LongMillisecondsSchema.max(MAX_TIMER_DELAY_MS, `at most ${MAX_TIMER_DELAY_MS} ms (about 24.8 days: Node's timer range)`);

/** Runs `parse(environment)`; on failure prints `configuration error: NAME: message` lines and exits 2. */
export function parseEnvironmentOrExit<T>(parse: (environment: NodeJS.ProcessEnv) => T, environment: NodeJS.ProcessEnv = process.env): T {
  try {
    return parse(environment);
  } catch (error) {
    const issues = (error as { issues?: { path: PropertyKey[]; message: string }[] }).issues ?? [];
    // One line per bad variable; the value is never echoed (it may be a secret): messages are the schemas' own
    // words, and an error that is not a schema's issue is named by its class only.
    for (const issue of issues) console.error(`configuration error: ${issue.path.join('.') || '(environment)'}: ${issue.message}`);
    if (issues.length === 0) console.error(`configuration error: ${error instanceof Error ? error.name : 'invalid'} (the value is not shown: it may be a secret)`);
    process.exit(2);
  }
}

/** Where a server binds, named by the settings that choose it (for `listenOrExit`'s line). */
export interface ListenSetting {
  /** The variable of the port, e.g. `DA2A_METRICS_PORT`. */
  portSetting: string;
  /** The variable of the address, e.g. `DA2A_METRICS_HOST`. */
  hostSetting: string;
  port: number;
  host: string;
}

/** What to do about a bind error, by its Node error code. */
const LISTEN_ADVICE: Record<string, (where: ListenSetting) => string> = {
  EADDRINUSE: (where) => `the port is taken (another process, or a second worker on this host): stop it or set ${where.portSetting} to a free port (0: any)`,
  EACCES: (where) => `not allowed to bind this port (ports below 1024 need privileges): set ${where.portSetting} to a port of 1024 or more`,
  EADDRNOTAVAIL: (where) => `no interface of this host has that address: set ${where.hostSetting} to one of its addresses (127.0.0.1, 0.0.0.0 for all)`,
  ENOTFOUND: (where) => `the name does not resolve: set ${where.hostSetting} to an address of this host (127.0.0.1, 0.0.0.0 for all)`,
};

/**
 * Awaits `listen()`; a bind error (port taken, no permission, no such address) prints one line
 * `configuration error: PORT_SETTING=port on host: what to do` on stderr and exits 2, before anything else starts.
 * Any other error is rethrown.
 */
export async function listenOrExit<T>(listen: () => Promise<T>, where: ListenSetting): Promise<T> {
  try {
    return await listen();
  } catch (error) {
    const advice = LISTEN_ADVICE[String((error as { code?: unknown }).code)];
    if (!advice) throw error;
    console.error(`configuration error: ${where.portSetting}=${where.port} on ${where.host}: ${advice(where)}`);
    process.exit(2);
  }
}

/** `REDIS_URL`: `redis://…`, `rediss://…`, `redis-cluster://host:port,host:port` or `redis-sentinel://host:port,…/<master name>`. */
export const RedisUrlSchema = z
  .string()
  .refine(
    (text) =>
      /^redis-cluster:\/\/[^\s,/]+:\d+(,[^\s,/]+:\d+)*$/.test(text) ||
      (/^rediss?:\/\//.test(text) && URL.canParse(text)) ||
      (isSentinelUrl(text) && sentinelUrlParses(text)),
    'a Redis URL: redis://[user:password@]host:port[/db], rediss://…, redis-cluster://host:port,host:port or redis-sentinel://host:port,host:port/<master name>',
  );

function sentinelUrlParses(text: string): boolean {
  try {
    parseSentinelUrl(text);
    return true;
  } catch {
    return false;
  }
}

/**
 * A JSON-valued variable: parses the text as JSON, then with `schema`; bad
 * JSON is reported as an issue naming the expected form, never thrown raw and
 * never quoting the text (`JSON.parse`'s message does: these variables hold
 * tokens and credentials).
 */
export function jsonVariable<T extends z.ZodType>(schema: T, expected: string) {
  return z.string().transform((text, context) => {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      context.addIssue({ code: 'custom', message: `not JSON (${text.length} characters; the value is not shown); expected ${expected}` });
      return z.NEVER;
    }
  }).pipe(schema);
}
