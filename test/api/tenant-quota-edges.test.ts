/**
 * Tenant quotas at their edges (docs/tenants.md "Quotas"): many creations racing for the last places take exactly
 * those places, and a place a finished workflow left is given back even when the tenant's oldest workflows are
 * still running (the full-set check looks at a bounded number of members per creation, `QUOTA_CHECKED_MEMBERS`).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import type { ApiServer } from '@durable-a2a/producer/server';
import { Journal, QUOTA_CHECKED_MEMBERS } from '@durable-a2a/shared';
import { testsOnCluster, useRedisClient, useRedisServer } from '../harness/redis.ts';
import { startTestServer } from '../harness/api-server.ts';

const redisServer = useRedisServer();
const redis = useRedisClient<Redis>(redisServer);
const PREFIX = 'quota-edges';
const TOKENS = { race: 'race-service-token-0123456789', slow: 'slow-service-token-0123456789' };
/** Room for the slow tenant's long-running workflows (as many as the full-set check looks at) and a few more. */
const SLOW_LIMIT = QUOTA_CHECKED_MEMBERS + 5;
let app: ApiServer;

beforeAll(async () => {
  app = startTestServer({
    redisUrl: redisServer().url,
    prefix: PREFIX,
    apiTokens: [`race:${TOKENS.race}`, `slow:${TOKENS.slow}`],
    tenants: {
      tokens: { race: { tenant: 'race', role: 'service' }, slow: { tenant: 'slow', role: 'service' } },
      quotas: { race: { maxInFlight: 10 }, slow: { maxInFlight: SLOW_LIMIT } },
    },
  });
  await app.ready();
});
afterAll(async () => {
  await app?.close();
});

/** A workflow to an agent nobody runs (no fleet here: it stays unfinished until the test finishes it). */
const start = (token: keyof typeof TOKENS, workflowId: string) =>
  app.inject({ method: 'POST', url: '/v1/workflows', headers: { authorization: `Bearer ${TOKENS[token]}` }, payload: { workflowId, steps: [{ name: 'main', agent: 'http://127.0.0.1:9/agent', message: { text: 'x' } }] } });

const journal = () => new Journal(redis(), { prefix: PREFIX });

describe.skipIf(testsOnCluster())('tenant quotas at their edges', () => {
  it('200 concurrent creations with room for 10: exactly 10 are created, the others are 429 and write nothing', async () => {
    const answers = await Promise.all(Array.from({ length: 200 }, (_, index) => start('race', `r${index}`)));
    const codes = answers.map((answer) => answer.statusCode);
    expect(codes.filter((code) => code === 201)).toHaveLength(10);
    expect(codes.filter((code) => code === 429)).toHaveLength(190);
    const created = answers.filter((answer) => answer.statusCode === 201).map((answer) => answer.json().id as string).sort();
    expect(await redis().zrange(journal().keys.tenantQuota('race').inFlight, 0, -1).then((ids) => ids.sort())).toEqual(created);
    expect((await redis().keys(`${PREFIX}:{wf:race~*}:wf`)).length).toBe(10);
  });

  it('a place freed by a finished workflow is given back although the tenant\'s oldest workflows still run', async () => {
    // The oldest QUOTA_CHECKED_MEMBERS workflows run for a long time (a person's answer awaited, say).
    for (let index = 0; index < QUOTA_CHECKED_MEMBERS; index++) expect((await start('slow', `long${index}`)).statusCode).toBe(201);
    for (let index = 0; index < SLOW_LIMIT - QUOTA_CHECKED_MEMBERS; index++) expect((await start('slow', `short${index}`)).statusCode).toBe(201);
    expect((await start('slow', 'over')).statusCode).toBe(429);
    // The short ones finish: SLOW_LIMIT - QUOTA_CHECKED_MEMBERS places are free.
    for (let index = 0; index < SLOW_LIMIT - QUOTA_CHECKED_MEMBERS; index++) await journal().updateWorkflow(`slow~short${index}`, { state: 'COMPLETED' });
    // A client retries a 429 (Retry-After): within as many tries as the set has pages of checked members, it is in.
    const tries = Math.ceil(SLOW_LIMIT / QUOTA_CHECKED_MEMBERS);
    const answers: number[] = [];
    for (let attempt = 0; attempt < tries && answers.at(-1) !== 201; attempt++) answers.push((await start('slow', 'after-finish')).statusCode);
    expect(answers.at(-1)).toBe(201);
    // Every place a finished workflow left is usable: the tenant fills up to its limit again, not beyond.
    for (let index = 1; index < SLOW_LIMIT - QUOTA_CHECKED_MEMBERS; index++) {
      const codes: number[] = [];
      for (let attempt = 0; attempt < tries && codes.at(-1) !== 201; attempt++) codes.push((await start('slow', `after-finish${index}`)).statusCode);
      expect(codes.at(-1), `after-finish${index}`).toBe(201);
    }
    expect((await start('slow', 'over-again')).statusCode).toBe(429);
    expect(await redis().zcard(journal().keys.tenantQuota('slow').inFlight)).toBe(SLOW_LIMIT);
  });
});
