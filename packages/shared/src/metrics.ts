/**
 * prom-client metrics of the API and the workers, on an injected registry.
 * Each process registers only the metrics its role updates (`MetricsRole`),
 * so the API no longer exports worker counters stuck at 0; the others are
 * kept updatable but removed from the registry. Names follow Prometheus
 * conventions (`_total`, `_seconds`); docs/observability.md lists them. The per-delegation
 * metrics carry a bounded `agent` label (`metrics-agent-label.ts`): registered
 * agents by card name, everything else `other`.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { AgentLabels } from './metrics-agent-label.ts';

export interface Metrics {
  registry: Registry;
  transitions: Counter<'state' | 'source' | 'agent'>;
  sends: Counter<'kind' | 'agent'>;
  resends: Counter;
  adoptions: Counter;
  resubscriptions: Counter<'reason' | 'agent'>;
  reconcileRuns: Counter<'outcome'>;
  reconcileLag: Histogram;
  openQuestions: Gauge;
  /** Reminders of open questions (a step's `question.remindEveryMs`), by `agent`; workers. */
  questionReminders: Counter<'agent'>;
  /** Questions that expired unanswered (a step's `question.expiresAfterMs`), by what was done (`cancel`, `fail`, `answer`); workers. */
  questionsExpired: Counter<'action'>;
  redelegations: Counter;
  compensations: Counter<'outcome'>;
  verifications: Counter<'effect'>;
  queueDepth: Gauge<'queue' | 'status'>;
  jobDuration: Histogram<'queue' | 'outcome'>;
  /** Follows running in this process without a follow job (`delegation/follow-local.ts`); timed in `jobDuration` as queue `follow`. */
  localFollows: Gauge;
  delegationsByState: Gauge<'state'>;
  pushes: Counter<'outcome'>;
  staleObservations: Counter<'reason'>;
  /** Commands Redis refused or redirected while up (`RedisRefusalGate`), by `redisErrorKind`. */
  redisRefusals: Counter<'kind'>;
  /**
   * End to end: from the delegation's journaled intent to its finished state, by that state.
   * Workers observe it where a delegation reaches a finished state.
   */
  delegationDuration: Histogram<'state' | 'agent'>;
  /** Records a reader skipped (or a single read refused) because they do not parse, by kind (`journal/corrupt.ts`); both roles. */
  corruptRecords: Counter<'kind'>;
  /** Workflows that reached a finished state (COMPLETED, COMPENSATED, FAILED, CANCELED), by that state; workers. */
  workflowsFinished: Counter<'state'>;
  /** Failed sends by the journaled error code (one of `RECORDED_ERROR_CODES`) and `agent` label; workers. */
  sendErrors: Counter<'code' | 'agent'>;
  /**
   * Notification deliveries by event kind and outcome: `delivered` (2xx), `retried` (a failed try with tries left),
   * `failed` (tries used up: the event waits in the notify queue's failed set), `skipped` (journaled delivered already), `not-enqueued` (the emit's enqueue failed: logged); workers.
   */
  notifications: Counter<'kind' | 'outcome'>;
  /**
   * Findings after an attempt finished that the work may have been done twice, by `agent` and `finding`: `duplicate`
   * (a task of the agent holds our message too, noteDuplicateTask-1.lua; `duplicate.task` tells a person) or
   * `unchecked` (tasks that may hold it could not be read, counted by the note, noteSuspectsUnchecked-1.lua;
   * `duplicate.unchecked` tells a person); each with an entry in the workflow's history; workers.
   */
  duplicateTasks: Counter<'agent' | 'finding'>;
  /** Worker processes this process found dead (their liveness key gone) and swept the leases of; workers. */
  deadWorkers: Counter;
  /** Leases of dead workers this process ended at once (their liveness key gone), not at their TTL; workers. */
  leasesTakenOver: Counter;
  /** The bounded `agent` label of the per-delegation metrics (`AgentLabels.of(agentCardUrl)`); not a metric. */
  agentLabels: AgentLabels;
}

/** Which process registers which metrics: `api` (queue depth, journal samples, pushes), `workers` (the rest), `all`. */
export type MetricsRole = 'api' | 'workers' | 'all';

/**
 * The job statuses `durable_a2a_queue_jobs` reports. Not `completed` (jobs are removed on completion: always 0) nor
 * `waiting-children` (no job has children): a series that is always 0 answers nothing.
 */
export const QUEUE_JOB_STATUSES = ['waiting', 'prioritized', 'active', 'delayed', 'failed'] as const;

/** Fields of `Metrics` that are not prom-client metrics. */
const NOT_METRICS: ReadonlySet<keyof Metrics> = new Set(['registry', 'agentLabels']);
/** The metrics the HTTP service updates; every other one belongs to the workers. */
const API_METRICS: ReadonlySet<keyof Metrics> = new Set(['openQuestions', 'queueDepth', 'delegationsByState', 'pushes']);
/** The metrics both roles update. */
const SHARED_METRICS: ReadonlySet<keyof Metrics> = new Set(['corruptRecords']);

/**
 * Creates every metric on `registry` (default: a fresh registry) and keeps
 * registered only those of `role` (default `all`).
 */
export function createMetrics(registry: Registry = new Registry(), role: MetricsRole = 'all', agentLabels: AgentLabels = new AgentLabels()): Metrics {
  const metrics = createOn(registry, agentLabels);
  if (role === 'all') return metrics;
  for (const [key, metric] of Object.entries(metrics)) {
    if (NOT_METRICS.has(key as keyof Metrics) || SHARED_METRICS.has(key as keyof Metrics) || API_METRICS.has(key as keyof Metrics) === (role === 'api')) continue;
    // Still updatable (nothing breaks if a shared module touches it), never scraped.
    registry.removeSingleMetric((metric as unknown as { name: string }).name);
  }
  return metrics;
}

