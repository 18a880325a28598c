/**
 * startFleet's `redis` option agrees with createProducer's: a URL, or an
 * ioredis client the fleet duplicates and never closes; `redisUrl` stays as a
 * deprecated alias; neither set is refused at start with a TypeError.
 */
import { afterAll, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { Registry } from 'prom-client';
import { createProducer } from '@durable-a2a/producer';
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
