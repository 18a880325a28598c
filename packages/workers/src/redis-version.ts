/**
 * Start-up check of the Redis server version. The journal takes the follow and
 * send leases and binds task ids with one `SET key value NX PX ms GET` (one
 * command instead of a script), which Redis accepts from 7.0 on; an older
 * server would refuse every lease at run time. The fleet refuses to start instead.
 */
import type { Cluster, Redis } from 'ioredis';
import type { Logger } from '@durable-a2a/shared';

/** Oldest Redis server the journal runs on. */
export const MINIMUM_REDIS_VERSION = '7.0.0';

/** Raised by `startFleet` when the Redis server is older than MINIMUM_REDIS_VERSION. */
export class UnsupportedRedisError extends Error {
  override readonly name = 'UnsupportedRedisError';
  readonly code = 'UNSUPPORTED_REDIS';
}

/** `[major, minor, patch]` of a version string such as `7.0.15` (missing parts are 0); undefined when unreadable. */
export function parseRedisVersion(version: string): [number, number, number] | undefined {
  const match = /^(\d+)(?:\.(\d+))?(?:\.(\d+))?/.exec(version.trim());
  if (!match) return undefined;
  return [Number(match[1]), Number(match[2] ?? 0), Number(match[3] ?? 0)];
}

/** True when `version` is at least MINIMUM_REDIS_VERSION (an unreadable version counts as supported: we cannot tell). */
export function isSupportedRedisVersion(version: string): boolean {
  const actual = parseRedisVersion(version);
  const minimum = parseRedisVersion(MINIMUM_REDIS_VERSION)!;
  if (!actual) return true;
  for (let index = 0; index < 3; index++) {
    if (actual[index]! !== minimum[index]!) return actual[index]! > minimum[index]!;
  }
  return true;
}

/**
 * Reads `redis_version` (INFO server) and throws UnsupportedRedisError when it is older than 7.0, after
 * disconnecting `disconnectOnRefusal` (the caller's clients, so a refused start leaves no socket open). Returns the
 * version read, or undefined when INFO is not allowed (managed Redis may rename it): then it warns and goes on.
 */
export async function requireRedisVersion(redis: Redis | Cluster, logger: Logger, disconnectOnRefusal: readonly { disconnect(): void }[] = []): Promise<string | undefined> {
  let version: string | undefined;
  try {
    version = /^redis_version:(.+)$/m.exec(await (redis as Redis).info('server'))?.[1]?.trim();
  } catch {
    version = undefined;
  }
  if (version === undefined) {
    logger.warn(`could not read the Redis server version (INFO server); durable-a2a needs Redis ${MINIMUM_REDIS_VERSION} or later`);
    return undefined;
  }
  if (!isSupportedRedisVersion(version)) {
    for (const client of disconnectOnRefusal) client.disconnect();
    throw new UnsupportedRedisError(`Redis ${version} is too old: durable-a2a needs Redis ${MINIMUM_REDIS_VERSION} or later (SET … NX GET)`);
  }
  return version;
}
