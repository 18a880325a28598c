/**
 * What every producer call works with: one Redis connection (owned when given a URL), the journal,
 * the agent registry, the send and reconcile queues (on a connection of their own) and the change subscriber, created once by
 * `createProducer`, plus input parsing and the journal view shared by the calls.
 */
import { Queue, type Telemetry } from 'bullmq';
import { Cluster, type Redis } from 'ioredis';
import type { z } from 'zod';
import { createPolicyDispatcher, type A2ALimits, type AddressPolicyOptions } from '@durable-a2a/a2a';
import {
  AgentRegistry,
  DEFAULT_COMMAND_TIMEOUT_MS,
  DEFAULT_JOB_OPTIONS,
  JOB_RETENTION,
  Journal,
  batchWritesPerTurn,
  createFailFastRedisClient,
  isConnectedNow,
  queuePrefix,
  waitUntilConnected,
  untilReadyOrTimeout,
  type CorruptRecordHandler,
  type JournalDurability,
  FairSendQueue,
  SendOrder,
} from '@durable-a2a/shared';
import { NotFoundError, RedisUnavailableError, fromZodError } from '../errors.ts';
import { workflowView, type AnswerLinkSettings, type WorkflowView } from '../view.ts';
import { WorkflowChangeSubscriber, workflowChangePattern } from '../wait.ts';
import type { TenantQuotaSettings } from '../tenancy.ts';

export interface ProducerOptions {
  /**
   * A Redis URL (`redis://…`, `redis-cluster://host:port,…` or `redis-sentinel://host:port,…/<master name>`) or an
   * ioredis client (not closed by `close()` when passed in). BullMQ's queues use a duplicate of it (its options, not
   * auto-pipelined), which the producer opens and closes.
   */
  redis: string | Redis | Cluster;
  /** Key prefix shared with the workers. Default `da2a`. */
  prefix?: string;
  /**
   * Signed answer links in the view of each open question (docs/people.md "Signed answer links"): the same `secret`
   * (`DA2A_LINK_SECRET`, at least 32 characters) and `baseUrl` (`DA2A_PUBLIC_URL`) as the workers'. Default none.
   */
  answerLinks?: AnswerLinkSettings;
  /** How long finished records are kept. Default 7 days. */
  retentionMs?: number;
  /**
   * Which agent addresses `registerAgent`, `delegate` and `startWorkflow` accept (field case R19; the
   * workers apply theirs again at every connection). Default: public only; loopback, private,
   * link-local and metadata addresses are refused (AgentAddressRefusedError, nothing written), also
   * after redirects and DNS changes. A host that does not resolve now is let through.
   */
  addressPolicy?: AddressPolicyOptions;
  /** BullMQ telemetry (`startTracing().telemetry`): the producer's spans become the parents of the workers'. Default none. */
  telemetry?: Telemetry;
  /**
   * Fail fast (BullMQ's producer guidance): a Redis command unanswered this long, or any command
   * while disconnected, rejects with RedisUnavailableError; nothing is replayed later. Only applies
   * when `redis` is a URL. Default 2_000.
   */
  commandTimeoutMs?: number;
  /** Input limits for the Agent Card fetch of `registerAgent` (`agentCardBytes`, `jsonDepth`; default 1 MiB, 64). */
  limits?: Partial<A2ALimits>;
  /**
   * Replicas that must acknowledge a new workflow before `delegate` / `startWorkflow` answer (WAIT);
   * default none. On a timeout they throw `ReplicationTimeoutError` (`REPLICATION_TIMEOUT`, retryable
   * with the same idempotency key or workflowId).
   */
  durability?: JournalDurability;
  /**
   * The tenant this producer works for (docs/tenants.md): the workflows it starts are that tenant's (stored as
   * `<tenant>~<id>`), and it sees only that tenant's (role `service`). Default: none, i.e. the `default` tenant with
   * every tenant in sight (role `operator`, as before tenants). `Producer.forScope` gives other scopes on the same connections.
   */
  tenant?: string;
  /** Quotas per tenant, checked atomically when a workflow is created (`TenantQuotaSettings`). Default none. */
  quotas?: TenantQuotaSettings;
  /** Told of every corrupt record a listing skipped or a read refused (`corruptRecordReporter(...)`: metric, one log line per key). Default nothing. */
  onCorruptRecord?: CorruptRecordHandler;
  /**
   * Longest `close()` (ms). Past it every connection the producer owns is dropped and `close()` resolves, whatever
   * Redis does (a QUIT to an unreachable server never answers). Default 10_000.
   */
  closeTimeoutMs?: number;
}

