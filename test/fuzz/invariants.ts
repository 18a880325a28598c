/**
 * The invariants checked after every fuzz run (docs/conformance-kit.md), as
 * pure functions of what was observed: the agent's truth and call log, the
 * journal's record of the delegation, the workflow's end, memory and Redis
 * key sizes. Each violation names its invariant and carries the evidence.
 */
import type { DelegationView } from '@durable-a2a/shared';
import type { AgentCall } from './agent.ts';
import { deviationOf, isRecoverable, type Behaviour } from './grammar.ts';
import { LIMITS } from './generators.ts';
import { checkAnswerInvariants } from './invariants-answers.ts';
import { foreignIds, type AgentTask } from './wire.ts';

export type InvariantName =
  | 'foreign-adopted'
  | 'wrong-outcome'
  | 'outcome-not-adopted'
  | 'duplicate-send'
  | 'not-settled'
  | 'calls-without-progress'
  | 'worker-rss'
  | 'redis-key-size'
  | 'over-limit-journaled'
  | 'completed-without-result'
  | 'stale-status-message'
  | 'failed-after-delivery'
  | 'artifact-budget'
  | 'limit-not-journaled'
  | 'content-proof-ignored'
  | 'auth-handler-unbounded'
  | 'auth-not-journaled'
  | 'slow-after-final';

export interface Violation {
  invariant: InvariantName;
  evidence: string;
}

export interface InvariantLimits {
  /** Agent calls allowed after the journal last changed (plus `progressGraceMs`). Default 8. */
  maxCallsWithoutProgress: number;
  progressGraceMs: number;
  /** Process RSS allowed above the session's baseline, bytes. Default 512 MiB. */
  rssHeadroomBytes: number;
  /** Largest Redis key (MEMORY USAGE), bytes. Default 16 MiB + 256 KiB (the artifact limit and the record around it). */
  maxKeyBytes: number;
}

export const DEFAULT_LIMITS: InvariantLimits = {
  maxCallsWithoutProgress: 8,
  progressGraceMs: 500,
  rssHeadroomBytes: 512 * (1 << 20),
  maxKeyBytes: LIMITS.bodyBytes + 256 * 1024,
};

/** What one run observed. */
export interface RunObservation {
  runId: string;
  behaviour: Behaviour;
  /** The agent's task for our message, if a send reached it. */
  agentTask: AgentTask | undefined;
  calls: readonly AgentCall[];
  /**
   * An answer to a send named our task (`FuzzAgent.sendNamedTask`). Without it, only ListTasks can find the task
   * (by our messageId): when every ListTasks answer is unusable too, nobody can read the outcome.
   */
  sendNamedTask: boolean;
  /** The delegation at the end (artifacts included), if it was journaled. */
  delegation: DelegationView | undefined;
  /** The workflow's state and attention reason at the end. */
  workflow: { state: string; attention?: string } | undefined;
  /** Settled within the deadline (finished, or NEEDS_ATTENTION with a reason). */
  settled: boolean;
  /** An answer over a limit (overLimitAnswer) reached the client whole. */
  overLimitDelivered?: boolean;
  /** Runs of the agent's auth handler during the run. */
  authHandlerRuns?: number;
  /** When the workflow was first seen settled, ms. */
  settledAtMs?: number;
  /** The run was stopped before its deadline because the calls without progress passed their bound. */
  stoppedEarly?: boolean;
  deadlineMs: number;
  /** When the journal (delegation version or workflow state) last changed, ms. */
  lastProgressAtMs: number;
  maxRssBytes: number;
  baselineRssBytes: number;
  /** Redis keys over `maxKeyBytes`: key and size. */
  oversizedKeys: { key: string; bytes: number }[];
}

const AGENT_TERMINAL = new Set(['COMPLETED', 'FAILED', 'CANCELED', 'REJECTED']);

