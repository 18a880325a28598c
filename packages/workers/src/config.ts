/**
 * Worker configuration from environment variables, parsed once with zod at
 * start-up (nothing below main.ts reads process.env). Every variable is listed
 * in docs/operations.md.
 */
import { z } from 'zod';
import { A2ALimitsSchema, addressPolicyFrom, bearerToken, type CredentialsProvider } from '@durable-a2a/a2a';
import { AgentLimitsSchema, JournalDurabilityEnvironment, LongMillisecondsSchema, MillisecondsSchema, RedisUrlSchema, durabilityFrom, jsonVariable, type QueueName } from '@durable-a2a/shared';
import type { StartFleetOptions } from './fleet.ts';
import { WorkingWriteDelayMsSchema } from './options.ts';
import { httpVerifier, type Verifier } from './verifiers.ts';

/**
 * Built-in HTTP verifiers configured by environment: name → URL template, the
 * JSON field to read, and the values that mean "present".
 */
const HttpVerifierConfigSchema = z.record(
  z.string(),
  z.object({
    urlTemplate: z.string().min(1),
    effectField: z.string().min(1),
    presentValues: z.array(z.union([z.string(), z.number(), z.boolean()])).min(1),
    headers: z.record(z.string(), z.string()).optional(),
  }),
);

const Milliseconds = MillisecondsSchema;
/** The refusal of a duration past Node's timer range (the durations that may be 0 say it themselves). */
const WITHIN_TIMER_RANGE = `at most ${MillisecondsSchema.maxValue} ms (about 24.8 days: Node's timer range)`;
/** Bytes, parts or nesting levels (the `DA2A_LIMIT_*` variables). */
const PositiveCount = z.coerce.number({ error: 'a whole positive number' }).int('a whole positive number').positive('a whole positive number');
const Flag = z.enum(['true', 'false', '1', '0'], { error: 'true or false' }).transform((value) => value === 'true' || value === '1');

