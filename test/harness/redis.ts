/**
 * The private redis-server lives in @durable-a2a/testing; this file adds the
 * vitest hooks and the Redis Cluster switch the suite uses.
 */
import { afterAll, beforeAll } from 'vitest';
import { startRedisServer, type RedisServerHandle, type RedisServerOptions } from '@durable-a2a/testing';

export { resolveRedisServerBinary, startRedisServer, spawnRedisProcess, stopRedisProcess } from '@durable-a2a/testing';
export type { RedisServerHandle, RedisServerOptions } from '@durable-a2a/testing';

/** True when the suite runs against a local Redis Cluster (`DA2A_TEST_REDIS=cluster`). */
export const testsOnCluster = (): boolean => process.env.DA2A_TEST_REDIS === 'cluster';

/**
 * Vitest helper: starts a server in `beforeAll`, stops it in `afterAll`, and
 * returns a getter for the handle (valid inside tests and later hooks). With
 * `DA2A_TEST_REDIS=cluster` it starts a three-master Redis Cluster instead
 * (url `redis-cluster://…`; `options` are ignored, `kill`/`restart` refused).
 */
export function useRedisServer(options: RedisServerOptions = {}): () => RedisServerHandle {
  let handle: RedisServerHandle | undefined;
  beforeAll(async () => {
    if (testsOnCluster()) {
      const { startRedisCluster } = await import('./redis-cluster.ts');
      handle = await startRedisCluster();
      return;
    }
    handle = await startRedisServer(options);
  });
  afterAll(async () => {
    await handle?.stop();
  });
  return () => {
    if (!handle) throw new Error('useRedisServer: the server is only available inside tests (after beforeAll)');
    return handle;
  };
}

