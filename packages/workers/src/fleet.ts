/**
 * Creates and closes the BullMQ Workers of all six queues and the
 * reconciler's job scheduler: the one place that owns connections.
 */
import { hostname } from 'node:os';
import { DelayedError, Queue, Worker, type Job, type Processor, type Telemetry } from 'bullmq';
import { Registry } from 'prom-client';
import { createPolicyDispatcher } from '@durable-a2a/a2a';
import {
  AGENT_LABEL_REFRESH_MS,
  ALL_QUEUES,
  AgentFlow,
  AgentRegistry,
  type AgentCall,
  DEFAULT_JOB_OPTIONS,
  annotateActiveSpan,
  JOB_RETENTION,
  Journal,
  corruptRecordReporter,
  createLogger,
  createMetrics,
  openRedisClient,
  batchWritesPerTurn,
  enqueueStartupSweep,
  logRedisConnectionState,
  redisErrorKind,
  RedisRefusalGate,
  queuePrefix,
  type Logger,
  type Metrics,
  type QueueName,
  FairSendQueue,
  SendOrder,
} from '@durable-a2a/shared';
import { AgentDirectory } from './agents.ts';
import { AgentHealthRecorder } from './agent-health.ts';
import type { WorkerContext } from './context.ts';
import { crashPointHook } from './crash-point.ts';
import { checkTimerDuration, compileFleetOptions, type CompiledFleetOptions, type FleetOptions } from './options.ts';
import { checkPersistence, type PersistenceReport } from './persistence.ts';
import { requireRedisVersion } from './redis-version.ts';
import { watchFetchProgress, type FetchProgress, type QueueHealth } from './health.ts';
import { NextJobGuess } from './next-job-guess.ts';
import { processCompensate } from './queues/compensate.ts';
import type { CompensationHandler } from './delegation/runs/handler.ts';
import type { AuthHandler } from './delegation/auth.ts';
import { processFollow } from './queues/follow.ts';
import { createLocalFollows, type LocalFollows } from './delegation/runs/follow-local.ts';
import { agentShares } from './delegation/runs/agent-slots.ts';
import { AgentLimitsBook } from './delegation/runs/flow.ts';
import { PauseChecks } from './delegation/runs/pause-checks.ts';
import { ResubscribeTokens } from './delegation/runs/resubscribe-tokens.ts';
import { HeldSends } from './delegation/runs/held-sends.ts';
import { LeaseRenewals } from './delegation/runs/lease-renewal.ts';
import { startLiveness, type Liveness } from './delegation/runs/liveness.ts';
import { ShutdownListeners } from './shutdown-listeners.ts';
import { AttemptSteps } from './delegation/attempt-step.ts';
import { WorkflowWaits } from './workflow/wait-memory.ts';
import { policyOf } from './delegation/core/policy.ts';
import { processReconcile, SWEEP_SCHEDULER_ID } from './queues/reconcile.ts';
import { processSend } from './queues/send.ts';
import { processVerify } from './queues/verify.ts';
import { processNotify } from './queues/notify.ts';
import type { Verifier } from './verifiers.ts';

export interface StartFleetOptions extends FleetOptions {
  logger?: Logger;
  /** prom-client registry; default a fresh one. */
  metricsRegistry?: Registry;
  /** Verifiers by name (see `verifiers.ts`). */
  verifiers?: Record<string, Verifier>;
  /** Compensation handlers by name (steps whose compensation is `{ handler }`). */
  compensationHandlers?: Record<string, CompensationHandler>;
  /** Auth handlers by Agent Card URL, run when a task asks for AUTH_REQUIRED. */
  authHandlers?: Record<string, AuthHandler>;
  /** BullMQ telemetry (`startTracing().telemetry`) for every Queue and Worker; default none (no spans). */
  telemetry?: Telemetry;
  /** Queues this process works on; default all six. */
  queues?: QueueName[];
  /** A worker whose fetch has not returned for this long is not live (R23). Default 30_000. */
  livenessStaleAfterMs?: number;
  /** Longest graceful close before in-flight jobs are abandoned to the stalled-job check. Default 10_000. */
  closeTimeoutMs?: number;
  /** How often the metrics' `agent` labels are re-read from the registry (ms). Default `AGENT_LABEL_REFRESH_MS` (30 s). */
  agentLabelRefreshMs?: number;
  /** How long a worker's calls to one agent wait to be written to its registry health together (ms). Default `AGENT_HEALTH_WINDOW_MS` (250). */
  agentHealthWindowMs?: number;
}

