/**
 * A fuzz session: one redis-server URL, one worker fleet and one producer,
 * reused across runs. Each run starts its own agent and delegation (its own
 * workflow id), waits for it to settle within the deadline, watches a quiet
 * window, and checks the invariants. A run that broke an invariant may leave
 * work looping in the fleet, so the fleet is then replaced (fresh key prefix).
 */
import type { Redis, Cluster } from 'ioredis';
import { createProducer, type Producer } from '@durable-a2a/producer';
import { createRedisClient, type DelegationView, type Journal } from '@durable-a2a/shared';
import type { AuthHandler, Fleet, StartFleetOptions } from '@durable-a2a/workers';
import { startTestFleet } from '../harness/fleet.ts';
import { FINISHED_WORKFLOW_STATES } from '../harness/invariants.ts';
import { startFuzzAgent, type AgentCall } from './agent.ts';
import { ARTIFACT_BUDGET_BYTES, type Behaviour } from './grammar.ts';
import { checkInvariants, DEFAULT_LIMITS, type InvariantLimits, type RunObservation, type Violation } from './invariants.ts';

/** Short timings (packages/workers/src/options.ts) so a run takes well under a second where the product allows. */
export const FUZZ_TIMINGS = {
  requestTimeoutMs: 400,
  streamIdleTimeoutMs: 500,
  reconcileIntervalMs: 250,
  parkedPollMs: 500,
  notFoundWindowMs: 300,
  searchMarginMs: 1_000,
  followBackoff: { baseMs: 20, capMs: 300 },
  lockDurationMs: 2_000,
  stalledIntervalMs: 1_000,
  closeTimeoutMs: 1_000,
  subscribeRateLimit: { max: 1_000, durationMs: 1_000 },
  // The attempt deadline (DEADLINE_EXCEEDED) inside the 6 s run deadline: an agent that hangs settles. A send
  // that may have reached the agent is ended only after the search that follows its settle window
  // (sendSettleMs = request timeout + 1 s = 1.4 s here), so the deadline leaves that much (and a sweep) to spare.
  attemptDeadlineMs: 4_000,
  // Progress rule and fairness (docs/agents.md "Progress rule"), scaled to the fuzz deadline.
  noProgressWindowMs: 2_000,
  slowPollAfterMs: 300,
  slowPollMs: 700,
  streamQuietMs: 600,
  // V2: agents whose card declares streaming (story.streaming) get SendStreamingMessage.
  streamingSends: true,
  // Small, so metadata-heavy artifacts over it (artifactMetadata) cost little to send.
  artifactBytesPerDelegation: ARTIFACT_BUDGET_BYTES,
} satisfies Partial<StartFleetOptions>;

export interface FuzzSessionOptions {
  redisUrl: string;
  /** Time a delegation has to settle (finished, or NEEDS_ATTENTION with a reason). Default 6_000 ms. */
  deadlineMs?: number;
  /** Watched after settling, for late agent calls. Default 300 ms. */
  quietMs?: number;
  limits?: Partial<InvariantLimits>;
  fleetOptions?: Partial<StartFleetOptions>;
}

export interface RunOutcome {
  runId: string;
  violations: Violation[];
  elapsedMs: number;
  /** The agent calls (site@ms since the run started) and the journal's end state, for reports. */
  trace: string;
}

export interface FuzzSession {
  run(behaviour: Behaviour): Promise<RunOutcome>;
  /** Fleets started so far (1 + one per run that broke an invariant). */
  fleetsStarted(): number;
  close(): Promise<void>;
}

const POLL_MS = 25;
const SCAN_PAGE = 500;
const MAX_SCAN_PAGES = 1_000;