function createOn(registry: Registry, agentLabels: AgentLabels): Metrics {
  const counter = <L extends string>(name: string, help: string, labelNames: L[] = []) =>
    new Counter<L>({ name, help, labelNames, registers: [registry] });
  return {
    registry,
    agentLabels,
    transitions: counter('durable_a2a_transitions_total', 'Journal transitions applied, by new state, source and agent', ['state', 'source', 'agent']),
    sends: counter('durable_a2a_sends_total', 'SendMessage calls made (message, resend or reply), by agent', ['kind', 'agent']),
    resends: counter('durable_a2a_resends_total', 'SendMessage calls repeated with the same messageId after reconciliation proved the agent never got it'),
    adoptions: counter('durable_a2a_adoptions_total', 'Tasks adopted by finding our messageId in ListTasks/GetTask history'),
    resubscriptions: counter('durable_a2a_resubscriptions_total', 'SubscribeToTask calls after the first, by reason and agent', ['reason', 'agent']),
    reconcileRuns: counter('durable_a2a_reconcile_runs_total', 'Reconciliations of one delegation, by outcome', ['outcome']),
    reconcileLag: new Histogram({
      name: 'durable_a2a_reconcile_lag_seconds',
      help: 'How late a delegation was checked after it became due',
      buckets: [0.1, 0.5, 1, 5, 15, 60, 300],
      registers: [registry],
    }),
    openQuestions: new Gauge({ name: 'durable_a2a_open_questions', help: 'Delegations parked on INPUT_REQUIRED or AUTH_REQUIRED', registers: [registry] }),
    questionReminders: counter('durable_a2a_question_reminders_total', 'Reminders that a question is waiting for an answer (a step\'s question.remindEveryMs), by agent', ['agent']),
    questionsExpired: counter('durable_a2a_questions_expired_total', 'Questions that expired unanswered (a step\'s question.expiresAfterMs), by what was done', ['action']),
    redelegations: counter('durable_a2a_redelegations_total', 'Steps moved to another attempt after a permanent failure'),
    compensations: counter('durable_a2a_compensations_total', 'Compensations finished, by outcome', ['outcome']),
    verifications: counter('durable_a2a_verifications_total', 'Verifier results, by effect', ['effect']),
    queueDepth: new Gauge({ name: 'durable_a2a_queue_jobs', help: 'Jobs per queue and status', labelNames: ['queue', 'status'], registers: [registry] }),
    jobDuration: new Histogram({
      name: 'durable_a2a_job_duration_seconds',
      help: 'Job processing time per queue',
      labelNames: ['queue', 'outcome'],
      buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 30, 120],
      registers: [registry],
    }),
    localFollows: new Gauge({ name: 'durable_a2a_local_follows', help: 'Follows running in this process without a follow job', registers: [registry] }),
    delegationsByState: new Gauge({ name: 'durable_a2a_delegations', help: 'Unfinished delegations by journal state (sampled)', labelNames: ['state'], registers: [registry] }),
    pushes: counter('durable_a2a_push_notifications_total', 'Push notifications received, by outcome', ['outcome']),
    staleObservations: counter('durable_a2a_ignored_observations_total', 'Observations the journal ignored (stale, regress, duplicate, finished)', ['reason']),
    corruptRecords: counter('durable_a2a_corrupt_records_total', 'Records skipped or refused because they do not parse, by kind (workflow, delegation, agent)', ['kind']),
    redisRefusals: counter('durable_a2a_redis_refusals_total', 'Commands Redis refused while up (OOM, READONLY, MISCONF, NOREPLICAS, moved slots, missing scripts), by kind; the workers back off on each', ['kind']),
    delegationDuration: new Histogram({
      name: 'durable_a2a_delegation_duration_seconds',
      help: 'End-to-end delegation time, from the journaled intent to its finished state, by that state and agent',
      labelNames: ['state', 'agent'],
      buckets: [0.1, 0.5, 1, 5, 15, 60, 300, 1800, 7200],
      registers: [registry],
    }),
    workflowsFinished: counter('durable_a2a_workflows_finished_total', 'Workflows that reached a finished state (COMPLETED, COMPENSATED, FAILED, CANCELED), by that state', ['state']),
    sendErrors: counter('durable_a2a_send_errors_total', 'Failed sends, by the journaled error code and agent', ['code', 'agent']),
    duplicateTasks: counter('durable_a2a_duplicate_tasks_total', 'Findings after an attempt finished that the agent may have done the work twice: a task holding our message too (finding duplicate) or tasks that may hold it left unread (finding unchecked), by agent', ['agent', 'finding']),
    notifications: counter('durable_a2a_notifications_total', 'Notification deliveries by event kind and outcome (delivered, retried, failed, skipped, not-enqueued)', ['kind', 'outcome']),
    deadWorkers: counter('durable_a2a_dead_workers_total', 'Worker processes found dead (liveness key gone) whose leases this process swept'),
    leasesTakenOver: counter('durable_a2a_leases_taken_over_total', 'Leases of dead workers ended at once (liveness key gone) instead of at their TTL'),
  };
}

/**
 * True when `authorization` (an HTTP Authorization header) carries `Bearer <token>`, or when no token is configured
 * (`/metrics` open). Compared in constant time over SHA-256 digests (lengths never leak).
 */
export function metricsRequestAllowed(authorization: string | undefined, token: string | undefined): boolean {
  if (!token) return true;
  const presented = /^Bearer (.+)$/i.exec(authorization ?? '')?.[1];
  if (presented === undefined) return false;
  const digest = (text: string) => createHash('sha256').update(text).digest();
  return timingSafeEqual(digest(presented), digest(token));
}
