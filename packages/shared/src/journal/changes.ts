/**
 * Workflow change notifications: the journal publishes on
 * `<prefix>:{wf:<id>}:changed` when a workflow changes state (updateWorkflow)
 * and when a delegation opens a question (applyStatus). One subscriber
 * connection per process is shared by every waiter (`producer.waitFor`).
 * A message published while that connection is down is lost; every new
 * connection therefore wakes every waiter once it is subscribed again, and
 * each reads the journal back. On a Redis Cluster the connection goes to one
 * node (PUBLISH reaches every node over the cluster bus) and moves to another
 * when it ends (ClusterNodeSubscription).
 */
import { Cluster, type Redis } from 'ioredis';
import { DEFAULT_COMMAND_TIMEOUT_MS, waitUntilConnected } from '../redis.ts';
import type { Journal } from './journal.ts';

/** The channel a workflow's changes are published on (same hash tag as its keys). */
export function workflowChangeChannel(journal: Journal, workflowId: string): string {
  return `${journal.keys.workflow(workflowId).slice(0, -':wf'.length)}:changed`;
}

/** Wakes a waiter; `message`: what was published (a state name, or a finished workflow's compacted record). */
type Wake = (message?: string) => void;

/** The subscriber's connection, one server's or a Cluster's. */
interface ChangeConnection {
  /** Resolves once Redis confirmed the subscription, or once a replacement connection is due (it wakes every waiter). */
  subscribe(channel: string): Promise<unknown>;
  unsubscribe(channel: string): Promise<unknown>;
  close(): Promise<void>;
}

/**
 * One subscriber connection per producer, shared by every waiter; channels
 * are subscribed while someone waits on them. Created on first use.
 */
export class WorkflowChangeSubscriber {
  #connection: ChangeConnection | undefined;
  readonly #waiters = new Map<string, Set<Wake>>();

  constructor(private readonly redis: Redis | Cluster) {}

  /**
   * Subscribes `wake` to `channel`; resolves once Redis confirmed the subscription (or, on a Cluster, once a
   * new connection is due, which wakes `wake` when subscribed). Returns the unsubscribe function. Rejects with
   * the SUBSCRIBE's error (on a Cluster: no node known after the command timeout, code ENOTCONN).
   */
  async listen(channel: string, wake: Wake): Promise<() => Promise<void>> {
    const connection = (this.#connection ??= this.#connect());
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
      await connection.unsubscribe(channel).catch(() => undefined);
    };
    try {
      await connection.subscribe(channel);
    } catch (error) {
      await unlisten();
      throw error;
    }
    return unlisten;
  }

  async close(): Promise<void> {
    const connection = this.#connection;
    this.#connection = undefined;
    this.#waiters.clear();
    await connection?.close();
  }

  #deliver = (channel: string, message: string) => this.#waiters.get(channel)?.forEach((wake) => wake(message));

  #wakeEveryWaiter = () => this.#waiters.forEach((waiters) => waiters.forEach((wake) => wake()));

