/**
 * Operations endpoints, outside the API tokens (network policy protects them):
 * `/metrics` (Prometheus text; queue depth gauges refreshed at scrape; with a `metricsToken`, only for
 * `Authorization: Bearer <token>`),
 * `/healthz` (liveness), `/readyz` (Redis reachable and taking writes), `/openapi.json`.
 *
 * Readiness asks Redis on every call rather than remembering the last error a request saw: with a journal, one
 * write of a short-lived key (`Journal.probeWrites`), so a server at maxmemory (OOM), a replica behind the
 * service's address (READONLY), a failed save (MISCONF) or too few replicas (NOREPLICAS) make `/readyz` 503 at
 * once and 200 again as soon as a write goes through; without a journal, a PING. `redisKind` in the body names
 * what Redis answered (`redisErrorKind`: `unreachable`, `refusing-writes`, …), absent when ready.
 */
import type { FastifyInstance } from 'fastify';
import type { Queue } from 'bullmq';
import type { Cluster, Redis } from 'ioredis';
import { QUEUE_JOB_STATUSES, countUnfinishedByState, metricsRequestAllowed, redisErrorKind, type Journal, type Metrics, type RedisErrorKind } from '@durable-a2a/shared';

export interface HealthReport {
  live: boolean;
  ready: boolean;
  details?: unknown;
}

export interface OpsRouteOptions {
  redis: Redis | Cluster;
  /** For `durable_a2a_delegations{state}` and `durable_a2a_open_questions`, sampled at scrape. */
  journal?: Journal;
  queues: readonly Queue[];
  metrics: Metrics;
  health?: () => Promise<HealthReport>;
  /** Bearer token `/metrics` requires; undefined: open. */
  metricsToken?: string;
}

/** A readiness probe slower than this counts as Redis unreachable. */
const PROBE_TIMEOUT_MS = 1_000;

/** What readiness found: undefined when Redis answered and took the write, else the kind of what it answered. */
async function redisNotReady(redis: Redis | Cluster, journal: Journal | undefined): Promise<RedisErrorKind | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<RedisErrorKind>((resolve) => (timer = setTimeout(() => resolve('unreachable'), PROBE_TIMEOUT_MS)));
  const probe = async (): Promise<RedisErrorKind | undefined> => {
    if (journal) await journal.probeWrites();
    else if ((await redis.ping()) !== 'PONG') return 'other';
    return undefined;
  };
  try {
    return await Promise.race([probe(), timeout]);
  } catch (error) {
    return redisErrorKind(error);
  } finally {
    clearTimeout(timer);
  }
}

/** Sets `durable_a2a_queue_jobs{queue,status}` from BullMQ's job counts of every queue, for `QUEUE_JOB_STATUSES` only. */
async function refreshQueueDepth(queues: readonly Queue[], metrics: Metrics): Promise<void> {
  await Promise.all(
    queues.map(async (queue) => {
      const counts = await queue.getJobCounts(...QUEUE_JOB_STATUSES);
      for (const [status, value] of Object.entries(counts)) metrics.queueDepth.set({ queue: queue.name, status }, value);
    }),
  );
}

export function opsRoutes(app: FastifyInstance, options: OpsRouteOptions): void {
  const hide = { hide: true };

  app.get('/metrics', { schema: hide }, async (request, reply) => {
    if (!metricsRequestAllowed(request.headers.authorization, options.metricsToken)) {
      return reply.code(401).header('www-authenticate', 'Bearer').send({ error: 'this endpoint needs Authorization: Bearer <DA2A_METRICS_TOKEN>' });
    }
    try {
      await refreshQueueDepth(options.queues, options.metrics);
      if (options.journal) {
        const counts = await countUnfinishedByState(options.journal);
        options.metrics.delegationsByState.reset();
        for (const [state, value] of Object.entries(counts)) options.metrics.delegationsByState.set({ state }, value);
        options.metrics.openQuestions.set((counts.INPUT_REQUIRED ?? 0) + (counts.AUTH_REQUIRED ?? 0));
      }
    } catch (error) {
      // Serve the other metrics with the last known depths rather than fail the scrape.
      request.log.warn({ err: error }, 'could not read queue job counts');
    }
    return reply.type(options.metrics.registry.contentType).send(await options.metrics.registry.metrics());
  });

  app.get('/healthz', { schema: hide }, async (_request, reply) => {
    const report = options.health ? await options.health() : { live: true, ready: true };
    return reply.code(report.live ? 200 : 503).send({ live: report.live, details: report.details });
  });

  app.get('/readyz', { schema: hide }, async (_request, reply) => {
    const [redisKind, report] = await Promise.all([redisNotReady(options.redis, options.journal), options.health ? options.health() : Promise.resolve(undefined)]);
    const redis = redisKind === undefined;
    const ready = redis && (report?.ready ?? true);
    return reply.code(ready ? 200 : 503).send({ ready, redis, ...(redisKind ? { redisKind } : {}), details: report?.details });
  });

  app.get('/openapi.json', { schema: hide }, async () => app.swagger());
}
