/**
 * The local outcome codes: the `code` of a `RecordedError` that durable-a2a itself journals (as opposed to an
 * agent's A2A error code, which is journaled as the agent sent it). One const list, so a code is never spelled
 * twice and a switch over them is checked by the compiler.
 */

/** Every code the delegation core journals on its own account. */
export const OUTCOME_CODES = [
  /** The attempt passed its deadline (`attemptDeadlineMs` after it was journaled): re-delegable. */
  'DEADLINE_EXCEEDED',
  /** The agent denied a task it once had, over the not-found window: decide from verified effects. */
  'TASK_LOST',
  /** Follow cycles brought nothing new for the no-progress window: a person decides. */
  'NO_PROGRESS',
  /** The agent answered, again and again, with something we cannot read or prove ours: a person decides. */
  'PROTOCOL_ERROR',
  /** An answer (or event) arrived over one of our byte / count / depth limits; `RecordedError.limit` names it. */
  'LIMIT_EXCEEDED',
  /** A send that may have happened cannot be proven either way: a person decides. */
  'AMBIGUOUS',
  /** The search for our message failed round after round (P32: ListTasks answering HTTP 500): a person decides. */
  'SEARCH_UNAVAILABLE',
  /** The agent asked for credentials again and again, or refused ours round after round (P33, P34): a person decides. */
  'AUTH',
  /** The step declares a verifier this worker does not have; nothing was sent. */
  'VERIFIER_UNKNOWN',
  /** A compensation handler threw. */
  'HANDLER_FAILED',
  /** The workflow stopped before this held attempt was sent (it will never run). */
  'NEVER_SENT',
  /** The workflow was canceled before this attempt was sent. */
  'CANCELED_BEFORE_SEND',
  /** Every resend of the same messageId created nothing at the agent. */
  'SEND_ATTEMPTS_EXHAUSTED',
  /** An answer about another task (nothing of it applied). */
  'FOREIGN_TASK',
] as const;

/** A local outcome code (see `OUTCOME_CODES`). */
export type OutcomeCode = (typeof OUTCOME_CODES)[number];

