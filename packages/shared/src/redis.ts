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
