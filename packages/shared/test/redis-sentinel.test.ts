/**
 * The `redis-sentinel://` URL form: what it accepts (Sentinels, master name, credentials, db, the
 * Sentinels' own password) and that anything else is refused with the part named, never guessed.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { JournalDurabilityEnvironment, createRedisClient, parseSentinelUrl } from '../src/index.ts';
import { sentinelRedisOptions } from '../src/redis-sentinel.ts';
import { z } from 'zod';

describe('parseSentinelUrl', () => {
  it('reads Sentinels, master name, password, db and sentinelPassword', () => {
    expect(parseSentinelUrl('redis-sentinel://10.0.0.1:26379,sentinel-b:26380/mymaster')).toEqual({
      sentinels: [{ host: '10.0.0.1', port: 26379 }, { host: 'sentinel-b', port: 26380 }],
      name: 'mymaster',
    });
    expect(parseSentinelUrl('redis-sentinel://app:s%40cret@h:1/m/3?sentinelPassword=x')).toEqual({
      sentinels: [{ host: 'h', port: 1 }],
      name: 'm',
      username: 'app',
      password: 's@cret',
      db: 3,
      sentinelPassword: 'x',
    });
    expect(parseSentinelUrl('redis-sentinel://:pw@[::1]:26379/m')).toMatchObject({ sentinels: [{ host: '::1', port: 26379 }], password: 'pw' });
  });

  it.each([
    ['redis-sentinel:///mymaster', /no Sentinel/],
    ['redis-sentinel://h:26379', /master name/],
    ['redis-sentinel://h:26379/', /master name/],
    ['redis-sentinel://h/mymaster', /not host:port/],
    ['redis-sentinel://h:99999/mymaster', /not host:port/],
    ['redis-sentinel://h:1/m/x', /db/],
    ['redis-sentinel://h:1/m/0/extra', /too many/],
    ['redis://h:1', /not a redis-sentinel/],
  ])('refuses %s', (url, message) => {
    expect(() => parseSentinelUrl(url)).toThrow(message);
  });

  it('property: any list of host:port Sentinels and master name round-trips', () => {
    const host = fc.oneof(fc.ipV4(), fc.stringMatching(/^[a-z][a-z0-9-]{0,20}(\.[a-z][a-z0-9-]{0,10}){0,2}$/));
    const sentinel = fc.record({ host, port: fc.integer({ min: 1, max: 65_535 }) });
    fc.assert(
      fc.property(fc.array(sentinel, { minLength: 1, maxLength: 5 }), fc.stringMatching(/^[A-Za-z0-9._-]{1,30}$/), (sentinels, name) => {
        const url = `redis-sentinel://${sentinels.map((s) => `${s.host}:${s.port}`).join(',')}/${name}`;
        expect(parseSentinelUrl(url)).toEqual({ sentinels, name });
      }),
    );
  });

  it('property: garbage never parses into a Sentinel target silently (it throws or names real host:port pairs)', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 60 }), (tail) => {
        try {
          const target = parseSentinelUrl(`redis-sentinel://${tail}`);
          for (const sentinel of target.sentinels) expect(sentinel.port).toBeGreaterThanOrEqual(1);
          expect(target.name).toMatch(/^[A-Za-z0-9._-]+$/);
        } catch (error) {
          expect(error).toBeInstanceOf(Error);
        }
      }),
    );
  });

  it('builds ioredis Sentinel options; createRedisClient routes the scheme to them', async () => {
    expect(sentinelRedisOptions(parseSentinelUrl('redis-sentinel://h:1/m'), { maxRetriesPerRequest: null })).toMatchObject({ sentinels: [{ host: 'h', port: 1 }], name: 'm', failoverDetector: true, maxRetriesPerRequest: null });
    const client = createRedisClient('redis-sentinel://127.0.0.1:1/m', { lazyConnect: true });
    expect(client.options).toMatchObject({ sentinels: [{ host: '127.0.0.1', port: 1 }], name: 'm', maxRetriesPerRequest: null });
    client.disconnect();
  });

  it('durability settings: off by default, bounded', () => {
    const schema = z.object(JournalDurabilityEnvironment);
    expect(schema.parse({})).toEqual({ DA2A_JOURNAL_REPLICAS: 0, DA2A_JOURNAL_WAIT_TIMEOUT_MS: 1000 });
    expect(() => schema.parse({ DA2A_JOURNAL_WAIT_TIMEOUT_MS: '0' })).toThrow();
    expect(() => schema.parse({ DA2A_JOURNAL_REPLICAS: '-1' })).toThrow();
  });
});