export interface Fleet {
  context: WorkerContext;
  workers: Worker[];
  persistence: PersistenceReport;
  metrics: Metrics;
  /** Liveness per queue (R23): false when a worker's fetch loop stopped coming back. */
  health(): { live: boolean; queues: QueueHealth[] };
  /** Runs one sweep of every unfinished delegation now (as at start-up). */
  sweepAll(): Promise<void>;
  /** Re-reads the registry for the metrics' `agent` labels now (as every `agentLabelRefreshMs`). Never rejects. */
  refreshAgentLabels(): Promise<void>;
  /** Graceful, bounded close. */
  close(): Promise<void>;
}

type RedisClient = ReturnType<typeof openRedisClient>;

const PROCESSORS: Record<QueueName, (job: Job, ctx: WorkerContext) => Promise<string>> = {
  send: processSend,
  follow: processFollow,
  reconcile: processReconcile,
  verify: processVerify,
  compensate: processCompensate,
  notify: processNotify,
};

/**
 * The send queue's BullMQ Worker: a finish asks for the next job in the same script only as `NextJobGuess` says
 * (send jobs are short, so the next send is usually added after the finish and the fetch would find nothing).
 * Everything else is BullMQ's Worker: a finish that does not ask leaves the fetch to its loop, as one that found none.
 */
class SendQueueWorker extends Worker {
  private readonly nextJob = new NextJobGuess();

  override async processJob(job: Job, token: string, fetchNextCallback: () => boolean = () => true): ReturnType<Worker['processJob']> {
    let asked = false;
    const next = await super.processJob(job, token, () => (asked = fetchNextCallback() && this.nextJob.ask()));
    if (asked) this.nextJob.record(next !== undefined);
    return next;
  }
}

/** One BullMQ Worker for `name`, timed and watched for liveness (R23). */
function startWorker(name: QueueName, context: WorkerContext, connection: RedisClient, prefix: string, livenessStaleAfterMs: number, telemetry: Telemetry | undefined): { worker: Worker; watch: FetchProgress } {
  const { options, metrics, logger } = context;
  let watch: FetchProgress | undefined;
  const processor: Processor = async (job) => {
    const stopTimer = metrics.jobDuration.startTimer({ queue: name });
    watch?.jobStarted();
    annotateActiveSpan(job.data);
    try {
      const outcome = await PROCESSORS[name](job, context);
      stopTimer({ outcome: 'completed' });
      return outcome;
    } catch (error) {
      stopTimer({ outcome: error instanceof DelayedError ? 'delayed' : 'failed' });
      throw error;
    } finally {
      watch?.jobFinished();
    }
  };
  const workerOptions = { connection, prefix, concurrency: options.concurrency[name], lockDuration: options.lockDurationMs, stalledInterval: options.stalledIntervalMs, telemetry };
  const worker: Worker = name === 'send' ? new SendQueueWorker(name, processor, workerOptions) : new Worker(name, processor, workerOptions);
  watch = watchFetchProgress(worker, name, options.concurrency[name], livenessStaleAfterMs);
  // One line per failed attempt; the stack only at debug. An attempt that failed because Redis was unreachable or
  // refused the command is the episode's, logged once (logRedisConnectionState, RedisRefusalGate): debug only here.
  worker.on('failed', (job, error) => {
    if (redisErrorKind(error) !== 'other') return logger.debug({ queue: name, jobId: job?.id, err: error }, 'job failed: Redis unavailable or refusing');
    logger.warn({ queue: name, jobId: job?.id, reason: error.message, code: (error as { code?: unknown }).code }, 'job failed');
    logger.debug({ queue: name, jobId: job?.id, err: error }, 'job failed: stack');
  });
  // A Redis outage or refusal is logged once per episode (logRedisConnectionState, RedisRefusalGate), not per command.
  worker.on('error', (error) => (redisErrorKind(error) !== 'other' ? undefined : logger.error({ queue: name, err: error }, 'worker error')));
  return { worker, watch };
}

