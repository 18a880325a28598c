/**
 * Every `code` a `RecordedError` may carry, as one const list: the outcome codes the delegation core journals on its
 * own account, the codes of the A2A client's errors (`A2A_CLIENT_ERROR_CODES`: the agent's A2A and JSON-RPC errors,
 * transport, stream, limits), the agent's own terminal states, and the few codes the journal and the workers' calls
 * write. A writer can only journal a code of this list (the compiler refuses another); a reader of a record written
 * by another release maps an unknown code to `UNRECOGNIZED` (the message keeps the text).
 */
import { A2A_CLIENT_ERROR_CODES } from '@durable-a2a/a2a/pure';

/** What the delegation core and the decider know of an outcome code (see `OUTCOMES`). */
interface OutcomeTraits {
  /**
   * An AMBIGUOUS step attempt journaled with this code waits for a person under the same attention code
   * (`ATTENTION_CODES`; any other AMBIGUOUS attempt waits as `AMBIGUOUS_SEND`), who may send it again
   * (`resolve retry`) or stop. `readOnlyRunsAgain`: whether a read-only step's attempt runs again without a person
   * (false when another try would end the same way: only a change of our own configuration helps).
   */
  person?: { readOnlyRunsAgain: boolean };
}

/** The local outcome codes: what the delegation core concludes on its own account, each with its traits. */
const OUTCOMES = {
  /** The attempt passed its deadline (`attemptDeadlineMs` after it was journaled): re-delegable. */
  DEADLINE_EXCEEDED: {},
  /** The agent denied a task it once had, over the not-found window: decide from verified effects. */
  TASK_LOST: {},
  /** Follow cycles brought nothing new for the no-progress window: a person decides. */
  NO_PROGRESS: { person: { readOnlyRunsAgain: true } },
  /** The agent answered, again and again, with something we cannot read or prove ours: a person decides. */
  PROTOCOL_ERROR: { person: { readOnlyRunsAgain: true } },
  /** An answer (or event) arrived over one of our byte / count / depth limits; `RecordedError.limit` names it. */
  LIMIT_EXCEEDED: {},
  /** A send that may have happened cannot be proven either way: a person decides. */
  AMBIGUOUS: {},
  /** The search for our message failed round after round (ListTasks answering HTTP 500): a person decides. */
  SEARCH_UNAVAILABLE: { person: { readOnlyRunsAgain: true } },
  /** The agent asked for credentials again and again, or refused ours round after round: a person decides. */
  AUTH: { person: { readOnlyRunsAgain: true } },
  /** The step declares a verifier this worker does not have; nothing was sent. */
  VERIFIER_UNKNOWN: {},
  /** A compensation handler threw. */
  HANDLER_FAILED: {},
  /** No agent can run the compensation (no registered agent has its skill and tags); nothing was sent. */
  NO_AGENT: {},
  /** The workflow stopped before this held attempt was sent (it will never run). */
  NEVER_SENT: {},
  /** The workflow was canceled before this attempt was sent. */
  CANCELED_BEFORE_SEND: {},
  /** Every resend of the same messageId created nothing at the agent. */
  SEND_ATTEMPTS_EXHAUSTED: {},
  /** An answer about another task (nothing of it applied). */
  FOREIGN_TASK: {},
  /**
   * Noted on a finished attempt (its state unchanged): another task of the agent, read after the attempt finished,
   * holds our message too, so the agent may have done the work twice (noteDuplicateTask-1.lua; a person looks).
   */
  DUPLICATE_TASK: {},
  /**
   * The agent could not be reached (connection refused, DNS, its Agent Card unavailable) for the step's
   * `unreachableForMs` or until the attempt deadline: nothing was sent, so the step may go to another agent.
   */
  AGENT_UNREACHABLE: {},
  /**
   * The workflow is stopping (canceled, or another step failed for good), the agent refused CancelTask, and its task
   * waits for an answer a stopping workflow never gives: it would wait for ever. A person decides (the task may have
   * done part of its work before it asked).
   */
  CANCEL_REFUSED: {},
  /**
   * The workers' own address policy refused the agent's URL (a loopback, private or link-local address not allowed
   * on the workers): nothing was sent, and no try can pass until their configuration changes. A person fixes it and
   * retries (the attention's message names the variable).
   */
  ADDRESS_REFUSED: { person: { readOnlyRunsAgain: false } },
  /** Nobody answered the agent's question within the step's `question.expiresAfterMs` (`onExpiry: 'fail'`): re-delegable. */
  QUESTION_EXPIRED: {},
} as const satisfies Record<string, OutcomeTraits>;

