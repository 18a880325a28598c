/**
 * A private Redis Sentinel set: one primary, one replica, three Sentinels, all `redis-server`
 * processes on free loopback ports in temp directories (Sentinels run `redis-server <conf> --sentinel`),
 * with fast failover settings (the primary is down after 1 s without answers). The replica reaches the
 * primary through a TCP relay the test controls, so a test can make the replica lag (`holdReplication`:
 * the primary's replication stream is kept back, as on a slow or partitioned link) before it kills the
 * primary: the writes held back are what an asynchronous failover loses.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { Redis } from 'ioredis';
import { findFreePort } from './ports.ts';
import { resolveRedisServerBinary, spawnRedisProcess, startRedisServer, stopRedisProcess, type RedisServerHandle } from './redis.ts';

export const MASTER_NAME = 'da2a';

export interface SentinelSetHandle {
  /** `redis-sentinel://127.0.0.1:a,127.0.0.1:b,127.0.0.1:c/da2a` */
  readonly url: string;
  /** The three Sentinels' ports (the order of `url`). */
  readonly sentinelPorts: readonly number[];
  /** The data nodes, by port (the first one starts as primary). */
  readonly servers: ReadonlyMap<number, RedisServerHandle>;
  /** The primary's port as the Sentinels report it. */
  primaryPort(): Promise<number>;
  /** Keeps the primary → replica stream back (true) or lets it flow (false; what was held is delivered). */
  holdReplication(hold: boolean): Promise<void>;
  /** SIGKILLs the current primary; what the relay held back is dropped with it. Returns its port. */
  killPrimary(): Promise<number>;
  /** Waits until every Sentinel names a primary other than `oldPort`; returns the new primary's port. */
  awaitPromotion(oldPort: number, timeoutMs?: number): Promise<number>;
  /** Waits until the primary has `count` replicas online. */
  awaitReplicas(count: number, timeoutMs?: number): Promise<void>;
  /** Stops everything and removes the directories. */
  stop(): Promise<void>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The relay (test/harness/relay-process.mjs) in its own process: 127.0.0.1:port → target, downstream can be held back. */
