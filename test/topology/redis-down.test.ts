/**
 * R30 and its kind: Redis unreachable while the API and the workers run.
 * Every API request is answered 503 problem+json `REDIS_UNAVAILABLE` with
 * Retry-After within the request deadline; nothing is replayed once Redis
 * returns, so the same idempotency key is safe; both processes write only
 * JSON lines on stdout through the outage and log it as a state change; and
 * SIGTERM with Redis down exits within DA2A_CLOSE_TIMEOUT_MS, non-zero, with
 * one line naming what was abandoned.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startRedisServer, testsOnCluster, type RedisServerHandle } from '../harness/redis.ts';
import { startDemoAgent, type DemoAgentHandle } from '../harness/agent.ts';
import { completesWith } from '../harness/agent-behaviours.ts';
import { eventually, TEST_TIMINGS } from '../harness/fleet.ts';
import { spawnObserved, type ObservedProcess } from '../harness/processes.ts';
import { TEST_API_TOKEN } from '../harness/api-server.ts';

const CLOSE_TIMEOUT_MS = 3_000;
const REQUEST_DEADLINE_MS = 5_000;
let redis: RedisServerHandle;
let agent: DemoAgentHandle;
let api: ObservedProcess;
let workers: ObservedProcess;
let base: string;

beforeAll(async () => {
  redis = await startRedisServer({ appendOnly: true, appendFsync: 'always' });
  agent = await startDemoAgent({ behaviour: completesWith('done') });
  const shared = { REDIS_URL: redis.url, DA2A_PREFIX: 'outage', LOG_LEVEL: 'info', DA2A_ALLOW_LOOPBACK: 'true', DA2A_CLOSE_TIMEOUT_MS: String(CLOSE_TIMEOUT_MS) };
  api = spawnObserved('api', { ...shared, PORT: '0', HOST: '127.0.0.1', DA2A_API_TOKENS: TEST_API_TOKEN });
  // A send the outage caught after its mark is left to the reconciler (the stall guard, crash window 8), which
  // waits sendSettleMs (request timeout + 1 s) from the mark: the test's request timeout keeps that in the wait below.
  workers = spawnObserved('workers', { ...shared, DA2A_RECONCILE_INTERVAL_MS: '1000', DA2A_REQUEST_TIMEOUT_MS: String(TEST_TIMINGS.requestTimeoutMs) });
  const { port } = await api.ready;
  await workers.ready;
  base = `http://127.0.0.1:${port}`;
}, 60_000);
afterAll(async () => {
  await api?.kill();
  await workers?.kill();
  await agent?.close();
  await redis?.stop();
});

const call = async (method: string, path: string, body?: unknown) => {
  const started = Date.now();
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${TEST_API_TOKEN}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
    signal: AbortSignal.timeout(10_000),
  });
  return { status: response.status, headers: response.headers, body: (await response.json().catch(() => undefined)) as Record<string, unknown> | undefined, ms: Date.now() - started };
};
const delegation = (idempotencyKey: string) => ({ agent: agent.cardUrl, text: 'hello', idempotencyKey });

it.skipIf(testsOnCluster())('R30: answers 503 REDIS_UNAVAILABLE fast, replays nothing, logs JSON only, and SIGTERM exits bounded', async () => {
  expect((await call('GET', '/readyz')).status).toBe(200);
  expect((await call('POST', '/v1/delegations', delegation('before-outage'))).status).toBe(201);

  await redis.kill();
  for (const [method, path, body] of [['POST', '/v1/delegations', delegation('during-outage')], ['GET', '/v1/workflows/x', undefined]] as const) {
    const answer = await call(method, path, body);
    expect(answer.status, `${method} ${path}`).toBe(503);
    expect(answer.ms).toBeLessThan(REQUEST_DEADLINE_MS);
    expect(answer.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(answer.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(answer.body).toMatchObject({ status: 503, code: 'REDIS_UNAVAILABLE' });
    // A write is retried with its idempotency key; a read has none: it says "retry".
    const advice = `${String(answer.body!.title)} ${String(answer.body!.detail)}`;
    if (method === 'GET') expect(advice).not.toContain('idempotency key');
    else expect(advice).toContain('same idempotency key');
  }
  expect((await call('GET', '/metrics')).status).toBe(200);
  await new Promise((resolve) => setTimeout(resolve, 3_000)); // the outage lasts: reconnect attempts pile up

  await redis.restart();
  await eventually(async () => (await call('GET', '/readyz')).status === 200, 'API ready again');
  // Nothing from the refused request was queued and replayed on reconnect.
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  expect((await call('GET', '/v1/workflows/during-outage')).status).toBe(404);
  const retried = await call('POST', '/v1/delegations', delegation('during-outage'));
  expect(retried.status).toBe(201);
  await eventually(async () => (await call('GET', '/v1/workflows/during-outage')).body?.state === 'COMPLETED', 'retried delegation completed');
  // The delegation accepted just before the outage may have been caught mid-send by it (then the reconciler
  // searches and resends its messageId after the restart): it finishes too, and the agent saw each message once.
  await eventually(async () => (await call('GET', '/v1/workflows/before-outage')).body?.state === 'COMPLETED', 'delegation from before the outage completed');
  expect(agent.receivedMessages).toHaveLength(2);

  await redis.kill();
  await new Promise((resolve) => setTimeout(resolve, 500));
  const signalled = Date.now();
  api.child.kill('SIGTERM');
  workers.child.kill('SIGTERM');
  const [apiExit, workersExit] = await Promise.all([api.exited, workers.exited]);
  expect(Date.now() - signalled).toBeLessThan(CLOSE_TIMEOUT_MS + 1_500); // process start-up of the exit path aside
  for (const [name, process, exit] of [['api', api, apiExit], ['workers', workers, workersExit]] as const) {
    expect(exit.code, `${name}: ${process.stdoutLines().slice(-6).join('\n')}`).not.toBe(0);
    expect(exit.code, name).not.toBeNull();
    const lines = process.stdoutLines();
    const parsed = lines.map((line, index) => {
      try {
        return JSON.parse(line) as { msg?: string; abandoned?: unknown; redis?: string };
      } catch {
        throw new Error(`${name} stdout line ${index + 1} is not JSON: ${line.slice(0, 200)}`);
      }
    });
    expect(parsed.filter((line) => line.abandoned !== undefined), `${name}: one line naming what was abandoned`).toHaveLength(1);
    expect(parsed.filter((line) => line.redis === 'down').length, `${name}: outage logged as state changes`).toBeGreaterThanOrEqual(1);
    expect(parsed.filter((line) => line.redis === 'down').length, `${name}: not one line per retry`).toBeLessThanOrEqual(4);
    expect(parsed.some((line) => line.redis === 'up'), `${name}: back logged`).toBe(true);
  }
}, 120_000);
