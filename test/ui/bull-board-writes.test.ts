/**
 * Bull Board writes (docs/http-api.md "Browser sessions (`/ui` and Bull Board)"): a cookie session only writes from the board's
 * own origin (Sec-Fetch-Site / Origin), the session expires server-side, and
 * read-only mode refuses every write.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { ApiServer } from '@durable-a2a/producer/server';
import { useRedisServer } from '../harness/redis.ts';
import { TEST_API_TOKEN, signIn, startTestServer } from '../harness/api-server.ts';

const redisServer = useRedisServer();
let app: ApiServer;
let readOnly: ApiServer;

beforeAll(async () => {
  app = startTestServer({ redisUrl: redisServer().url, prefix: 'admin' });
  readOnly = startTestServer({ redisUrl: redisServer().url, prefix: 'admin', adminReadOnly: true });
  await Promise.all([app.ready(), readOnly.ready()]);
});
afterAll(async () => {
  await app?.close();
  await readOnly?.close();
});

const sessionCookie = (server: ApiServer) => signIn(server);
const write = (server: ApiServer, headers: Record<string, string>) => server.inject({ method: 'PUT', url: '/admin/queues/api/queues/send/retry/failed', headers: { host: 'board.example', ...headers } });

it('a cookie write from another site is 403; from the board itself it goes through', async () => {
  const cookie = await sessionCookie(app);
  for (const headers of <Record<string, string>[]>[{}, { 'sec-fetch-site': 'cross-site' }, { 'sec-fetch-site': 'same-site' }, { origin: 'http://evil.example' }, { origin: 'null' }]) {
    const response = await write(app, { cookie, ...headers });
    expect(response.statusCode, JSON.stringify(headers)).toBe(403);
    expect(response.json().code).toBe('FORBIDDEN');
  }
  for (const headers of <Record<string, string>[]>[{ 'sec-fetch-site': 'same-origin' }, { origin: 'http://board.example' }]) {
    expect((await write(app, { cookie, ...headers })).statusCode, JSON.stringify(headers)).toBeLessThan(300);
  }
  expect((await app.inject({ method: 'GET', url: '/admin/queues/api/queues', headers: { cookie } })).statusCode).toBe(200);
});

it('a Bearer client writes without browser headers (no cookie rides along)', async () => {
  expect((await write(app, { authorization: `Bearer ${TEST_API_TOKEN}` })).statusCode).toBeLessThan(300);
});

it('the session expires server-side, whatever the browser keeps', async () => {
  const expired = `da2a_session=${Date.now() - 1_000}.${'B'.repeat(22)}.${'A'.repeat(43)}`;
  expect((await app.inject({ method: 'GET', url: '/admin/queues/api/queues', headers: { cookie: expired } })).statusCode).toBe(401);
  const forged = `da2a_session=${Date.now() + 60_000}.${'B'.repeat(22)}.${'A'.repeat(43)}`;
  expect((await app.inject({ method: 'GET', url: '/admin/queues/api/queues', headers: { cookie: forged } })).statusCode).toBe(401);
});

it('read-only mode refuses every write, even same-origin or Bearer', async () => {
  const cookie = await sessionCookie(readOnly);
  expect((await write(readOnly, { cookie, 'sec-fetch-site': 'same-origin' })).statusCode).toBe(403);
  expect((await write(readOnly, { authorization: `Bearer ${TEST_API_TOKEN}` })).statusCode).toBe(403);
  expect((await readOnly.inject({ method: 'GET', url: '/admin/queues/api/queues', headers: { cookie } })).statusCode).toBe(200);
});
