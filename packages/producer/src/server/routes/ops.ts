/**
 * Operations endpoints, unauthenticated (network policy protects them):
 * `/metrics` (Prometheus text; queue depth gauges refreshed at scrape),
 * `/healthz` (liveness), `/readyz` (Redis reachable), `/openapi.json`.
 */
import type { FastifyInstance } from 'fastify';
import type { Queue } from 'bullmq';
import type { Cluster, Redis } from 'ioredis';
import { countUnfinishedByState, type Journal, type Metrics } from '@durable-a2a/shared';

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
}

/** A readiness PING slower than this counts as Redis unreachable. */
const PING_TIMEOUT_MS = 1_000;

async function redisReachable(redis: Redis | Cluster): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), PING_TIMEOUT_MS)));
  try {
    return await Promise.race([redis.ping().then((answer) => answer === 'PONG'), timeout]);
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}

/** Sets `durable_a2a_queue_jobs{queue,status}` from BullMQ's job counts of every queue. */
async function refreshQueueDepth(queues: readonly Queue[], metrics: Metrics): Promise<void> {
  await Promise.all(
    queues.map(async (queue) => {
      const counts = await queue.getJobCounts();
      for (const [status, value] of Object.entries(counts)) metrics.queueDepth.set({ queue: queue.name, status }, value);
    }),
  );
}

export function opsRoutes(app: FastifyInstance, options: OpsRouteOptions): void {
  const hide = { hide: true };

  app.get('/metrics', { schema: hide }, async (request, reply) => {
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
    const [redis, report] = await Promise.all([redisReachable(options.redis), options.health ? options.health() : Promise.resolve(undefined)]);
    const ready = redis && (report?.ready ?? true);
    return reply.code(ready ? 200 : 503).send({ ready, redis, details: report?.details });
  });

  app.get('/openapi.json', { schema: hide }, async () => app.swagger());
}
