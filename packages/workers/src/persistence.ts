/**
 * Start-up check of the Redis the journal lives in: without AOF or RDB a
 * restart loses every delegation, and an evicting maxmemory-policy deletes
 * journal rows under memory pressure. We warn loudly; the strict option
 * refuses to start.
 */
import type { Cluster, Redis } from 'ioredis';
import type { Logger } from '@durable-a2a/shared';

export interface PersistenceReport {
  appendOnly: boolean;
  rdbSnapshots: boolean;
  maxmemoryPolicy: string;
  problems: string[];
}

/** Raised in strict mode when Redis could lose the journal. */
export class UnsafePersistenceError extends Error {
  override readonly name = 'UnsafePersistenceError';
  readonly code = 'UNSAFE_PERSISTENCE';
}

async function configValue(redis: Redis | Cluster, name: string): Promise<string | undefined> {
  try {
    const reply = (await redis.config('GET', name)) as string[];
    return reply[1];
  } catch {
    return undefined; // CONFIG may be disabled (managed Redis): we cannot tell.
  }
}

/** Reads persistence settings; warns, or throws UnsafePersistenceError when `strict`. */
export async function checkPersistence(redis: Redis | Cluster, logger: Logger, strict: boolean): Promise<PersistenceReport> {
  const [appendonly, save, policy] = await Promise.all([configValue(redis, 'appendonly'), configValue(redis, 'save'), configValue(redis, 'maxmemory-policy')]);
  const report: PersistenceReport = {
    appendOnly: appendonly === 'yes',
    rdbSnapshots: save !== undefined && save.trim() !== '',
    maxmemoryPolicy: policy ?? 'unknown',
    problems: [],
  };
  if (appendonly !== undefined && !report.appendOnly && !report.rdbSnapshots) {
    report.problems.push('Redis has neither AOF nor RDB snapshots: a Redis restart loses the whole journal (set appendonly yes)');
  }
  if (policy !== undefined && policy !== 'noeviction') {
    report.problems.push(`maxmemory-policy is ${policy}: Redis may evict journal rows and queue keys (set noeviction)`);
  }
  for (const problem of report.problems) logger.warn({ persistence: report }, `JOURNAL AT RISK: ${problem}`);
  if (strict && report.problems.length > 0) throw new UnsafePersistenceError(report.problems.join('; '));
  return report;
}
