/**
 * The message of a step attempt: the step's message, plus what earlier
 * attempts learned (their task ids and reasons, as a text part and as
 * `metadata.durableA2a.previousAttempts`), so the next agent does not repeat
 * them and the audit trail links them. Pure; used by the producer for first
 * attempts and by the workers for re-delegations.
 */
import type { OutgoingMessage } from './journal/record.ts';
import type { Step } from './workflow.ts';

/** What a new attempt carries of a failed one. */
export interface CarriedAttempt {
  taskId?: string;
  agentCardUrl: string;
  reason: string;
}

/** Builds attempt `attempt` of `step`; `previous` are the failed attempts before it (oldest first). */
export function attemptMessage(step: Step, previous: readonly CarriedAttempt[], workflowId: string, attempt: number): OutgoingMessage {
  const parts = 'text' in step.message ? [{ text: step.message.text }] : step.message.parts;
  const metadata: Record<string, unknown> = { ...(step.message.metadata ?? {}), durableA2a: { workflowId, step: step.name, attempt } };
  if (previous.length === 0) return { parts, metadata };
  const summary = previous.map((entry) => `task ${entry.taskId ?? '(none)'} at ${entry.agentCardUrl} ended ${entry.reason}`).join('; ');
  (metadata.durableA2a as Record<string, unknown>).previousAttempts = previous.map(({ taskId, agentCardUrl, reason }) => ({ taskId, agentCardUrl, reason }));
  return {
    parts: [...parts, { text: `Note: this request was tried before and did not succeed (${summary}). Do not repeat that outcome.` }],
    metadata,
  };
}
