/**
 * A burst of first calls on a fresh producer (a service that starts and delegates at once): every call waits for the
 * connection, and they share one 'ready' listener per client. Before, each waiting call added its own, and Node warned
 * of a leak (MaxListenersExceededWarning) in the service's logs past ten. The calls' outcomes are the same: each
 * answers as on a connected producer (here: not found).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { createProducer, NotFoundError, type Producer } from '@durable-a2a/producer';
import { nextReady, waitUntilConnected } from '@durable-a2a/shared';
import { useRedisServer } from '../harness/redis.ts';

const redisServer = useRedisServer();

/** Process warnings emitted while `run` runs (and one turn after). */
async function warningsDuring(run: () => Promise<unknown>): Promise<Error[]> {
  const seen: Error[] = [];
  const listener = (warning: Error) => void seen.push(warning);
  process.on('warning', listener);
  try {
    await run();
    await new Promise((resolve) => setImmediate(resolve));
  } finally {
    process.off('warning', listener);
  }
  return seen;
}

let producer: Producer | undefined;
const clients: Redis[] = [];
afterEach(async () => {
  await producer?.close();
  producer = undefined;
  for (const client of clients.splice(0)) client.disconnect();
});

describe('a burst of first calls while the connection is made', () => {
  it('100 calls on a fresh producer: each answers, no listener-leak warning', async () => {
    const warnings = await warningsDuring(async () => {
      producer = createProducer({ redis: redisServer().url, prefix: 'burst' });
      const outcomes = await Promise.allSettled(Array.from({ length: 100 }, (_, index) => producer!.get(`missing-${index}`)));
      expect(outcomes.every((outcome) => outcome.status === 'rejected' && outcome.reason instanceof NotFoundError)).toBe(true);
    });
    expect(warnings.filter((warning) => warning.name === 'MaxListenersExceededWarning')).toEqual([]);
  });

  it('waiters on a connecting client share one listener; all see it connected', async () => {
    const client = new Redis(redisServer().url, { lazyConnect: true });
    clients.push(client);
    const before = client.listenerCount('ready');
    const waits = Array.from({ length: 50 }, () => waitUntilConnected(client, 30_000));
    expect(client.listenerCount('ready') - before).toBe(1);
    void client.connect();
    expect(await Promise.all(waits)).toEqual(Array.from({ length: 50 }, () => true));
    expect(client.listenerCount('ready')).toBe(before);
  });

  it('waiters on a client that never connects: false after the wait, at most one listener left whatever their number', async () => {
    const client = new Redis({ port: 1, host: '127.0.0.1', lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 });
    clients.push(client);
    const before = client.listenerCount('ready');
    for (let round = 0; round < 3; round++) {
      expect(await Promise.all(Array.from({ length: 20 }, () => waitUntilConnected(client, 50)))).toEqual(Array.from({ length: 20 }, () => false));
    }
    expect(client.listenerCount('ready') - before).toBeLessThanOrEqual(1);
    // The same pending 'ready' for every caller.
    expect(nextReady(client)).toBe(nextReady(client));
  });
});