export const WorkerEnvironmentSchema = z.object({
  REDIS_URL: RedisUrlSchema.default('redis://127.0.0.1:6379'),
  DA2A_PREFIX: z.string().regex(/^[A-Za-z0-9._-]+$/).default('da2a'),
  DA2A_WEBHOOK_URL: z.url().optional(),
  /** Outbound notifications (docs/people.md "Notifications"): the fleet-wide receiver and the Standard Webhooks secret. */
  DA2A_NOTIFY_URL: z.url({ protocol: /^https?$/, error: 'an http(s) URL' }).optional(),
  DA2A_NOTIFY_SECRET: z
    .string()
    .regex(/^whsec_[A-Za-z0-9+/]{32,88}={0,2}$/, 'whsec_ followed by base64 of 24 to 64 random bytes, e.g. whsec_$(openssl rand -base64 32)')
    .optional(),
  DA2A_NOTIFY_ATTEMPTS: z.coerce.number({ error: 'a whole number of tries, 1 to 50' }).int().min(1).max(50).optional(),
  /** Signed answer links (docs/people.md "Signed answer links"): the HMAC key (as the HTTP service's) and the service's public URL. */
  DA2A_LINK_SECRET: z.string().min(32, 'at least 32 characters, e.g. $(openssl rand -base64 32)').optional(),
  DA2A_PUBLIC_URL: z.url({ protocol: /^https?$/, error: 'the http(s) base URL of the HTTP service, e.g. https://durable-a2a.example' }).optional(),
  DA2A_ANSWER_LINK_TTL_MS: LongMillisecondsSchema.optional(),
  DA2A_REQUEST_TIMEOUT_MS: Milliseconds.optional(),
  DA2A_STREAM_IDLE_TIMEOUT_MS: Milliseconds.optional(),
  DA2A_VERIFY_TIMEOUT_MS: Milliseconds.optional(),
  DA2A_RECONCILE_INTERVAL_MS: Milliseconds.optional(),
  DA2A_PARKED_POLL_MS: Milliseconds.optional(),
  DA2A_LOCK_DURATION_MS: Milliseconds.optional(),
  DA2A_STALLED_INTERVAL_MS: Milliseconds.optional(),
  /** Liveness key TTL (docs/recovery.md); 0 turns takeover by liveness off. */
  DA2A_LIVENESS_TTL_MS: z.coerce.number({ error: 'a whole number of milliseconds (0: off)' }).int('a whole number of milliseconds (0: off)').min(0, 'a whole number of milliseconds (0: off)').max(MillisecondsSchema.maxValue!, WITHIN_TIMER_RANGE).optional(),
  DA2A_NOT_FOUND_WINDOW_MS: Milliseconds.optional(),
  DA2A_SEARCH_MARGIN_MS: Milliseconds.optional(),
  /** Progress rule and fairness (docs/agents.md "Progress rule"). */
  DA2A_NO_PROGRESS_WINDOW_MS: Milliseconds.optional(),
  DA2A_SLOW_POLL_AFTER_MS: Milliseconds.optional(),
  DA2A_SLOW_POLL_MS: Milliseconds.optional(),
  DA2A_STREAM_QUIET_MS: Milliseconds.optional(),
  /** How long a followed stream's WORKING that changes nothing else waits for the status that replaces it (0: written at once). */
  DA2A_WORKING_WRITE_DELAY_MS: WorkingWriteDelayMsSchema.optional(),
  DA2A_FOLLOW_SLOTS_PER_AGENT: z.coerce.number().int().positive().optional(),
  DA2A_SEND_SLOTS_PER_AGENT: z.coerce.number().int().positive().optional(),
  DA2A_RECONCILE_SLOTS_PER_AGENT: z.coerce.number().int().positive().optional(),
  /** Held sends waiting outside their send jobs (0: a held send keeps its job). */
  DA2A_HELD_SEND_SLOTS: z.coerce.number().int('a whole number ≥ 0 (0: a held send keeps its job)').min(0, 'a whole number ≥ 0 (0: a held send keeps its job)').optional(),
  DA2A_RETRY_AFTER_MAX_MS: Milliseconds.optional(),
  /** How long a send to an agent without limits trusts this process's last look at the agent's pause (0: every send looks). */
  DA2A_PAUSE_CHECK_MS: z.coerce.number().int('a whole number of ms ≥ 0 (0: every send looks)').min(0, 'a whole number of ms ≥ 0 (0: every send looks)').max(MillisecondsSchema.maxValue!, WITHIN_TIMER_RANGE).optional(),
  DA2A_DEFAULT_AGENT_LIMITS: jsonVariable(AgentLimitsSchema, 'a JSON object of limits for unregistered agents, e.g. {"maxInFlight":5,"rate":{"sendsPerSecond":10,"resubscribesPerSecond":5}}').optional(),
  /** Follows run in this process outside follow jobs (0: always follow jobs). */
  DA2A_LOCAL_FOLLOW_SLOTS: z.coerce.number().int('a whole number ≥ 0 (0: always follow jobs)').min(0, 'a whole number ≥ 0 (0: always follow jobs)').optional(),
  DA2A_CLOSE_TIMEOUT_MS: Milliseconds.default(10_000),
  DA2A_ATTEMPT_DEADLINE_MS: LongMillisecondsSchema.optional(),
  /** V2: send with SendStreamingMessage to agents whose card declares streaming (docs/agents.md "Agents that hold the send"). */
  DA2A_STREAMING_SENDS: Flag.optional(),
  DA2A_LIMIT_RESPONSE_BODY_BYTES: PositiveCount.optional(),
  DA2A_LIMIT_SSE_EVENT_BYTES: PositiveCount.optional(),
  DA2A_LIMIT_AGENT_CARD_BYTES: PositiveCount.optional(),
  DA2A_LIMIT_PARTS_PER_MESSAGE: PositiveCount.optional(),
  DA2A_LIMIT_JSON_DEPTH: PositiveCount.optional(),
  DA2A_LIMIT_ARTIFACT_BYTES_PER_DELEGATION: PositiveCount.optional(),
  DA2A_LIMIT_STATUS_MESSAGE_BYTES: PositiveCount.optional(),
  DA2A_LIMIT_ARTIFACTS_PER_DELEGATION: PositiveCount.optional(),
  /** Queues this process works on, comma-separated; default all six. */
  DA2A_QUEUES: z
    .string()
    .optional()
    .transform((text) => (text ? text.split(',').map((queue) => queue.trim()).filter(Boolean) : undefined))
    .pipe(z.array(z.enum(['send', 'follow', 'reconcile', 'verify', 'compensate', 'notify'])).min(1).optional()),
  /** Per-queue concurrency, e.g. `send=20,follow=500`. */
  DA2A_CONCURRENCY: z
    .string()
    .regex(
      /^\s*(send|follow|reconcile|verify|compensate|notify)\s*=\s*[1-9]\d*\s*(,\s*(send|follow|reconcile|verify|compensate|notify)\s*=\s*[1-9]\d*\s*)*$/,
      'queue=count pairs, comma-separated, e.g. send=20,follow=500 (queues: send, follow, reconcile, verify, compensate, notify; counts: positive whole numbers)',
    )
    .optional()
    .transform((text) =>
      Object.fromEntries(
        (text ?? '')
          .split(',')
          .filter(Boolean)
          .map((pair) => pair.split('=').map((part) => part.trim()))
          .map(([queue, value]) => [queue as QueueName, Number(value)]),
      ) as Partial<Record<QueueName, number>>,
    ),
  DA2A_SUBSCRIBE_RATE_LIMIT: z
    .string()
    .regex(/^\d+\/\d+$/, 'max/durationMs, e.g. 50/1000')
    .optional()
    .transform((text) => (text ? { max: Number(text.split('/')[0]), durationMs: Number(text.split('/')[1]) } : undefined)),
  DA2A_STRICT_PERSISTENCE: Flag.default(false),
  ...JournalDurabilityEnvironment,
  /** JSON object: Agent Card URL → bearer token. */
  DA2A_AGENT_TOKENS: jsonVariable(z.record(z.string(), z.string()), 'a JSON object of Agent Card URL → bearer token, e.g. {"https://agent.example/.well-known/agent-card.json":"token"}')
    .optional()
    .transform((tokens) => tokens ?? {}),
  /** JSON: built-in HTTP verifiers, e.g. {"booking":{"urlTemplate":"http://bookings/b/{subjectMessageId}","effectField":"status","presentValues":["booked"]}}. */
  DA2A_HTTP_VERIFIERS: jsonVariable(HttpVerifierConfigSchema, 'a JSON object of verifier name → {urlTemplate, effectField, presentValues}')
    .optional()
    .transform((verifiers) => verifiers ?? {}),
  DA2A_DEDUPLICATING_AGENTS: z
    .string()
    .optional()
    .transform((text) => (text ? text.split(',').map((url) => url.trim()).filter(Boolean) : [])),
  /** Fault injection for tests and the demo; inert unless set. */
  DA2A_CRASH_AT: z.string().optional(),
  /** Fault injection: `point:ms` blocks the event loop at a point (lost job lock tests). */
  DA2A_STALL_AT: z
    .string()
    .regex(/^[a-z.@A-Za-z0-9_-]+:\d+$/)
    .optional()
    .transform((text) => (text ? { point: text.split(':')[0]!, ms: Number(text.split(':')[1]) } : undefined)),
  /** Address policy for agent URLs (R19): allow loopback / private / link-local addresses, and hosts always allowed. */
  DA2A_ALLOW_LOOPBACK: Flag.default(false),
  DA2A_ALLOW_PRIVATE: Flag.default(false),
  DA2A_ALLOWED_AGENT_HOSTS: z
    .string()
    .optional()
    .transform((text) => (text ? text.split(',').map((host) => host.trim()).filter(Boolean) : [])),
  DA2A_METRICS_PORT: z.coerce.number({ error: 'a port number, 0 to 65535 (0: any free port)' }).int('a port number, 0 to 65535 (0: any free port)').min(0, 'a port number, 0 to 65535 (0: any free port)').max(65535, 'a port number, 0 to 65535 (0: any free port)').optional(),
  /** Address the ops endpoint binds (docs/observability.md "Observability"): loopback unless set, e.g. `0.0.0.0` in a pod Prometheus scrapes. */
  DA2A_METRICS_HOST: z.string().min(1, 'an address of this host, e.g. 127.0.0.1 or 0.0.0.0').default('127.0.0.1'),
  /** Bearer token `/metrics` requires; unset: open. */
  DA2A_METRICS_TOKEN: z.string().min(1, 'a token (unset the variable to leave /metrics open)').optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});