/** Default of `ProducerOptions.closeTimeoutMs`. */
export const DEFAULT_PRODUCER_CLOSE_TIMEOUT_MS = 10_000;

/** The producer's connections and clients; built once by `connectProducer`, closed by `closeProducer`. */
export interface ProducerContext {
  options: ProducerOptions;
  redis: Redis | Cluster;
  /** True when the producer created `redis` from a URL (and so closes it). */
  ownsRedis: boolean;
  journal: Journal;
  registry: AgentRegistry;
  queues: { send: FairSendQueue; reconcile: Queue };
  /** Places of message sends among their tenant's (the send queue's, on the journal's connection). */
  sendOrder: SendOrder;
  /** BullMQ's connection (`queueConnection`), always owned. */
  queueRedis: Redis | Cluster;
  changes: WorkflowChangeSubscriber;
  cardDispatcher: ReturnType<typeof createPolicyDispatcher>;
}

/** Creates the producer's clients. Throws nothing: connecting happens on first use. */
export function connectProducer(options: ProducerOptions): ProducerContext {
  const ownsRedis = typeof options.redis === 'string';
  const redis = typeof options.redis === 'string' ? createFailFastRedisClient(options.redis, options.commandTimeoutMs) : options.redis;
  // ioredis reconnects on its own; failed commands reject to the caller, so connection events need no log here.
  if (ownsRedis) redis.on('error', () => undefined);
  const prefix = options.prefix ?? 'da2a';
  const queueRedis = queueConnection(redis);
  const queueOptions = (name: 'send' | 'reconcile') => ({ connection: queueRedis, prefix: queuePrefix(prefix), telemetry: options.telemetry, defaultJobOptions: { ...DEFAULT_JOB_OPTIONS[name], ...JOB_RETENTION } });
  // Message sends are ordered by priority, then fairly between tenants (send-priority.ts).
  const sendOrder = new SendOrder(redis, prefix);
  const queues = { send: new FairSendQueue('send', queueOptions('send'), sendOrder), reconcile: new Queue('reconcile', queueOptions('reconcile')) };
  for (const each of [queues.send, queues.reconcile]) each.on('error', () => undefined); // surfaced per call as RedisUnavailableError
  const journal = new Journal(redis, { prefix, retentionMs: options.retentionMs, durability: options.durability, statusMessageBytes: options.limits?.statusMessageBytes, artifactsPerDelegation: options.limits?.artifactsPerDelegation, onCorruptRecord: options.onCorruptRecord });
  return {
    options,
    redis,
    ownsRedis,
    journal,
    registry: new AgentRegistry(redis, { prefix, onCorruptRecord: options.onCorruptRecord }),
    queues,
    sendOrder,
    queueRedis,
    // Many waits at once hear every workflow's changes through one pattern instead of a SUBSCRIBE and an UNSUBSCRIBE each.
    changes: new WorkflowChangeSubscriber(redis, { pattern: workflowChangePattern(journal) }),
    cardDispatcher: createPolicyDispatcher(options.addressPolicy ?? {}),
  };
}

/**
 * BullMQ's queues get a connection of their own, a duplicate of `redis` (its options: fail fast when the
 * producer made it) without auto-pipelining: BullMQ defines its ~70 scripts on the connection it is given,
 * and an auto-pipelined client copies every defined script onto each batch's pipeline (ioredis' Pipeline
 * constructor), which was about a third of the producer's CPU per `delegate` (measured with `bench/timeline.ts`).
 * Its commands of one event-loop turn still leave in one socket write (`batchWritesPerTurn`).
 */
function queueConnection(redis: Redis | Cluster): Redis | Cluster {
  const connection = batchWritesPerTurn(redis instanceof Cluster ? redis.duplicate(undefined, { enableAutoPipelining: false }) : redis.duplicate({ enableAutoPipelining: false }));
  connection.on('error', () => undefined); // surfaced per call as RedisUnavailableError
  return connection;
}

