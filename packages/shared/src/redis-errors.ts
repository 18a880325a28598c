/**
 * One map from what Redis (through ioredis or BullMQ) throws to what the product does about it. The producer,
 * the HTTP API and the workers all classify with `redisErrorKind`; nothing else matches on a Redis error's text.
 *
 * | kind              | examples (server reply prefix, ioredis/BullMQ error)                         | API          | workers                    |
 * |-------------------|-------------------------------------------------------------------------------|--------------|----------------------------|
 * | `unreachable`     | ECONNREFUSED/ECONNRESET…, `Connection is closed.`, MaxRetriesPerRequestError, `Command timed out`, offline queue off, LOADING, BUSY, MASTERDOWN, `All sentinels are unreachable` | 503 REDIS_UNAVAILABLE | ioredis reconnect backoff (jittered) |
 * | `refusing-writes` | OOM (maxmemory, noeviction), READONLY (a replica), MISCONF (a failed RDB save), NOREPLICAS (min-replicas-to-write), BullMQ's `UNBLOCKED … (master -> replica?)` | 503 REDIS_REFUSING_WRITES | refusal gate (redis-refusal-gate.ts) |
 * | `moving`          | MOVED, ASK, TRYAGAIN, CLUSTERDOWN, ioredis' `Too many Cluster redirections` (whatever its `Last error`), `Failed to refresh slots cache` | 503 REDIS_UNAVAILABLE | refusal gate |
 * | `script-missing`  | NOSCRIPT (ioredis loads the script and resends it at once, on the command it hit) | 503 REDIS_UNAVAILABLE | ioredis' immediate resend |
 * | `other`           | anything else: a script's own error, WRONGTYPE, a bug                          | its own code or 500 | the caller's error path |
 *
 * A reply error raised inside a Lua script keeps its prefix in Redis 7 (`OOM command not allowed … script: <sha>,
 * on @user_script:1.`); Redis 6 wraps it (`ERR Error running script (call to f_<sha>): @user_script:1: -OOM …`) and
 * BullMQ prefixes some (`Failed to add repeatable job for next iteration: OOM …`), so a prefix after `: ` counts too. The `cause` chain is followed (a
 * typed error that wraps a Redis error keeps its kind), at most `CAUSE_DEPTH` links deep.
 */
import { A2AError } from '@durable-a2a/a2a/pure';

/** What a Redis error means for the caller (see the table above). */
export type RedisErrorKind = 'unreachable' | 'refusing-writes' | 'moving' | 'script-missing' | 'other';

/** Every kind, in the order of the table above. */
export const REDIS_ERROR_KINDS = ['unreachable', 'refusing-writes', 'moving', 'script-missing', 'other'] as const satisfies readonly RedisErrorKind[];

/** Server reply prefixes (the first word of a `-ERR`-style reply) and their kind. */
export const REDIS_REPLY_PREFIXES: Readonly<Record<string, RedisErrorKind>> = {
  OOM: 'refusing-writes',
  READONLY: 'refusing-writes',
  MISCONF: 'refusing-writes',
  NOREPLICAS: 'refusing-writes',
  // A blocked command (BullMQ's BZPOPMIN) released because its server became a replica.
  UNBLOCKED: 'refusing-writes',
  MOVED: 'moving',
  ASK: 'moving',
  TRYAGAIN: 'moving',
  CLUSTERDOWN: 'moving',
  NOSCRIPT: 'script-missing',
  LOADING: 'unreachable',
  BUSY: 'unreachable',
  MASTERDOWN: 'unreachable',
};

/** Socket error codes (Node) that mean the server could not be reached. */
const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTCONN', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'ENOTFOUND']);

/** ioredis' and BullMQ's own texts for a connection that is gone, not there yet, or silent. */
const UNREACHABLE_TEXT = /enableOfflineQueue|Command timed out|Connection is closed|Stream isn't writeable|Reached the max retries|Connection in subscriber mode|All sentinels are unreachable|None of startup nodes is available/i;

