/**
 * Builds the journal row of a new delegation attempt. Ids (messageId,
 * contextId) are generated here, and the row is written before any I/O.
 */
import { randomUUID } from 'node:crypto';
import type { OutgoingMessage } from './record.ts';

export interface IntentInput {
  workflowId: string;
  step: string;
  attempt: number;
  kind?: 'step' | 'compensation';
  /** A compensation's own attempt (1 first; a person's `retry` after it failed starts the next). Default 1. */
  undoAttempt?: number;
  agentCardUrl: string;
  message: OutgoingMessage;
  /** Register a push notification config for this delegation. */
  push?: boolean;
  /** Journaled now, sent only when released (its step waits for earlier steps). */
  held?: boolean;
  /** The workflow's send priority (1 to 10, `send-priority.ts`); absent: the default, 5, not written. */
  priority?: number | undefined;
  now: number;
}

/**
 * Delegation id of a step attempt (`book-hotel.2`) or of the compensation of one (`book-hotel.1.undo`;
 * `undoAttempt` n > 1, a compensation a person sent back: `book-hotel.1.undo-2`). The kinds never collide
 * whatever the step names: a step attempt's id ends in `.<attempt>`, a compensation's in `.undo` or
 * `.undo-<n>`. Nothing reads a delegation's kind or attempt from its id: the record's fields say.
 */
export const delegationIdOf = (kind: 'step' | 'compensation', step: string, attempt: number, undoAttempt = 1): string =>
  kind === 'step' ? `${step}.${attempt}` : `${step}.${attempt}.undo${undoAttempt > 1 ? `-${undoAttempt}` : ''}`;

/** The hash fields of a new INTENT row (all strings, as Redis stores them). */
export function buildIntent(input: IntentInput): Record<string, string> {
  const kind = input.kind ?? 'step';
  const fields: Record<string, string> = {
    workflowId: input.workflowId,
    delegationId: delegationIdOf(kind, input.step, input.attempt, input.undoAttempt),
    step: input.step,
    kind,
    attempt: String(input.attempt),
    agentCardUrl: input.agentCardUrl,
    messageId: randomUUID(),
    requestedContextId: randomUUID(),
    state: 'INTENT',
    message: JSON.stringify(input.message),
    createdAt: String(input.now),
    updatedAt: String(input.now),
    version: '1',
    fence: '0',
  };
  if (input.held) fields.held = '1';
  if (input.priority !== undefined) fields.priority = String(input.priority);
  if (input.push) {
    fields.push = '1';
    fields.pushToken = randomUUID();
  }
  return fields;
}
