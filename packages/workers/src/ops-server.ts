/**
 * The worker process's small HTTP endpoint for Kubernetes and Prometheus:
 * `/metrics` (prom-client text), `/healthz` (liveness from fetch progress,
 * R23: 503 when a queue's fetch loop stopped), `/readyz` (Redis answers and
 * the periodic persistence check passes: not evicting).
 */
import { createServer, type Server } from 'node:http';
import type { Fleet } from './fleet.ts';
import type { PersistenceWatch } from './persistence.ts';

/** A readiness PING slower than this counts as Redis unreachable. */
const PING_TIMEOUT_MS = 1_000;

export interface OpsServerOptions {
  host?: string;
  /** The periodic persistence/eviction check; readiness is false while it finds a problem. */
  persistence?: PersistenceWatch;
}

async function redisAnswers(fleet: Fleet): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), PING_TIMEOUT_MS)));
  try {
    return await Promise.race([fleet.context.journal.redis.ping().then(() => true, () => false), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Starts the endpoint on `port` (0 = any free port). Resolves with the server. */
export async function startOpsServer(fleet: Fleet, port: number, options: OpsServerOptions = {}): Promise<Server> {
  const server = createServer((request, response) => {
    const send = (status: number, body: string, contentType = 'application/json') => {
      response.writeHead(status, { 'content-type': contentType });
      response.end(body);
    };
    const path = (request.url ?? '/').split('?')[0];
    if (request.method !== 'GET') return send(405, JSON.stringify({ error: 'method not allowed' }));
    if (path === '/metrics') {
      void fleet.metrics.registry.metrics().then(
        (text) => send(200, text, fleet.metrics.registry.contentType),
        (error: unknown) => send(500, String(error), 'text/plain'),
      );
      return;
    }
    if (path === '/healthz') {
      const health = fleet.health();
      return send(health.live ? 200 : 503, JSON.stringify(health));
    }
    if (path === '/readyz') {
      void redisAnswers(fleet).then((redis) => {
        const persistence = options.persistence?.problems() ?? [];
        const ready = redis && persistence.length === 0;
        send(ready ? 200 : 503, JSON.stringify({ ready, redis, persistence }));
      });
      return;
    }
    send(404, JSON.stringify({ error: 'not found' }));
  });
  await new Promise<void>((resolve) => server.listen(port, options.host ?? '0.0.0.0', resolve));
  return server;
}
