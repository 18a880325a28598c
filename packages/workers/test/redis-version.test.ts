import { describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { createLogger } from '@durable-a2a/shared';
import { useRedisServer } from '../../../test/harness/redis.ts';
import { isSupportedRedisVersion, parseRedisVersion, requireRedisVersion } from '../src/redis-version.ts';

const redisServer = useRedisServer();

describe('Redis server version check (SET … NX GET needs 7.0)', () => {
  it('reads major, minor and patch; refuses anything older than 7.0.0', () => {
    expect(parseRedisVersion('7.0.15')).toEqual([7, 0, 15]);
    expect(parseRedisVersion('8.2')).toEqual([8, 2, 0]);
    expect(parseRedisVersion('garbage')).toBeUndefined();
    for (const old of ['6.2.14', '6.0.0', '5.0.7', '2.8']) expect(isSupportedRedisVersion(old), old).toBe(false);
    for (const fine of ['7.0.0', '7.0.15', '7.2.4', '8.0.0', '10.1']) expect(isSupportedRedisVersion(fine), fine).toBe(true);
  });

  it('passes on the test server and returns the version it read from INFO server', async () => {
    const redis = new Redis(redisServer().url);
    try {
      const version = await requireRedisVersion(redis, createLogger({ level: 'silent' }));
      expect(version).toMatch(/^\d+\.\d+/);
      expect(isSupportedRedisVersion(version!)).toBe(true);
    } finally {
      redis.disconnect();
    }
  });
});
