/**
 * Field case R23: after a Redis outage longer than BullMQ's drainDelay, the
 * worker resumes (J starts within a bound once Redis is back), and liveness
 * follows fetch progress: not live while the fetch loop cannot reach Redis,
 * live again after.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createProducer } from '@durable-a2a/producer';
import { startRedisServer, type RedisServerHandle } from '../harness/redis.ts';
import { startDemoAgent, type DemoAgentHandle } from '../harness/agent.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';

let redis: RedisServerHandle;
let agent: DemoAgentHandle;

beforeAll(async () => {
  redis = await startRedisServer({ appendOnly: true, appendFsync: 'always' });
  agent = await startDemoAgent();
});
afterAll(async () => {
  await agent.close();
  await redis.stop();
});

it('R23: the worker resumes after a 7 s Redis outage and liveness reflects fetch progress', async () => {
  const fleet = await startTestFleet({ redisUrl: redis.url, prefix: 'r23', livenessStaleAfterMs: 3_000 });
  const producer = createProducer({ redis: redis.url, prefix: 'r23', addressPolicy: { allowLoopback: true } });
  try {
    const before = await producer.delegate({ agent: agent.cardUrl, text: 'before', idempotencyKey: 'before' });
    await eventually(async () => (await producer.get(before.id)).state === 'COMPLETED', 'first delegation');
    expect(fleet.health().live).toBe(true);

    await redis.kill();
    await eventually(async () => !fleet.health().live, 'liveness to turn false during the outage', 10_000);
    await new Promise((resolve) => setTimeout(resolve, 7_000 - 3_000));
    await redis.restart();
    const restoredAt = Date.now();

    const job = await producer.delegate({ agent: agent.cardUrl, text: 'after the outage', idempotencyKey: 'after' });
    await eventually(async () => (await producer.get(job.id)).state === 'COMPLETED', 'J completed after Redis came back', 30_000);
    expect(Date.now() - restoredAt).toBeLessThan(30_000);
    await eventually(async () => fleet.health().live, 'liveness back', 10_000);
    expect(agent.sendMessageCount(job.messageId)).toBe(1);
  } finally {
    await producer.close();
    await fleet.close();
  }
}, 90_000);
