/**
 * A private three-master Redis Cluster for tests: three `redis-server`
 * processes (cluster mode, AOF) in temp directories on free ports, joined with
 * `redis-cli --cluster create`, ready once every node says `cluster_state:ok`.
 * Its handle has the shape of a single server's, so `useRedisServer()` can
 * hand it out under `DA2A_TEST_REDIS=cluster`; `kill()` and `restart()` are
 * refused (tests that need them skip themselves under cluster).
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { resolveRedisServerBinary, type RedisServerHandle } from './redis.ts';
import { findFreePort } from './ports.ts';

const run = promisify(execFile);

/** Masters in the cluster (the minimum `redis-cli --cluster create` accepts with no replicas). */
const MASTERS = 3;
/** Redis Cluster's bus listens on the client port + 10000 (fixed offset in Redis). */
const BUS_OFFSET = 10_000;
/** How long the nodes may take to answer and then to agree on cluster_state:ok. */
const READY_TIMEOUT_MS = 20_000;

export interface RedisClusterHandle extends RedisServerHandle {
  /** Client ports of the masters. */
  readonly ports: readonly number[];
  /** `redis-cluster://127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3` */
  readonly url: string;
  /** One temp directory per node. */
  readonly dirs: readonly string[];
}

const liveNodes = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of liveNodes) child.kill('SIGKILL');
});

/** `redis-cli` next to `redis-server` (REDIS_CLI_BIN overrides), else the one on PATH. */
function redisCliBinary(): string {
  if (process.env.REDIS_CLI_BIN) return process.env.REDIS_CLI_BIN;
  const server = resolveRedisServerBinary();
  return server.includes('/') ? join(dirname(server), 'redis-cli') : 'redis-cli';
}

/** A free client port whose bus port (+10000) is free too. */
async function freeClusterPort(taken: Set<number>): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = await findFreePort();
    if (port + BUS_OFFSET > 65_535 || taken.has(port)) continue;
    const bus = await portIsFree(port + BUS_OFFSET);
    if (bus) return port;
  }
  throw new Error('no free port pair (port, port+10000) for a cluster node');
}

async function portIsFree(port: number): Promise<boolean> {
  const { createServer } = await import('node:net');
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

async function cli(port: number, ...args: string[]): Promise<string> {
  const { stdout } = await run(redisCliBinary(), ['-h', '127.0.0.1', '-p', String(port), ...args], { timeout: 10_000 });
  return stdout;
}

async function waitFor(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`redis cluster: timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function startNode(binary: string, port: number, dir: string): ChildProcess {
  const child = spawn(
    binary,
    [
      '--port', String(port),
      '--bind', '127.0.0.1',
      '--dir', dir,
      '--cluster-enabled', 'yes',
      '--cluster-config-file', 'nodes.conf',
      '--cluster-node-timeout', '5000',
      '--appendonly', 'yes',
      '--save', '',
      '--maxmemory-policy', 'noeviction',
      '--daemonize', 'no',
      '--loglevel', 'warning',
    ],
    { stdio: 'ignore' },
  );
  liveNodes.add(child);
  child.once('exit', () => liveNodes.delete(child));
  return child;
}

async function terminate(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
}

/** Starts three masters, creates the cluster and resolves once every node reports cluster_state:ok. */
export async function startRedisCluster(): Promise<RedisClusterHandle> {
  const binary = resolveRedisServerBinary();
  const taken = new Set<number>();
  const ports: number[] = [];
  const dirs: string[] = [];
  const children: ChildProcess[] = [];
  const cleanUp = async () => {
    await Promise.all(children.map(terminate));
    await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
  };
  try {
    for (let index = 0; index < MASTERS; index++) {
      const port = await freeClusterPort(taken);
      taken.add(port);
      const dir = await mkdtemp(join(tmpdir(), 'durable-a2a-cluster-'));
      ports.push(port);
      dirs.push(dir);
      children.push(startNode(binary, port, dir));
    }
    for (const port of ports) await waitFor(async () => (await cli(port, 'PING')).trim() === 'PONG', `node ${port} to answer PING`);
    await run(redisCliBinary(), ['--cluster', 'create', ...ports.map((port) => `127.0.0.1:${port}`), '--cluster-replicas', '0', '--cluster-yes'], { timeout: 30_000 });
    for (const port of ports) await waitFor(async () => (await cli(port, 'CLUSTER', 'INFO')).includes('cluster_state:ok'), `cluster_state:ok on ${port}`);
  } catch (error) {
    await cleanUp();
    throw error;
  }
  let stopped = false;
  const refuse = (what: string) => async () => {
    throw new Error(`redis cluster: ${what}() is not supported (tests that restart Redis run on a single server)`);
  };
  return {
    port: ports[0]!,
    ports,
    url: `redis-cluster://${ports.map((port) => `127.0.0.1:${port}`).join(',')}`,
    dir: dirs[0]!,
    dirs,
    async stop() {
      if (stopped) return;
      stopped = true;
      await cleanUp();
    },
    kill: refuse('kill'),
    restart: refuse('restart'),
  };
}

/** Hash slots in a Redis Cluster (fixed by the protocol). */
const SLOT_COUNT = 16_384;
/** Longest a slot's keys may take to move, in MIGRATE batches (a bound on the loop, not an expectation). */
const MIGRATION_BATCH_LIMIT = 10_000;
/** MIGRATE's own timeout per batch (ms). */
const MIGRATE_TIMEOUT_MS = 5_000;

