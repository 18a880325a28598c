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

/** Default interval of `watchPersistence`: once a minute. */
export const PERSISTENCE_CHECK_INTERVAL_MS = 60_000;

export interface PersistenceWatch {
  /** False once Redis evicts (evicted_keys grew) or its policy allows eviction; true again when both clear. */
  safe(): boolean;
  /** The problems found by the last check. */
  problems(): string[];
  stop(): void;
}

async function evictedKeys(redis: Redis | Cluster): Promise<number | undefined> {
  try {
    const info = await (redis as Redis).info('stats');
    const match = /evicted_keys:(\d+)/.exec(info);
    return match ? Number(match[1]) : undefined;
  } catch {
    return undefined; // Redis down or INFO disabled: the connection state is reported elsewhere.
  }
}

/**
 * Runs the persistence check every `intervalMs` (a managed Redis can be
 * reconfigured while we run) and watches INFO `evicted_keys`: any growth
 * means Redis is deleting keys under memory pressure, journal rows included,
 * so readiness should go false. Problems are logged once per change.
 */
export function watchPersistence(redis: Redis | Cluster, logger: Logger, intervalMs: number = PERSISTENCE_CHECK_INTERVAL_MS): PersistenceWatch {
  let baseline: number | undefined;
  let problems: string[] = [];
  const check = async () => {
    const report = await checkPersistence(redis, { warn: () => undefined } as unknown as Logger, false).catch(() => undefined);
    const evicted = await evictedKeys(redis);
    const found = report ? report.problems.filter((problem) => problem.startsWith('maxmemory-policy')) : problems.filter((problem) => problem.startsWith('maxmemory-policy'));
    if (evicted !== undefined) {
      if (baseline !== undefined && evicted > baseline) found.push(`Redis evicted ${evicted - baseline} keys since the last check: journal rows may be lost`);
      baseline = evicted;
    }
    if (found.join('|') !== problems.join('|')) {
      if (found.length > 0) logger.error({ persistence: found }, `JOURNAL AT RISK: ${found.join('; ')}`);
      else logger.info('Redis persistence and eviction check passes again');
    }
    problems = found;
  };
  void check();
  const timer = setInterval(() => void check(), intervalMs);
  timer.unref();
  return { safe: () => problems.length === 0, problems: () => problems, stop: () => clearInterval(timer) };
}
