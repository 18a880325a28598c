/**
 * The policy dispatcher's connections per origin (`free-pool.ts`): a request goes to a free connection, the most
 * recently freed first, and opens one only when none is free; connections held by open streams are never asked.
 * Real HTTP on 127.0.0.1 (port 0); the server names the connection (its client port) each request came on.
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { errors, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPolicyDispatcher } from '../src/address-policy.ts';

/** Keep-alive far beyond a test on both sides: an idle connection closing mid-test would open another one. */
const KEEP_ALIVE_MS = 600_000;

interface Held {
  /** The connection (client port) the request came on. */
  connection: number;
  finish(): void;
}

/** A server that holds `/hold/<n>` until the test finishes it and answers anything else at once, with the connection. */
async function startServer(): Promise<{ url: string; connections: () => number; arrived(n: number): Promise<Held>; close(): Promise<void> }> {
  let connections = 0;
  const arrivals = new Map<number, (held: Held) => void>();
  const early = new Map<number, Held>();
  const server: Server = createServer((incoming, response: ServerResponse) => {
    const connection = incoming.socket.remotePort!;
    const held = /^\/hold\/(\d+)$/.exec(incoming.url ?? '');
    if (!held) {
      response.end(String(connection));
      return;
    }
    response.writeHead(200, { 'content-type': 'text/plain' });
    response.write('open\n');
    const n = Number(held[1]);
    const entry = { connection, finish: () => response.end(String(connection)) };
    const waiter = arrivals.get(n);
    if (waiter) waiter(entry);
    else early.set(n, entry);
  });
  server.keepAliveTimeout = KEEP_ALIVE_MS;
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    connections: () => connections,
    arrived: (n) => {
      const already = early.get(n);
      if (already) return Promise.resolve(already);
      return new Promise((resolve) => arrivals.set(n, resolve));
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

let server: Awaited<ReturnType<typeof startServer>>;
beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server.close());

/**
 * Waits for the connections whose response just ended to be free: undici resumes a connection (its `drain`) in the
 * check phase after the response completed (`setImmediate`), after the body's end was seen; this waits one check phase.
 */
const freed = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

const newDispatcher = () => createPolicyDispatcher({ allowLoopback: true }, { keepAliveTimeout: KEEP_ALIVE_MS, keepAliveMaxTimeout: KEEP_ALIVE_MS });

describe('the policy dispatcher finds a free connection among held ones', () => {
  it('opens a connection only when none is free, and reuses the one freed last', async () => {
    const dispatcher = newDispatcher();
    try {
      const quick = async () => Number(await (await request(`${server.url}/quick`, { dispatcher })).body.text());
      const opened = server.connections();
      const streams = await Promise.all([1, 2, 3].map(async (n) => {
        const response = await request(`${server.url}/hold/${n}`, { dispatcher });
        return { response, held: await server.arrived(n) };
      }));
      expect(server.connections() - opened).toBe(3);
      // Every connection carries a stream: a fourth one.
      const fourth = await quick();
      await freed();
      expect(server.connections() - opened).toBe(4);
      // Freed in the order 1, 3: the next request goes on 3's connection, the one after on 1's, then 4's.
      for (const index of [0, 2]) {
        streams[index]!.held.finish();
        await streams[index]!.response.body.text();
      }
      await freed();
      expect(await quick()).toBe(streams[2]!.held.connection);
      await freed();
      expect(await quick()).toBe(streams[2]!.held.connection);
      await freed();
      expect(server.connections() - opened).toBe(4);
      streams[1]!.held.finish();
      await streams[1]!.response.body.text();
      await freed();
      expect(await quick()).toBe(streams[1]!.held.connection);
      expect(fourth).not.toBe(streams[1]!.held.connection);
    } finally {
      await dispatcher.destroy();
    }
  });

  it('property: a request goes on the connection freed last, a new one only when every connection is busy', async () => {
    type Command = { kind: 'hold' } | { kind: 'finish'; pick: number } | { kind: 'quick' };
    // Streams opened more often than finished, so several connections are free at once in most runs.
    const command: fc.Arbitrary<Command> = fc.oneof(
      { arbitrary: fc.constant<Command>({ kind: 'hold' }), weight: 3 },
      { arbitrary: fc.nat(1_000).map((pick): Command => ({ kind: 'finish', pick })), weight: 2 },
      { arbitrary: fc.constant<Command>({ kind: 'quick' }), weight: 1 },
    );
    let next = 1_000;
    await fc.assert(
      fc.asyncProperty(fc.array(command, { minLength: 1, maxLength: 30 }), async (commands) => {
        const dispatcher = newDispatcher();
        const opened = server.connections();
        // The model: connections by client port, the free ones in the order they were freed (last = freed last).
        const free: number[] = [];
        let known = 0;
        const open: { held: Held; body: Promise<string> }[] = [];
        try {
          for (const step of commands) {
            if (step.kind === 'finish') {
              if (open.length === 0) continue;
              const [stream] = open.splice(step.pick % open.length, 1);
              stream!.held.finish();
              await stream!.body;
              await freed();
              free.push(stream!.held.connection);
              continue;
            }
            const expected = free.pop();
            let connection: number;
            if (step.kind === 'hold') {
              const n = next++;
              const response = await request(`${server.url}/hold/${n}`, { dispatcher });
              const held = await server.arrived(n);
              open.push({ held, body: response.body.text() });
              connection = held.connection;
            } else {
              connection = Number(await (await request(`${server.url}/quick`, { dispatcher })).body.text());
              await freed();
              free.push(connection);
            }
            if (expected === undefined) known++;
            else expect(connection).toBe(expected);
            expect(server.connections() - opened).toBe(known);
          }
        } finally {
          for (const stream of open) stream.held.finish();
          await Promise.all(open.map((stream) => stream.body));
          await dispatcher.destroy();
        }
      }),
      { numRuns: 40 },
    );
  });

  it('close lets a held stream finish, then refuses requests with ClientClosedError', async () => {
    const dispatcher = newDispatcher();
    const response = await request(`${server.url}/hold/5000`, { dispatcher });
    const held = await server.arrived(5000);
    const closed = dispatcher.close();
    await expect(request(`${server.url}/quick`, { dispatcher })).rejects.toBeInstanceOf(errors.ClientClosedError);
    held.finish();
    expect(await response.body.text()).toBe(`open\n${held.connection}`);
    await closed;
  });
});
