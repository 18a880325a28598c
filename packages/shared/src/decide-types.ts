/**
 * The decider's vocabulary: what it reads (a workflow snapshot of attempt views) and what it answers
 * (a `Decision`). Types only; the decider itself is decide.ts.
 */
import type { Step, WorkflowDefinition } from './workflow.ts';
import type { JournalState, WorkflowState } from './journal/states.ts';
import type { AttentionCode } from './journal/workflow-record.ts';

/** A verifier's finding about a step's side effect. */
export type Effect = 'present' | 'absent' | 'unknown';

/**
 * Why an attempt failed, as a type (never read from the reason's text):
 * `failed` (refused, failed or canceled by the agent: try another agent), `lost` (the agent forgot the
 * task: the same agent may be tried again), `ambiguous` (a send that could not be proven, run again by a
 * read-only step or a person's approval: the same agent may be tried again), `no-effect` (COMPLETED, but
 * the verifier found nothing).
 */
export type FailureKind = 'failed' | 'lost' | 'ambiguous' | 'no-effect';

/** The parts of a delegation record the decision reads. */
export interface AttemptView {
  delegationId: string;
  step: string;
  kind: 'step' | 'compensation';
  attempt: number;
  agentCardUrl: string;
  state: JournalState;
  taskId?: string;
  contextId?: string;
  error?: { code: string; message: string };
  effect?: Effect;
  /**
   * How many artifacts the attempt's task showed (the record's `artifactCount`; absent: none). An unsuccessful attempt
   * with any has effect unknown when no verifier found otherwise (`effectOf`, decide-effects.ts).
   */
  artifactCount?: number;
  /** Journaled at start, waiting for earlier steps. */
  held?: boolean;
  /** A person looked at this AMBIGUOUS attempt and asked to run the step again (`producer.resolve`). */
  retryApproved?: boolean;
}

export interface WorkflowSnapshot {
  definition: WorkflowDefinition;
  state: WorkflowState;
  cancelRequested: boolean;
  /** Set once a step failed for good: the workflow is stopping (no new attempts; running ones are canceled). */
  stopping?: string[];
  attempts: AttemptView[];
}

/** A failed attempt carried into the next one, so the next agent does not repeat it. */
export interface PreviousAttempt {
  delegationId: string;
  agentCardUrl: string;
  taskId?: string;
  contextId?: string;
  reason: string;
  kind: FailureKind;
}

export type Decision =
  | { kind: 'wait'; reason: string }
  | { kind: 'start-attempt'; step: string; attempt: number; agentCardUrl: string; previous: PreviousAttempt[] }
  | { kind: 'release'; step: string; delegationId: string }
  /**
   * A step failed for good: the workflow is stopping (journaled with `reasons`), and the attempts still
   * running elsewhere are canceled (CancelTask) before undoing.
   */
  | { kind: 'cancel-running'; reasons: string[]; delegationIds: string[] }
  | { kind: 'complete' }
  /** The workflow ends FAILED, or CANCELED when `canceled` (only when no attempt has or may have an effect). */
  | { kind: 'fail'; step?: string; reasons: string[]; canceled?: boolean }
  | { kind: 'compensate'; reason: string }
  /** A person decides; `delegationId` and `evidence` name the attempt to look at, when there is one. */
  | { kind: 'needs-attention'; step: string; code: AttentionCode; reason: string; delegationId?: string; evidence?: Record<string, unknown> };

/** Agent Card URLs that can run a step, best first (registry lookup by skill, done before deciding). */
export type CandidateLookup = (step: Step) => string[];

/** A step's first attempt as the producer journals it at start. */
export interface FirstAttempt {
  step: Step;
  agentCardUrl: string;
  /** Waits for earlier steps (journaled, not sent, until `decide` releases it). */
  held: boolean;
}
