/**
 * A tiny system of record the demo agents write to (their side effects), so
 * tests can check "booked exactly once" and "compensated in reverse order".
 * Bookings are keyed by the caller's key (our messageId), and every write is
 * idempotent on that key but still counted.
 *
 *   POST /bookings             {bookingKey, kind, details} → 201 created | 200 already there
 *   GET  /bookings/:key        → 200 Booking | 404
 *   POST /bookings/:key/cancel → 200 Booking (cancelled, idempotent) | 404
 */
import { createServer, type ServerResponse } from 'node:http';
import { closeServer, listenOnLoopback, trackSockets } from './ports.ts';

export interface Booking {
  key: string;
  kind: string;
  status: 'booked' | 'cancelled';
  details: unknown;
}

export interface BookingCounts {
  /** POST /bookings per key, duplicates included. */
  creates: Map<string, number>;
  /** POST /bookings/:key/cancel per key, repeats and unknown keys included. */
  cancels: Map<string, number>;
}

export interface BookingServiceHandle {
  readonly port: number;
  /** `http://127.0.0.1:PORT` */
  readonly url: string;
  /** Keys in the order their cancel requests arrived (repeats included). */
  readonly cancelOrder: readonly string[];
  /** Snapshot of the request counters. */
  counts(): BookingCounts;
  /** The booking stored under `key`, if any. */
  booking(key: string): Booking | undefined;
  /** All bookings, in creation order. */
  bookings(): Booking[];
  /** The next `requests` requests (any route) fail with `status` (default 503) and change nothing. */
  failNextRequests(requests: number, status?: number): void;
  /** Destroys open sockets and stops listening. Safe to call twice. */
  close(): Promise<void>;
}

/** Starts the booking service on 127.0.0.1, port 0. */
export async function startBookingService(options: { port?: number; host?: string; publicHost?: string } = {}): Promise<BookingServiceHandle> {
  const bookings = new Map<string, Booking>();
  const creates = new Map<string, number>();
  const cancels = new Map<string, number>();
  const cancelOrder: string[] = [];
  let failuresLeft = 0;
  let failureStatus = 503;

  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      if (failuresLeft > 0) {
        failuresLeft--;
        return reply(response, failureStatus, { error: 'injected failure' });
      }
      const path = new URL(request.url ?? '/', 'http://localhost').pathname;
      const keyMatch = /^\/bookings\/([^/]+)(\/cancel)?$/.exec(path);
      if (request.method === 'POST' && path === '/bookings') {
        let body: { bookingKey?: unknown; kind?: unknown; details?: unknown };
        try {
          body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as typeof body;
        } catch {
          return reply(response, 400, { error: 'body is not JSON' });
        }
        if (typeof body.bookingKey !== 'string' || body.bookingKey === '') {
          return reply(response, 400, { error: 'bookingKey (non-empty string) is required' });
        }
        const key = body.bookingKey;
        creates.set(key, (creates.get(key) ?? 0) + 1);
        const existing = bookings.get(key);
        if (existing) return reply(response, 200, existing);
        const booking: Booking = { key, kind: typeof body.kind === 'string' ? body.kind : 'unknown', status: 'booked', details: body.details ?? null };
        bookings.set(key, booking);
        return reply(response, 201, booking);
      }
      if (keyMatch && request.method === 'GET' && !keyMatch[2]) {
        const booking = bookings.get(decodeURIComponent(keyMatch[1] ?? ''));
        return booking ? reply(response, 200, booking) : reply(response, 404, { error: 'no such booking' });
      }
      if (keyMatch && request.method === 'POST' && keyMatch[2]) {
        const key = decodeURIComponent(keyMatch[1] ?? '');
        cancels.set(key, (cancels.get(key) ?? 0) + 1);
        cancelOrder.push(key);
        const booking = bookings.get(key);
        if (!booking) return reply(response, 404, { error: 'no such booking' });
        booking.status = 'cancelled';
        return reply(response, 200, booking);
      }
      return reply(response, 404, { error: `no route for ${request.method} ${path}` });
    });
  });
  const sockets = trackSockets(server);
  const port = await listenOnLoopback(server, options.port ?? 0, options.host);
  let closed = false;
  return {
    port,
    url: `http://${options.publicHost ?? '127.0.0.1'}:${port}`,
    cancelOrder,
    counts: () => ({ creates: new Map(creates), cancels: new Map(cancels) }),
    booking: (key) => {
      const booking = bookings.get(key);
      return booking ? { ...booking } : undefined;
    },
    bookings: () => [...bookings.values()].map((booking) => ({ ...booking })),
    failNextRequests(requests, status = 503) {
      failuresLeft = requests;
      failureStatus = status;
    },
    async close() {
      if (closed) return;
      closed = true;
      sockets.destroyAll();
      await closeServer(server);
    },
  };
}

/**
 * A side effect for the demo agent: books `kind` under `bookingKey` at the
 * service and throws on a non-2xx answer (so the agent's execution fails).
 */
export async function book(serviceUrl: string, bookingKey: string, kind: string, details: unknown = null): Promise<Booking> {
  const response = await fetch(`${serviceUrl}/bookings`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ bookingKey, kind, details }),
  });
  if (!response.ok) throw new Error(`booking service answered ${response.status} to POST /bookings`);
  return (await response.json()) as Booking;
}

/** Cancels the booking under `bookingKey`; a 404 (never booked) counts as done. Throws on other failures. */
export async function cancelBooking(serviceUrl: string, bookingKey: string): Promise<void> {
  const response = await fetch(`${serviceUrl}/bookings/${encodeURIComponent(bookingKey)}/cancel`, { method: 'POST' });
  if (!response.ok && response.status !== 404) {
    throw new Error(`booking service answered ${response.status} to cancel ${bookingKey}`);
  }
}

function reply(response: ServerResponse, status: number, payload: unknown): void {
  const body = JSON.stringify(payload);
  response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  response.end(body);
}
