/**
 * Worker liveness at its edges (docs/recovery.md "How a dead worker is noticed"): a death noticed by many peers at
 * once is swept by exactly one, and a Redis that restarts from its data (its liveness keys run out while it was
 * away, the roster's last beats are old) does not make the first worker to beat declare every other one dead.
 */
import { describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { Journal, createRedisClient } from '@durable-a2a/shared';
import { testsOnCluster, useRedisClient, useRedisServer } from '../harness/redis.ts';
import { eventually } from '../harness/fleet.ts';

const redisServer = useRedisServer({ appendOnly: true });
const redis = useRedisClient<Redis>(redisServer, { close: 'disconnect', ignoreErrors: true });
let counter = 0;

describe('liveness at its edges', () => {
  it('twenty peers confirm the same death at once on their own connections: exactly one forgets it', async () => {
    const prefix = `edges${++counter}`;
    const peers = Array.from({ length: 20 }, () => createRedisClient(redisServer().url));
    try {
      const journals = peers.map((client) => new Journal(client, { prefix }));
      await journals[0]!.heartbeat('dead', 200);
      await eventually(async () => (await journals[1]!.heartbeat('peer', 200)).silent.includes('dead'), 'dead named silent');
      const won = await Promise.all(journals.map((journal) => journal.forgetWorker('dead')));
      expect(won.filter(Boolean)).toHaveLength(1);
    } finally {
      await Promise.all(peers.map((client) => client.quit()));
    }
  });

  it.skipIf(testsOnCluster())('Redis restarts from its data after the liveness keys ran out: no live worker is named silent; a worker that never beats again is, one TTL later', async () => {
    const prefix = `edges${++counter}`;
    const journal = new Journal(redis(), { prefix });
    const ttlMs = 400;
    for (const worker of ['a', 'b', 'gone']) await journal.heartbeat(worker, ttlMs);
    await redisServer().restart();
    // Whatever the restart took, the keys run out before anyone beats again (the roster, kept by the AOF, is older than a TTL).
    await eventually(async () => (await redis().exists(...['a', 'b', 'gone'].map((worker) => journal.keys.workerLiveness(worker)))) === 0, 'the liveness keys ran out');
    const first = await journal.heartbeat('a', ttlMs);
    expect(first).toMatchObject({ lapsed: true, listed: true });
    expect(first.silent).toEqual([]);
    expect(await journal.heartbeat('b', ttlMs)).toMatchObject({ lapsed: true, listed: true, silent: [] });
    // The live workers go on beating; the one that never comes back is named and forgotten once its grace ran out.
    const named = await eventually(async () => {
      const beats = [await journal.heartbeat('a', ttlMs), await journal.heartbeat('b', ttlMs)];
      for (const beat of beats) expect(beat.silent).not.toContain(beat === beats[0] ? 'b' : 'a');
      return beats.flatMap((beat) => beat.silent).find((worker) => worker === 'gone');
    }, 'the worker that did not come back named silent');
    expect(named).toBe('gone');
    expect(await journal.forgetWorker('gone')).toBe(true);
    expect(await redis().zrange(journal.keys.fleetWorkers(), 0, -1)).toEqual(['a', 'b']);
  });
});
