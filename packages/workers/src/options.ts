/**
 * Fleet options: `FleetOptions` (what a user passes) → defaults applied once →
 * `CompiledFleetOptions` (durations in …Ms, everything set).
 */
import type { Dispatcher } from 'undici';
import { MAX_TIMER_DELAY_MS, type A2ALimits, type AddressPolicyOptions, type CredentialsProvider } from '@durable-a2a/a2a';
import { ANSWER_LINK_SECRET_MIN_LENGTH, DEFAULT_JOB_OPTIONS, type AgentLimits, type JournalDurability, type NotifyRetry, type QueueName, type RedisClient } from '@durable-a2a/shared';
import { z } from 'zod';
import type { BackoffOptions } from './delegation/core/policy.ts';

/**
 * The longest `workingWriteDelayMs`: a minute. The wait only delays what a reader sees (the row's state name); past a
 * minute a person looking at a task the agent works on would take SUBMITTED for a stuck send.
 */
export const WORKING_WRITE_DELAY_MAX_MS = 60_000;

/** `workingWriteDelayMs` (and `DA2A_WORKING_WRITE_DELAY_MS`): whole ms from 0 to `WORKING_WRITE_DELAY_MAX_MS`. */
const WORKING_WRITE_DELAY_TEXT = `a whole number of ms from 0 to ${WORKING_WRITE_DELAY_MAX_MS} (0: written at once)`;
export const WorkingWriteDelayMsSchema = z.coerce
  .number({ error: WORKING_WRITE_DELAY_TEXT })
  .int(WORKING_WRITE_DELAY_TEXT)
  .min(0, WORKING_WRITE_DELAY_TEXT)
  .max(WORKING_WRITE_DELAY_MAX_MS, WORKING_WRITE_DELAY_TEXT);

/** `workingWriteDelayMs` checked (default 250). @throws TypeError naming the option and what it takes */
function workingWriteDelayOf(value: number | undefined): number {
  if (value === undefined) return 250;
  const parsed = WorkingWriteDelayMsSchema.safeParse(value);
  if (!parsed.success || typeof value !== 'number') throw new TypeError(`startFleet: workingWriteDelayMs must be ${WORKING_WRITE_DELAY_TEXT} (got ${String(value)})`);
  return parsed.data;
}

