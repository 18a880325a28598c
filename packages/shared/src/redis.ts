/**
 * One place that turns a Redis URL into a client: `redis://` / `rediss://`
 * for a single server, `redis-cluster://host:port,host:port` for a Redis
 * Cluster (seed nodes), `redis-sentinel://host:port,host:port/<master name>`
 * for a Sentinel-managed primary (see redis-sentinel.ts). Every journal key is hash-tagged per workflow and the
 * queue prefix is hash-tagged, so each Lua script stays in one slot.
 */
import type { Socket } from 'node:net';
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { createSentinelClient, isSentinelUrl } from './redis-sentinel.ts';
import { reconnectOnRedisError } from './redis-errors.ts';
import { redisBackoffMs } from './redis-refusal-gate.ts';

export { isRedisUnavailableError } from './redis-errors.ts';

/** Longest pause between two reconnect attempts to an unreachable Redis (ms). */
export const REDIS_RECONNECT_CAP_MS = 2_000;

/**
 * ioredis `retryStrategy` of every connection the product creates: the delay before reconnect attempt `times`
 * (ms), exponential from 100 ms with equal jitter, capped at `REDIS_RECONNECT_CAP_MS` (so a fleet that lost Redis
 * does not reconnect in lock step). Never gives up (`maxRetriesPerRequest` decides what a command waits for).
 */
export const redisReconnectDelayMs = (times: number): number => redisBackoffMs(times, Math.random, 100, REDIS_RECONNECT_CAP_MS);

/**
 * Options every connection gets unless the caller overrides them: `maxRetriesPerRequest: null` (BullMQ requires
 * it for workers, field case R23, and the journal waits out short outages too), the jittered reconnect delay, and
 * `reconnectOnRedisError` (a primary demoted without closing its sockets: READONLY reconnects; see redis-errors.ts).
 */
export const BASE_REDIS_OPTIONS: RedisOptions = { maxRetriesPerRequest: null, retryStrategy: redisReconnectDelayMs, reconnectOnError: reconnectOnRedisError };

export const CLUSTER_SCHEME = 'redis-cluster://';

/** True when the URL names a Redis Cluster. */
export const isClusterUrl = (url: string): boolean => url.startsWith(CLUSTER_SCHEME);

/** Creates a client with `BASE_REDIS_OPTIONS` under `options`. */
export function createRedisClient(url: string, options: RedisOptions = {}): Redis | Cluster {
  const redisOptions: RedisOptions = { ...BASE_REDIS_OPTIONS, ...options };
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
 * owner closes), with `maxRetriesPerRequest: null`, `reconnectOnRedisError` (unless the client has its own
 * rule) and `options` applied to the duplicate.
 */
export function openRedisClient(source: string | RedisClient, options: RedisOptions = {}): RedisClient {
  if (typeof source === 'string') return createRedisClient(source, options);
  // A caller's client keeps its own reconnect delay; it gains READONLY reconnects unless it chose its own rule.
  const own = source instanceof Cluster ? source.options.redisOptions : source.options;
  const redisOptions: RedisOptions = { maxRetriesPerRequest: null, reconnectOnError: own?.reconnectOnError ?? reconnectOnRedisError, ...options };
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
 * (one write syscall per command was a measured share of the CPU). Replies, errors and the command timeout stay per command.
 * The producer's connection runs no BullMQ worker (whose connections stay plain, bullmq#457).
 */
export function createFailFastRedisClient(url: string, commandTimeoutMs: number = DEFAULT_COMMAND_TIMEOUT_MS): Redis | Cluster {
  const client = createRedisClient(url, { ...failFastRedisOptions(commandTimeoutMs), enableAutoPipelining: true });
  if (client instanceof Cluster) client.options.enableOfflineQueue = false;
  return client;
}

/** True when `client` takes commands now, as `waitUntilConnected` counts it: ready, or a Cluster that has connected. */
export const isConnectedNow = (client: Redis | Cluster): boolean => client.status === 'ready' || (client instanceof Cluster && client.status === 'connect');

/** The next 'ready' of each client that a call waits for: one listener per client, however many calls wait. */
const nextReadyOf = new WeakMap<Redis | Cluster, Promise<void>>();

/**
 * Resolves at `client`'s next 'ready' event. Every caller waiting at the same time shares one listener, so a burst of
 * first calls on a connecting client (a fresh producer's `delegate`s) adds one listener, not one each (Node warned of
 * a leak past ten: MaxListenersExceededWarning).
 */
export function nextReady(client: Redis | Cluster): Promise<void> {
  let pending = nextReadyOf.get(client);
  if (!pending) {
    pending = new Promise<void>((resolve) =>
      client.once('ready', () => {
        nextReadyOf.delete(client);
        resolve();
      }),
    );
    nextReadyOf.set(client, pending);
  }
  return pending;
}

/**
 * Resolves with `ready()` once `client` emits 'ready' or `waitMs` has passed, whichever comes first. Never rejects;
 * the timer is cleared when the event comes first.
 */
export async function untilReadyOrTimeout(client: Redis | Cluster, waitMs: number, ready: () => boolean): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, waitMs);
  });
  try {
    await Promise.race([nextReady(client), timeout]);
  } finally {
    clearTimeout(timer);
  }
  return ready();
}