/** The local outcome codes (see `OUTCOMES`). */
export const OUTCOME_CODES = Object.keys(OUTCOMES) as [OutcomeCode, ...OutcomeCode[]];

/** A local outcome code (see `OUTCOMES`). */
export type OutcomeCode = keyof typeof OUTCOMES;

/** An outcome code whose AMBIGUOUS attempt waits for a person under the same attention code (`OutcomeTraits.person`). */
export type PersonOutcomeCode = { [K in OutcomeCode]: (typeof OUTCOMES)[K] extends { person: object } ? K : never }[OutcomeCode];

/** The `PersonOutcomeCode`s, in `OUTCOMES` order. */
export const PERSON_OUTCOME_CODES = OUTCOME_CODES.filter((code) => 'person' in OUTCOMES[code]) as PersonOutcomeCode[];

/**
 * What a person is asked about an AMBIGUOUS attempt that carries `code` (`OutcomeTraits.person`), or undefined when the
 * code is not a `PersonOutcomeCode` (the attempt waits as `AMBIGUOUS_SEND`).
 */
export function personOutcomeOf(code: string | undefined): { code: PersonOutcomeCode; readOnlyRunsAgain: boolean } | undefined {
  if (code === undefined || !Object.hasOwn(OUTCOMES, code)) return undefined;
  const traits: OutcomeTraits = OUTCOMES[code as OutcomeCode];
  return traits.person ? { code: code as PersonOutcomeCode, ...traits.person } : undefined;
}

/** The agent's own terminal verdicts, journaled as `TASK_<state>` with the status message as the reason. */
export const AGENT_STATE_CODES = ['TASK_FAILED', 'TASK_REJECTED', 'TASK_CANCELED'] as const;

/**
 * Codes of failed calls that are neither A2A client errors nor outcomes: a send that failed with something that is
 * not an A2A error (`SEND_FAILED`), a stream with no bytes for the quiet window (`STREAM_QUIET`), an event about
 * another task on our stream (`FOREIGN_EVENT`), a read with no task id (`NO_TASK_ID`), a task the journal found bound
 * to another id (`TASK_BOUND_ELSEWHERE`), a push about a task that is not ours (`PUSH_NOT_OURS`), an error of no known kind (`UNEXPECTED_ERROR`), and a code another release
 * wrote that this one does not know (`UNRECOGNIZED`).
 */
export const CALL_ERROR_CODES = ['SEND_FAILED', 'STREAM_QUIET', 'FOREIGN_EVENT', 'NO_TASK_ID', 'TASK_BOUND_ELSEWHERE', 'PUSH_NOT_OURS', 'UNEXPECTED_ERROR', 'UNRECOGNIZED'] as const;

/** Every code a `RecordedError` may carry (see the module header). */
export const RECORDED_ERROR_CODES = [...new Set([...OUTCOME_CODES, ...A2A_CLIENT_ERROR_CODES, ...AGENT_STATE_CODES, ...CALL_ERROR_CODES])] as [
  RecordedErrorCode,
  ...RecordedErrorCode[],
];

/** A code of `RECORDED_ERROR_CODES`. */
export type RecordedErrorCode =
  | OutcomeCode
  | (typeof A2A_CLIENT_ERROR_CODES)[number]
  | (typeof AGENT_STATE_CODES)[number]
  | (typeof CALL_ERROR_CODES)[number];

const known = new Set<string>(RECORDED_ERROR_CODES);

/** True when `code` is one of `RECORDED_ERROR_CODES`. */
export const isRecordedErrorCode = (code: unknown): code is RecordedErrorCode => typeof code === 'string' && known.has(code);

/**
 * The journal code of a thrown error: its own `code` when it is one of ours (every A2A client error, and the workers'
 * typed errors), `UNEXPECTED_ERROR` for anything else (a Node or library error; its text stays in the message).
 */
export const recordedErrorCodeOf = (error: unknown): RecordedErrorCode => {
  const code = (error as { code?: unknown } | null | undefined)?.code;
  return isRecordedErrorCode(code) ? code : 'UNEXPECTED_ERROR';
};