export interface FleetOptions {
  /**
   * Required (or the deprecated `redisUrl`): a Redis URL (`redis://…`, `redis-cluster://host:port,…` or
   * `redis-sentinel://host:port,…/<master name>`), as `createProducer`'s `redis`, or an ioredis client: the
   * fleet then opens its own connections with `duplicate()` (workers need `maxRetriesPerRequest: null`) and
   * never closes the client passed in. Throws TypeError at start when neither `redis` nor `redisUrl` is set.
   */
  redis?: string | RedisClient;
  /** @deprecated Use `redis` (the same URL). Kept for callers written before 0.3; `redis` wins when both are set. */
  redisUrl?: string;
  /** Key prefix for the journal and (hash-tagged) the queues. Default `da2a`. */
  prefix?: string;
  /** Jobs processed at once per queue by this process. Defaults: send 20, follow 500, reconcile 20, verify 10, compensate 5, notify 10. */
  concurrency?: Partial<Record<QueueName, number>>;
  /** Deadline of one non-stream A2A call. Default 30_000. */
  requestTimeoutMs?: number;
  /** A stream with no byte (not even a keep-alive) for this long is cut and resubscribed. Default 60_000. */
  streamIdleTimeoutMs?: number;
  /**
   * Deadline of one verifier call (ms, the verify job's read of the system of record). Past it the call counts as a
   * failed verification (retried with backoff, then the effect `unknown` for a person); its `signal` is aborted.
   * Bounds how long one verifier that never answers holds a verify slot: without it, `concurrency.verify` such calls
   * stall the verification of every workflow. Default 60_000.
   */
  verifyTimeoutMs?: number;
  /** Resubscription backoff (full jitter). Default base 500, cap 30_000. */
  followBackoff?: Partial<BackoffOptions>;
  /**
   * Tries of a send whose agent cannot be reached (connection refused, DNS, its Agent Card unavailable: nothing sent):
   * full-jitter backoff until the step's `unreachableForMs` or the attempt deadline. Default base 1_000, cap 30_000.
   */
  unreachableBackoff?: Partial<BackoffOptions>;
  /**
   * Progress rule (`delegation/progress.ts`): a delegation whose observations bring nothing new for this long is
   * journaled AMBIGUOUS (workflow NEEDS_ATTENTION) with the evidence. Default 1_800_000 (30 min).
   */
  noProgressWindowMs?: number;
  /** Progress rule: after this long without progress (or once the backoff reaches its cap) the delegation is slow-polled. Default 60_000. */
  slowPollAfterMs?: number;
  /** Progress rule: interval of slow polling (one GetTask, no stream), in ms (+ up to 25 % jitter). Default 60_000. */
  slowPollMs?: number;
  /** A stream that carries no event (keep-alives do not count) for this long is handed to polling and releases its slot. Default 300_000. */
  streamQuietMs?: number;
  /**
   * How long a followed stream's WORKING that changes nothing but the state (SUBMITTED → WORKING: no message, no
   * artifact, no question, the task already bound) waits before it is written, in ms: a finished status within
   * that time replaces it (one status transition fewer), any other event writes it first
   * (`delegation/runs/working-write.ts`). 0: every event is written as it comes. Whole ms from 0 to 60_000
   * (`WORKING_WRITE_DELAY_MAX_MS`; a TypeError names the option otherwise). Default 250.
   */
  workingWriteDelayMs?: number;
  /**
   * Follow slots one agent may hold at once in this process (fairness, RT6): a cap. Default none: each agent's share
   * is half the follow concurrency (at least 1), and beyond it an agent may use free slots while no other agent's
   * follow waits here and a tenth of them stays free (`delegation/runs/agent-slots.ts`).
   */
  followSlotsPerAgent?: number;
  /**
   * Send slots one agent may hold at once in this process: a cap. Default none: each agent's share is half the send
   * concurrency (at least 1), and beyond it an agent may use every free slot while no other agent's send waits here
   * (a tenth kept free while one of its sends is held past `requestTimeoutMs`, and a minute after).
   */
  sendSlotsPerAgent?: number;
  /** Reconcile calls (searches, re-reads) one agent may have in progress at once in this process: a cap. Default none: the send rule. */
  reconcileSlotsPerAgent?: number;
  /**
   * Fleet-wide limits of agents that are not registered (registered agents carry their own, `setAgentLimits`):
   * SendMessage calls in flight, sends and resubscriptions per second. Default none (no limit: a script call per
   * `pauseCheckMs` to honour a pause an agent asked for).
   */
  defaultAgentLimits?: AgentLimits;
  /** Longest pause an agent's `Retry-After` (429/503, JSON-RPC or gRPC RetryInfo) imposes on the fleet, in ms. Default 60_000. */
  retryAfterMaxMs?: number;
  /** How long a send waits before it asks again when every slot of its agent is held (+ up to as much jitter), ms. Default 1_000. */
  slotWaitMs?: number;
  /**
   * How long a send to an agent without limits trusts this process's last look at the agent's fleet-wide pause, ms: a
   * pause written by another worker (Retry-After) reaches this process's sends at most this much later. 0: every send
   * looks (one script call). Default 1_000.
   */
  pauseCheckMs?: number;
  /**
   * Held sends (SendMessage not answered after `requestTimeoutMs`) this process keeps waiting outside their send job,
   * which then frees its send slot (`delegation/runs/held-sends.ts`); each agent may hold half of them. 0: a held
   * send keeps its job. Default the send concurrency.
   */
  heldSendSlots?: number;
  /**
   * Follows this process runs itself, detached from the job that routed them, instead of enqueueing a follow job
   * (`delegation/follow-local.ts`; only when the process works on the follow queue). 0: always follow jobs.
   * Default the follow concurrency.
   */
  localFollowSlots?: number;
  /** Fleet-wide rate limit on resubscriptions (every subscription but the first of new work). Default 50 per 1_000 ms. */
  subscribeRateLimit?: { max: number; durationMs: number };
  /** Interval of the reconcile sweep (fixed-id job scheduler). Default 30_000. */
  reconcileIntervalMs?: number;
  /** Index entries a sweep reads and enqueues per page (a sweep reads pages until none is due). Default 1_000. */
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
  /**
   * TTL of this process's liveness key (docs/recovery.md), set again every third of it (one command per process,
   * whatever its streams): once it is gone a peer ends the leases this process held, so its work is taken over in
   * about this long plus one beat instead of `lockDurationMs`. A process stalled longer than this loses its streams
   * (fenced, as after a lease that ran out). 0 turns it off (leases then end at their TTL only). Default 3_000.
   */
  livenessTtlMs?: number;
  /** Attempts for transient send failures before the step fails. Default 6. */
  sendAttempts?: number;
  /**
   * Times a reconcile batch of workflow entries alone is moved to delayed (1 s each) while this process has reattached
   * streams waiting for their opening turn (`reconcile-batch.ts` `batchWaitMs`); counted in the job's data. A
   * non-negative integer (TypeError otherwise). Default 60.
   */
  workflowBatchWaits?: number;
  /** Overall deadline of one delegation attempt in ms (a step's `attemptDeadlineMs` wins). Default 86_400_000 (24 h). */
  attemptDeadlineMs?: number;
  /**
   * V2: send with SendStreamingMessage to agents whose Agent Card declares `capabilities.streaming`, so the
   * task id is journaled with the first event and the stream is the follow. Default false (SendMessage;
   * a held send is searched for meanwhile).
   */
  streamingSends?: boolean;
  /** Input limits for every agent answer and Agent Card (`A2ALimits`, partial). Default `DEFAULT_A2A_LIMITS`. */
  limits?: Partial<A2ALimits>;
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
  /** Outbound notifications to people's tooling (docs/people.md "Notifications", `notify/`). Default off. */
  notify?: NotifyOptions;
  /** Signed answer links in `question.opened` notifications (docs/people.md "Signed answer links"). Default none. */
  answerLinks?: AnswerLinkOptions;
  /** Agent Card URLs of agents known to deduplicate SendMessage by messageId (0.3 agents without ListTasks may then be resent). */
  deduplicatingAgents?: string[];
  /** Refuse to start when Redis could lose the journal (no AOF/RDB, evicting policy). Default false (warn). */
  strictPersistence?: boolean;
  /** Replicas that must acknowledge the mark written before SendMessage leaves (WAIT; see shared journal/durability.ts). Default none. */
  durability?: JournalDurability;
  /** Crash-point fault hook (tests and demo only): the process SIGKILLs itself at this point. */
  crashAt?: string;
  /** Stall fault hook (tests only): blocks the event loop for `ms` at this point, e.g. to lose a job lock. */
  stallAt?: { point: string; ms: number };
  /**
   * Observation hook (tests only): called at every named point of the delegation flow (`CrashPoint`) with the step's
   * name, before a configured stall or crash; e.g. `send.after-mark` right after a send's mark ("may have been sent")
   * is journaled, before anything else the run reads or writes. Synchronous; what it throws propagates into the flow
   * (the job fails). Default none: the points then cost a call and nothing else (`NO_FAULT`).
   */
  onCrashPoint?: (point: CrashPoint, step?: string) => void;
  /** Worker id, unique in the fleet, non-empty and without '/' (startFleet throws a TypeError); default hostname-pid. */
  workerId?: string;
  now?: () => number;
}

