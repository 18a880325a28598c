/**
 * The worker process's small HTTP endpoint for Kubernetes and Prometheus:
 * `/metrics` (prom-client text), `/healthz` (liveness from fetch progress,
 * R23: 503 when a queue's fetch loop stopped), `/readyz` (Redis answers).
 */
import { createServer, type Server } from 'node:http';
import type { Fleet } from './fleet.ts';

/** Starts the endpoint on `port` (0 = any free port). Resolves with the server. */
export async function startOpsServer(fleet: Fleet, port: number, host = '0.0.0.0'): Promise<Server> {
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
      void fleet.context.journal.redis.ping().then(
        () => send(200, JSON.stringify({ ready: true })),
        (error: unknown) => send(503, JSON.stringify({ ready: false, error: String(error) })),
      );
      return;
    }
    send(404, JSON.stringify({ error: 'not found' }));
  });
  await new Promise<void>((resolve) => server.listen(port, host, resolve));
  return server;
}
