/**
 * Workflow change notifications: the journal publishes on
 * `<prefix>:{wf:<id>}:changed` when a workflow changes state (updateWorkflow)
 * and when a delegation opens a question (applyStatus). One subscriber
 * connection per process is shared by every waiter (`producer.waitFor`); it is
 * its own connection, carries nothing but SUBSCRIBE and UNSUBSCRIBE, and is
 * connected before the first of them (SUBSCRIBER_OPTIONS says why). Pub/sub
 * is at most once: a message published while no connection listens is lost,
 * so every waiter reads its record after its subscription is confirmed, and
 * again after every replacement connection has subscribed (ChangeSubscription).
 * On a Redis Cluster the connection goes to one node (PUBLISH reaches every
 * node over the cluster bus) and a replacement may go to another.
 */
import { Cluster, type Redis, type RedisOptions } from 'ioredis';
import { DEFAULT_COMMAND_TIMEOUT_MS, batchWritesPerTurn, waitUntilConnected } from '../redis.ts';
import type { Journal } from './journal.ts';

/** The channel a workflow's changes are published on (same hash tag as its keys). */
export function workflowChangeChannel(journal: Journal, workflowId: string): string {
  return `${journal.keys.workflow(workflowId).slice(0, -':wf'.length)}:changed`;
}

/** Wakes a waiter; `message`: what was published (a state name, or a finished workflow's compacted record). */
type Wake = (message?: string) => void;

/**
 * One subscriber connection per producer, shared by every waiter; channels
 * are subscribed while someone waits on them. Created on first use.
 */
export class WorkflowChangeSubscriber {
  #subscription: ChangeSubscription | undefined;
  readonly #waiters = new Map<string, Set<Wake>>();

  constructor(private readonly redis: Redis | Cluster) {}

