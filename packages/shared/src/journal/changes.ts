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
 *
 * A busy subscriber (`patternFromWaiters` waits at once or more) listens to
 * every workflow's channel with one PSUBSCRIBE of `workflowChangePattern`
 * instead of a SUBSCRIBE and an UNSUBSCRIBE per wait, and keeps it while anyone
 * waits and `lingerMs` after. A wait that starts while that pattern is
 * subscribed sends nothing: it is listening as soon as it is registered, and
 * then reads its record, as after a SUBSCRIBE. The channels and what is
 * published on them are the same; only this subscriber also hears the changes
 * of workflows nobody here waits for (dropped on arrival, but for the workflows
 * this process is creating: kept for their first wait, `watchCreation`).
 */
import { Cluster, type Redis, type RedisOptions } from 'ioredis';
import { DEFAULT_COMMAND_TIMEOUT_MS, batchWritesPerTurn, waitUntilConnected } from '../redis.ts';
import type { Journal } from './journal.ts';

/** The channel a workflow's changes are published on (same hash tag as its keys). */
export function workflowChangeChannel(journal: Journal, workflowId: string): string {
  return `${journal.keys.workflow(workflowId).slice(0, -':wf'.length)}:changed`;
}

/**
 * The PSUBSCRIBE pattern matching every workflow's change channel (`workflowChangeChannel`) of the journal's prefix,
 * with the prefix's glob characters escaped.
 */
export function workflowChangePattern(journal: Journal): string {
  const channel = workflowChangeChannel(journal, '\0');
  const escaped = (text: string) => text.replace(/[*?[\]\\]/g, (character) => `\\${character}`);
  const [before, after] = channel.split('\0') as [string, string];
  return `${escaped(before)}*${escaped(after)}`;
}

/** Options of a `WorkflowChangeSubscriber`. */
export interface ChangeSubscriberOptions {
  /** `workflowChangePattern` of the journal: with it, a busy subscriber PSUBSCRIBEs it. Default: none (a SUBSCRIBE per channel). */
  pattern?: string | undefined;
  /** Waits at once from which a wait starts the pattern subscription instead of a SUBSCRIBE (default `PATTERN_FROM_WAITERS`). */
  patternFromWaiters?: number | undefined;
  /** How long the pattern stays subscribed once nobody waits (ms, default `PATTERN_LINGER_MS`). */
  lingerMs?: number | undefined;
}

/**
 * Default `patternFromWaiters`: below it, a wait costs a SUBSCRIBE and an UNSUBSCRIBE; from it, the subscriber hears
 * every workflow's changes, which is cheaper than two commands per wait only while this process waits on many.
 */
export const PATTERN_FROM_WAITERS = 8;
/** Default `lingerMs`: a burst of waits a few seconds apart keeps one pattern subscription. */
export const PATTERN_LINGER_MS = 5_000;

/**
 * Most creations kept for their first wait (`watchCreation`) at once: a producer that starts work and never waits
 * keeps this many at most (the oldest forgotten first; its wait then reads its state, as without one).
 */
export const MAX_CREATION_WATCHES = 1_000;

/** A workflow being created while the pattern is confirmed (`watchCreation`): what its channel published since. */
export interface CreationWatch {
  readonly channel: string;
  /** The create made it (`settleCreation`); until then no wait takes it. */
  created: boolean;
  /** Something was published on its channel since the watch began. */
  heard: boolean;
  /** The last message heard. */
  published: string | undefined;
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
  /** Channels SUBSCRIBEd for their waiters (not heard through the pattern): UNSUBSCRIBEd when their last waiter leaves. */
  readonly #subscribed = new Set<string>();
  /** Waits registered now, over every channel. */
  #waiting = 0;
  /** While the pattern is wanted: resolves once its PSUBSCRIBE is confirmed (or a replacement connection is due). */
  #patternListening: Promise<void> | undefined;
  /** `#patternListening` once its PSUBSCRIBE is confirmed (a stale value, once it is replaced or dropped, matches nothing). */
  #patternConfirmed: Promise<void> | undefined;
  /**
   * Workflows this process creates while the pattern is confirmed, by channel (`watchCreation`): what their channel
   * published since, until a wait takes it. Forgotten all at once whenever something published may have been missed
   * (the pattern given up, a replacement connection, close), and the oldest first past MAX_CREATION_WATCHES.
   */
  readonly #creations = new Map<string, CreationWatch>();
  #linger: NodeJS.Timeout | undefined;
  readonly #pattern: string | undefined;
  readonly #patternFromWaiters: number;
  readonly #lingerMs: number;

  constructor(
    private readonly redis: Redis | Cluster,
    options: ChangeSubscriberOptions = {},
  ) {
    this.#pattern = options.pattern;
    this.#patternFromWaiters = options.patternFromWaiters ?? PATTERN_FROM_WAITERS;
    this.#lingerMs = options.lingerMs ?? PATTERN_LINGER_MS;
  }

