/** Helpers of the send order's tests (test/flow/send-order-*.test.ts): resources closed at a test's end, Redis's clock. */
import { Redis } from 'ioredis';
import { onTestFinished } from 'vitest';

/** `resource`, closed when the test ends (the last opened first). */
export function closedAtEnd<T extends { close(): Promise<unknown> } | Redis>(resource: T): T {
  onTestFinished(async () => void (await (resource instanceof Redis ? resource.quit() : resource.close()).catch(() => undefined)));
  return resource;
}

/** Redis's clock, ms. */
export async function redisNow(redis: Redis): Promise<number> {
  const [seconds, micros] = await redis.time();
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}
