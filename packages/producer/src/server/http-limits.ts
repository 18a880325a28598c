/**
 * Bounds on the HTTP service's connections, so slow or hostile clients cannot hold it open (a client dripping
 * its headers or body one byte at a time, or opening thousands of idle connections):
 *
 * | limit | default | what it bounds |
 * |---|---|---|
 * | `headersTimeoutMs` | 10 s | from the connection (or the previous response) until a request's headers are complete (Node's `headersTimeout`) |
 * | `bodyTimeoutMs` | 30 s | until the whole request, body included, is received (Node's `requestTimeout`; fastify's `requestTimeout: 0` would also turn off the headers timeout) |
 * | `keepAliveTimeoutMs` | 5 s | an idle keep-alive connection between requests |
 * | `maxConnections` | 2,000 | open connections overall (Node's `maxConnections`: more are closed at once) |
 * | `maxConnectionsPerAddress` | 200 | open connections from one client address (more are closed at once) |
 *
 * Expired requests are found by Node's connection check, run every `CONNECTIONS_CHECK_INTERVAL_MS`, so a
 * connection past its timeout is closed within that much more. The answer deadline of a request that was
 * received (`requestTimeoutMs`, long polls included) is another bound (deadline.ts): these only bound receiving.
 */
import type { Server } from 'node:http';
import type { Socket } from 'node:net';

/** The connection bounds of the HTTP service (milliseconds and counts). */
export interface HttpLimits {
  headersTimeoutMs: number;
  bodyTimeoutMs: number;
  keepAliveTimeoutMs: number;
  maxConnections: number;
  maxConnectionsPerAddress: number;
}

export const DEFAULT_HTTP_LIMITS: Readonly<HttpLimits> = Object.freeze({
  headersTimeoutMs: 10_000,
  bodyTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
  maxConnections: 2_000,
  maxConnectionsPerAddress: 200,
});

/** How often Node looks for requests past their headers or body timeout (its default, 30 s, would let them run 30 s longer). */
export const CONNECTIONS_CHECK_INTERVAL_MS = 1_000;

/**
 * `limits` over the defaults. The headers timeout is capped at the body timeout (Node refuses a larger one).
 * @throws RangeError when a value is not a positive whole number
 */
export function resolveHttpLimits(limits: Partial<HttpLimits> = {}): HttpLimits {
  const resolved = { ...DEFAULT_HTTP_LIMITS, ...Object.fromEntries(Object.entries(limits).filter(([, value]) => value !== undefined)) } as HttpLimits;
  for (const [name, value] of Object.entries(resolved)) {
    if (!Number.isInteger(value) || value <= 0) throw new RangeError(`http limit ${name} must be a positive whole number, got ${value}`);
  }
  return { ...resolved, headersTimeoutMs: Math.min(resolved.headersTimeoutMs, resolved.bodyTimeoutMs) };
}

/** The fastify server options that apply `limits` (fastify passes `http` to `http.createServer`). */
export function fastifyHttpOptions(limits: HttpLimits) {
  return {
    requestTimeout: limits.bodyTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    http: { headersTimeout: limits.headersTimeoutMs, requestTimeout: limits.bodyTimeoutMs, connectionsCheckingInterval: CONNECTIONS_CHECK_INTERVAL_MS },
  };
}

/**
 * Applies the connection counts to `server`: `maxConnections` overall (Node closes the rest), and at most
 * `maxConnectionsPerAddress` open connections per remote address (a connection past it is destroyed before any
 * byte is read). The per-address table holds only addresses with an open connection.
 */
export function boundConnections(server: Server, limits: HttpLimits): void {
  server.maxConnections = limits.maxConnections;
  const open = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress ?? 'unknown';
    const count = (open.get(address) ?? 0) + 1;
    if (count > limits.maxConnectionsPerAddress) {
      socket.destroy();
      return;
    }
    open.set(address, count);
    socket.once('close', () => {
      const left = (open.get(address) ?? 1) - 1;
      if (left <= 0) open.delete(address);
      else open.set(address, left);
    });
  });
}