/** A named point where a crash changes what recovery must do (crash-point tests). */
export type CrashPoint =
  | 'send.before-mark'
  | 'send.after-mark'
  | 'send.after-give-back'
  | 'send.after-request'
  | 'push.after-create'
  | 'follow.before-stream'
  | 'follow.after-terminal-seen'
  | 'follow.before-finish-step'
  | 'follow.after-finish-step'
  | 'reconcile.after-search'
  | 'advance.after-outcome'
  | 'advance.after-finish'
  | 'verify.after-check'
  | 'compensate.after-intent';

/** Outbound notifications (`notify/`): where to, how they are signed, how they are retried. */
export interface NotifyOptions {
  /** Fleet-wide receiver (`DA2A_NOTIFY_URL`); a workflow's `notify.url` replaces it for that workflow. Default none. */
  url?: string;
  /**
   * Standard Webhooks signing secret (`DA2A_NOTIFY_SECRET`, `whsec_` and base64 of 24 to 64 random bytes). Without
   * it no event is emitted (an unsigned event would be worthless to a receiver that checks).
   */
  secret?: string;
  /** Tries in all and the first backoff (ms, doubling, jittered by half). Default 12 tries from 2_000 ms (about an hour). */
  retry?: Partial<NotifyRetry>;
  /** Deadline of one delivery (ms), headers and body. Default 10_000. */
  requestTimeoutMs?: number;
}

