/**
 * The worker process's small HTTP endpoint for Kubernetes and Prometheus:
 * `/metrics` (prom-client text), `/healthz` (liveness from fetch progress,
 * R23: 503 when a queue's fetch loop stopped), `/readyz` (Redis answers and
 * the periodic persistence check passes: not evicting).
 *
 * Bound to 127.0.0.1 unless a host is given (the executable's
 * `DA2A_METRICS_HOST`): the endpoint carries no API token, so it is not on
 * every interface by default. With a `token`, `/metrics` answers 401 without
 * `Authorization: Bearer <token>`; the probes stay open (kubelet sends none).
 *
 * The executable binds the port before it starts the fleet (`bindOpsServer`,
 * then `serve`), so a taken port stops the process before it takes a job;
 * until then the probes answer 503 `starting`.
 */
import { createServer, type Server } from 'node:http';
import type { Registry } from 'prom-client';
import { metricsRequestAllowed } from '@durable-a2a/shared';
import type { Fleet } from './fleet.ts';
import type { PersistenceWatch } from './persistence.ts';

/** A readiness PING slower than this counts as Redis unreachable. */
const PING_TIMEOUT_MS = 1_000;
/** Default bind address: loopback only. */
export const DEFAULT_OPS_HOST = '127.0.0.1';

export interface OpsServerOptions {
  /** Address to bind. Default `DEFAULT_OPS_HOST` (127.0.0.1); `0.0.0.0` for every interface (a pod scraped by Prometheus). */
  host?: string;
  /** Bearer token `/metrics` requires. Default none (open). */
  token?: string;
  /** The periodic persistence/eviction check; readiness is false while it finds a problem. */
  persistence?: PersistenceWatch;
  /** What `/metrics` serves before `serve(fleet)` (e.g. the process metrics). Default: the fleet's registry, 503 before it. */
  registry?: Registry;
}

/** A bound endpoint; it answers for a fleet once `serve` is called. */
export interface OpsServer {
  server: Server;
  /** From now on the endpoint answers for `fleet` (and its persistence check, when given). */
  serve(fleet: Fleet, persistence?: PersistenceWatch): void;
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

/**
 * Binds the endpoint on `port` (0 = any free port) and `options.host`. Rejects with the listen error (`code`
 * EADDRINUSE, EACCES, EADDRNOTAVAIL…) when it cannot bind; nothing else is started then.
 */
export async function bindOpsServer(port: number, options: OpsServerOptions = {}): Promise<OpsServer> {
  let fleet: Fleet | undefined;
  let persistence = options.persistence;
  const server = createServer((request, response) => {
    const send = (status: number, body: string, contentType = 'application/json') => {
      response.writeHead(status, { 'content-type': contentType });
      response.end(body);
    };
    const path = (request.url ?? '/').split('?')[0];
    if (request.method !== 'GET') return send(405, JSON.stringify({ error: 'method not allowed' }));
    if (path === '/metrics') {
      if (!metricsRequestAllowed(request.headers.authorization, options.token)) {
        response.setHeader('www-authenticate', 'Bearer');
        return send(401, JSON.stringify({ error: 'this endpoint needs Authorization: Bearer <DA2A_METRICS_TOKEN>' }));
      }
      const registry = fleet?.metrics.registry ?? options.registry;
      if (!registry) return send(503, JSON.stringify({ error: 'starting' }));
      void registry.metrics().then(
        (text) => send(200, text, registry.contentType),
        (error: unknown) => send(500, String(error), 'text/plain'),
      );
      return;
    }
    if (path === '/healthz' || path === '/readyz') {
      if (!fleet) return send(503, JSON.stringify({ live: false, ready: false, starting: true }));
    }
    if (path === '/healthz') {
      const health = fleet!.health();
      return send(health.live ? 200 : 503, JSON.stringify(health));
    }
    if (path === '/readyz') {
      void redisAnswers(fleet!).then((redis) => {
        const problems = persistence?.problems() ?? [];
        const ready = redis && problems.length === 0;
        send(ready ? 200 : 503, JSON.stringify({ ready, redis, persistence: problems }));
      });
      return;
    }
    send(404, JSON.stringify({ error: 'not found' }));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, options.host ?? DEFAULT_OPS_HOST, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    server,
    serve(running, watch) {
      fleet = running;
      persistence = watch ?? persistence;
    },
  };
}

/** Binds the endpoint for a running fleet (`bindOpsServer` + `serve`). Resolves with the server. */
export async function startOpsServer(fleet: Fleet, port: number, options: OpsServerOptions = {}): Promise<Server> {
  const ops = await bindOpsServer(port, options);
  ops.serve(fleet);
  return ops.server;
}
