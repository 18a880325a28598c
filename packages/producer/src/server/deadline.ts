/**
 * Every request gets an answer in bounded time, whatever Redis does (field
 * case R30): past the deadline a request still running is answered 503
 * problem+json with `Retry-After` — `REDIS_UNAVAILABLE` when the connection
 * is down, `REQUEST_TIMEOUT` otherwise. Whatever the handler does later is
 * dropped (fastify logs it at warn); the producer never replays a command
 * after the fact (no offline queue), so a retry with the same idempotency key
 * is safe.
 */
import type { FastifyInstance } from 'fastify';
import { problem, sendProblem } from './problem.ts';

/** Default request deadline: 5 s (issue 13). */
export const DEFAULT_REQUEST_TIMEOUT_MS = 5_000;
/** How long `ready()` waits for a first connection before serving anyway (requests then get 503). */
export const STARTUP_REDIS_WAIT_MS = 3_000;

/** Registers the deadline hooks on `app`. `connected()` tells which 503 code applies. */
export function answerWithin(app: FastifyInstance, timeoutMs: number, connected: () => boolean): void {
  const timers = new WeakMap<object, NodeJS.Timeout>();
  app.addHook('onRequest', async (request, reply) => {
    const timer = setTimeout(() => {
      if (reply.sent) return;
      const body = connected()
        ? problem('REQUEST_TIMEOUT', `no answer within ${timeoutMs} ms; retry with the same idempotency key`)
        : problem('REDIS_UNAVAILABLE', 'Redis is unreachable; nothing was queued for later. Retry after Retry-After seconds with the same idempotency key.');
      void sendProblem(reply, body);
    }, timeoutMs);
    timer.unref();
    timers.set(request, timer);
  });
  app.addHook('onResponse', async (request) => clearTimeout(timers.get(request)));
}