/** Signed answer links (`notify/` puts them in `question.opened`; the HTTP service serves `/answer/<token>`). */
export interface AnswerLinkOptions {
  /** HMAC-SHA256 key (`DA2A_LINK_SECRET`): at least 32 characters, the same in the HTTP service. */
  secret: string;
  /** The HTTP service's public base URL (`DA2A_PUBLIC_URL`), e.g. `https://durable-a2a.example`. */
  baseUrl: string;
  /** How long a link stays valid after its question was asked (ms). Default 7 days. */
  ttlMs?: number;
}

export interface CompiledFleetOptions {
  /** `redis`, else the deprecated `redisUrl`. */
  redis: string | RedisClient;
  prefix: string;
  concurrency: Record<QueueName, number>;
  requestTimeoutMs: number;
  streamIdleTimeoutMs: number;
  verifyTimeoutMs: number;
  followBackoff: BackoffOptions;
  unreachableBackoff: BackoffOptions;
  noProgressWindowMs: number;
  slowPollAfterMs: number;
  slowPollMs: number;
  streamQuietMs: number;
  workingWriteDelayMs: number;
  followSlotsPerAgent: number | undefined;
  sendSlotsPerAgent: number | undefined;
  reconcileSlotsPerAgent: number | undefined;
  defaultAgentLimits: AgentLimits;
  retryAfterMaxMs: number;
  slotWaitMs: number;
  pauseCheckMs: number;
  heldSendSlots: number;
  localFollowSlots: number;
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
  livenessTtlMs: number;
  sendAttempts: number;
  workflowBatchWaits: number;
  attemptDeadlineMs: number;
  streamingSends: boolean;
  limits: Partial<A2ALimits>;
  webhookUrl: string | undefined;
  notify: { url: string | undefined; secret: string | undefined; retry: NotifyRetry; requestTimeoutMs: number };
  answerLinks: Required<AnswerLinkOptions> | undefined;
  deduplicatingAgents: ReadonlySet<string>;
  strictPersistence: boolean;
  crashAt: string | undefined;
  stallAt: { point: string; ms: number } | undefined;
  onCrashPoint: ((point: CrashPoint, step?: string) => void) | undefined;
  now: () => number;
}

/** Throws a TypeError naming option `name` when `value` is set and not a whole number ≥ 0. */
function checkWholeNumber(name: string, value: number | undefined): void {
  if (value !== undefined && !(Number.isInteger(value) && value >= 0)) throw new TypeError(`startFleet: ${name} must be a whole number ≥ 0 (got ${value})`);
}

