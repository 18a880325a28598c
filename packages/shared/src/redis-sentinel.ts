/**
 * Redis Sentinel connections: the URL form `redis-sentinel://[[user]:password@]host:port,host:port/<master name>[/db]`
 * names the Sentinels (at least one; list them all) and the monitored master's name. The client asks the
 * Sentinels for the current primary, reconnects to the promoted replica after a failover (ioredis
 * `failoverDetector` listens for `+switch-master` so it does not wait for the dead primary's TCP timeout),
 * and every `duplicate()` (BullMQ's blocking connections) carries the same options, so the producer,
 * the workers, the API and BullMQ all follow the primary.
 *
 * The password (if any) is the data nodes' `requirepass`; Sentinels with their own password take
 * `?sentinelPassword=…`. Durability across a failover is not given by Sentinel (replication is
 * asynchronous); see `journal/durability.ts`.
 */
import { Redis, type RedisOptions } from 'ioredis';
import { z } from 'zod';

export const SENTINEL_SCHEME = 'redis-sentinel://';

/** True when the URL names a Sentinel-managed primary. */
export const isSentinelUrl = (url: string): boolean => url.startsWith(SENTINEL_SCHEME);

const HostPort = z
  .string()
  .regex(/^[A-Za-z0-9.-]+:\d{1,5}$|^\[[0-9A-Fa-f:.]+\]:\d{1,5}$/, 'expected host:port')
  .transform((text) => {
    const colon = text.lastIndexOf(':');
    return { host: text.slice(0, colon).replace(/^\[|\]$/g, ''), port: Number(text.slice(colon + 1)) };
  })
  .pipe(z.object({ host: z.string().min(1), port: z.number().int().min(1).max(65_535) }));

/** What a `redis-sentinel://` URL names. */
export interface SentinelTarget {
  sentinels: { host: string; port: number }[];
  /** The master name the Sentinels monitor (`sentinel monitor <name> …`). */
  name: string;
  username?: string;
  password?: string;
  sentinelPassword?: string;
  db?: number;
}

/**
 * Parses `redis-sentinel://[[user]:password@]h:p,h:p/<name>[/db][?sentinelPassword=…]`.
 * @throws Error naming the bad part (no Sentinel, a bad host:port, no master name, a bad db).
 */
export function parseSentinelUrl(url: string): SentinelTarget {
  if (!isSentinelUrl(url)) throw new Error(`not a ${SENTINEL_SCHEME} URL`);
  const [rest, query = ''] = url.slice(SENTINEL_SCHEME.length).split('?', 2) as [string, string?];
  const at = rest.lastIndexOf('@');
  const credentials = at >= 0 ? rest.slice(0, at) : '';
  const [hosts = '', name = '', db, ...extra] = rest.slice(at + 1).split('/');
  if (extra.length > 0) throw new Error(`${SENTINEL_SCHEME} URL: too many path segments (expected /<master name>[/db])`);
  const sentinels = hosts.split(',').map((node) => node.trim()).filter(Boolean).map((node, index) => {
    const parsed = HostPort.safeParse(node);
    if (!parsed.success) throw new Error(`${SENTINEL_SCHEME} URL: Sentinel ${index + 1} "${node}" is not host:port`);
    return parsed.data;
  });
  if (sentinels.length === 0) throw new Error(`${SENTINEL_SCHEME} URL: no Sentinel (expected host:port,host:port)`);
  if (!/^[A-Za-z0-9._-]+$/.test(name)) throw new Error(`${SENTINEL_SCHEME} URL: missing or bad master name (expected /<name>)`);
  const target: SentinelTarget = { sentinels, name };
  if (db !== undefined && db !== '') {
    if (!/^\d{1,2}$/.test(db)) throw new Error(`${SENTINEL_SCHEME} URL: db "${db}" is not a number`);
    target.db = Number(db);
  }
  if (credentials) {
    const colon = credentials.indexOf(':');
    const username = decodeURIComponent(colon >= 0 ? credentials.slice(0, colon) : '');
    const password = decodeURIComponent(colon >= 0 ? credentials.slice(colon + 1) : credentials);
    if (username) target.username = username;
    if (password) target.password = password;
  }
  const sentinelPassword = new URLSearchParams(query).get('sentinelPassword');
  if (sentinelPassword) target.sentinelPassword = sentinelPassword;
  return target;
}

/** ioredis options for a Sentinel target (merged over `options`). */
export function sentinelRedisOptions(target: SentinelTarget, options: RedisOptions = {}): RedisOptions {
  return {
    ...options,
    sentinels: target.sentinels,
    name: target.name,
    // Reconnect as soon as the Sentinels announce a new primary.
    failoverDetector: true,
    ...(target.username ? { username: target.username } : {}),
    ...(target.password ? { password: target.password } : {}),
    ...(target.sentinelPassword ? { sentinelPassword: target.sentinelPassword } : {}),
    ...(target.db !== undefined ? { db: target.db } : {}),
  };
}

/** A client on the Sentinel-managed primary named by `url`. */
export function createSentinelClient(url: string, options: RedisOptions = {}): Redis {
  return new Redis(sentinelRedisOptions(parseSentinelUrl(url), options));
}
