/**
 * Fleet options: `FleetOptions` (what a user passes) → defaults applied once →
 * `CompiledFleetOptions` (durations in …Ms, everything set).
 */
import type { Dispatcher } from 'undici';
import type { AddressPolicyOptions, CredentialsProvider, QueueName } from '@durable-a2a/shared';
import type { BackoffOptions } from './delegation/backoff.ts';

export interface FleetOptions {
  /** Redis URL, e.g. `redis://127.0.0.1:6379`. */
  redisUrl: string;
  /** Key prefix for the journal and (hash-tagged) the queues. Default `da2a`. */
  prefix?: string;
  /** Jobs processed at once per queue by this process. Defaults: send 20, follow 500, reconcile 20, verify 10, compensate 5. */
  concurrency?: Partial<Record<QueueName, number>>;
  /** Deadline of one non-stream A2A call. Default 30_000. */
  requestTimeoutMs?: number;
  /** A stream with no byte (not even a keep-alive) for this long is cut and resubscribed. Default 60_000. */
  streamIdleTimeoutMs?: number;
  /** Resubscription backoff (full jitter). Default base 500, cap 30_000. */
  followBackoff?: Partial<BackoffOptions>;
  /** Fleet-wide rate limit on resubscriptions (every subscription but the first of new work). Default 50 per 1_000 ms. */
  subscribeRateLimit?: { max: number; durationMs: number };
  /** Interval of the reconcile sweep (fixed-id job scheduler). Default 30_000. */
  reconcileIntervalMs?: number;
  /** Delegations enqueued per sweep. Default 1_000. */
  reconcileBatchSize?: number;
  /** Margin subtracted from `createdAt` for ListTasks `statusTimestampAfter` (clock skew, the SDK's strict `>`). Default 5_000. */
  searchMarginMs?: number;
  /** Cap on ListTasks calls per search (R15). Default 10. */
  maxListTasksCalls?: number;
  /** TaskNotFound answers needed, and window in ms they must span, before a task is LOST (R13). Defaults 3 and 30_000. */
  notFoundThreshold?: number;
  notFoundWindowMs?: number;
  /** How often a parked delegation is re-read (an agent may resume on its own). Default 60_000. */
  parkedPollMs?: number;
  /** Fallback poll cap for pushed delegations (push is only a hint, R17). Default 300_000. */
  pushFallbackPollMs?: number;
  /** How long finished records are kept. Default 7 days. */
  retentionMs?: number;
  /** Artifact bytes one delegation may hold, summed over chunks and pushes (RT5/RT7). Default 16 MiB. */
  artifactBytesPerDelegation?: number;
  /** Registered Agent Cards older than this are fetched again by the sweep. Default 3_600_000 (1 h). */
  agentRefreshMs?: number;
  /** BullMQ lock duration. Default 30_000. */
  lockDurationMs?: number;
  /** BullMQ stalled-job check interval. Default 30_000. */
  stalledIntervalMs?: number;
  /** Attempts for transient send failures before the step fails. Default 6. */
  sendAttempts?: number;
  /** Credentials per Agent Card URL. */
  credentials?: (agentCardUrl: string) => CredentialsProvider | undefined;
  /** undici dispatcher for every agent call. Default: one that enforces `addressPolicy` at connection time. */
  dispatcher?: Dispatcher;
  /**
   * Which agent addresses may be reached (field case R19). Default: public addresses only; loopback,
   * private, link-local and metadata addresses are refused at discovery and at every connection.
   */
  addressPolicy?: AddressPolicyOptions;
  /** Webhook URL that agents POST push notifications to (the API's `/v1/push`). Unset = no push. */
  webhookUrl?: string;
  /** Agent Card URLs of agents known to deduplicate SendMessage by messageId (0.3 agents without ListTasks may then be resent). */
  deduplicatingAgents?: string[];
  /** Refuse to start when Redis could lose the journal (no AOF/RDB, evicting policy). Default false (warn). */
  strictPersistence?: boolean;
  /** Crash-point fault hook (tests and demo only): the process SIGKILLs itself at this point. */
  crashAt?: string;
  /** Stall fault hook (tests only): blocks the event loop for `ms` at this point, e.g. to lose a job lock. */
  stallAt?: { point: string; ms: number };
  /** Worker id; default hostname-pid. */
  workerId?: string;
  now?: () => number;
}

export interface CompiledFleetOptions {
  redisUrl: string;
  prefix: string;
  concurrency: Record<QueueName, number>;
  requestTimeoutMs: number;
  streamIdleTimeoutMs: number;
  followBackoff: BackoffOptions;
  subscribeRateLimit: { max: number; durationMs: number };
  reconcileIntervalMs: number;
  reconcileBatchSize: number;
  searchMarginMs: number;
  maxListTasksCalls: number;
  notFoundThreshold: number;
  notFoundWindowMs: number;
  parkedPollMs: number;
  pushFallbackPollMs: number;
  /** A send that started less than this long ago may still be in flight: reconcile waits. */
  sendSettleMs: number;
  retentionMs: number;
  artifactBytesPerDelegation?: number;
  agentRefreshMs: number;
  lockDurationMs: number;
  stalledIntervalMs: number;
  sendAttempts: number;
  webhookUrl: string | undefined;
  deduplicatingAgents: ReadonlySet<string>;
  strictPersistence: boolean;
  crashAt: string | undefined;
  stallAt: { point: string; ms: number } | undefined;
  now: () => number;
}

/** Applies every default once. */
export function compileFleetOptions(options: FleetOptions): CompiledFleetOptions {
  const requestTimeoutMs = options.requestTimeoutMs ?? 30_000;
  return {
    redisUrl: options.redisUrl,
    prefix: options.prefix ?? 'da2a',
    concurrency: { send: 20, follow: 500, reconcile: 20, verify: 10, compensate: 5, ...options.concurrency },
    requestTimeoutMs,
    streamIdleTimeoutMs: options.streamIdleTimeoutMs ?? 60_000,
    followBackoff: { baseMs: 500, capMs: 30_000, ...options.followBackoff },
    subscribeRateLimit: options.subscribeRateLimit ?? { max: 50, durationMs: 1_000 },
    reconcileIntervalMs: options.reconcileIntervalMs ?? 30_000,
    reconcileBatchSize: options.reconcileBatchSize ?? 1_000,
    searchMarginMs: options.searchMarginMs ?? 5_000,
    maxListTasksCalls: options.maxListTasksCalls ?? 10,
    notFoundThreshold: options.notFoundThreshold ?? 3,
    notFoundWindowMs: options.notFoundWindowMs ?? 30_000,
    parkedPollMs: options.parkedPollMs ?? 60_000,
    pushFallbackPollMs: options.pushFallbackPollMs ?? 300_000,
    sendSettleMs: requestTimeoutMs + 1_000,
    retentionMs: options.retentionMs ?? 7 * 24 * 3600 * 1000,
    artifactBytesPerDelegation: options.artifactBytesPerDelegation,
    agentRefreshMs: options.agentRefreshMs ?? 3_600_000,
    lockDurationMs: options.lockDurationMs ?? 30_000,
    stalledIntervalMs: options.stalledIntervalMs ?? 30_000,
    sendAttempts: options.sendAttempts ?? 6,
    webhookUrl: options.webhookUrl,
    deduplicatingAgents: new Set(options.deduplicatingAgents ?? []),
    strictPersistence: options.strictPersistence ?? false,
    crashAt: options.crashAt,
    stallAt: options.stallAt,
    now: options.now ?? Date.now,
  };
}