export type WorkerEnvironment = z.output<typeof WorkerEnvironmentSchema>;

/** Parses the environment; throws a ZodError naming each bad variable. */
export function parseWorkerEnvironment(environment: NodeJS.ProcessEnv): WorkerEnvironment {
  return WorkerEnvironmentSchema.parse(environment);
}

/** Input limits (`A2ALimits`) from the `DA2A_LIMIT_*` variables; unset ones keep their defaults. */
export function limitsFrom(environment: WorkerEnvironment): A2ALimitsOverride {
  const limits = A2ALimitsSchema.parse({
    responseBodyBytes: environment.DA2A_LIMIT_RESPONSE_BODY_BYTES,
    sseEventBytes: environment.DA2A_LIMIT_SSE_EVENT_BYTES,
    agentCardBytes: environment.DA2A_LIMIT_AGENT_CARD_BYTES,
    partsPerMessage: environment.DA2A_LIMIT_PARTS_PER_MESSAGE,
    jsonDepth: environment.DA2A_LIMIT_JSON_DEPTH,
    artifactBytesPerDelegation: environment.DA2A_LIMIT_ARTIFACT_BYTES_PER_DELEGATION,
    statusMessageBytes: environment.DA2A_LIMIT_STATUS_MESSAGE_BYTES,
    artifactsPerDelegation: environment.DA2A_LIMIT_ARTIFACTS_PER_DELEGATION,
  });
  return Object.fromEntries(Object.entries(limits).filter(([, value]) => value !== undefined));
}

type A2ALimitsOverride = z.output<typeof A2ALimitsSchema>;

