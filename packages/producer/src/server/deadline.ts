/**
 * Every request gets an answer in bounded time, whatever Redis does (field
 * case R30): past the deadline a request still running is answered 503
 * problem+json with `Retry-After` — `REDIS_UNAVAILABLE` when the connection
 * is down, `REQUEST_TIMEOUT` otherwise. Whatever the handler does later is
 * dropped (fastify logs it at warn); the producer never replays a command
 * after the fact (no offline queue), so a retry with the same idempotency key
 * is safe.
 *
 * A long poll (`GET /v1/workflows/:id?waitMs=…`) is answered within its wait
 * plus the normal deadline: a route that waits on purpose declares it with
 * `config.deadlineExtensionMs(request)` (its own parsing and cap of the wait).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { problem, sendProblem } from './problem.ts';

/** Default request deadline: 5 s, so a client is answered (a 503 at worst) even while Redis does not answer. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 5_000;
/** How long `ready()` waits for a first connection before serving anyway (requests then get 503). */
export const STARTUP_REDIS_WAIT_MS = 3_000;

/** Route config of a route that waits on purpose: how much longer than the deadline this request may take (ms). */
export interface DeadlineConfig {
  deadlineExtensionMs?: (request: FastifyRequest) => number;
}

/** The deadline of `request`: `timeoutMs`, plus the wait its route declares (a long poll). */
export function deadlineOf(request: FastifyRequest, timeoutMs: number): number {
  const extension = (request.routeOptions.config as DeadlineConfig | undefined)?.deadlineExtensionMs?.(request) ?? 0;
  return timeoutMs + (Number.isFinite(extension) && extension > 0 ? extension : 0);
}

/** Registers the deadline hooks on `app`. `connected()` tells which 503 code applies. */
export function answerWithin(app: FastifyInstance, timeoutMs: number, connected: () => boolean): void {
  const timers = new WeakMap<object, NodeJS.Timeout>();
  app.addHook('onRequest', async (request, reply) => {
    const deadlineMs = deadlineOf(request, timeoutMs);
    const timer = setTimeout(() => {
      if (reply.sent) return;
      const body = connected()
        ? problem('REQUEST_TIMEOUT', `no answer within ${deadlineMs} ms; retry with the same idempotency key`)
        : problem('REDIS_UNAVAILABLE', 'Redis is unreachable; nothing was queued for later. Retry after Retry-After seconds with the same idempotency key.');
      void sendProblem(reply, body);
    }, deadlineMs);
    timer.unref();
    timers.set(request, timer);
  });
  app.addHook('onResponse', async (request) => clearTimeout(timers.get(request)));
}
