/**
 * F33: slow clients are timed out and connections are bounded. Scaled down from the field case: 40 connections
 * drip a request's headers, 40 more drip a push body with a valid push token; the server closes every one within
 * its headers / body timeouts while a normal request is still served, and connections from one address past
 * `maxConnectionsPerAddress` are refused.
 */
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import type { ApiServer } from '@durable-a2a/producer/server';
import { Journal } from '@durable-a2a/shared';
import { TEST_API_TOKEN, listenOnLoopback, startTestServer } from '../harness/api-server.ts';
import { useRedisClient, useRedisServer } from '../harness/redis.ts';
import { intentRow } from '../harness/journal-rows.ts';

const redisServer = useRedisServer();
const redis = useRedisClient<Redis>(redisServer);
const PUSH_TOKEN = 'push-token-for-slow-clients-0123';
/** How long a test waits for the server to close what it should (generous: a loaded 2-core machine). */
const CLOSE_WAIT_MS = 45_000;

let app: ApiServer | undefined;
const sockets: Socket[] = [];
const timers: NodeJS.Timeout[] = [];
afterEach(async () => {
  for (const timer of timers.splice(0)) clearInterval(timer);
  for (const socket of sockets.splice(0)) socket.destroy();
  await app?.close();
  app = undefined;
});

/** Opens a connection to `port` and resolves once it is connected; `closed` resolves when the server closes it. */
async function open(port: number): Promise<{ socket: Socket; closed: Promise<void>; received: () => string }> {
  const socket = connect({ port, host: '127.0.0.1' });
  sockets.push(socket);
  let received = '';
  socket.on('data', (chunk: Buffer) => void (received += chunk.toString('latin1')));
  socket.on('error', () => undefined);
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', () => resolve());
    socket.once('error', reject);
  });
  return { socket, closed, received: () => received };
}

/** Writes `next()` to `socket` every `everyMs` while it is open (at most 200 times). */
function drip(socket: Socket, next: (index: number) => string, everyMs: number): void {
  let index = 0;
  const timer = setInterval(() => {
    if (socket.destroyed || index >= 200) return clearInterval(timer);
    socket.write(next(index++));
  }, everyMs);
  timers.push(timer);
}

/** Resolves true when every promise settled within `ms`, false otherwise. */
const within = (promises: Promise<unknown>[], ms: number) =>
  Promise.race([Promise.all(promises).then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ms).unref())]);

describe('F33: slow clients are never timed out', () => {
  it('F33: 40 dripping-header and 40 dripping-body push connections are all closed by the server; a normal request is served meanwhile', async () => {
    const prefix = 'slow';
    const server = startTestServer({ redisUrl: redisServer().url, prefix, httpLimits: { headersTimeoutMs: 1_500, bodyTimeoutMs: 3_000, keepAliveTimeoutMs: 1_000, maxConnectionsPerAddress: 100 } });
    app = server;
    const definition = JSON.stringify({ workflowId: 'wf-slow', steps: [{ name: 'main', agent: intentRow('wf-slow').agentCardUrl, message: { text: 'do' } }] });
    await new Journal(redis(), { prefix }).createWorkflow('wf-slow', { state: 'RUNNING', definition, createdAt: '1000', updatedAt: '1000' }, { ...intentRow('wf-slow'), pushToken: PUSH_TOKEN });
    const base = await listenOnLoopback(server);
    const port = Number(new URL(base).port);
    // The push token is valid: a whole push with it is answered (not 401).
    const valid = await fetch(`${base}/v1/push/wf-slow/main.1`, { method: 'POST', headers: { authorization: `Bearer ${PUSH_TOKEN}`, 'content-type': 'application/json' }, body: '{}' });
    expect(valid.status).not.toBe(401);

    const started = Date.now();
    const headers = await Promise.all(Array.from({ length: 40 }, () => open(port)));
    for (const { socket } of headers) {
      socket.write('POST /v1/delegations HTTP/1.1\r\nHost: x\r\n');
      drip(socket, (index) => `X-Drip-${index}: 1\r\n`, 500);
    }
    const bodies = await Promise.all(Array.from({ length: 40 }, () => open(port)));
    for (const { socket } of bodies) {
      socket.write(`POST /v1/push/wf-slow/main.1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${PUSH_TOKEN}\r\nContent-Type: application/json\r\nContent-Length: 400000\r\n\r\n{`);
      drip(socket, () => ' ', 500);
    }

    // A normal request is served while the 80 drip.
    const health = await fetch(`${base}/healthz`);
    expect(health.status).toBe(200);
    const listing = await fetch(`${base}/v1/workflows`, { headers: { authorization: `Bearer ${TEST_API_TOKEN}` } });
    expect(listing.status).toBe(200);

    expect(await within([...headers, ...bodies].map(({ closed }) => closed), CLOSE_WAIT_MS)).toBe(true);
    // Closed by the server's timeouts, not by this test's bound.
    expect(Date.now() - started).toBeLessThan(CLOSE_WAIT_MS);
    // A body that never arrived is answered 408 (Node's request timeout), never handed to the route.
    expect(bodies.filter(({ received }) => received().startsWith('HTTP/1.1 408')).length).toBeGreaterThan(0);
  });

  it('F33: connections from one address past maxConnectionsPerAddress are refused; those within it are served', async () => {
    const server = startTestServer({ redisUrl: redisServer().url, prefix: 'bound', httpLimits: { maxConnectionsPerAddress: 5, headersTimeoutMs: 20_000, bodyTimeoutMs: 20_000 } });
    app = server;
    const port = Number(new URL(await listenOnLoopback(server)).port);
    const kept = await Promise.all(Array.from({ length: 5 }, () => open(port)));
    const extra = await Promise.all(Array.from({ length: 3 }, () => open(port)));
    expect(await within(extra.map(({ closed }) => closed), CLOSE_WAIT_MS)).toBe(true);
    for (const { received } of extra) expect(received()).toBe('');
    // The five within the bound still work.
    for (const { socket } of kept) socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    expect(await within(kept.map(({ closed }) => closed), CLOSE_WAIT_MS)).toBe(true);
    for (const { received } of kept) expect(received()).toMatch(/^HTTP\/1\.1 200/);
    // Closing them frees the address's slots.
    const again = await open(port);
    again.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    await again.closed;
    expect(again.received()).toMatch(/^HTTP\/1\.1 200/);
  });
});
