/**
 * Start-up configuration helper shared by the executables: parse the
 * environment once with a zod-backed parser, and on bad input print one
 * readable line per bad variable and exit with code 2 (no stack trace).
 */
import { z } from 'zod';
import { isSentinelUrl, parseSentinelUrl } from './redis-sentinel.ts';

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