  /**
   * Subscribes `wake` to `channel`; resolves once Redis confirmed the subscription, or once a replacement
   * connection is due (it subscribes `channel` too, then wakes `wake`). Concurrent first calls share one
   * connection attempt. Returns the unsubscribe function. Rejects when no connection could be opened (Redis
   * unreachable: the connection's error; on a Cluster with no node known after the command timeout, code ENOTCONN).
   */
  async listen(channel: string, wake: Wake): Promise<() => Promise<void>> {
    const subscription = (this.#subscription ??= this.#open());
    let waiters = this.#waiters.get(channel);
    if (!waiters) {
      waiters = new Set();
      this.#waiters.set(channel, waiters);
    }
    waiters.add(wake);
    const unlisten = async () => {
      waiters.delete(wake);
      if (waiters.size > 0 || this.#waiters.get(channel) !== waiters) return;
      this.#waiters.delete(channel);
      await subscription.unsubscribe(channel);
    };
    try {
      await subscription.subscribe(channel);
    } catch (error) {
      await unlisten();
      throw error;
    }
    return unlisten;
  }

  async close(): Promise<void> {
    const subscription = this.#subscription;
    this.#subscription = undefined;
    this.#waiters.clear();
    await subscription?.close();
  }

  #deliver = (channel: string, message: string) => this.#waiters.get(channel)?.forEach((wake) => wake(message));

  #wakeEveryWaiter = () => this.#waiters.forEach((waiters) => waiters.forEach((wake) => wake()));

  #open(): ChangeSubscription {
    const redis = this.redis;
    const connect = redis instanceof Cluster ? () => connectToSomeNode(redis, this.#deliver) : () => connectSubscriber(redis, this.#deliver);
    return new ChangeSubscription(connect, () => [...this.#waiters.keys()], this.#wakeEveryWaiter);
  }
}

/**
 * The options of a subscriber connection, on top of its source client's (address, credentials, TLS, db,
 * command timeout). Nothing but SUBSCRIBE and UNSUBSCRIBE is ever sent on it, and only once it is connected:
 * - no ready check and no client info: ioredis sends INFO and CLIENT SETINFO after connecting, and a SUBSCRIBE
 *   that overtook them (ioredis writes SUBSCRIBE before the connection is ready) made the check fail and the
 *   client reconnect, losing what was published meanwhile;
 * - no offline queue, no auto-pipelining, no resubscription and no reconnect of its own: an ended connection is
 *   replaced (ChangeSubscription), and the replacement subscribes every channel waited on before it wakes them.
 */
const SUBSCRIBER_OPTIONS = {
  lazyConnect: true,
  enableReadyCheck: false,
  disableClientInfo: true,
  enableOfflineQueue: false,
  enableAutoPipelining: false,
  autoResubscribe: false,
  autoResendUnfulfilledCommands: false,
  readOnly: false,
  retryStrategy: () => null,
} satisfies RedisOptions;

/** A connected subscriber connection made from `source` (a server, a Sentinel primary, or a Cluster node). */
async function connectSubscriber(source: Redis, deliver: (channel: string, message: string) => void): Promise<Redis> {
  // The SUBSCRIBEs and UNSUBSCRIBEs of one event-loop turn leave in one socket write.
  const connection = batchWritesPerTurn(source.duplicate(SUBSCRIBER_OPTIONS));
  connection.on('error', () => undefined); // the SUBSCRIBE rejects to its waiter; an ended connection is replaced
  connection.on('message', deliver);
  try {
    await connection.connect();
  } catch (error) {
    connection.disconnect();
    throw error;
  }
  return connection;
}

/**
 * On a Redis Cluster: a connection to one node, picked at random among those the Cluster client knows (as
 * ioredis' own Cluster subscriber does; PUBLISH reaches every node over the cluster bus), waiting for the
 * Cluster to know one at most the command timeout. ioredis' Cluster subscriber is not used: when its
 * connection ends it moves to another node and subscribes again but tells nobody, so a change published in
 * between was lost and its waiter slept to its timeout (or forever).
 * @throws Error code ENOTCONN when no node is known
 */
async function connectToSomeNode(cluster: Cluster, deliver: (channel: string, message: string) => void): Promise<Redis> {
  if (cluster.nodes('all').length === 0) await waitUntilConnected(cluster, cluster.options.redisOptions?.commandTimeout ?? DEFAULT_COMMAND_TIMEOUT_MS);
  const nodes = cluster.nodes('all');
  if (nodes.length === 0) throw Object.assign(new Error('Redis Cluster not connected: no node to subscribe on'), { code: 'ENOTCONN' });
  return connectSubscriber(nodes[Math.floor(Math.random() * nodes.length)]!, deliver);
}

/** First wait before another replacement after one that failed (ms); it doubles up to REPLACEMENT_MAX_DELAY_MS. */
const REPLACEMENT_DELAY_MS = 100;
/** Longest wait between two replacements (ms): Redis coming back is noticed within this. */
const REPLACEMENT_MAX_DELAY_MS = 2_000;

/**
 * The subscriber's connection, one at a time, opened by `connect` (connected before anything is sent on it).
 * Concurrent first subscriptions share one opening (one promise). A connection that ends (Redis restarted,
 * failover, CLIENT KILL, a SUBSCRIBE unanswered in the command timeout) is replaced while anyone waits: the new
 * one subscribes every channel waited on, then wakes every waiter, and each reads its record again (a change
 * published while no connection listened is never missed). Replacements that fail are retried after
 * REPLACEMENT_DELAY_MS, doubling to REPLACEMENT_MAX_DELAY_MS, while anyone waits.
 */
class ChangeSubscription {
  #connection: Redis | undefined;
  #opening: Promise<Redis> | undefined;
  #replacement: NodeJS.Timeout | undefined;
  /** Connections ended, or replacements failed, since one last subscribed. */
  #failures = 0;
  #closed = false;

  constructor(
    private readonly connect: () => Promise<Redis>,
    private readonly channels: () => string[],
    private readonly wakeEveryWaiter: () => void,
  ) {}

  /** Resolves once `channel` is subscribed, or once a replacement is due (which subscribes it, then wakes its waiters). */
  async subscribe(channel: string): Promise<void> {
    if (this.#replacement) return;
    const connection = await this.#open();
    try {
      await connection.subscribe(channel);
      this.#failures = 0;
    } catch {
      connection.disconnect(); // its end brings a replacement, which subscribes `channel` and wakes its waiter
    }
  }

  /** Never rejects. Sent after any SUBSCRIBE of the same connection; a replacement subscribes only the channels still waited on. */
  async unsubscribe(channel: string): Promise<void> {
    await this.#connection?.unsubscribe(channel).catch(() => undefined);
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#replacement);
    this.#replacement = undefined;
    const connection = this.#connection;
    this.#connection = undefined;
    if (connection) await connection.quit().then(() => undefined, () => connection.disconnect());
  }

  /** The current connection, or the one being opened (shared by every caller meanwhile). */
  #open(): Promise<Redis> {
    if (this.#connection) return Promise.resolve(this.#connection);
    this.#opening ??= this.connect().then(
      (connection) => {
        this.#opening = undefined;
        if (this.#closed) {
          connection.disconnect();
          throw new Error('the change subscriber is closed');
        }
        this.#connection = connection;
        connection.once('end', () => this.#ended(connection));
        return connection;
      },
      (error: unknown) => {
        this.#opening = undefined;
        throw error;
      },
    );
    return this.#opening;
  }

  #ended(connection: Redis): void {
    if (connection !== this.#connection) return; // closed, or already replaced
    this.#connection = undefined;
    this.#failures++;
    this.#replaceLater();
  }

  #replaceLater(): void {
    if (this.#replacement || this.#closed || this.channels().length === 0) return;
    const delayMs = this.#failures <= 1 ? 0 : Math.min(REPLACEMENT_DELAY_MS * 2 ** (this.#failures - 2), REPLACEMENT_MAX_DELAY_MS);
    this.#replacement = setTimeout(() => {
      this.#replacement = undefined;
      void this.#replace();
    }, delayMs);
  }

  /** Opens a connection, subscribes every channel waited on, then wakes every waiter (each reads the journal again). */
  async #replace(): Promise<void> {
    let connection: Redis;
    try {
      connection = await this.#open();
    } catch {
      this.#failures++;
      this.#replaceLater();
      return;
    }
    const channels = this.channels();
    if (channels.length === 0) return;
    try {
      await connection.subscribe(...channels);
    } catch {
      connection.disconnect(); // ends: replaced again, after a delay
      return;
    }
    if (connection !== this.#connection) return;
    this.#failures = 0;
    this.wakeEveryWaiter();
  }
}