/** What `createWorkerContext` wires together besides the caller's options. */
interface ContextParts {
  options: CompiledFleetOptions;
  journalRedis: RedisClient;
  queues: Record<QueueName, Queue>;
  /** Every agent connection's dispatcher (the address policy's, R19). */
  dispatcher: NonNullable<StartFleetOptions['dispatcher']>;
  shutdownSignal: AbortSignal;
  logger: Logger;
  metrics: Metrics;
  workerId: string;
}

/** The context every processor gets: journal, registry, queues, agents, handlers, logger, metrics, options. */
function createWorkerContext(input: StartFleetOptions, parts: ContextParts): WorkerContext {
  const { options, journalRedis, queues, dispatcher, logger } = parts;
  const onCorruptRecord = corruptRecordReporter({ logger, counter: parts.metrics.corruptRecords });
  const registry = new AgentRegistry(journalRedis, { prefix: options.prefix, now: options.now, onCorruptRecord });
  const journal = new Journal(journalRedis, { prefix: options.prefix, retentionMs: options.retentionMs, now: options.now, durability: input.durability, artifactBytesPerDelegation: options.artifactBytesPerDelegation, statusMessageBytes: options.limits.statusMessageBytes, artifactsPerDelegation: options.limits.artifactsPerDelegation, onCorruptRecord });
  // An agent's health is told, not awaited: a send never waits for it, a window's calls go in one write, and a failed
  // write costs only those outcomes.
  const agentHealth = new AgentHealthRecorder(registry, options.now, (error, agentCardUrl) => logger.debug({ err: error, agent: agentCardUrl }, 'agent health not recorded'), input.agentHealthWindowMs);
  const onAgentCall = (agentCardUrl: string, call: AgentCall) => agentHealth.record(agentCardUrl, call);
  return {
    shutdownSignal: parts.shutdownSignal,
    shutdownListeners: new ShutdownListeners(parts.shutdownSignal),
    journal,
    registry,
    agentHealth,
    queues,
    dispatcher,
    agents: new AgentDirectory({
      ...{ credentials: input.credentials, dispatcher, addressPolicy: input.addressPolicy ?? {}, cardMaxAgeMs: 5 * 60_000, onAgentCall },
      ...{ requestTimeoutMs: options.requestTimeoutMs, streamIdleTimeoutMs: options.streamIdleTimeoutMs, now: options.now, limits: options.limits },
    }),
    verifiers: new Map(Object.entries(input.verifiers ?? {})),
    compensationHandlers: new Map(Object.entries(input.compensationHandlers ?? {})),
    authHandlers: new Map(Object.entries(input.authHandlers ?? {})),
    logger,
    metrics: parts.metrics,
    options,
    policy: policyOf(options),
    ...agentShares(options),
    flow: new AgentFlow(journalRedis, options.prefix),
    agentLimits: new AgentLimitsBook(options.defaultAgentLimits),
    pauseChecks: new PauseChecks(options.pauseCheckMs, options.now),
    resubscribeTokens: new ResubscribeTokens((count) => journal.takeTokens('resubscribe', options.subscribeRateLimit.max, options.subscribeRateLimit.durationMs, count)),
    heldSends: new HeldSends(options.heldSendSlots),
    leaseRenewals: new LeaseRenewals(),
    attemptSteps: new AttemptSteps(),
    workflowWaits: new WorkflowWaits(),
    workerId: parts.workerId,
    crashPoint: crashPointHook(options, logger),
  };
}

/** What a fleet closes, in order: workers and local follows (bounded by `timeoutMs`), open streams, queues, connections, its own dispatcher. */
interface FleetResources {
  workers: Worker[];
  heldSends: HeldSends;
  agentHealth: AgentHealthRecorder;
  localFollows: LocalFollows;
  shutdown: AbortController;
  queues: Record<QueueName, Queue>;
  connection: RedisClient;
  journalRedis: RedisClient;
  refusalGate: RedisRefusalGate;
  liveness: Liveness;
  ownDispatcher: { close(): Promise<void>; destroy(): Promise<void> } | undefined;
  logger: Logger;
  timeoutMs: number;
}

