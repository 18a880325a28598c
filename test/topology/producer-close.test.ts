/**
 * `producer.close()` is bounded whatever Redis does (it once stayed pending after 15 s with Redis
 * unreachable). Redis killed before or after the producer connected, or while a `waitFor` is subscribed: the
 * connections are dropped at once. Redis frozen (SIGSTOP: connected, answering nothing): the graceful close is cut
 * off at `closeTimeoutMs`.
 */
import { afterEach, expect, it } from 'vitest';
import { createRedisClient } from '@durable-a2a/shared';
import { createProducer, type Producer } from '@durable-a2a/producer';
import { startRedisServer, type RedisServerHandle } from '../harness/redis.ts';

/** What the finding saw: still pending after this long. */
const PENDING_AFTER_MS = 15_000;
let redis: RedisServerHandle | undefined;
let frozenPid: number | undefined;

afterEach(async () => {
  if (frozenPid !== undefined) process.kill(frozenPid, 'SIGCONT');
  frozenPid = undefined;
  await redis?.stop();
  redis = undefined;
});

/** Resolves with how `producer.close()` ended: `closed` or still `pending` after PENDING_AFTER_MS. */
async function closeOutcome(producer: Producer): Promise<'closed' | 'pending'> {
  let timer: NodeJS.Timeout | undefined;
  const pending = new Promise<'pending'>((resolve) => (timer = setTimeout(() => resolve('pending'), PENDING_AFTER_MS)));
  try {
    return await Promise.race([producer.close().then(() => 'closed' as const), pending]);
  } finally {
    clearTimeout(timer);
  }
}

it.each(['after a call', 'before any call', 'while waitFor is subscribed'] as const)('Redis killed %s: close() settles', async (moment) => {
  redis = await startRedisServer();
  const producer = createProducer({ redis: redis.url, prefix: 'close' });
  let waiting: Promise<unknown> | undefined;
  if (moment === 'after a call') await expect(producer.get('missing')).rejects.toMatchObject({ code: 'NOT_FOUND' });
  if (moment === 'while waitFor is subscribed') {
    waiting = producer.waitFor('missing').catch((error: unknown) => error);
    await expect(waiting).resolves.toMatchObject({ code: 'NOT_FOUND' });
    waiting = producer.waitFor('other', { timeoutMs: 60_000 }).catch((error: unknown) => error);
  }
  await redis.kill();
  if (moment === 'before any call') await expect(producer.get('missing')).rejects.toMatchObject({ code: 'REDIS_UNAVAILABLE' });
  expect(await closeOutcome(producer)).toBe('closed');
}, 30_000);

it('Redis frozen (connected, answering nothing): close() settles at its closeTimeoutMs', async () => {
  redis = await startRedisServer();
  const probe = createRedisClient(redis.url);
  const pid = Number(/process_id:(\d+)/.exec(await probe.info('server'))![1]);
  await probe.quit();
  const producer = createProducer({ redis: redis.url, prefix: 'close', closeTimeoutMs: 1_000 });
  await expect(producer.get('missing')).rejects.toMatchObject({ code: 'NOT_FOUND' });
  process.kill(pid, 'SIGSTOP');
  frozenPid = pid;
  expect(await closeOutcome(producer)).toBe('closed');
}, 30_000);
