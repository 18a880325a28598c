/**
 * What every processor receives: injected clients, clock, logger, metrics and
 * compiled options. No module-level clients anywhere (style rule 1).
 */
import type { Queue } from 'bullmq';
import type { Dispatcher } from 'undici';
import type { AgentFlow, AgentRegistry, DelegationRecord, DelegationRef, FollowLease, Journal, Logger, Metrics, QueueName } from '@durable-a2a/shared';
import type { AgentDirectory } from './agents.ts';
import type { CompiledFleetOptions, CrashPoint } from './options.ts';
import type { VerifierRegistry } from './verifiers.ts';
import type { CompensationHandler } from './delegation/runs/handler.ts';
import type { AuthHandler } from './delegation/auth.ts';
import type { Policy } from './delegation/core/policy.ts';
import type { AgentSlots } from './delegation/runs/agent-slots.ts';
import type { AgentLimitsBook } from './delegation/runs/flow.ts';
import type { PauseChecks } from './delegation/runs/pause-checks.ts';
import type { ResubscribeTokens } from './delegation/runs/resubscribe-tokens.ts';
import type { HeldSends } from './delegation/runs/held-sends.ts';
import type { LeaseRenewals } from './delegation/runs/lease-renewal.ts';
import type { AttemptSteps } from './delegation/attempt-step.ts';
import type { WorkflowWaits } from './workflow/wait-memory.ts';
import type { AgentHealthRecorder } from './agent-health.ts';
import type { ShutdownListeners } from './shutdown-listeners.ts';

export type { CrashPoint } from './options.ts';

/** What a processor passes down of its BullMQ job: id (owner tokens, logs) and attempts (the last one records the failure). */
export interface JobRun {
  id: string | undefined;
  attemptsMade: number;
  /** Attempts BullMQ will make in all (job option `attempts`, default 1). */
  attempts: number;
  /** Called when the follow's stream is open (its first event, or its end): local follows pace their openings by it. */
  opened?: () => void;
  /** A message send job's place among its tenant's sends (`placeOfSendPriority`): its next try keeps it. */
  place?: number;
}

/** The `JobRun` of a BullMQ job. */
export const jobRunOf = (job: { id?: string; attemptsMade: number; opts: { attempts?: number } }): JobRun => ({
  id: job.id,
  attemptsMade: job.attemptsMade,
  attempts: job.opts.attempts ?? 1,
});

/** A follow to start at once (`apply.ts`, a follow without delay): backoff exponent, and false for the first subscription of new work. */
export interface FollowStart {
  resubscription: number;
  again: boolean;
  /** The record as the routing transition wrote or read it (saves the follow's read). */
  known?: DelegationRecord;
  /**
   * The follow lease the routing transition already took for this follow (a send's answer, `endsLease: handover`,
   * under a token from `localFollowToken`): the follow takes no lease of its own and gives this one back if it ends
   * before its stream.
   */
  lease?: FollowLease;
}

export interface WorkerContext {
  /** Every Redis read and write goes through the journal (or the agent registry). */
  journal: Journal;
  registry: AgentRegistry;
  /** Each agent's health, written to the registry in coalesced windows (`agent-health.ts`). */
  agentHealth: AgentHealthRecorder;
  queues: Record<QueueName, Queue>;
  agents: AgentDirectory;
  /** The dispatcher of every outbound connection (agents and notification receivers): the address policy's. */
  dispatcher: Dispatcher;
  verifiers: VerifierRegistry;
  compensationHandlers: ReadonlyMap<string, CompensationHandler>;
  /** Auth handlers by Agent Card URL (AUTH_REQUIRED). */
  authHandlers: ReadonlyMap<string, AuthHandler>;
  logger: Logger;
  metrics: Metrics;
  options: CompiledFleetOptions;
  /** The delegation core's numbers and verdicts, with the clock and randomness (`core/policy.ts`). */
  policy: Policy;
  /** This process's follow slots per agent (`followSlotsPerAgent`). */
  followSlots: AgentSlots;
  /** This process's send slots per agent (`sendSlotsPerAgent`). */
  sendSlots: AgentSlots;
  /** This process's reconcile calls per agent (`reconcileSlotsPerAgent`). */
  reconcileSlots: AgentSlots;
  /** Fleet-wide flow control per agent, in Redis (`maxInFlight`, rates, pauses; agentFlow-2.lua). */
  flow: AgentFlow;
  /** Each agent's fleet-wide limits as last read from the registry (or the fleet's default for unregistered agents). */
  agentLimits: AgentLimitsBook;
  /** When each agent without limits was last found unpaused (`pauseCheckMs`): its sends skip the acquire meanwhile. */
  pauseChecks: PauseChecks;
  /** This process's resubscriptions' slots of the fleet-wide resubscribe rate (`subscribeRateLimit`), several per script call. */
  resubscribeTokens: ResubscribeTokens;
  /** Held sends waiting outside their send job (`heldSendSlots`). */
  heldSends: HeldSends;
  /** The follow leases this process renews (`runs/lease-renewal.ts`). */
  leaseRenewals: LeaseRenewals;
  /** The steps of attempts this process has read (`attempt-step.ts`). */
  attemptSteps: AttemptSteps;
  /** The last "wait" decided for each running workflow, at its rows' versions (`workflow/wait-memory.ts`). */
  workflowWaits: WorkflowWaits;
  /** Identifies this worker process in journal `owner` fields and logs. */
  workerId: string;
  /** Aborted when the fleet closes: open streams hand their delegation over and stop. */
  shutdownSignal: AbortSignal;
  /** Listeners of `shutdownSignal` added and removed in O(1) (one per open stream: `shutdown-listeners.ts`). */
  shutdownListeners: ShutdownListeners;
  /**
   * Starts a delegation's follow in this process, detached from the caller (`delegation/follow-local.ts`),
   * when a local follow slot is free and the fleet is not closing. False: the caller enqueues a follow job.
   * Absent (a context without local follows): always enqueue.
   */
  followHere?(ref: DelegationRef, start: FollowStart): boolean;
  /**
   * A follow lease token for a local follow that could start now (a free local follow slot and opening turn, the
   * fleet not closing): a send's answer hands its send lease over to it (`StatusChange.endsLease` `handover`), so
   * the follow saves its `takeFollow`. Undefined: no local follow now (the lease is given back as before).
   */
  localFollowToken?(): string | undefined;
  /**
   * Local follows of this process waiting for their opening turn (`follow-local.ts`, `OPENINGS_AT_ONCE` open at once):
   * above 0 while this process reattaches more streams than it opens at once. Absent: none (no local follows).
   */
  openingsWaiting?(): number;
  /**
   * Fault hook: kills (or stalls) the process at the named point when enabled
   * (`point`, or `point@step` to hit only one step); inert otherwise.
   */
  crashPoint(point: CrashPoint, step?: string): void;
}

/**
 * The reason given to `abort()` where work ends normally (the search beside a send that was answered,
 * the connection of a stream that ended): one shared AbortError, the same name and message as
 * `abort()`'s own, so the happy path builds no DOMException and stack per delegation.
 */
export const FINISHED_ABORT_REASON = new DOMException('This operation was aborted', 'AbortError');