/** Options of `migrateSlot`. */
export interface SlotMigrationOptions {
  /** The master that takes the slot (client port). Default: the next master after the owner, in `ports` order. */
  toPort?: number;
  /** Keys per `MIGRATE … KEYS`. Default 10. */
  batchSize?: number;
  /**
   * Pause (ms) after IMPORTING/MIGRATING are set and after each batch: how long the slot stays half moved, its
   * keys split between two masters (clients get ASK and TRYAGAIN meanwhile). Default 0.
   */
  pauseMs?: number;
  /** Awaited once, after the first batch moved (or at once when the slot holds no key): the slot is half moved. */
  onSplit?: () => Promise<void> | void;
}

/** What `migrateSlot` did. */
export interface SlotMigration {
  slot: number;
  fromPort: number;
  toPort: number;
  /** Keys moved with MIGRATE (keys created on the target meanwhile, after an ASK, are not counted). */
  keysMoved: number;
  batches: number;
}

/** One plain (non-cluster) admin connection to each master, by port; `close()` ends them all. */
function adminConnections(ports: readonly number[]): { node(port: number): Redis; close(): void } {
  const nodes = new Map(ports.map((port) => [port, new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 3, lazyConnect: false })]));
  for (const node of nodes.values()) node.on('error', () => undefined);
  return {
    node(port) {
      const node = nodes.get(port);
      if (!node) throw new Error(`redis cluster: no master on port ${port}`);
      return node;
    },
    close() {
      for (const node of nodes.values()) node.disconnect();
    },
  };
}

/** The hash slot of `key` (`CLUSTER KEYSLOT`, asked of the first master). */
export async function keySlot(cluster: Pick<RedisClusterHandle, 'ports'>, key: string): Promise<number> {
  return Number(await cli(cluster.ports[0]!, 'CLUSTER', 'KEYSLOT', key));
}

/** The client port of the master that owns `slot`, as the master on `askPort` (default the first) sees it (`CLUSTER SLOTS`). */
export async function slotOwnerPort(cluster: Pick<RedisClusterHandle, 'ports'>, slot: number, askPort: number = cluster.ports[0]!): Promise<number> {
  const admin = adminConnections([askPort]);
  try {
    const ranges = (await admin.node(askPort).call('CLUSTER', 'SLOTS')) as [number, number, [string, number, string]][];
    const owner = ranges.find(([from, to]) => slot >= from && slot <= to);
    if (!owner) throw new Error(`redis cluster: slot ${slot} has no owner`);
    return Number(owner[2][1]);
  } finally {
    admin.close();
  }
}

/**
 * Moves one hash slot, with its keys, to another master while clients keep using it: the protocol of
 * `redis-cli --cluster reshard` (which cannot pick a slot), by hand. `CLUSTER SETSLOT <slot> IMPORTING <from>` on
 * the target, `MIGRATING <to>` on the owner, then `MIGRATE … KEYS …` in batches of `CLUSTER GETKEYSINSLOT` until
 * the owner holds none, then `CLUSTER SETSLOT <slot> NODE <to>` on the target, the owner and the other masters, in
 * that order. Throws on any refused step (the slot may then stay half moved: the cluster is the test's own).
 */
export async function migrateSlot(cluster: Pick<RedisClusterHandle, 'ports'>, slot: number, options: SlotMigrationOptions = {}): Promise<SlotMigration> {
  if (!Number.isInteger(slot) || slot < 0 || slot >= SLOT_COUNT) throw new Error(`redis cluster: no slot ${slot}`);
  const fromPort = await slotOwnerPort(cluster, slot);
  const toPort = options.toPort ?? cluster.ports[(cluster.ports.indexOf(fromPort) + 1) % cluster.ports.length]!;
  if (toPort === fromPort) throw new Error(`redis cluster: slot ${slot} is already on ${toPort}`);
  const batchSize = options.batchSize ?? 10;
  const pause = () => (options.pauseMs ? new Promise((resolve) => setTimeout(resolve, options.pauseMs)) : Promise.resolve());
  const admin = adminConnections(cluster.ports);
  try {
    const source = admin.node(fromPort);
    const target = admin.node(toPort);
    const fromId = String(await source.call('CLUSTER', 'MYID'));
    const toId = String(await target.call('CLUSTER', 'MYID'));
    await target.call('CLUSTER', 'SETSLOT', slot, 'IMPORTING', fromId);
    await source.call('CLUSTER', 'SETSLOT', slot, 'MIGRATING', toId);
    await pause();
    let keysMoved = 0;
    let batches = 0;
    let split = false;
    for (; batches < MIGRATION_BATCH_LIMIT; batches++) {
      const keys = (await source.call('CLUSTER', 'GETKEYSINSLOT', slot, batchSize)) as string[];
      if (keys.length === 0) break;
      await source.call('MIGRATE', '127.0.0.1', toPort, '', 0, MIGRATE_TIMEOUT_MS, 'KEYS', ...keys);
      keysMoved += keys.length;
      if (!split) {
        split = true;
        await options.onSplit?.();
      }
      await pause();
    }
    if (batches === MIGRATION_BATCH_LIMIT) throw new Error(`redis cluster: slot ${slot} still holds keys after ${batches} batches`);
    if (!split) await options.onSplit?.();
    for (const port of [toPort, fromPort, ...cluster.ports.filter((port) => port !== toPort && port !== fromPort)]) {
      await admin.node(port).call('CLUSTER', 'SETSLOT', slot, 'NODE', toId);
    }
    return { slot, fromPort, toPort, keysMoved, batches };
  } finally {
    admin.close();
  }
}