/** Starts the session's fleet and producer on `redisUrl`. */
export async function startFuzzSession(options: FuzzSessionOptions): Promise<FuzzSession> {
  const deadlineMs = options.deadlineMs ?? 6_000;
  const quietMs = options.quietMs ?? 300;
  const limits = { ...DEFAULT_LIMITS, ...options.limits };
  const tag = `${process.pid}-${Date.now().toString(36)}`;
  const redis = createRedisClient(options.redisUrl) as Redis | Cluster;
  redis.on('error', () => undefined);
  let generation = 0;
  let runs = 0;
  let prefix = '';
  let fleet: Fleet | undefined;
  let producer: Producer | undefined;
  const baselineRssBytes = process.memoryUsage.rss();
  let tail: Promise<void> = Promise.resolve();

  const startFleet = async () => {
    prefix = `fuzz-${tag}-${++generation}`;
    producer = createProducer({ addressPolicy: { allowLoopback: true }, redis: options.redisUrl, prefix });
    fleet = await startTestFleet({ redisUrl: options.redisUrl, prefix, ...FUZZ_TIMINGS, ...options.fleetOptions });
  };
  const stopFleet = async () => {
    await Promise.all([fleet?.close(), producer?.close()]);
    fleet = undefined;
    producer = undefined;
  };
  await startFleet();

  /** Keys of this fleet's prefix whose MEMORY USAGE exceeds the limit. */
  const oversizedKeys = async () => {
    const found: { key: string; bytes: number }[] = [];
    let cursor = '0';
    for (let page = 0; page < MAX_SCAN_PAGES; page++) {
      const [next, keys] = await (redis as Redis).scan(cursor, 'MATCH', `*${prefix}*`, 'COUNT', SCAN_PAGE);
      const sizes = await Promise.all(keys.map((key) => (redis as Redis).memory('USAGE', key) as Promise<number | null>));
      keys.forEach((key, index) => (sizes[index] ?? 0) > limits.maxKeyBytes && found.push({ key, bytes: sizes[index]! }));
      cursor = next;
      if (cursor === '0') break;
    }
    return found;
  };

  return {
    fleetsStarted: () => generation,
    async run(behaviour) {
      // Runs never overlap: a run that broke an invariant replaces the fleet the next one uses.
      const previous = tail;
      let release = () => undefined as void;
      tail = new Promise<void>((resolve) => (release = resolve));
      await previous;
      try {
        return await runOnce(behaviour);
      } finally {
        release();
      }
    },
    async close() {
      await tail;
      await stopFleet();
      redis.disconnect();
    },
  };

  async function runOnce(behaviour: Behaviour): Promise<RunOutcome> {
    const runId = `${tag}-${++runs}`;
    const started = Date.now();
    const agent = await startFuzzAgent(runId, behaviour);
    const journal = producer!.journal;
    const ref = { workflowId: `fuzz-${runId}`, delegationId: 'main.1' };
    let watched: Watched;
    // The agent's auth handler (credentials refreshed, no reply): counted, so the product's bound on it is checked.
    let authHandlerRuns = 0;
    const authHandlers = fleet!.context.authHandlers as Map<string, AuthHandler>;
    authHandlers.set(agent.cardUrl, async () => void authHandlerRuns++);
    try {
      await producer!.delegate({ agent: agent.cardUrl, text: `fuzz ${runId}`, idempotencyKey: ref.workflowId });
      watched = await watch({ journal, ref, calls: agent.calls, started, deadlineMs, quietMs, limits });
    } finally {
      authHandlers.delete(agent.cardUrl);
      await agent.close();
    }
    const { workflow } = watched;
    const delegation: DelegationView | undefined = await journal.getDelegationView(ref);
    const violations = checkInvariants(
      {
        runId,
        behaviour,
        agentTask: agent.task(),
        sendNamedTask: agent.sendNamedTask(),
        overLimitDelivered: agent.overLimitDelivered(),
        authHandlerRuns,
        calls: agent.calls,
        delegation,
        ...watched,
        deadlineMs,
        baselineRssBytes,
        oversizedKeys: await oversizedKeys(),
      },
      limits,
    );
    if (violations.length > 0) {
      await stopFleet();
      await startFleet();
    }
    const calls = agent.calls.map((call) => `${call.site}@${call.atMs - started}`).join(' ');
    const trace = `${calls} → ${workflow?.state ?? 'none'}/${delegation?.state ?? 'none'}${delegation?.error ? ` (${delegation.error.code})` : ''}`;
    return { runId, violations, elapsedMs: Date.now() - started, trace };
  }
}

type Watched = Pick<RunObservation, 'workflow' | 'settled' | 'settledAtMs' | 'stoppedEarly' | 'lastProgressAtMs' | 'maxRssBytes'>;

interface WatchRequest {
  journal: Journal;
  ref: { workflowId: string; delegationId: string };
  calls: readonly AgentCall[];
  started: number;
  deadlineMs: number;
  quietMs: number;
  limits: InvariantLimits;
}

/**
 * Polls the journal every POLL_MS until the workflow settled and `quietMs` passed, or the deadline passed,
 * or the agent calls without progress passed their bound (a certain livelock: stopping early keeps shrinking fast).
 */
async function watch({ journal, ref, calls, started, deadlineMs, quietMs, limits }: WatchRequest): Promise<Watched> {
  const watched: Watched = { workflow: undefined, settled: false, stoppedEarly: false, lastProgressAtMs: started, maxRssBytes: process.memoryUsage.rss() };
  let seen = '';
  let settledAt: number | undefined;
  for (let polls = 0; polls < (deadlineMs + quietMs) / POLL_MS + 100; polls++) {
    const now = Date.now();
    if (settledAt !== undefined ? now - settledAt >= quietMs : now - started >= deadlineMs) break;
    const [hash, record] = await Promise.all([journal.getWorkflowHash(ref.workflowId), journal.getDelegation(ref)]);
    const workflow = hash ? { state: hash.state ?? '?', ...(hash.attention ? { attention: hash.attention } : {}) } : undefined;
    watched.workflow = workflow;
    const progress = `${workflow?.state}|${record?.state}|${record?.version}`;
    if (progress !== seen) (seen = progress), (watched.lastProgressAtMs = Date.now());
    if (settledAt === undefined && workflow && isSettled(workflow)) (watched.settled = true), (settledAt = watched.settledAtMs = Date.now());
    if (settledAt === undefined && callsSince(calls, watched.lastProgressAtMs + limits.progressGraceMs) > limits.maxCallsWithoutProgress) {
      watched.stoppedEarly = true;
      break;
    }
    watched.maxRssBytes = Math.max(watched.maxRssBytes, process.memoryUsage.rss());
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  return watched;
}

const callsSince = (calls: readonly { atMs: number }[], sinceMs: number) => calls.filter((call) => call.atMs > sinceMs).length;

/** Finished, or handed to a person with a reason (as test/harness/invariants.ts `isSettled`). */
const isSettled = (workflow: { state: string; attention?: string }) =>
  FINISHED_WORKFLOW_STATES.has(workflow.state) || (workflow.state === 'NEEDS_ATTENTION' && Boolean(workflow.attention));