/** Every invariant violated by one run (empty = the run conforms). */
export function checkInvariants(observation: RunObservation, limits: InvariantLimits = DEFAULT_LIMITS): Violation[] {
  const violations: Violation[] = [];
  const add = (invariant: InvariantName, evidence: string) => violations.push({ invariant, evidence });
  const { delegation, agentTask, runId } = observation;
  const foreign = foreignIds(runId);

  if (delegation) {
    if (delegation.taskId && delegation.taskId !== agentTask?.id) add('foreign-adopted', `journaled task ${delegation.taskId}, the agent's task for our message is ${agentTask?.id ?? 'none'}`);
    if (delegation.contextId === foreign.contextId) add('foreign-adopted', `journaled context ${delegation.contextId}`);
    const journaled = JSON.stringify({ artifacts: delegation.artifacts, result: delegation.result, statusMessage: delegation.statusMessage });
    if (journaled.includes(foreign.text)) add('foreign-adopted', `journaled another task's result (${foreign.text})`);
    const final = observation.behaviour.story.final;
    if (AGENT_TERMINAL.has(delegation.state) && !delegation.error && agentTask && delegation.state !== final) {
      add('wrong-outcome', `journaled ${delegation.state} with no reason; the agent's task ended ${final}`);
    }
    overLimit(delegation, add);
  }
  // Findable: a send answer named our task, or ListTasks answers with our request id (an rpcId deviation on ListTasks
  // spoils every one of them), so the search by messageId can find it.
  const listTasksUsable = deviationOf(observation.behaviour, 'rpcId')?.method !== 'ListTasks';
  const recoverable = observation.behaviour.deviations.every(isRecoverable) && (observation.sendNamedTask || listTasksUsable);
  const outcome = delegation?.state;
  if (observation.settled && recoverable && agentTask && outcome !== observation.behaviour.story.final) {
    const reason = delegation?.error ? ` (${delegation.error.code}: ${delegation.error.message.slice(0, 160)})` : '';
    add('outcome-not-adopted', `the agent's task ended ${observation.behaviour.story.final}, readable despite every deviation; the delegation ended ${outcome ?? 'unjournaled'}${reason}`);
  }

  const duplicates = observation.calls.filter((call) => call.duplicate);
  if (duplicates.length > 0) add('duplicate-send', `${duplicates.length} SendMessage for messageId ${duplicates[0]!.messageId} after the agent had its task (ListTasks could have found it)`);

  if (!observation.settled && !observation.stoppedEarly) {
    const state = observation.workflow ? `${observation.workflow.state}${observation.workflow.attention ? ` (${observation.workflow.attention})` : ''}` : 'not journaled';
    add('not-settled', `workflow ${state}, delegation ${delegation?.state ?? 'none'} after ${observation.deadlineMs} ms`);
  }

  const quietSince = observation.lastProgressAtMs + limits.progressGraceMs;
  const late = observation.calls.filter((call) => call.atMs > quietSince);
  if (late.length > limits.maxCallsWithoutProgress) {
    add('calls-without-progress', `${late.length} agent calls after the journal stopped changing (${summarizeSites(late)})`);
  }

  checkAnswerInvariants(observation, add);

  const growth = observation.maxRssBytes - observation.baselineRssBytes;
  if (growth > limits.rssHeadroomBytes) add('worker-rss', `RSS ${mib(observation.maxRssBytes)} MiB, ${mib(growth)} MiB over the baseline`);
  for (const { key, bytes } of observation.oversizedKeys) add('redis-key-size', `${key}: ${mib(bytes)} MiB`);
  return violations;
}

/** Parts per artifact and JSON depth of what was journaled (limits: 1,000 parts, depth 64). */
function overLimit(delegation: DelegationView, add: (invariant: InvariantName, evidence: string) => void): void {
  for (const artifact of delegation.artifacts) {
    if (artifact.parts.length > LIMITS.parts) add('over-limit-journaled', `artifact ${artifact.artifactId} holds ${artifact.parts.length} parts`);
    // parts array → part → its value: two levels above the part's own nesting.
    const depth = jsonDepth(artifact.parts) - 2;
    if (depth > LIMITS.depth) add('over-limit-journaled', `artifact ${artifact.artifactId} holds a part nested ${depth} levels`);
  }
}

/** Nesting depth of a JSON value, without recursion (bounded by the value's size). */
export function jsonDepth(value: unknown): number {
  let deepest = 0;
  const stack: { value: unknown; depth: number }[] = [{ value, depth: 0 }];
  while (stack.length > 0) {
    const { value: current, depth } = stack.pop()!;
    deepest = Math.max(deepest, depth);
    if (current && typeof current === 'object') for (const child of Object.values(current)) stack.push({ value: child, depth: depth + 1 });
  }
  return deepest;
}

const mib = (bytes: number) => Math.round(bytes / (1 << 20));

function summarizeSites(calls: readonly AgentCall[]): string {
  const counts = new Map<string, number>();
  for (const call of calls) counts.set(call.site, (counts.get(call.site) ?? 0) + 1);
  return [...counts].map(([site, count]) => `${site} ×${count}`).join(', ');
}
