/**
 * The private redis-server lives in @durable-a2a/testing; this file adds the
 * vitest hooks and the Redis Cluster switch the suite uses.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { createRedisClient, type RedisClient } from '@durable-a2a/shared';
import { startRedisServer, type RedisServerHandle, type RedisServerOptions } from '@durable-a2a/testing';

export { resolveRedisServerBinary, startMonitor, startRedisServer, spawnRedisProcess, stopRedisProcess } from '@durable-a2a/testing';
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

/** How `useRedisClient` closes its client in `afterAll`. */
export interface RedisClientHookOptions {
  /**
   * `'quit'` (default) sends QUIT and waits for the reply; `'disconnect'` drops the socket at once, for files whose
   * tests stop or pause Redis, where a QUIT could wait on a server that no longer answers.
   */
  close?: 'quit' | 'disconnect';
  /** Adds a listener that ignores the client's `'error'` events (refused reconnects while a test keeps Redis down). Default false. */
  ignoreErrors?: boolean;
}

/**
 * Vitest helper: one plain client of the suite's Redis for a file (or for the `describe` that calls it). Creates it
 * with `createRedisClient(server().url)` (its default options) in a `beforeAll`; closes it in an `afterAll` that runs
 * after the after-hooks registered later in the same scope (vitest's default `sequence.hooks: 'stack'` runs them last
 * first), so those may still use it. Call it after `useRedisServer` (or pass `useFieldCases().redisServer`): the
 * server is then up before the client connects and stopped only after it is closed. Returns a getter for the client,
 * valid inside tests and later hooks; it throws before the `beforeAll` has run. Under `DA2A_TEST_REDIS=cluster` the
 * client is a Cluster: `Client` only narrows the type (a cast, for files that call single-server commands).
 */
export function useRedisClient<Client extends RedisClient = RedisClient>(server: () => { readonly url: string }, options: RedisClientHookOptions = {}): () => Client {
  let client: RedisClient | undefined;
  beforeAll(() => {
    client = createRedisClient(server().url);
    if (options.ignoreErrors) client.on('error', () => undefined);
  });
  afterAll(async () => {
    if (options.close === 'disconnect') client?.disconnect();
    else await client?.quit();
  });
  return () => {
    if (!client) throw new Error('useRedisClient: the client is only available inside tests (after beforeAll)');
    return client as Client;
  };
}

/**
 * Runs `command` on every server of `handle`: the one server, or each master of a Cluster (whose PUBSUB and CLIENT
 * commands answer for that node only), each on a connection of its own closed afterwards. Returns the answers in port
 * order.
 */
export async function onEveryServer<T>(handle: RedisServerHandle, command: (server: Redis) => Promise<T>): Promise<T[]> {
  const ports = 'ports' in handle ? (handle.ports as readonly number[]) : [handle.port];
  return Promise.all(
    ports.map(async (port) => {
      const server = new Redis({ host: '127.0.0.1', port });
      try {
        return await command(server);
      } finally {
        await server.quit();
      }
    }),
  );
}