/**
 * Resolves true once the journal's client takes commands, false after `waitMs`. A Cluster counts as connected
 * (`waitUntilConnected`) from its 'connect', but without an offline queue it refuses every command until 'ready'
 * (a fresh producer's first call would fail): it is waited for too, within the same `waitMs`.
 */
async function takesCommands(client: Redis | Cluster, waitMs: number): Promise<boolean> {
  const deadline = Date.now() + waitMs;
  if (!(await waitUntilConnected(client, waitMs))) return false;
  if (client.status === 'ready') return true;
  return untilReadyOrTimeout(client, Math.max(0, deadline - Date.now()), () => client.status === 'ready');
}

/**
 * Before any call: wait for the connections at most the command timeout,
 * then refuse, so no BullMQ call waits for a reconnect and runs after the
 * caller was told the call failed.
 */
export async function ensureConnected(context: ProducerContext): Promise<void> {
  // Both connected (every call of a running producer): nothing to wait for.
  if (context.redis.status === 'ready' && isConnectedNow(context.queueRedis)) return;
  const waitMs = context.options.commandTimeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS;
  const [journalReady, queuesReady] = await Promise.all([takesCommands(context.redis, waitMs), waitUntilConnected(context.queueRedis, waitMs)]);
  if (!journalReady || !queuesReady) {
    throw new RedisUnavailableError(`Redis is not connected (${context.redis.status}, queues ${context.queueRedis.status}); nothing was written`);
  }
}

/** `ensureConnected`, or undefined when both connections are up now (nothing to wait for: no promise made). */
export function connectedOrWaiting(context: ProducerContext): Promise<void> | undefined {
  return context.redis.status === 'ready' && isConnectedNow(context.queueRedis) ? undefined : ensureConnected(context);
}

/**
 * Closes the queues and their connection, the change subscriber and the card dispatcher, and the connection when
 * owned. Resolves within `closeTimeoutMs` (default 10 s): with Redis down the connections are dropped at once, and
 * a graceful close that Redis stops answering half-way is cut off by dropping them at the bound.
 */
export async function closeProducer(context: ProducerContext): Promise<void> {
  const timeoutMs = context.options.closeTimeoutMs ?? DEFAULT_PRODUCER_CLOSE_TIMEOUT_MS;
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), timeoutMs)));
  try {
    if ((await Promise.race([closeConnections(context), bound])) === 'timeout') dropConnections(context);
  } finally {
    clearTimeout(timer);
  }
}

/** Drops the sockets without a QUIT: nothing waits for a server that may not answer. */
function dropConnections({ redis, ownsRedis, queueRedis }: ProducerContext): void {
  if (ownsRedis) redis.disconnect();
  queueRedis.disconnect();
}

async function closeConnections(context: ProducerContext): Promise<void> {
  const { redis, ownsRedis, queues, queueRedis, cardDispatcher, changes } = context;
  if (redis.status !== 'ready' || queueRedis.status !== 'ready') {
    // Redis down: quit would wait for a reconnect that may never come. BullMQ's `Queue.disconnect()` first awaits
    // the queue's initialisation, which waits for a ready connection; `close()` on a connection that is not ready
    // (and not the queue's own) only marks the queue closed.
    dropConnections(context);
    await Promise.all([queues.send.close(), queues.reconcile.close(), cardDispatcher.close(), changes.close()].map((closing) => closing.catch(() => undefined)));
    return;
  }
  try {
    await Promise.all([queues.send.close(), queues.reconcile.close(), cardDispatcher.close(), changes.close()]);
    await queueRedis.quit();
    if (ownsRedis) await redis.quit();
  } catch {
    // Redis went away during the close (a QUIT refused by a closed stream): nothing is left to say to it.
    dropConnections(context);
  }
}

/** Parses a call's input; throws ProducerInputError (nothing written) when it does not fit `schema`. */
export function parseInput<T extends z.ZodType>(schema: T, input: unknown): z.output<T> {
  const result = schema.safeParse(input);
  if (!result.success) throw fromZodError(result.error);
  return result.data;
}

/**
 * The journal view of a workflow; `published`: the message of its change channel that woke a waiter (a compacted
 * record saves the read). Throws NotFoundError.
 */
export async function readView(context: ProducerContext, id: string, published?: string): Promise<WorkflowView> {
  const found = await workflowView(context.journal, id, published, Date.now(), context.options.answerLinks);
  if (!found) throw new NotFoundError(`workflow ${id} not found`);
  return found;
}
