/**
 * A new workflow's first sends take their places in the send order inside its create script (createWorkflow-11.lua
 * with includes/sendPlaces.lua, on one server), not with a sendOrder-2.lua call of their own: the places must be the
 * ones that many sendOrder-2.lua calls one after the other would give, and a creation that creates nothing (the
 * workflow exists, or its tenant is at its quota) takes none. Real Redis; the tenant's count read from its hash.
 */
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { createProducer } from '@durable-a2a/producer';
import { Journal, SendOrder, SEND_ORDER_WINDOW_MS, journalKeys } from '@durable-a2a/shared';
import { testsOnCluster, useRedisServer } from '../harness/redis.ts';

const redisServer = useRedisServer();
const open: { close(): Promise<unknown> }[] = [];
let counter = 0;
const newPrefix = (name: string) => `order-create-${name}-${++counter}-${Date.now()}`;

afterAll(async () => {
  for (const resource of open.splice(0).reverse()) await resource.close().catch(() => undefined);
});

function client(): Redis {
  const redis = new Redis(redisServer().url);
  open.push({ close: () => redis.quit() });
  return redis;
}

/** The tenant's entry in the send order's clock hash (`<place>:<sends at it>`), '' when it has none. */
async function entry(redis: Redis, prefix: string, tenant: string): Promise<string> {
  return (await redis.hget(journalKeys(prefix).sendOrder().clock, `t:${tenant}`)) ?? '';
}
/** The sends of a weight-1 tenant placed while the clock stood at 0: its place plus its sends at it. */
async function counted(redis: Redis, prefix: string, tenant: string): Promise<number> {
  const [place, sends] = (await entry(redis, prefix, tenant)).split(':').map(Number);
  return (place ?? 0) + (sends ?? 0);
}

const intent = (workflowId: string) => ({ delegationId: 'main.1', workflowId, step: 'main', state: 'INTENT', messageId: `m-${workflowId}`, agentCardUrl: 'http://127.0.0.1:9/agent' });

describe.skipIf(testsOnCluster())("a new workflow's places, taken by its create script", () => {
  it('property: the create script gives the places (and leaves the tenant\'s entry) that as many sendOrder-2.lua calls one after the other give, whatever the weight and the sends before', async () => {
    const redis = client();
    await fc.assert(
      fc.asyncProperty(
        fc.option(fc.oneof(fc.integer({ min: 1, max: 100 }), fc.constantFrom('0', '250', 'NaN', '2.5')), { nil: undefined }),
        fc.integer({ min: 0, max: 7 }),
        fc.integer({ min: 1, max: 4 }),
        async (weight, before, sends) => {
          const [scripted, called] = [newPrefix('scripted'), newPrefix('called')];
          const tenant = 'acme';
          for (const prefix of [scripted, called]) {
            if (weight !== undefined) await redis.hset(journalKeys(prefix).sendOrder().weights, tenant, String(weight));
            const order = new SendOrder(redis, prefix);
            for (let index = 0; index < before; index++) await order.place(tenant);
          }
          const workflowId = `${tenant}~wf-${counter}`;
          const created = await new Journal(redis, { prefix: scripted }).createWorkflowPlaced(workflowId, { state: 'RUNNING' }, intent(workflowId), undefined, undefined, undefined, {
            count: sends,
            windowMs: SEND_ORDER_WINDOW_MS,
          });
          const order = new SendOrder(redis, called);
          const expected: number[] = [];
          for (let index = 0; index < sends; index++) expected.push(await order.place(tenant));
          expect(created).toEqual({ created: true, places: expected });
          expect(await entry(redis, scripted, tenant)).toBe(await entry(redis, called, tenant));
        },
      ),
      { numRuns: 40 },
    );
  });

  it('a delegate with an idempotency key already used takes no second place (it created nothing)', async () => {
    const redis = client();
    const prefix = newPrefix('again');
    const producer = createProducer({ redis: redisServer().url, prefix, addressPolicy: { allowLoopback: true } });
    open.push(producer);
    const input = { agent: 'http://127.0.0.1:9/.well-known/agent-card.json', text: 'once', idempotencyKey: 'same-key' };
    expect((await producer.delegate(input)).created).toBe(true);
    expect(await counted(redis, prefix, 'default')).toBe(1);
    expect((await producer.delegate(input)).created).toBe(false);
    expect(await counted(redis, prefix, 'default')).toBe(1);
  });

  it('a creation refused at its quota takes no place; one that existed takes none either', async () => {
    const redis = client();
    const prefix = newPrefix('quota');
    const journal = new Journal(redis, { prefix });
    const places = { count: 1, windowMs: SEND_ORDER_WINDOW_MS };
    const quota = { maxInFlight: 1, maxStored: 10 };
    expect(await journal.createWorkflowPlaced('small~a', { state: 'RUNNING' }, intent('small~a'), undefined, undefined, quota, places)).toEqual({ created: true, places: [0] });
    await expect(journal.createWorkflowPlaced('small~b', { state: 'RUNNING' }, intent('small~b'), undefined, undefined, quota, places)).rejects.toMatchObject({ code: 'QUOTA_IN_FLIGHT' });
    expect(await journal.createWorkflowPlaced('small~a', { state: 'RUNNING' }, intent('small~a'), undefined, undefined, quota, places)).toEqual({ created: false, places: [] });
    expect(await counted(redis, prefix, 'small')).toBe(1);
  });
});