  #connect(): ChangeConnection {
    if (this.redis instanceof Cluster) return new ClusterNodeSubscription(this.redis, () => [...this.#waiters.keys()], this.#deliver, this.#wakeEveryWaiter);
    // A subscriber may queue its SUBSCRIBE until connected (a fail-fast producer client has no offline
    // queue); every wait is bounded by its caller (timeoutMs, signal, the API's request timeout).
    const subscriber = this.redis.duplicate({ enableOfflineQueue: true });
    subscriber.on('error', () => undefined); // commands reject to the waiter; reconnects are ioredis' job
    subscriber.on('message', this.#deliver);
    // ioredis subscribes again on its own after a reconnect; every waiter reads again.
    let connections = 0;
    subscriber.on('ready', () => {
      if (++connections > 1) this.#wakeEveryWaiter();
    });
    return {
      subscribe: (channel) => subscriber.subscribe(channel),
      unsubscribe: (channel) => subscriber.unsubscribe(channel),
      close: () => subscriber.quit().then(() => undefined, () => subscriber.disconnect()),
    };
  }
}

/** First wait before another replacement after one that failed (ms); it doubles up to REPLACEMENT_MAX_DELAY_MS. */
const REPLACEMENT_DELAY_MS = 100;
/** Longest wait between two replacements (ms): a Cluster coming back is noticed within this. */
const REPLACEMENT_MAX_DELAY_MS = 2_000;

/**
 * The subscriber's connection on a Redis Cluster: a plain connection to one node, picked at random among those
 * the Cluster client knows (as ioredis' own Cluster subscriber does). ioredis' Cluster subscriber is not used:
 * when its connection ends it moves to another node and subscribes again but tells nobody, so a change
 * published in between was lost and its waiter slept to its timeout (or forever). Here a connection that ends
 * (node down, failover, CLIENT KILL, a SUBSCRIBE unanswered in the command timeout) is replaced while anyone
 * waits: the new one subscribes every channel waited on, then wakes every waiter. Replacements that fail
 * are retried after REPLACEMENT_DELAY_MS, doubling to REPLACEMENT_MAX_DELAY_MS, while anyone waits.
 */
class ClusterNodeSubscription implements ChangeConnection {
  #connection: Redis | undefined;
  #opening: Promise<Redis> | undefined;
  #replacement: NodeJS.Timeout | undefined;
  /** Connections ended since one last subscribed. */
  #failures = 0;
  #closed = false;

  constructor(
    private readonly cluster: Cluster,
    private readonly channels: () => string[],
    private readonly deliver: (channel: string, message: string) => void,
    private readonly wakeEveryWaiter: () => void,
  ) {}

  async subscribe(channel: string): Promise<void> {
    if (this.#replacement) return; // the replacement subscribes `channel` too, then wakes its waiter
    const connection = await this.#open();
    try {
      await connection.subscribe(channel);
      this.#failures = 0;
    } catch {
      connection.disconnect(); // its end brings a replacement, which subscribes `channel` and wakes its waiter
    }
  }

  async unsubscribe(channel: string): Promise<void> {
    // Sent after any SUBSCRIBE of the same connection; a replacement subscribes only the channels still waited on.
    await this.#connection?.unsubscribe(channel);
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#replacement);
    this.#replacement = undefined;
    const connection = this.#connection;
    this.#connection = undefined;
    if (connection) await connection.quit().then(() => undefined, () => connection.disconnect());
  }

  /** The current connection, or a new one to a node the Cluster client knows (waiting for it to connect at most the command timeout). */
  #open(): Promise<Redis> {
    if (this.#connection) return Promise.resolve(this.#connection);
    if (!this.#opening) {
      const opening = this.#openToSomeNode();
      this.#opening = opening;
      const settled = () => {
        if (this.#opening === opening) this.#opening = undefined;
      };
      opening.then(settled, settled);
    }
    return this.#opening;
  }

  async #openToSomeNode(): Promise<Redis> {
    if (this.cluster.nodes('all').length === 0) await waitUntilConnected(this.cluster, this.cluster.options.redisOptions?.commandTimeout ?? DEFAULT_COMMAND_TIMEOUT_MS);
    const nodes = this.cluster.nodes('all');
    if (this.#closed) throw new Error('the change subscriber is closed');
    if (nodes.length === 0) throw Object.assign(new Error('Redis Cluster not connected: no node to subscribe on'), { code: 'ENOTCONN' });
    return this.#connectTo(nodes[Math.floor(Math.random() * nodes.length)]!);
  }

  #connectTo(node: Redis): Redis {
    // No reconnect of its own: an ended connection is replaced, maybe by one to another node (the Cluster's
    // pool connections never reconnect either). Subscribed channels are sent by the replacement, not by ioredis.
    const connection = node.duplicate({
      lazyConnect: false,
      enableOfflineQueue: true,
      enableAutoPipelining: false,
      readOnly: false,
      autoResubscribe: false,
      retryStrategy: () => null,
    });
    connection.on('error', () => undefined);
    connection.on('message', this.deliver);
    connection.once('end', () => this.#ended(connection));
    this.#connection = connection;
    return connection;
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