/** Fleet options from the parsed environment. */
export function fleetOptionsFrom(environment: WorkerEnvironment): StartFleetOptions {
  const tokens = new Map<string, CredentialsProvider>(Object.entries(environment.DA2A_AGENT_TOKENS).map(([url, token]) => [url, bearerToken(token)]));
  const verifiers: Record<string, Verifier> = Object.fromEntries(
    Object.entries(environment.DA2A_HTTP_VERIFIERS).map(([name, config]) => [
      name,
      httpVerifier({
        urlTemplate: config.urlTemplate,
        headers: config.headers,
        responseSchema: z.record(z.string(), z.unknown()),
        effectOf: (body) => (config.presentValues.includes(body[config.effectField] as string) ? 'present' : 'absent'),
      }),
    ]),
  );
  return {
    verifiers,
    redis: environment.REDIS_URL,
    prefix: environment.DA2A_PREFIX,
    webhookUrl: environment.DA2A_WEBHOOK_URL,
    notify: {
      url: environment.DA2A_NOTIFY_URL,
      secret: environment.DA2A_NOTIFY_SECRET,
      ...(environment.DA2A_NOTIFY_ATTEMPTS ? { retry: { attempts: environment.DA2A_NOTIFY_ATTEMPTS } } : {}),
    },
    ...(environment.DA2A_LINK_SECRET && environment.DA2A_PUBLIC_URL
      ? { answerLinks: { secret: environment.DA2A_LINK_SECRET, baseUrl: environment.DA2A_PUBLIC_URL, ...(environment.DA2A_ANSWER_LINK_TTL_MS ? { ttlMs: environment.DA2A_ANSWER_LINK_TTL_MS } : {}) } }
      : {}),
    requestTimeoutMs: environment.DA2A_REQUEST_TIMEOUT_MS,
    streamIdleTimeoutMs: environment.DA2A_STREAM_IDLE_TIMEOUT_MS,
    verifyTimeoutMs: environment.DA2A_VERIFY_TIMEOUT_MS,
    reconcileIntervalMs: environment.DA2A_RECONCILE_INTERVAL_MS,
    parkedPollMs: environment.DA2A_PARKED_POLL_MS,
    lockDurationMs: environment.DA2A_LOCK_DURATION_MS,
    stalledIntervalMs: environment.DA2A_STALLED_INTERVAL_MS,
    livenessTtlMs: environment.DA2A_LIVENESS_TTL_MS,
    notFoundWindowMs: environment.DA2A_NOT_FOUND_WINDOW_MS,
    searchMarginMs: environment.DA2A_SEARCH_MARGIN_MS,
    noProgressWindowMs: environment.DA2A_NO_PROGRESS_WINDOW_MS,
    slowPollAfterMs: environment.DA2A_SLOW_POLL_AFTER_MS,
    slowPollMs: environment.DA2A_SLOW_POLL_MS,
    streamQuietMs: environment.DA2A_STREAM_QUIET_MS,
    workingWriteDelayMs: environment.DA2A_WORKING_WRITE_DELAY_MS,
    followSlotsPerAgent: environment.DA2A_FOLLOW_SLOTS_PER_AGENT,
    sendSlotsPerAgent: environment.DA2A_SEND_SLOTS_PER_AGENT,
    reconcileSlotsPerAgent: environment.DA2A_RECONCILE_SLOTS_PER_AGENT,
    heldSendSlots: environment.DA2A_HELD_SEND_SLOTS,
    retryAfterMaxMs: environment.DA2A_RETRY_AFTER_MAX_MS,
    pauseCheckMs: environment.DA2A_PAUSE_CHECK_MS,
    defaultAgentLimits: environment.DA2A_DEFAULT_AGENT_LIMITS,
    localFollowSlots: environment.DA2A_LOCAL_FOLLOW_SLOTS,
    closeTimeoutMs: environment.DA2A_CLOSE_TIMEOUT_MS,
    attemptDeadlineMs: environment.DA2A_ATTEMPT_DEADLINE_MS,
    streamingSends: environment.DA2A_STREAMING_SENDS,
    limits: limitsFrom(environment),
    concurrency: environment.DA2A_CONCURRENCY,
    subscribeRateLimit: environment.DA2A_SUBSCRIBE_RATE_LIMIT,
    strictPersistence: environment.DA2A_STRICT_PERSISTENCE,
    durability: durabilityFrom(environment),
    deduplicatingAgents: environment.DA2A_DEDUPLICATING_AGENTS,
    addressPolicy: addressPolicyFrom(environment),
    crashAt: environment.DA2A_CRASH_AT,
    stallAt: environment.DA2A_STALL_AT,
    credentials: (agentCardUrl) => tokens.get(agentCardUrl),
    ...(environment.DA2A_QUEUES ? { queues: environment.DA2A_QUEUES } : {}),
  };
}
