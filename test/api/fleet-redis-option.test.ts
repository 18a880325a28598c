/**
 * startFleet's `redis` option agrees with createProducer's: a URL, or an
 * ioredis client the fleet duplicates and never closes; `redisUrl` stays as a
 * deprecated alias; neither set is refused at start with a TypeError.
 */
import { afterAll, expect, it } from 'vitest';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { Registry } from 'prom-client';
import { createProducer, ProducerInputError } from '@durable-a2a/producer';
import { createLogger } from '@durable-a2a/shared';
import { startFleet, type StartFleetOptions } from '@durable-a2a/workers';
import { useRedisServer, testsOnCluster } from '../harness/redis.ts';
import { startDemoAgent, type DemoAgentHandle } from '../harness/agent.ts';
import { completesWith } from '@durable-a2a/testing';

const redisServer = useRedisServer();
const addressPolicy = { allowLoopback: true };
const agents: DemoAgentHandle[] = [];
afterAll(async () => {
  await Promise.all(agents.map((agent) => agent.close()));
});

/** One delegation through a fleet started with `redis`; returns the state it ended in and the SendMessage count. */
async function delegateThrough(redis: StartFleetOptions['redis'], prefix: string): Promise<{ state: string; sent: number }> {
  const agent = await startDemoAgent({ behaviour: completesWith(`done on ${prefix}`) });
  agents.push(agent);
  const fleet = await startFleet({ redis, prefix, addressPolicy, logger: createLogger({ level: 'silent' }), metricsRegistry: new Registry() });
  const producer = createProducer({ redis: redisServer().url, prefix, addressPolicy });
  try {
    const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'hello?', idempotencyKey: `${prefix}-1` });
    const view = await producer.waitFor(id, { timeoutMs: 30_000 });
    return { state: view.state, sent: agent.sendMessageCount() };
  } finally {
    await producer.close();
    await fleet.close();
  }
}

it.skipIf(testsOnCluster())('startFleet({ redis: url }) works like createProducer({ redis: url })', async () => {
  expect(await delegateThrough(redisServer().url, 'redis-url')).toEqual({ state: 'COMPLETED', sent: 1 });
});

it.skipIf(testsOnCluster())('startFleet({ redis: client }) duplicates the client and leaves it open after close', async () => {
  const client = new Redis(redisServer().url);
  try {
    expect(await delegateThrough(client, 'redis-client')).toEqual({ state: 'COMPLETED', sent: 1 });
    expect(client.status).toBe('ready');
    expect(await client.ping()).toBe('PONG');
  } finally {
    client.disconnect();
  }
});

it('the deprecated redisUrl still starts a fleet; neither option is a TypeError', async () => {
  const fleet = await startFleet({ redisUrl: redisServer().url, prefix: 'redis-legacy', logger: createLogger({ level: 'silent' }) });
  expect(fleet.health().queues).toHaveLength(6); // send, follow, reconcile, verify, compensate, notify
  await fleet.close();
  await expect(startFleet({ prefix: 'redis-none' })).rejects.toThrow(TypeError);
});

it('createProducer without a usable `redis` (an unset REDIS_URL passed through) throws ProducerInputError naming `redis`, not a TypeError', () => {
  const attempt = () => createProducer({ redis: process.env.DA2A_SURELY_UNSET_VARIABLE as unknown as string, prefix: 'redis-none' });
  expect(attempt).toThrow(ProducerInputError);
  expect(attempt).toThrow(/`redis` must be a Redis URL .* got undefined \(is REDIS_URL set\?\)/);
  try {
    attempt();
  } catch (error) {
    expect(error).toMatchObject({ code: 'INVALID_INPUT', field: 'redis' });
  }
});

it('property: any `redis` that is neither a non-empty string nor a client is refused with ProducerInputError before any connection', () => {
  const notRedis = fc.oneof(
    fc.constantFrom(undefined, null, '', 0, 1, true, false, [], {}),
    fc.integer(),
    fc.double(),
    fc.array(fc.string(), { maxLength: 3 }),
    fc.dictionary(fc.string({ maxLength: 8 }).filter((key) => key !== 'duplicate' && key !== '__proto__'), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 4 }),
    fc.record({ duplicate: fc.oneof(fc.string(), fc.integer(), fc.constant(null)) }),
  );
  fc.assert(
    fc.property(notRedis, (redis) => {
      let thrown: unknown;
      try {
        createProducer({ redis: redis as unknown as string, prefix: 'redis-property' });
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(ProducerInputError);
      expect(thrown).toMatchObject({ field: 'redis' });
    }),
    { numRuns: 300 },
  );
});
