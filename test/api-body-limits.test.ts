/**
 * The JSON the API accepts is what the workers accept back (docs/http-api.md "HTTP settings, headers and limits"): bodies nested at most
 * `jsonDepth - 5` levels (59 by default; 400 past it) and at most 1 MiB (413 past it, within the workers'
 * `sseEventBytes` and `responseBodyBytes`). Whatever the depth and size, the answer is never a 500.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { ApiServer } from '@durable-a2a/producer/server';
import { authorized, startTestServer } from './harness/api-server.ts';
import { useRedisServer } from './harness/redis.ts';

const redisServer = useRedisServer();
let app: ApiServer;
const MiB = 1024 * 1024;
const AGENT = 'http://127.0.0.1:9/.well-known/agent-card.json';

beforeAll(async () => {
  app = startTestServer({ redisUrl: redisServer().url, prefix: 'bodies' });
  await app.ready();
});
afterAll(async () => {
  await app?.close();
});

let counter = 0;
/** A delegation body whose metadata nests `depth` levels (objects or arrays) around a string padded to `padding` bytes. */
const delegationBody = (depth: number, padding: number, arrays: boolean) => {
  const [open, close] = arrays ? ['[', ']'] : ['{"a":', '}'];
  return `{"agent":"${AGENT}","text":"x","idempotencyKey":"limits-${++counter}","metadata":{"m":${open.repeat(depth)}"${'p'.repeat(padding)}"${close.repeat(depth)}}}`;
};

describe('the API body limits equal what the workers accept back; never a 500', () => {
  it('a body over 1 MiB is 413 PAYLOAD_TOO_LARGE; one just within it is accepted', async () => {
    const over = await authorized(app, { method: 'POST', url: '/v1/delegations', headers: { 'content-type': 'application/json' }, payload: delegationBody(1, MiB, false) });
    expect(over.statusCode).toBe(413);
    expect(over.json()).toMatchObject({ code: 'PAYLOAD_TOO_LARGE' });
    const within = await authorized(app, { method: 'POST', url: '/v1/delegations', headers: { 'content-type': 'application/json' }, payload: delegationBody(1, MiB - 1_000, false) });
    expect(within.statusCode, within.body.slice(0, 300)).toBe(201);
  });

  it('property: any depth and size → 201, 400 (too deep) or 413 (too large), never a 500', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 6_000 }), fc.constantFrom(0, 1_000, MiB - 20_000, MiB + 10), fc.boolean(), async (depth, padding, arrays) => {
        const payload = delegationBody(depth, padding, arrays);
        const response = await authorized(app, { method: 'POST', url: '/v1/delegations', headers: { 'content-type': 'application/json' }, payload });
        // `metadata` and its `m` add two levels to the body's own one.
        const expected = Buffer.byteLength(payload) > MiB ? 413 : depth + 2 > 59 ? 400 : 201;
        expect(response.statusCode, response.body.slice(0, 200)).toBe(expected);
      }),
      { numRuns: 40 },
    );
  });
});
