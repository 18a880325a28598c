/**
 * Redis Sentinel connections: the URL form `redis-sentinel://[[user]:password@]host:port,host:port/<master name>[/db]`
 * names the Sentinels (at least one; list them all) and the monitored master's name. The client asks the
 * Sentinels for the current primary, reconnects to the promoted replica after a failover (ioredis
 * `failoverDetector` listens for `+switch-master` so it does not wait for the dead primary's TCP timeout),
 * and every `duplicate()` (BullMQ's blocking connections) carries the same options (including the
 * connector that survives a `+switch-master` mid-reconnect, `FailoverSafeSentinelConnector`), so the producer,
 * the workers, the API and BullMQ all follow the primary.
 *
 * The password (if any) is the data nodes' `requirepass`; Sentinels with their own password take
 * `?sentinelPassword=…`. Durability across a failover is not given by Sentinel (replication is
 * asynchronous); see `journal/durability.ts`.
 */
import { Redis, SentinelConnector, type RedisOptions, type SentinelConnectionOptions } from 'ioredis';
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
    // Reconnect as soon as the Sentinels announce a new primary, with ioredis' Sentinel connector fixed
    // for an announcement that arrives while a reconnect is asking the Sentinels (FailoverSafeSentinelConnector below).
    failoverDetector: true,
    Connector: FailoverSafeSentinelConnector,
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

/*
 * ioredis' Sentinel connector, made safe for the failover it exists for (ioredis 5.11.1).
 *
 * The defect: with `failoverDetector`, the connector subscribes to `+switch-master` on the Sentinels
 * when a connection comes up, and on that message calls its own `disconnect()` so that ioredis
 * reconnects to the promoted replica. The detector of the last good connection lives on while the
 * client, whose primary died, reconnects again and again. If the Sentinels announce the new primary
 * while one of those reconnects is asking a Sentinel where the primary is (`connectToNext` awaiting
 * `resolve`), `disconnect()` clears the connector's `connecting` flag, `connectToNext` then throws
 * `Connection is closed.`, and ioredis treats that as a failed connect: it rejects every queued
 * command with that error (an unawaited one is an unhandled rejection, which kills a worker process)
 * and sets the client to `end`, from which it never reconnects (a worker that stays up with a dead
 * connection). Upstream ioredis has the same code; BullMQ #4378 is the same race reached through its
 * blocking-connection watchdog.
 *
 * The fix: a `disconnect()` while a connect is asking the Sentinels does not abort that connect; the
 * connect finishes, and the stream it produced is closed at once. ioredis' own close handler then
 * decides, as for any lost connection: a client being closed by its owner (`quit`/`disconnect()`) ends,
 * any other (the failover detector, `disconnect(true)`) reconnects and asks the Sentinels again. Nothing
 * queued is failed. If every Sentinel is unreachable meanwhile, the connector falls back to ioredis'
 * behaviour (the connect is aborted), so closing a client never waits on a Sentinel that does not answer.
 */

type ErrorEmitter = (type: string, error: Error) => void;
type SentinelStream = Awaited<ReturnType<SentinelConnector['connect']>>;

/** ioredis `Connector` for `sentinels` / `name` (every `duplicate()` carries it); see the comment above. */
export class FailoverSafeSentinelConnector extends SentinelConnector {
  /** A connect is asking the Sentinels for the primary (no stream of its own yet). */
  private askingSentinels = false;
  /** `disconnect()` was called while asking: close the stream the connect produces. */
  private closeWhenConnected = false;

  /** `options`: ioredis' Sentinel connection options (ioredis passes the client's options). */
  constructor(options: unknown) {
    super(options as SentinelConnectionOptions);
  }

  override connect(eventEmitter: ErrorEmitter): Promise<SentinelStream> {
    this.askingSentinels = true;
    this.closeWhenConnected = false;
    const emit: ErrorEmitter = (type, error) => {
      // "All sentinels are unreachable": do not keep a client that is being closed waiting for them.
      if (this.closeWhenConnected && type === 'error') this.connecting = false;
      eventEmitter(type, error);
    };
    return super.connect(emit).then(
      (stream) => {
        this.askingSentinels = false;
        if (this.closeWhenConnected) {
          this.closeWhenConnected = false;
          // ioredis sees a destroyed stream and runs its close handler (end or reconnect).
          stream.destroy();
        }
        return stream;
      },
      (error: unknown) => {
        this.askingSentinels = false;
        this.closeWhenConnected = false;
        throw error;
      },
    );
  }

  override disconnect(): void {
    // Ends the previous stream and the previous failover detector's Sentinel connections in any case.
    super.disconnect();
    if (!this.askingSentinels) return;
    this.connecting = true;
    this.closeWhenConnected = true;
  }
}
