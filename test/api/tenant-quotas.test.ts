/**
 * Tenant quotas (docs/tenants.md "Quotas"): checked in the script that creates a workflow, so a creation over quota is
 * refused with 429 and Retry-After and writes nothing; a place in flight frees when a workflow finishes, a stored one
 * when retention removes its records. Every return code of createWorkflow-11.lua is met here: created, existed,
 * QUOTA_IN_FLIGHT, QUOTA_STORED.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import type { ApiServer } from '@durable-a2a/producer/server';
import { Journal } from '@durable-a2a/shared';
import { testsOnCluster, useRedisClient, useRedisServer } from '../harness/redis.ts';
import { eventually } from '../harness/fleet.ts';
import { startTestServer } from '../harness/api-server.ts';

const redisServer = useRedisServer();
const redis = useRedisClient<Redis>(redisServer);
const PREFIX = 'quotas';
const TOKENS = { small: 'small-service-token-0123456789', ops: 'ops-token-0123456789' };
let app: ApiServer;

beforeAll(async () => {
  app = startTestServer({
    redisUrl: redisServer().url,
    prefix: PREFIX,
    apiTokens: [`small:${TOKENS.small}`, `ops:${TOKENS.ops}`],
    tenants: { tokens: { small: { tenant: 'small', role: 'service' } }, quotas: { small: { maxInFlight: 2, maxStored: 3 } } },
  });
  await app.ready();
});
afterAll(async () => {
  await app?.close();
});

/** A workflow to an agent nobody runs (no fleet here: it stays unfinished until the test finishes it). */
const start = (token: keyof typeof TOKENS, workflowId: string) =>
  app.inject({ method: 'POST', url: '/v1/workflows', headers: { authorization: `Bearer ${TOKENS[token]}` }, payload: { workflowId, steps: [{ name: 'main', agent: 'http://127.0.0.1:9/agent', message: { text: 'x' } }] } });

/** What a refused creation must leave as it was: the journal's keys and its indexes. */
async function journalState(): Promise<{ keys: number; search: number; updated: number; unfinished: number }> {
  const journal = new Journal(redis(), { prefix: PREFIX });
  return {
    keys: (await redis().keys(`${PREFIX}:*`)).length,
    search: await redis().zcard(journal.keys.search()),
    updated: await redis().zcard(journal.keys.updated()),
    unfinished: await redis().zcard(journal.keys.unfinished()),
  };
}

/** Finishes a workflow as the workers do (its row's state); its records are kept for the retention (7 days). */
const finish = (workflowId: string) => new Journal(redis(), { prefix: PREFIX }).updateWorkflow(workflowId, { state: 'FAILED' });

describe.skipIf(testsOnCluster())('tenant quotas', () => {
  it('a creation over the in-flight quota is 429 with Retry-After and writes nothing; the same key again is still the same workflow', async () => {
    expect((await start('small', 'a')).statusCode).toBe(201);
    expect((await start('small', 'b')).statusCode).toBe(201);
    const before = await journalState();
    const refused = await start('small', 'c');
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['retry-after']).toBe('5');
    expect(refused.json()).toMatchObject({ code: 'QUOTA_EXCEEDED', status: 429, retryAfterSeconds: 5 });
    expect(await journalState()).toEqual(before);
    expect(await redis().exists(new Journal(redis(), { prefix: PREFIX }).keys.workflow('small~c'))).toBe(0);
    // Idempotent at quota: the existing workflow is answered, not refused.
    const again = await start('small', 'a');
    expect([again.statusCode, again.json().id]).toEqual([200, 'small~a']);
    // Another tenant is not held to this quota.
    expect((await start('ops', 'c')).statusCode).toBe(201);
    const metrics = (await app.inject({ method: 'GET', url: '/metrics' })).body;
    expect(metrics).toMatch(/durable_a2a_tenant_quota_refusals_total\{tenant="small"\} 1/);
  });

  it('a finished workflow frees its place in flight; the stored quota then binds until retention removes records', async () => {
    await finish('small~a');
    expect((await start('small', 'c')).statusCode).toBe(201);
    await finish('small~b');
    // In flight: c alone; stored: a, b (finished, kept), c. The stored quota (3) binds.
    const before = await journalState();
    const refused = await start('small', 'd');
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['retry-after']).toBe('60');
    expect(refused.json().detail).toMatch(/maxStored/);
    expect(await journalState()).toEqual(before);
    // b's retention ends (its keys' TTL, cut short here): its place is free at the next creation.
    const journal = new Journal(redis(), { prefix: PREFIX });
    for (const key of await redis().keys(`${PREFIX}:{wf:small~b}*`)) await redis().pexpire(key, 1);
    await eventually(async () => (await redis().exists(journal.keys.workflow('small~b'), journal.keys.finished('small~b'))) === 0, 'b expired');
    expect((await start('small', 'd')).statusCode).toBe(201);
    expect(await redis().zrange(journal.keys.tenantQuota('small').stored, 0, -1)).toEqual(['small~a', 'small~c', 'small~d']);
    expect(await redis().zrange(journal.keys.tenantQuota('small').inFlight, 0, -1)).toEqual(['small~c', 'small~d']);
  });
});