  /**
   * Subscribes `wake` to `channel`; resolves once Redis confirmed the subscription (the channel's SUBSCRIBE, or the
   * pattern's PSUBSCRIBE: at once when it is already confirmed), or once a replacement connection is due (it
   * subscribes too, then wakes `wake`). Concurrent first calls share one connection attempt. Returns the
   * unsubscribe function (harmless twice). Rejects when no connection could be opened (Redis unreachable: the
   * connection's error; on a Cluster with no node known after the command timeout, code ENOTCONN).
   */
  async listen(channel: string, wake: Wake): Promise<() => Promise<void>> {
    const subscription = (this.#subscription ??= this.#open());
    const unlisten = this.#register(subscription, channel, wake);
    const pattern = this.#pattern;
    const throughPattern = pattern !== undefined && (this.#patternListening !== undefined || this.#waiting >= this.#patternFromWaiters);
    const subscribed = throughPattern ? (this.#patternListening ?? this.#subscribePattern(subscription, pattern)) : undefined;
    if (!throughPattern) this.#subscribed.add(channel);
    try {
      await (subscribed ?? subscription.subscribe('channel', channel));
    } catch (error) {
      if (subscribed && this.#patternListening === subscribed) {
        this.#patternListening = undefined;
        this.#creations.clear();
      }
      await unlisten();
      throw error;
    }
    return unlisten;
  }

  /**
   * `listen` without waiting, when it would not wait: the pattern's PSUBSCRIBE is confirmed already, so `wake` is
   * listening once registered. Returns the unsubscribe function, or undefined (nothing registered: call `listen`).
   */
  listenNow(channel: string, wake: Wake): (() => Promise<void>) | undefined {
    const subscription = this.#subscription;
    if (subscription === undefined || this.#patternListening === undefined || this.#patternConfirmed !== this.#patternListening) return undefined;
    return this.#register(subscription, channel, wake);
  }

  /**
   * Starts hearing, for a workflow about to be created, what its channel publishes, so that its first wait needs no
   * read of its state (`takeCreation`). Call it before the create is sent: the pattern's PSUBSCRIBE is confirmed by
   * then, so Redis delivers every later publish of the channel on the pattern's connection. Returns undefined
   * (nothing kept) when the pattern is not confirmed. `settleCreation` must follow the create, created or not.
   */
  watchCreation(channel: string): CreationWatch | undefined {
    if (this.#subscription === undefined || this.#patternListening === undefined || this.#patternConfirmed !== this.#patternListening) return undefined;
    const watch: CreationWatch = { channel, created: false, heard: false, published: undefined };
    this.#creations.delete(channel);
    this.#creations.set(channel, watch);
    if (this.#creations.size > MAX_CREATION_WATCHES) this.#creations.delete(this.#creations.keys().next().value!);
    return watch;
  }

  /** The create of `watch` is done: kept for a wait if it created the workflow, forgotten otherwise (it existed before). */
  settleCreation(watch: CreationWatch, created: boolean): void {
    if (this.#creations.get(watch.channel) !== watch) return;
    if (created) watch.created = true;
    else this.#creations.delete(watch.channel);
  }

  /**
   * For a wait registered on `channel` (`listenNow`, in the same turn): what its workflow's channel published since
   * this process created it (`heard` false: nothing, so it is still as created, RUNNING with no question), or
   * undefined when that is not known (read its state). Taken once.
   */
  takeCreation(channel: string): { heard: boolean; published: string | undefined } | undefined {
    const watch = this.#creations.get(channel);
    if (watch === undefined || !watch.created) return undefined;
    this.#creations.delete(channel);
    return watch;
  }

  /** Registers `wake` on `channel` (no command); returns its unsubscribe function (harmless twice). */
  #register(subscription: ChangeSubscription, channel: string, wake: Wake): () => Promise<void> {
    let waiters = this.#waiters.get(channel);
    if (!waiters) {
      waiters = new Set();
      this.#waiters.set(channel, waiters);
    }
    waiters.add(wake);
    this.#waiting++;
    clearTimeout(this.#linger);
    let listening = true;
    return async () => {
      if (!listening) return;
      listening = false;
      waiters.delete(wake);
      if (--this.#waiting === 0) this.#dropPatternLater(subscription);
      if (waiters.size > 0 || this.#waiters.get(channel) !== waiters) return;
      this.#waiters.delete(channel);
      if (this.#subscribed.delete(channel)) await subscription.unsubscribe('channel', channel);
    };
  }

  /** Starts the pattern's subscription; once Redis confirmed it (and it is still wanted), `listenNow` registers at once. */
  #subscribePattern(subscription: ChangeSubscription, pattern: string): Promise<void> {
    const listening = subscription.subscribe('pattern', pattern);
    this.#patternListening = listening;
    listening.then(
      () => {
        if (this.#patternListening === listening) this.#patternConfirmed = listening;
      },
      () => undefined,
    );
    return listening;
  }

  async close(): Promise<void> {
    const subscription = this.#subscription;
    this.#subscription = undefined;
    this.#waiters.clear();
    this.#subscribed.clear();
    this.#waiting = 0;
    this.#patternListening = undefined;
    this.#creations.clear();
    clearTimeout(this.#linger);
    await subscription?.close();
  }

  /** Nobody waits: the pattern is given up after `lingerMs` unless a wait starts meanwhile. */
  #dropPatternLater(subscription: ChangeSubscription): void {
    if (this.#patternListening === undefined) return;
    clearTimeout(this.#linger);
    this.#linger = setTimeout(() => {
      if (this.#waiting > 0 || this.#patternListening === undefined || this.#subscription !== subscription) return;
      this.#patternListening = undefined;
      this.#creations.clear();
      void subscription.unsubscribe('pattern', this.#pattern!);
    }, this.#lingerMs);
    this.#linger.unref();
  }

  #deliver = (channel: string, message: string) => {
    const watch = this.#creations.get(channel);
    if (watch !== undefined) {
      watch.heard = true;
      watch.published = message;
    }
    this.#waiters.get(channel)?.forEach((wake) => wake(message));
  };

  #wakeEveryWaiter = () => {
    // A replacement connection: what was published while none listened is lost, so no creation is known any more.
    this.#creations.clear();
    this.#waiters.forEach((waiters) => waiters.forEach((wake) => wake()));
  };

  /** What a connection must subscribe: the channels SUBSCRIBEd for their waiters, and the pattern while it is wanted. */
  #wanted = (): Wanted => ({ channels: [...this.#subscribed], patterns: this.#patternListening !== undefined && this.#pattern !== undefined ? [this.#pattern] : [] });

  #open(): ChangeSubscription {
    const redis = this.redis;
    const connect = redis instanceof Cluster ? () => connectToSomeNode(redis, this.#deliver) : () => connectSubscriber(redis, this.#deliver);
    return new ChangeSubscription(connect, this.#wanted, this.#wakeEveryWaiter);
  }
}

/**
 * The options of a subscriber connection, on top of its source client's (address, credentials, TLS, db,
 * command timeout). Nothing but (P)SUBSCRIBE and (P)UNSUBSCRIBE is ever sent on it, and only once it is connected:
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
  connection.on('pmessage', (_pattern: string, channel: string, message: string) => deliver(channel, message));
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

/** What a subscriber connection subscribes: channels (SUBSCRIBE) and patterns (PSUBSCRIBE). */
interface Wanted {
  channels: string[];
  patterns: string[];
}

/**
 * The subscriber's connection, one at a time, opened by `connect` (connected before anything is sent on it).
 * Concurrent first subscriptions share one opening (one promise). A connection that ends (Redis restarted,
 * failover, CLIENT KILL, a SUBSCRIBE unanswered in the command timeout) is replaced while anyone waits: the new
 * one subscribes every channel and pattern wanted, then wakes every waiter, and each reads its record again (a change
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
    private readonly wanted: () => Wanted,
    private readonly wakeEveryWaiter: () => void,
  ) {}

  /**
   * Resolves once the channel (or pattern) `name` is subscribed, or once a replacement is due (which subscribes it,
   * then wakes its waiters). Sends nothing when it is no longer wanted by the time the connection is open.
   */
  async subscribe(kind: 'channel' | 'pattern', name: string): Promise<void> {
    if (this.#replacement) return;
    const connection = await this.#open();
    if (!this.wanted()[kind === 'channel' ? 'channels' : 'patterns'].includes(name)) return;
    try {
      await (kind === 'channel' ? connection.subscribe(name) : connection.psubscribe(name));
      this.#failures = 0;
    } catch {
      connection.disconnect(); // its end brings a replacement, which subscribes `name` and wakes its waiters
    }
  }

  /** Never rejects. Sent after any SUBSCRIBE of the same connection; a replacement subscribes only what is still wanted. */
  async unsubscribe(kind: 'channel' | 'pattern', name: string): Promise<void> {
    const connection = this.#connection;
    if (!connection) return;
    await (kind === 'channel' ? connection.unsubscribe(name) : connection.punsubscribe(name)).catch(() => undefined);
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
    if (this.#replacement || this.#closed || nothingIn(this.wanted())) return;
    const delayMs = this.#failures <= 1 ? 0 : Math.min(REPLACEMENT_DELAY_MS * 2 ** (this.#failures - 2), REPLACEMENT_MAX_DELAY_MS);
    this.#replacement = setTimeout(() => {
      this.#replacement = undefined;
      void this.#replace();
    }, delayMs);
  }

  /** Opens a connection, subscribes every channel and pattern wanted, then wakes every waiter (each reads the journal again). */
  async #replace(): Promise<void> {
    let connection: Redis;
    try {
      connection = await this.#open();
    } catch {
      this.#failures++;
      this.#replaceLater();
      return;
    }
    const { channels, patterns } = this.wanted();
    if (channels.length + patterns.length === 0) return;
    try {
      await Promise.all([channels.length > 0 && connection.subscribe(...channels), patterns.length > 0 && connection.psubscribe(...patterns)]);
    } catch {
      connection.disconnect(); // ends: replaced again, after a delay
      return;
    }
    if (connection !== this.#connection) return;
    this.#failures = 0;
    this.wakeEveryWaiter();
  }
}

const nothingIn = (wanted: Wanted) => wanted.channels.length + wanted.patterns.length === 0;