/**
 * Resolves true once `client` is ready (a Cluster: connected), false after
 * `waitMs` without it. Never rejects, sends nothing, queues nothing.
 */
export async function waitUntilConnected(client: Redis | Cluster, waitMs: number): Promise<boolean> {
  const connected = () => isConnectedNow(client);
  if (connected()) return true;
  return untilReadyOrTimeout(client, waitMs, connected);
}

/*
 * One socket write per event-loop turn on a connection that is not auto-pipelined: BullMQ's connections (a
 * producer's queue connection, a fleet's worker connection) and the change subscriber's.
 *
 * Why: ioredis writes every command to its socket as it is sent, and every socket write is a system call. On
 * loopback and on a busy host that call is the most expensive part of a command for both ends (the sender runs the
 * TCP stack for the receiver as well, and redis-server reads once per write): with BullMQ's commands and the
 * change subscriber's SUBSCRIBE / UNSUBSCRIBE written one by one, a producer made about three writes per
 * delegation. Auto-pipelining (ioredis) batches the same way but is not an option on these connections: an
 * auto-pipelined client copies every script it has defined onto each batch (BullMQ defines about 70), and a
 * subscriber connection refuses it.
 *
 * What: the first command written in a turn corks the socket (`socket.cork()`), and a `process.nextTick` callback
 * uncorks it once the turn's JavaScript, promise continuations included, has run: the commands of one turn leave
 * in one `writev`. Nothing else changes: every command is written, in the order it was sent, within the same turn
 * (before any I/O callback or timer runs); replies, errors, timeouts and blocking commands are ioredis' as before.
 * ioredis' own auto-pipelining flushes in a `process.nextTick` callback the same way.
 */

/** Clients whose `sendCommand` already corks. */
const batched = new WeakSet<Redis>();

/**
 * Makes `client` write the commands sent in one event-loop turn with one socket write (see the comment above). A
 * Cluster: each of its node connections, those it opens later included. Idempotent; returns `client`.
 */
export function batchWritesPerTurn<T extends Redis | Cluster>(client: T): T {
  if (client instanceof Cluster) {
    for (const node of client.nodes('all')) batchNode(node);
    client.on('+node', (node: Redis) => batchNode(node));
    return client;
  }
  batchNode(client as Redis);
  return client;
}

function batchNode(client: Redis): void {
  if (batched.has(client)) return;
  batched.add(client);
  let corked: Socket | undefined;
  const uncork = () => {
    const socket = corked;
    corked = undefined;
    socket?.uncork();
  };
  const sendCommand = client.sendCommand.bind(client);
  client.sendCommand = ((...args: Parameters<Redis['sendCommand']>) => {
    const socket = client.stream as Socket | undefined;
    // Only a socket that takes writes now: a command queued offline is written by ioredis later, uncorked.
    if (!corked && socket && client.status === 'ready' && socket.writable) {
      corked = socket;
      socket.cork();
      process.nextTick(uncork);
    }
    return sendCommand(...args);
  }) as Redis['sendCommand'];
}