/** ioredis Cluster texts for slots in motion (its own redirection retries exhausted), whatever reply it names last. */
const MOVING_TEXT = /Too many Cluster redirections|Failed to refresh slots cache/i;

/** How many `cause` links `redisErrorKind` follows. */
const CAUSE_DEPTH = 5;

/**
 * A reply prefix at the start, or after `: ` (optionally `: -`): Redis 6's wrapping inside a script (`… @user_script:1:
 * -OOM …`) and BullMQ's own (`Failed to add repeatable job for next iteration: OOM …`).
 */
const PREFIX_PATTERN = new RegExp(`(?:^|:\\s-?)(${Object.keys(REDIS_REPLY_PREFIXES).join('|')})\\b`);

/** The kind of one error, without following its cause. */
function kindOf(error: Error): RedisErrorKind {
  if (error.name === 'MaxRetriesPerRequestError' || error.name === 'ConnectionClosedError') return 'unreachable';
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && UNREACHABLE_CODES.has(code)) return 'unreachable';
  const message = typeof error.message === 'string' ? error.message : '';
  // Before the prefixes: ioredis names the last reply it got (`… Last error: ReplyError: NOSCRIPT …`), but every
  // earlier one was a redirection (a NOSCRIPT or OOM reply is handed back at once unless it is the last allowed try).
  if (MOVING_TEXT.test(message)) return 'moving';
  const prefix = PREFIX_PATTERN.exec(message)?.[1];
  if (prefix !== undefined) return REDIS_REPLY_PREFIXES[prefix]!;
  if (UNREACHABLE_TEXT.test(message)) return 'unreachable';
  return 'other';
}

/**
 * The kind of `error` (anything thrown): the first kind other than `other` found on `error` and its `cause`
 * chain (at most 5 links), else `other`. An A2A client error (and all it wraps) is about an agent, never Redis:
 * `other` (an Agent Card fetch refused with ECONNREFUSED is the agent's fault, not Redis unreachable). Never throws.
 */
export function redisErrorKind(error: unknown): RedisErrorKind {
  let current: unknown = error;
  for (let depth = 0; depth <= CAUSE_DEPTH && current instanceof Error && !(current instanceof A2AError); depth++) {
    const kind = kindOf(current);
    if (kind !== 'other') return kind;
    current = (current as { cause?: unknown }).cause;
  }
  return 'other';
}

/** True for every kind but `other`: Redis could not take the command now, and the same command may succeed later. */
export const isRedisTransientError = (error: unknown): boolean => redisErrorKind(error) !== 'other';

/**
 * True when `error` says Redis could not be reached or did not answer in time (kind `unreachable`), as opposed to
 * a refusal, a moved slot, or a script or data error.
 */
export const isRedisUnavailableError = (error: unknown): boolean => redisErrorKind(error) === 'unreachable';

/**
 * ioredis `reconnectOnError` for every connection the product creates. A server that became a replica keeps its
 * sockets (a proxy or DNS name in front of a demoted primary): `READONLY` answers `2`, drop the connection,
 * reconnect (through the proxy, to the current primary) and resend the command; it is safe to resend even a
 * non-idempotent journal script, because READONLY means the command did not run. A blocked command released by
 * `UNBLOCKED … (master -> replica?)` answers `1`: reconnect, and let the command fail to its caller (BullMQ
 * issues its blocking wait again). Anything else answers `false`: ioredis rejects the command to its caller.
 */
export function reconnectOnRedisError(error: Error): false | 1 | 2 {
  const message = typeof error?.message === 'string' ? error.message : '';
  if (/^READONLY\b/.test(message) || /^ERR Error running script.*?: -READONLY\b/s.test(message)) return 2;
  if (/^UNBLOCKED\b/.test(message)) return 1;
  return false;
}
