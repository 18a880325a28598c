/**
 * What the HTTP service answers for a Redis error, by kind (`redisErrorKind`, the one map shared with the
 * producer and the workers): every kind but `other` is a 503 with `Retry-After` (`sendProblem`), never a 500.
 * `refusing-writes` (OOM, READONLY, MISCONF, NOREPLICAS) answers `REDIS_REFUSING_WRITES`; `unreachable`,
 * `moving` and `script-missing` answer `REDIS_UNAVAILABLE`. The typed producer errors keep their own code.
 */
import { redisErrorKind, type RedisErrorKind } from '@durable-a2a/shared';
import { RedisRefusingWritesError, RedisUnavailableError } from '../errors.ts';

/** The problem code and detail of a Redis error, or undefined when `error` is not one (kind `other`). */
export interface RedisProblem {
  code: 'REDIS_UNAVAILABLE' | 'REDIS_REFUSING_WRITES';
  detail: string;
}

const UNREACHABLE_DETAIL = 'Redis is unreachable; nothing was queued for later. Retry after Retry-After seconds with the same idempotency key.';
const REFUSING_DETAIL = 'Redis is refusing writes (out of memory, a replica, or a failed save); the refused command did not run. Retry after Retry-After seconds with the same idempotency key.';
const MOVING_DETAIL = 'Redis is moving the data this request needs (a resharding or failover); nothing was queued for later. Retry after Retry-After seconds with the same idempotency key.';

/** One row per kind (a missing kind is a compile error). */
const BY_KIND: Record<RedisErrorKind, RedisProblem | undefined> = {
  unreachable: { code: 'REDIS_UNAVAILABLE', detail: UNREACHABLE_DETAIL },
  'refusing-writes': { code: 'REDIS_REFUSING_WRITES', detail: REFUSING_DETAIL },
  moving: { code: 'REDIS_UNAVAILABLE', detail: MOVING_DETAIL },
  'script-missing': { code: 'REDIS_UNAVAILABLE', detail: MOVING_DETAIL.replace('moving the data this request needs (a resharding or failover)', 'missing a script (flushed or restarted)') },
  other: undefined,
};

/** The answer for `error` if it is a Redis error (typed by the producer or raw from ioredis/BullMQ). */
export function redisProblemOf(error: unknown): RedisProblem | undefined {
  if (error instanceof RedisRefusingWritesError) return BY_KIND['refusing-writes'];
  if (error instanceof RedisUnavailableError) return BY_KIND[error.kind];
  return BY_KIND[redisErrorKind(error)];
}
