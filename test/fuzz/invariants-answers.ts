/**
 * The invariants of what an answer proves (docs/conformance-kit.md): a result
 * is never lost to a partial read, a status replaces the previous one whole,
 * an attempt whose message reached the agent is never ended as re-delegatable,
 * a limit or a bounded round ends with its code, stored bytes stay within the
 * artifact budget, and a stream that keeps delivering is never slow-polled.
 */
import { artifactByteSize } from '@durable-a2a/a2a';
import type { DelegationView } from '@durable-a2a/shared';
import { finalStatusText } from './answers.ts';
import { ALWAYS, ARTIFACT_BUDGET_BYTES, deviationOf } from './grammar.ts';
import type { InvariantName, RunObservation } from './invariants.ts';
import { resultText } from './wire.ts';

/** Auth handler runs per attempt the product allows before a person decides. */
export const AUTH_HANDLER_RUNS = 3;

/** Time from the agent's final state to the settled workflow, at most, for a task whose streams keep delivering (fuzz timings). */
export const SETTLE_AFTER_FINAL_MS = 1_500;

type Add = (invariant: InvariantName, evidence: string) => void;

const AGENT_FAILURES = new Set(['FAILED', 'REJECTED', 'CANCELED']);

/** Adds the violations of the answer invariants to `add`. */
export function checkAnswerInvariants(observation: RunObservation, add: Add): void {
  const { delegation, behaviour, runId } = observation;
  const story = behaviour.story;
  const only = behaviour.deviations.length === 1 ? behaviour.deviations[0]!.kind : undefined;
  if (delegation) {
    const journaled = journaledText(delegation);
    // The agent's full read holds the result: the follow path's reads hide it unless an answer over a limit showed it.
    const readsHideResult = deviationOf(behaviour, 'overLimitAnswer')?.path === 'follow' && !observation.overLimitDelivered;
    const hasResult = story.final === 'COMPLETED' && (story.chunks > 0 || finalStatusText(runId, behaviour)?.includes(resultText(runId)) === true);
    if (delegation.state === 'COMPLETED' && hasResult && !readsHideResult && !journaled.includes(resultText(runId))) {
      add('completed-without-result', `journaled COMPLETED without the agent's result ${resultText(runId)} (${delegation.artifacts.length} artifacts)`);
    }
    // A journaled status message is the last status's (an agent's FAILED may carry its text as the error instead).
    const text = delegation.statusMessage ? messageText(delegation.statusMessage) : undefined;
    if (delegation.state === story.final && (text !== undefined || !delegation.error)) {
      const expected = finalStatusText(runId, behaviour);
      if (text !== expected) add('stale-status-message', `journaled status message ${JSON.stringify(text?.slice(0, 80))}, the agent's last status carried ${JSON.stringify(expected?.slice(0, 80))}`);
    }
    if (AGENT_FAILURES.has(delegation.state) && delegation.error && observation.agentTask && delegation.state !== story.final) {
      add('failed-after-delivery', `journaled ${delegation.state} (${delegation.error.code}) though the agent took our message (task ${observation.agentTask.id}, ended ${story.final}): re-delegatable while the work may be done`);
    }
    const stored = delegation.artifacts.reduce((sum, artifact) => sum + artifactByteSize(artifact), 0);
    if (stored > ARTIFACT_BUDGET_BYTES) add('artifact-budget', `${stored} artifact bytes stored, over the budget of ${ARTIFACT_BUDGET_BYTES}`);
  }
  if (!observation.settled) return;
  const code = delegation?.error?.code;
  const endedAsAgent = delegation?.state === story.final;
  const overBudget = (deviationOf(behaviour, 'artifactMetadata')?.bytes ?? 0) > ARTIFACT_BUDGET_BYTES && story.final === 'COMPLETED';
  if ((only === 'overLimitAnswer' || (only === 'artifactMetadata' && overBudget)) && !endedAsAgent && code !== 'LIMIT_EXCEEDED') {
    add('limit-not-journaled', `an answer over a limit ended ${delegation?.state ?? 'unjournaled'} with ${code ?? 'no code'}, not LIMIT_EXCEEDED`);
  }
  if (only === 'artifactMetadata' && overBudget && delegation?.state === 'COMPLETED') add('limit-not-journaled', 'artifacts over the budget journaled COMPLETED');
  const envelope = deviationOf(behaviour, 'envelopeId');
  const searches = observation.calls.filter((call) => call.site === 'ListTasks').length;
  if (only === 'envelopeId' && envelope!.id !== 'other' && searches > 0) {
    add('content-proof-ignored', `${searches} ListTasks though every ${envelope!.site} answer (id ${envelope!.id}) proved itself ours by its content`);
  }
  if ((observation.authHandlerRuns ?? 0) > AUTH_HANDLER_RUNS) add('auth-handler-unbounded', `the auth handler ran ${observation.authHandlerRuns} times for one attempt`);
  if (only === 'authChallenges' && deviationOf(behaviour, 'authChallenges')!.times >= ALWAYS && code !== 'AUTH') {
    add('auth-not-journaled', `an agent asking AUTH_REQUIRED for ever ended ${delegation?.state ?? 'unjournaled'} with ${code ?? 'no code'}, not AUTH`);
  }
  const finalAt = observation.agentTask?.finalAtMs;
  if (only === 'recycling' && endedAsAgent && finalAt !== undefined && observation.settledAtMs !== undefined && observation.settledAtMs - finalAt > SETTLE_AFTER_FINAL_MS) {
    add('slow-after-final', `settled ${observation.settledAtMs - finalAt} ms after the task ended, its streams delivering until cut (slow polling?)`);
  }
}

/** Every text the journal holds as the result: artifact text parts (appended chunks joined), the result, the status message. */
function journaledText(delegation: DelegationView): string {
  const artifacts = delegation.artifacts.map((artifact) => artifact.parts.map((part) => (part as { text?: string }).text ?? '').join('')).join('\n');
  return `${artifacts}\n${JSON.stringify(delegation.result ?? null)}\n${delegation.statusMessage ? messageText(delegation.statusMessage) : ''}`;
}

const messageText = (message: { parts: readonly unknown[] }): string => message.parts.map((part) => (part as { text?: string }).text ?? '').join('');