/** Applies every default once. Throws TypeError for a missing `redis`, a bad `localFollowSlots` or `workflowBatchWaits`, `workingWriteDelayMs` or answer-link secret, RangeError for a duration a timer waits for past Node's timer range (`TIMER_DURATIONS`). */
export function compileFleetOptions(options: FleetOptions): CompiledFleetOptions {
  const requestTimeoutMs = options.requestTimeoutMs ?? 30_000;
  const concurrency = { send: 20, follow: 500, reconcile: 20, verify: 10, compensate: 5, notify: 10, ...options.concurrency };
  const redis = options.redis ?? options.redisUrl;
  if (redis === undefined || redis === '') throw new TypeError('startFleet: set `redis` (a Redis URL or an ioredis client)');
  checkWholeNumber('localFollowSlots', options.localFollowSlots);
  checkWholeNumber('workflowBatchWaits', options.workflowBatchWaits);
  if (options.answerLinks && options.answerLinks.secret.length < ANSWER_LINK_SECRET_MIN_LENGTH) throw new TypeError(`startFleet: answerLinks.secret must be at least ${ANSWER_LINK_SECRET_MIN_LENGTH} characters`);
  const compiled: CompiledFleetOptions = {
    redis,
    prefix: options.prefix ?? 'da2a',
    concurrency,
    requestTimeoutMs,
    streamIdleTimeoutMs: options.streamIdleTimeoutMs ?? 60_000,
    verifyTimeoutMs: options.verifyTimeoutMs ?? 60_000,
    followBackoff: { baseMs: 500, capMs: 30_000, ...options.followBackoff },
    unreachableBackoff: { baseMs: 1_000, capMs: 30_000, ...options.unreachableBackoff },
    noProgressWindowMs: options.noProgressWindowMs ?? 1_800_000,
    slowPollAfterMs: options.slowPollAfterMs ?? 60_000,
    slowPollMs: options.slowPollMs ?? 60_000,
    streamQuietMs: options.streamQuietMs ?? 300_000,
    workingWriteDelayMs: workingWriteDelayOf(options.workingWriteDelayMs),
    followSlotsPerAgent: options.followSlotsPerAgent,
    sendSlotsPerAgent: options.sendSlotsPerAgent,
    reconcileSlotsPerAgent: options.reconcileSlotsPerAgent,
    defaultAgentLimits: options.defaultAgentLimits ?? {},
    retryAfterMaxMs: options.retryAfterMaxMs ?? 60_000,
    slotWaitMs: options.slotWaitMs ?? 1_000,
    pauseCheckMs: options.pauseCheckMs ?? 1_000,
    heldSendSlots: options.heldSendSlots ?? concurrency.send,
    localFollowSlots: options.localFollowSlots ?? concurrency.follow,
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
    livenessTtlMs: options.livenessTtlMs ?? 3_000,
    sendAttempts: options.sendAttempts ?? 6,
    workflowBatchWaits: options.workflowBatchWaits ?? 60,
    attemptDeadlineMs: options.attemptDeadlineMs ?? 86_400_000,
    streamingSends: options.streamingSends ?? false,
    limits: options.limits ?? {},
    webhookUrl: options.webhookUrl,
    notify: {
      url: options.notify?.url,
      secret: options.notify?.secret,
      retry: { attempts: DEFAULT_JOB_OPTIONS.notify.attempts, backoffMs: DEFAULT_JOB_OPTIONS.notify.backoff.delay, ...options.notify?.retry },
      requestTimeoutMs: options.notify?.requestTimeoutMs ?? 10_000,
    },
    answerLinks: options.answerLinks ? { ttlMs: 7 * 24 * 3600 * 1000, ...options.answerLinks } : undefined,
    deduplicatingAgents: new Set(options.deduplicatingAgents ?? []),
    strictPersistence: options.strictPersistence ?? false,
    crashAt: options.crashAt,
    stallAt: options.stallAt,
    onCrashPoint: options.onCrashPoint,
    now: options.now ?? Date.now,
  };
  checkTimerDurations(compiled);
  return compiled;
}

/**
 * The options a timer waits for (ms). Each must be a number from 0 to `MAX_TIMER_DELAY_MS` (Node's timer range, about
 * 24.8 days): Node fires a longer timer after 1 ms. Not `attemptDeadlineMs` (its timers wait in hops:
 * `setLongTimeout`), `retentionMs` (a Redis expiry) or an answer link's life (a signed expiry).
 */
const TIMER_DURATIONS = [
  'requestTimeoutMs',
  'streamIdleTimeoutMs',
  'verifyTimeoutMs',
  'noProgressWindowMs',
  'slowPollAfterMs',
  'slowPollMs',
  'streamQuietMs',
  'retryAfterMaxMs',
  'slotWaitMs',
  'pauseCheckMs',
  'reconcileIntervalMs',
  'searchMarginMs',
  'notFoundWindowMs',
  'parkedPollMs',
  'pushFallbackPollMs',
  'agentRefreshMs',
  'lockDurationMs',
  'stalledIntervalMs',
  'livenessTtlMs',
] as const satisfies readonly (keyof CompiledFleetOptions)[];

/** Throws a RangeError naming the first option a timer waits for (`TIMER_DURATIONS`, `notify.requestTimeoutMs`) that is not a number from 0 to `MAX_TIMER_DELAY_MS`. */
function checkTimerDurations(compiled: CompiledFleetOptions): void {
  for (const name of TIMER_DURATIONS) checkTimerDuration(name, compiled[name]);
  checkTimerDuration('notify.requestTimeoutMs', compiled.notify.requestTimeoutMs);
}

/**
 * Throws a RangeError naming option `name` when `value` (ms) is not a number from 0 to `MAX_TIMER_DELAY_MS` (Node's
 * timer range, about 24.8 days): Node fires a longer timer after 1 ms (an interval every ms), and NaN at once.
 */
export function checkTimerDuration(name: string, value: number): void {
  if (!(value >= 0 && value <= MAX_TIMER_DELAY_MS)) {
    throw new RangeError(`startFleet: ${name} must be a number of ms from 0 to ${MAX_TIMER_DELAY_MS} (about 24.8 days: Node's timer range), got ${value}`);
  }
}