/** Graceful, bounded close of a fleet. */
async function closeFleet({ workers, heldSends, agentHealth, localFollows, shutdown, queues, connection, journalRedis, refusalGate, liveness, ownDispatcher, logger, timeoutMs }: FleetResources): Promise<void> {
  // Nothing waits on a refusal backoff any more: what the close sends goes out (or fails) now.
  refusalGate.end();
  // Stop fetching, then end open streams (follow jobs and local follows): each hands its delegation to another worker.
  // Held sends waiting outside their jobs stop waiting; a request stopped before its answer may still be open at the
  // agent, so its send lease stays to its TTL (`holdingSendLease`): the reconciler searches, and resends only after it.
  const graceful = Promise.all([...workers.map((worker) => worker.close()), localFollows.drain(), heldSends.drain()]);
  shutdown.abort();
  const within = (promise: Promise<unknown>) => Promise.race([promise, new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), timeoutMs).unref())]);
  if ((await within(graceful)) === 'timeout') {
    // Leases may be left behind: the heartbeat stops, so a peer ends them once the liveness key runs out.
    liveness.stop();
    logger.warn({ timeoutMs }, 'close timed out; abandoning in-flight jobs to the stalled-job check');
    for (const client of [connection, journalRedis]) client.disconnect(); // BullMQ keeps a worker's first (graceful) close: end what it waits for
    await within(Promise.all(workers.map((worker) => worker.close(true))).catch(() => undefined));
    // A request still held by an agent would keep a graceful close() waiting for ever: abandon it (the send's lease
    // runs out and the reconciler searches for our messageId, as after a crash).
    await ownDispatcher?.destroy().catch(() => undefined);
    return;
  }
  if (connection.status !== 'ready') {
    liveness.stop();
    // Redis down: a graceful close would wait for a reconnect that may never come.
    for (const client of [connection, journalRedis]) client.disconnect();
    await ownDispatcher?.close().catch(() => undefined);
    return;
  }
  await agentHealth.flush();
  // Every lease given back: off the roster, so no peer sweeps for this process.
  await liveness.leave();
  await Promise.all(Object.values(queues).map((queue) => queue.close()));
  await Promise.all([connection.quit().catch(() => undefined), journalRedis.quit().catch(() => undefined)]);
  await ownDispatcher?.close().catch(() => undefined);
}

/** The options of `startFleet` beyond `FleetOptions` that a timer waits for (ms): checked as `compileFleetOptions` checks its own. */
const FLEET_TIMER_DURATIONS = ['closeTimeoutMs', 'agentLabelRefreshMs', 'agentHealthWindowMs'] as const satisfies readonly (keyof StartFleetOptions)[];

/**
 * Starts the worker fleet of this process. Throws UnsafePersistenceError in strict mode, and a RangeError naming a
 * duration option a timer waits for that is past Node's timer range (about 24.8 days), NaN or negative.
 */