export async function startRelay(targetPort: number): Promise<{ port: number; hold(on: boolean): Promise<void>; cut(): Promise<void>; close(): Promise<void> }> {
  const child: ChildProcess = fork(fileURLToPath(new URL('./relay-process.mjs', import.meta.url)), [String(targetPort)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const port = await new Promise<number>((resolve, reject) => {
    child.on('message', (message: { listening?: number }) => message.listening && resolve(message.listening));
    child.once('exit', (code) => reject(new Error(`relay exited (code ${code})`)));
  });
  let nextId = 0;
  const send = (message: object) =>
    new Promise<void>((resolve) => {
      const id = ++nextId;
      const onMessage = (reply: { done?: number }) => {
        if (reply.done !== id) return;
        child.off('message', onMessage);
        resolve();
      };
      child.on('message', onMessage);
      child.send({ ...message, id });
    });
  return {
    port,
    hold: (on) => send({ hold: on }),
    cut: () => send({ cut: true }),
    close: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

async function startSentinel(primaryPort: number): Promise<{ port: number; stop(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'durable-a2a-sentinel-'));
  const port = await findFreePort();
  const conf = join(dir, 'sentinel.conf');
  await writeFile(
    conf,
    [
      `port ${port}`,
      'bind 127.0.0.1',
      `dir ${dir}`,
      `sentinel monitor ${MASTER_NAME} 127.0.0.1 ${primaryPort} 2`,
      `sentinel down-after-milliseconds ${MASTER_NAME} 1000`,
      // Long on purpose: after failover-timeout a Sentinel "fixes" a replica whose master address is not the
      // primary's (ours goes through the relay). One failover per set, and no other replica to reconfigure.
      `sentinel failover-timeout ${MASTER_NAME} 600000`,
      `sentinel parallel-syncs ${MASTER_NAME} 1`,
      '',
    ].join('\n'),
  );
  const child = await spawnRedisProcess(resolveRedisServerBinary(), [conf, '--sentinel', '--loglevel', 'warning'], port);
  return {
    port,
    async stop() {
      await stopRedisProcess(child, 'SIGTERM');
      await rm(dir, { recursive: true, force: true });
    },
  };
}

async function until<T>(check: () => Promise<T | undefined>, what: string, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`sentinel harness: timed out waiting for ${what}`);
    await sleep(100);
  }
}

/** Starts the set and resolves once every Sentinel knows the replica and the two other Sentinels. */
export async function startSentinelSet(): Promise<SentinelSetHandle> {
  const primary = await startRedisServer({ appendOnly: true, appendFsync: 'everysec' });
  const relay = await startRelay(primary.port);
  const replica = await startRedisServer({ appendOnly: true, appendFsync: 'everysec', extraArguments: ['--replicaof', '127.0.0.1', String(relay.port)] });
  const sentinels = await Promise.all([0, 1, 2].map(() => startSentinel(primary.port)));
  const clients = sentinels.map((sentinel) => new Redis(sentinel.port, '127.0.0.1', { lazyConnect: false, maxRetriesPerRequest: 1 }));
  const servers = new Map([primary, replica].map((server) => [server.port, server]));
  const ask = (client: Redis, ...args: string[]) => client.call('SENTINEL', ...args) as Promise<unknown>;
  const masterOf = async (client: Redis) => Number(((await ask(client, 'get-master-addr-by-name', MASTER_NAME)) as string[])[1]);
  await until(
    async () => {
      for (const client of clients) {
        const info = (await ask(client, 'master', MASTER_NAME)) as string[];
        const field = (name: string) => Number(info[info.indexOf(name) + 1]);
        if (field('num-other-sentinels') < 2 || field('num-slaves') < 1) return undefined;
      }
      return true;
    },
    'the Sentinels to find each other and the replica',
    30_000,
  );
  const handle: SentinelSetHandle = {
    url: `redis-sentinel://${sentinels.map((sentinel) => `127.0.0.1:${sentinel.port}`).join(',')}/${MASTER_NAME}`,
    sentinelPorts: sentinels.map((sentinel) => sentinel.port),
    servers,
    primaryPort: () => masterOf(clients[0]!),
    holdReplication: (hold) => relay.hold(hold),
    async killPrimary() {
      const port = await masterOf(clients[0]!);
      await servers.get(port)!.kill();
      await relay.cut();
      return port;
    },
    async awaitPromotion(oldPort, timeoutMs = 30_000) {
      return until(
        async () => {
          const ports = await Promise.all(clients.map(masterOf));
          return ports.every((port) => port === ports[0] && port !== oldPort) ? ports[0] : undefined;
        },
        `a new primary instead of ${oldPort}`,
        timeoutMs,
      );
    },
    async awaitReplicas(count, timeoutMs = 30_000) {
      await until(
        async () => {
          const primaryClient = new Redis(await masterOf(clients[0]!), '127.0.0.1', { maxRetriesPerRequest: 1 });
          try {
            const info = await primaryClient.info('replication');
            const online = info.split('\n').filter((line) => /^slave\d+:.*state=online/.test(line)).length;
            return online >= count ? true : undefined;
          } finally {
            primaryClient.disconnect();
          }
        },
        `${count} replica(s) online`,
        timeoutMs,
      );
    },
    async stop() {
      for (const client of clients) client.disconnect();
      await Promise.all(sentinels.map((sentinel) => sentinel.stop()));
      await relay.close();
      await Promise.all([...servers.values()].map((server) => server.stop()));
    },
  };
  await handle.awaitReplicas(1);
  return handle;
}

/** Vitest helper: a Sentinel set per file, started in `beforeAll`, stopped in `afterAll`. */
export function useSentinelSet(): () => SentinelSetHandle {
  let handle: SentinelSetHandle | undefined;
  beforeAll(async () => {
    handle = await startSentinelSet();
  }, 60_000);
  afterAll(async () => {
    await handle?.stop();
  });
  return () => {
    if (!handle) throw new Error('useSentinelSet: only available inside tests');
    return handle;
  };
}
