/**
 * startMonitor on a busy server. ioredis marks a connection as monitoring a tick after MONITOR's +OK, so every command
 * line that arrives in the same read as the +OK is taken for a reply and emitted as an `error` ("Command queue state
 * error"). A start that saw one is dropped and tried again; every later line of the same read must be absorbed too, or
 * it is an uncaught exception that fails the whole run (CI of stop 49: test/reconcile/held-lease-batch.test.ts).
 */
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { startMonitor, useRedisServer } from './redis.ts';

const redisServer = useRedisServer();
const STARTS = 40;

describe('startMonitor while other clients keep the server busy', () => {
  const clients: Redis[] = [];
  afterAll(() => {
    for (const client of clients) client.disconnect();
  });

  it(`${STARTS} starts: each resolves monitoring, and no error escapes a dropped start`, async () => {
    const escaped: unknown[] = [];
    const onUncaught = (error: unknown) => escaped.push(error);
    process.on('uncaughtException', onUncaught);
    let flooding = true;
    // Bounded: each flooder stops when the starts are done, and after 2,000 pipelines at most.
    const flood = async (client: Redis) => {
      for (let round = 0; flooding && round < 2_000; round++) {
        const pipeline = client.pipeline();
        for (let index = 0; index < 50; index++) pipeline.incr(`monitor-flood-${index}`);
        await pipeline.exec();
      }
    };
    for (let index = 0; index < 3; index++) clients.push(new Redis(redisServer().url));
    const flooders = clients.map((client) => flood(client));
    let seen = 0;
    try {
      for (let start = 0; start < STARTS; start++) {
        const monitor = await startMonitor(redisServer().url);
        expect(monitor.status).toBe('monitoring');
        await new Promise<void>((resolve) => monitor.once('monitor', () => resolve()));
        seen++;
        monitor.disconnect();
      }
      // Lines a dropped start's connection still reads arrive after its start returned: give them one more read.
      const last = await startMonitor(redisServer().url);
      await new Promise<void>((resolve) => last.once('monitor', () => resolve()));
      last.disconnect();
    } finally {
      flooding = false;
      await Promise.all(flooders);
      process.off('uncaughtException', onUncaught);
    }
    expect(seen).toBe(STARTS);
    expect(escaped).toEqual([]);
  }, 120_000);
});