export async function startFleet(input: StartFleetOptions): Promise<Fleet> {
  // Local follows only in a process that works on the follow queue (a send-only process enqueues follow jobs).
  const followsHere = (input.queues ?? ALL_QUEUES).includes('follow');
  const options = compileFleetOptions(followsHere ? input : { ...input, localFollowSlots: 0 });
  for (const name of FLEET_TIMER_DURATIONS) if (input[name] !== undefined) checkTimerDuration(name, input[name]);
  const logger = input.logger ?? createLogger();
  const metrics = createMetrics(input.metricsRegistry ?? new Registry(), 'workers');
  const workerId = input.workerId ?? `${hostname()}-${process.pid}`;
  // A lease holder is `<workerId>/<run>`: the id ends at the first '/' (a dead holder's liveness, a send lease told
  // from a follow lease), so an id with a '/' would make a dead sender's send lease look like a follow lease, ended at once.
  if (workerId === '' || workerId.includes('/')) throw new TypeError(`startFleet: workerId must be non-empty and contain no '/' (got ${JSON.stringify(workerId)})`);
  // Workers need maxRetriesPerRequest: null (BullMQ; field case R23); the journal waits out short outages too.
  // Its commands of one event-loop turn leave in one socket write (`batchWritesPerTurn`).
  const connection = batchWritesPerTurn(openRedisClient(options.redis));
  // The journal's own connection auto-pipelines (ioredis): the commands of every delegation issued in one
  // event-loop turn leave in one socket write (one write syscall per command was ~15% of the
  // fleet's CPU at concurrency 50). Replies and errors stay per command. BullMQ's connection keeps plain
  // writes (auto-pipelining on BullMQ's worker connections is reported to break job moves: bullmq#457).
  const journalRedis = openRedisClient(options.redis, { enableAutoPipelining: true });
  // An outage is logged as a state change (down / reminder / back), not once per failed command.
  logRedisConnectionState(logger, connection);
  journalRedis.on('error', () => undefined);
  await requireRedisVersion(journalRedis, logger, [journalRedis, connection]);
  const persistence = await checkPersistence(journalRedis, logger, options.strictPersistence);
  const prefix = queuePrefix(options.prefix);
  const queues = Object.fromEntries(
    ALL_QUEUES.map((name) => {
      const queueOptions = { connection, prefix, telemetry: input.telemetry, defaultJobOptions: { ...DEFAULT_JOB_OPTIONS[name], ...JOB_RETENTION } };
      // Message sends are ordered by priority, then fairly between tenants (send-priority.ts).
      return [name, name === 'send' ? new FairSendQueue(name, queueOptions, new SendOrder(journalRedis, options.prefix)) : new Queue(name, queueOptions)];
    }),
  ) as Record<QueueName, Queue>;
  for (const queue of Object.values(queues)) queue.on('error', () => undefined); // the shared connection reports the outage
  const shutdown = new AbortController();
  // Every agent connection goes through the address policy, checked again at connection time (R19).
  const ownDispatcher = input.dispatcher ? undefined : createPolicyDispatcher(input.addressPolicy ?? {});
  const dispatcher = input.dispatcher ?? ownDispatcher!;
  const context = createWorkerContext(input, { options, journalRedis, queues, dispatcher, shutdownSignal: shutdown.signal, logger, metrics, workerId });
  // A server that is up but refuses (OOM, READONLY, …) is backed off like a lost connection, for every caller of both.
  const refusalGate = new RedisRefusalGate({ logger, probe: () => context.journal.probeWrites(), onRefusal: (kind) => metrics.redisRefusals.inc({ kind }) });
  refusalGate.guard(connection);
  refusalGate.guard(journalRedis);
  const localFollows = createLocalFollows(context);
  context.followHere = localFollows.start;
  context.localFollowToken = localFollows.token;
  context.openingsWaiting = localFollows.waiting;
  // The metrics' agent labels: read before the first job, then every agentLabelRefreshMs (a failed read keeps the last).
  // The agents' limits are read with them (no Redis command per send to learn them).
  const refreshAgentLabels = () =>
    context.registry.list().then(
      (agents) => {
        metrics.agentLabels.update(agents);
        context.agentLimits.update(agents);
      },
      () => undefined,
    );
  await refreshAgentLabels();
  // Before any worker takes a lease: a restart under the same worker id ends the earlier process's leases first.
  const liveness = await startLiveness(context);
  const labelTimer = setInterval(() => void refreshAgentLabels(), input.agentLabelRefreshMs ?? AGENT_LABEL_REFRESH_MS).unref();
  const progress: FetchProgress[] = [];
  const workers = (input.queues ?? ALL_QUEUES).map((name) => {
    const { worker, watch } = startWorker(name, context, connection, prefix, input.livenessStaleAfterMs ?? 30_000, input.telemetry);
    progress.push(watch);
    return worker;
  });
  // One scheduler with a fixed id: restarts and deploys upsert it, never multiply it (R22).
  await queues.reconcile.upsertJobScheduler(SWEEP_SCHEDULER_ID, { every: options.reconcileIntervalMs }, { name: 'sweep', data: {} });
  const sweepAll = async () => {
    await enqueueStartupSweep(queues, workerId, options.now());
  };
  await sweepAll();
  logger.info({ workerId, queues: input.queues ?? ALL_QUEUES, prefix: options.prefix }, 'fleet started');
  let closing: Promise<void> | undefined;
  const close = () => {
    clearInterval(labelTimer);
    closing ??= closeFleet({ workers, heldSends: context.heldSends, agentHealth: context.agentHealth, localFollows, shutdown, queues, connection, journalRedis, refusalGate, liveness, ownDispatcher, logger, timeoutMs: input.closeTimeoutMs ?? 10_000 }).then(() =>
      logger.info({ workerId }, 'fleet closed'),
    );
    return closing;
  };
  const health = () => {
    const queues = progress.map((watch) => watch.health());
    return { live: queues.every((queue) => queue.live), queues };
  };
  return { context, workers, persistence, metrics, health, sweepAll, refreshAgentLabels, close };
}
