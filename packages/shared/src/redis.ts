/**
 * One place that turns a Redis URL into a client: `redis://` / `rediss://`
 * for a single server, `redis-cluster://host:port,host:port` for a Redis
 * Cluster (seed nodes), `redis-sentinel://host:port,host:port/<master name>`
 * for a Sentinel-managed primary (see redis-sentinel.ts). Every journal key is hash-tagged per workflow and the
 * queue prefix is hash-tagged, so each Lua script stays in one slot.
 */
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { createSentinelClient, isSentinelUrl } from './redis-sentinel.ts';

export const CLUSTER_SCHEME = 'redis-cluster://';

/** True when the URL names a Redis Cluster. */
export const isClusterUrl = (url: string): boolean => url.startsWith(CLUSTER_SCHEME);

/**
 * Creates a client. `maxRetriesPerRequest: null` by default: BullMQ requires it
 * for workers (field case R23) and the journal waits out short outages too.
 */
export function createRedisClient(url: string, options: RedisOptions = {}): Redis | Cluster {
  const redisOptions: RedisOptions = { maxRetriesPerRequest: null, ...options };
  if (isSentinelUrl(url)) return createSentinelClient(url, redisOptions);
  if (!isClusterUrl(url)) return new Redis(url, redisOptions);
  const nodes = url
    .slice(CLUSTER_SCHEME.length)
    .split(',')
    .map((node) => node.trim())
    .filter(Boolean)
    .map((node) => {
      const [host, port] = node.split(':');
      return { host: host!, port: Number(port ?? 6379) };
    });
  return new Cluster(nodes, { redisOptions, enableReadyCheck: true });
}

/** A Redis client as the packages accept it from callers: one server (or Sentinel primary) or a Cluster. */
export type RedisClient = Redis | Cluster;

/**
 * A client the caller owns and closes: from a URL (`createRedisClient`), or a
 * `duplicate()` of a client passed in (never the client itself, which its
 * owner closes), with `options` applied to the duplicate.
 */
export function openRedisClient(source: string | RedisClient, options: RedisOptions = {}): RedisClient {
  const redisOptions: RedisOptions = { maxRetriesPerRequest: null, ...options };
  if (typeof source === 'string') return createRedisClient(source, redisOptions);
  if (source instanceof Cluster) return source.duplicate(undefined, { redisOptions: { ...source.options.redisOptions, ...redisOptions } });
  return source.duplicate(redisOptions);
}

/** Default for `createFailFastRedisClient`: a command unanswered this long is rejected. */
export const DEFAULT_COMMAND_TIMEOUT_MS = 2_000;

/**
 * Connection options for producers (the API and library callers): BullMQ's
 * guidance is fail fast for producers, blocking settings only for workers.
 * No offline queue (a command while disconnected is rejected at once and is
 * never replayed after Redis returns), one retry per command, and a command
 * timeout for a server that stops answering without closing the socket.
 */
export function failFastRedisOptions(commandTimeoutMs: number = DEFAULT_COMMAND_TIMEOUT_MS): RedisOptions {
  return { enableOfflineQueue: false, maxRetriesPerRequest: 1, commandTimeout: commandTimeoutMs };
}

/**
 * A producer's client: `createRedisClient` with `failFastRedisOptions` (also on a Cluster's own queue),
 * auto-pipelined (ioredis): the commands issued in one event-loop turn leave in one socket write
 * (issue 16: one write syscall per command). Replies, errors and the command timeout stay per command.
 * The producer's connection runs no BullMQ worker (whose connections stay plain, bullmq#457).
 */
export function createFailFastRedisClient(url: string, commandTimeoutMs: number = DEFAULT_COMMAND_TIMEOUT_MS): Redis | Cluster {
  const client = createRedisClient(url, { ...failFastRedisOptions(commandTimeoutMs), enableAutoPipelining: true });
  if (client instanceof Cluster) client.options.enableOfflineQueue = false;
  return client;
}

/**
 * True when `error` says Redis could not be reached or did not answer in
 * time (as opposed to a script or data error): ioredis' offline-queue and
 * timeout rejections, closed connections, socket errors.
 */
export function isRedisUnavailableError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (error.name === 'MaxRetriesPerRequestError') return true;
  const code = (error as { code?: string }).code;
  if (code !== undefined && ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTCONN', 'EHOSTUNREACH'].includes(code)) return true;
  return /enableOfflineQueue|Command timed out|Connection is closed|Stream isn't writeable|Reached the max retries|Connection in subscriber mode/i.test(error.message);
}

/**
 * Resolves true once `client` is ready (a Cluster: connected), false after
 * `waitMs` without it. Never rejects, sends nothing, queues nothing.
 */
export async function waitUntilConnected(client: Redis | Cluster, waitMs: number): Promise<boolean> {
  const connected = () => client.status === 'ready' || (client instanceof Cluster && client.status === 'connect');
  if (connected()) return true;
  return new Promise<boolean>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      client.off('ready', done);
      resolve(connected());
    };
    const timer = setTimeout(done, waitMs);
    client.once('ready', done);
  });
}
