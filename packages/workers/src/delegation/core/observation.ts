/**
 * Everything the outside world can tell a delegation, as one union (`Observation`). An adapter in `delegation/io/`
 * talks to an agent (or runs a handler, or reads a clock) and returns one of these; `delegation/apply.ts` feeds it
 * to the table (`transitions.ts`). An observation carries what it proves as three separate facts, and each row
 * reads the one it needs (field cases round 3 §A):
 *   delivery   did the agent get our message?          none | maybe | received
 *   ownership  is this our task?                        proven (by what) | unknown | disproven
 *   effect     may the agent have done the work?       none | maybe | done
 * An answer we cannot read proves delivery, never the absence of effect; absence of evidence is not foreignness.
 * What a direct Message answer proves is decided here once (`messageAnswerProof`) for every path that receives one.
 * Pure: nothing here performs I/O.
 */
import type { Message, StreamResponse, Task } from '@durable-a2a/a2a';
import type { AgentInterfaceRef, QuestionExpiryAction, RecordedError, RecordedErrorCode } from '@durable-a2a/shared';
import type { FollowPlan } from './next.ts';

/** Did the agent get our message? `none`: the request never left (or was refused before it was read). */
export type Delivery = 'none' | 'maybe' | 'received';

/** Is this our task? Proven by our request id, our messageId in its history, our context, or our task id. */
export type Ownership =
  | { kind: 'proven'; by: 'request-id' | 'message-id' | 'context' | 'task-id' | 'stream' }
  | { kind: 'unknown' }
  | { kind: 'disproven'; reason: string };

/** What we asked, to judge an answer by: the context we sent (none when the agent chooses it) and the task we hold. */
export interface Asked {
  contextId?: string;
  taskId?: string;
}

/**
 * What a direct Message answering our SendMessage proves (spec §3.1.1: a send answers a Task or a Message; §5.5
 * Message `role`, `contextId`, `taskId`). The request id (or the stream we opened) proves delivery, never that the
 * Message is our result; its own facts decide, for the SendMessage answer and a send stream's first event alike:
 *   - `role` other than the agent's (an echo of our own message): not the agent's answer;
 *   - a `contextId` that is not ours (when we sent one), or a `taskId` that is not the task we hold: not shown ours
 *     (a Message carries no history to show our messageId in, as a Task answered in another context does, R16);
 *   - then a `taskId` (`namesTask`): a task may exist whose result this Message is not (an interim word about it):
 *     the task is bound and read, settled from what the reads show; only a TaskNotFound for it (an SDK executor that
 *     copies its request's task id into its reply and keeps no task) makes the Message the whole answer;
 *   - else a plain reply: its parts are the result.
 * Not ours: ownership disproven, delivery received, effect maybe (the send-answered row: a search by our messageId,
 * or a person); never COMPLETED from it.
 */
export function messageAnswerProof(message: Message, asked: Asked, by: 'request-id' | 'stream'): { ownership: Ownership; namesTask?: string } {
  if (message.role !== 'ROLE_AGENT') return { ownership: { kind: 'disproven', reason: `the answer is a Message of role ${message.role} (${message.messageId}), not the agent's` } };
  const contextId = message.contextId || undefined;
  if (contextId !== undefined && asked.contextId !== undefined && contextId !== asked.contextId) {
    const named = message.taskId ? ` naming task ${message.taskId}` : '';
    return { ownership: { kind: 'disproven', reason: `the answer is a Message in context ${contextId}${named}, not ours ${asked.contextId}` } };
  }
  const taskId = message.taskId || undefined;
  if (taskId !== undefined && asked.taskId !== undefined && taskId !== asked.taskId) {
    return { ownership: { kind: 'disproven', reason: `the answer is a Message about task ${taskId}, not our task ${asked.taskId}` } };
  }
  const ownership: Ownership = { kind: 'proven', by: contextId !== undefined && asked.contextId !== undefined ? 'context' : by };
  return taskId === undefined ? { ownership } : { ownership, namesTask: taskId };
}

/** May the agent have done the work? `none` only when an answer proves nothing was created. */
export type Effect = 'none' | 'maybe' | 'done';

/** An answer that arrived but cannot be accepted (over a limit, unreadable, not ours): its code, text and limit. */
export interface Unacceptable {
  /** A2A or local code (`LIMIT_EXCEEDED`, `RESPONSE_ID_MISMATCH`, `UNKNOWN_WIRE_VALUE`, …). */
  code: RecordedErrorCode;
  message: string;
  /** The limit that was exceeded (`LimitExceededError.limit`), when it was a limit. */
  limit?: string;
  /** The artifact refused over the limit, when the refusal knew it (`LimitExceededError.artifactId`). */
  artifactId?: string;
  /** The outcome code when rounds of this answer end with a person (`AUTH`: our credentials refused, P34). Default PROTOCOL_ERROR. */
  outcome?: 'AUTH';
}

/**
 * How long an attempt may wait for an agent that cannot be reached (`core/policy.ts` unreachableVerdict): until the
 * attempt deadline (`deadlineAt`, ms since epoch), or `unreachableForMs` after its first unreachable try if sooner.
 */
export interface UnreachableBounds {
  deadlineAt: number;
  /** The step's `unreachableForMs`; undefined: the attempt deadline alone. */
  unreachableForMs?: number;
}

/** Which call a TaskNotFound (or a read) answered. */
export type AgentCall = 'get-task' | 'subscribe' | 'cancel' | 'reply' | 'push' | 'list-tasks';

/** What a search by our messageId found (`io/search.ts`, spec §3.1.4 ListTasks). */
export type SearchFinding =
  /** `complete`: the task was read with its artifacts and full history (GetTask, or ListTasks with includeArtifacts). */
  | { kind: 'found'; task: Task; complete: boolean; ownership: Ownership }
  /** More than one task holds our messageId (`taskIds`, each once): the work may have been done twice; none is provably the one. */
  | { kind: 'several'; taskIds: string[] }
  | { kind: 'not-found'; inconclusive: boolean; contextRefused: boolean; candidates: string[]; paginationBroken: boolean }
  | { kind: 'unsupported' }
  /** The search itself failed: `retryable` a drop or an overloaded agent (HTTP 5xx), else an answer retrying will not change. */
  | { kind: 'failed'; error: Unacceptable; retryable: boolean };

/** Why a search was made: to resolve a maybe-sent INTENT, to check before LOST, or to read a task GetTask could not. */
export type SearchPurpose = 'reconcile' | 'lost-check' | 'read';

/**
 * Why the artifacts a stream delivered are a partial view of the task's (A2A stream events carry no sequence number,
 * so a repeated, dropped or reordered chunk cannot be told from the stream): `appended` the stream delivered a chunk
 * to append (`append: true`) or one announcing more (`lastChunk: false`); `resubscribed` an earlier stream of the task
 * ended before its finished status (chunks it journaled may be repeated or missing); `no-snapshot` a subscription
 * whose first event was no Task snapshot (spec §3.1.6) while the journal held artifacts from before it (a send's
 * answer, an earlier read of the task still working: what the agent added since may be missing, attack13). A Task
 * event carrying artifacts (a whole view) clears it until the next such chunk.
 */
export type PartialArtifacts = 'appended' | 'resubscribed' | 'no-snapshot';

/** How a partial view came about, for log lines and warnings (`PartialArtifacts`). */
export const PARTIAL_ARTIFACTS_CAUSE: Readonly<Record<PartialArtifacts, string>> = {
  appended: 'appended chunks',
  resubscribed: 'a resubscription',
  'no-snapshot': 'a subscription without its first snapshot',
};

/**
 * A stream's finished status, held back until a full read of the task (the stream's artifacts were a partial view):
 * the read's artifacts replace the streamed ones; when the read fails or shows no finished task with artifacts,
 * this status is journaled as streamed (the streamed artifacts kept, with a warning).
 */
export interface HeldBack {
  responses: [StreamResponse];
  partialArtifacts: PartialArtifacts;
}

/** Everything the outside world can tell a delegation (see the module header). */
export type Observation =
  /**
   * The agent answered our SendMessage (or, while it held the send, a search found our task). `summary`: the task is a
   * ListTasks summary (no artifacts by the spec's default), not the agent's answer or a full read.
   */
  | {
      kind: 'send-answered';
      answer: { message: Message } | { task: Task };
      ownership: Ownership;
      via: 'answer' | 'search-while-held' | 'stream';
      summary?: boolean;
      /**
       * A Message answer naming a task of ours (`messageAnswerProof`): that task is bound and read, the Message kept
       * with it; it is the result only when the agent then says the task does not exist (transitions.ts `unreadNamedTask`).
       */
      namesTask?: string;
      /**
       * A streaming send's first event (`via` 'stream'): the id of that stream, whose rest the follow reads under the
       * same id (`StreamSource.stream`), so the task's first status and the events after it are one ordered channel
       * (applyStatus-5.lua "Ordered channels"; streamorder31: before, the first status was ordered by its stamp alone,
       * and an event after it stamped earlier by another replica was 'stale').
       */
      stream?: string;
    }
  /** SendMessage failed. `afterMark`: the request may have left. `effect: 'none'`: the answer is a refusal (the A2A error table's `effect` column). */
  | {
      kind: 'send-failed';
      afterMark: boolean;
      delivery: Delivery;
      effect: Effect;
      error: RecordedError;
      /** Retrying cannot help (an A2A refusal, a typed protocol error). */
      permanent: boolean;
      /** This was the job's last attempt (BullMQ `attempts`). */
      lastAttempt: boolean;
      /** Set when the answer arrived but exceeded a limit (then delivery is `received`). */
      unacceptable?: Unacceptable;
      /** The agent refused our credentials (HTTP 401/403, P34): nothing was created; fresh credentials may pass. */
      credentialsRefused?: boolean;
      /** The interface refused our protocol version (-32009, P37) and the card lists this one after it: try it. */
      nextInterface?: AgentInterfaceRef;
      /**
       * The agent could not be reached and nothing was created (delivery `none`: connection refused, DNS failure, its
       * Agent Card unavailable, a request that never left), so the attempt may wait for it within these bounds.
       */
      unreachable?: UnreachableBounds;
      /**
       * Our own address policy refused the agent's URL (the card's or an interface's) before anything left: not the
       * agent's verdict, and the same on every try until the workers' configuration changes. `message` says what is
       * refused and the exact fix (the variable and the `addressPolicy` switch).
       */
      addressRefused?: { message: string };
    }
  /**
   * A send that may have left and cannot be resolved here (the mark is written, a replica did not confirm it, the
   * journal refused a second send): the reconciler decides once it has settled (`since`, default the mark's time).
   */
  | { kind: 'send-in-doubt'; since?: number; reason: string }
  /**
   * One stream event, or an artifact update and the status update that arrived with it. `partialArtifacts`: the
   * artifacts streamed so far are a partial view (see `PartialArtifacts`), so a finished status is not journaled
   * from the stream alone. `stream`: the id of the stream it came on (one per stream read: `readStream`), an ordered
   * channel: its events are journaled in the agent's order whatever their timestamps (applyStatus-5.lua "Ordered
   * channels").
   */
  | { kind: 'stream-event'; responses: [StreamResponse] | [StreamResponse, StreamResponse]; partialArtifacts?: PartialArtifacts; stream?: string }
  /**
   * The stream ended without an error: `how` as the SSE reader saw it (`closed`, `interrupted`, …); `delivered`: the
   * updates (status, artifact, message) it delivered before it ended, task snapshots not counted (P36: a stream that
   * delivered updates is not "no progress"; default 0).
   */
  | { kind: 'stream-ended'; how: string; delivered?: number }
  /** The stream failed. `unacceptable`: an event over a limit or unreadable; `retryable`: a drop; `delivered` as for `stream-ended`. */
  | { kind: 'stream-failed'; code: RecordedErrorCode; retryable: boolean; unacceptable?: Unacceptable; quiet?: boolean; delivered?: number }
  /**
   * A read of the task (GetTask, CancelTask's answer, a reply's answer, a listed task). `complete`: read with its
   * artifacts and history (a ListTasks summary is not); `cycle`: part of a follow cycle (the progress rule applies);
   * `afterRefused`: the read makes up for a stream event we refused over a limit (A32).
   */
  | { kind: 'task-read'; task: Task; call: AgentCall; complete: boolean; ownership: Ownership; why: string; cycle: boolean; afterRefused?: Unacceptable; afterLiveStream?: boolean; heldBack?: HeldBack }
  /**
   * The agent says it has no such task, from any call: the spec's TaskNotFoundError as its binding speaks it
   * (`taskNotFoundProven`: JSON-RPC -32001, the ErrorInfo reason TASK_NOT_FOUND on HTTP+JSON and gRPC; a bare 404 or
   * NOT_FOUND is a `read-failed` answer we cannot use, never this kind). `afterFoundAgain`: the denial
   * answers the full read of a task the check before LOST found again in a summary (attack 30).
   */
  | { kind: 'task-not-found'; call: AgentCall; heldBack?: HeldBack; afterFoundAgain?: boolean }
  /** A read failed: a drop (`retryable`), or an answer we cannot accept (`unacceptable`). */
  | { kind: 'read-failed'; call: AgentCall; code: RecordedErrorCode; retryable: boolean; unacceptable?: Unacceptable; why: string; cycle: boolean; afterLiveStream?: boolean; heldBack?: HeldBack }
  /** A search by our messageId (see `SearchFinding`). `deduplicates`: the agent is listed as deduplicating messageIds; `deadlineAt`: the attempt's deadline (a proven absence past it is not resent). */
  | { kind: 'search-result'; purpose: SearchPurpose; finding: SearchFinding; deduplicates: boolean; why?: string; deadlineAt?: number; heldBack?: HeldBack }
  /** The agent has our reply (its answer, or GetTask shows it). `replyMessageId`: the reply journaled. */
  | { kind: 'reply-delivered'; replyMessageId: string; task?: Task; ownership: Ownership }
  /** The agent refused our reply (-32602, -32005): the question is open again. */
  | { kind: 'reply-refused'; replyMessageId: string; message: string }
  /**
   * CancelTask was answered (or, when refused, GetTask read the task instead; `refused`: the agent's refusal, or with
   * `unreadable` an answer we could not read: what it said is unknown, so the task is not known to be canceled).
   * `parkedRounds`: how many CancelTask answers so far left the task waiting for an answer (counted fleet-wide).
   */
  | { kind: 'cancel-answered'; task: Task; ownership: Ownership; refused?: string; unreadable?: boolean; parkedRounds?: number }
  /** The workflow was canceled before this attempt had a task. `mayHaveSent`: the mark is written. */
  | { kind: 'cancel-before-task'; mayHaveSent: boolean }
  /** An authorized push notification (spec §4.3.3) carried a task or an event. */
  | { kind: 'push-received'; responses: [StreamResponse] }
  /** The attempt passed its deadline (`policy.deadlineAt`). */
  | { kind: 'deadline-passed'; deadlineAt: number }
  /**
   * The open question `questionKey` passed its step's `question.expiresAfterMs` (at `expiresAt`, ms since epoch)
   * unanswered (`question-life.ts`, from the reconciler): `onExpiry` is what is done; `reply` the default answer
   * (with `answer`), journaled as the reply under a new messageId.
   */
  | ({ kind: 'question-expired'; questionKey: string; expiresAt: number } & (
      | { onExpiry: Exclude<QuestionExpiryAction, 'answer'> }
      | { onExpiry: 'answer'; reply: { messageId: string; text: string } }
    ))
  /** The step declares a verifier this worker does not have (nothing is sent). */
  | { kind: 'verifier-missing'; verifier: string }
  /** A compensation journaled without an agent: no registered agent has its target's `skill` (nothing is sent). */
  | { kind: 'agent-missing'; skill: string }
  /** A compensation handler ran (no agent). */
  | { kind: 'handler-ran'; ok: true; handler: string; evidence: unknown }
  | { kind: 'handler-ran'; ok: false; handler: string; message: string }
  /** A compensation handler's run was interrupted (marked, no outcome): handlers are idempotent on the messageId, so it runs again. */
  | { kind: 'handler-interrupted' }
  /** The verifier (an independent read path) found the effect present, absent or unknown. */
  | { kind: 'effect-verified'; effect: 'present' | 'absent' | 'unknown'; evidence: unknown }
  /** Our side closed a stream that was still good (the agent's share of follow slots is full): it is followed anew. */
  | { kind: 'stream-handed-off'; reason: string }
  /** The journal row was looked at (a reconcile, a follow job, a verifier that found the effect already journaled): nothing new from the agent. */
  | { kind: 'row-checked'; plan?: FollowPlan }
  /**
   * The agent named, for our message, a task the journal binds to another delegation (`bindTask`: the write was
   * refused and journaled as a protocol error). `reason` names the task and its holder.
   */
  | { kind: 'task-bound-elsewhere'; reason: string }
  /**
   * Tasks refused pushes showed holding our message that we could not keep or read to a conclusion (`lost`: over the
   * pending cap, an id too long, reads that kept failing or answers we cannot accept), and the suspects still waiting
   * unread (`pending`): the agent may hold our message twice, and no read of ours can tell now.
   */
  | { kind: 'suspects-unread'; lost: number; pending: readonly string[] }
  /** A follow must wait (the agent's share of follow slots is full, a lease holder went away): follow again after `delayMs`. */
  | { kind: 'follow-deferred'; delayMs: number; resubscription: number; reason: string }
  /**
   * A send must wait for its agent before the mark (nothing sent): every slot of the agent held across the fleet,
   * this process's share of send slots for it full, its send rate, or a pause it asked for. Try again at `untilMs`.
   */
  | { kind: 'send-deferred'; untilMs: number; reason: 'slots-full' | 'share-full' | 'rate' | 'paused' }
  /** The workflow stopped before this held INTENT was sent (it will never run). */
  | { kind: 'workflow-stopped' }
  /** The agent's auth handler ran its rounds and the agent asks again (P33): `challenge` is the agent's text. */
  | { kind: 'auth-exhausted'; rounds: number; challenge: string }
  /** Another worker took the delegation over (fence or lease lost): this run stops. */
  | { kind: 'lease-lost' }
  /** This worker is closing: the delegation goes to another one at once. */
  | { kind: 'closing' };

/** The kind names, for exhaustive tables and tests. */
export type ObservationKind = Observation['kind'];

/** Every observation kind (the table test walks them all). */
export const OBSERVATION_KINDS = [
  'send-answered',
  'send-failed',
  'send-in-doubt',
  'stream-event',
  'stream-ended',
  'stream-failed',
  'task-read',
  'task-not-found',
  'read-failed',
  'search-result',
  'reply-delivered',
  'reply-refused',
  'cancel-answered',
  'cancel-before-task',
  'push-received',
  'deadline-passed',
  'question-expired',
  'verifier-missing',
  'agent-missing',
  'handler-ran',
  'handler-interrupted',
  'effect-verified',
  'row-checked',
  'task-bound-elsewhere',
  'suspects-unread',
  'follow-deferred',
  'send-deferred',
  'stream-handed-off',
  'workflow-stopped',
  'auth-exhausted',
  'lease-lost',
  'closing',
] as const satisfies readonly ObservationKind[];

/**
 * What an observation carrying an agent's answer becomes when processing it failed (`unacceptable`: over a limit, or
 * a fault of the runtime on its content, e.g. a stack overflow encoding it for the journal): the answer arrived, so
 * delivery is `received` and the effect may be done; what it says is unknown. A SendMessage answer (or the task a
 * search found while the agent held it) is a `send-failed` after the mark (over a limit: a person; else the search,
 * which never resends once an answer arrived); a stream event or a push a refused event (one full read makes up for
 * it, A32); a search's finding a failed search; any other read a `read-failed` the progress rule counts. None of these
 * asks again for what failed in the same step, so a chain of them is bounded. Undefined for an observation that
 * carries no answer: its failure is ours, not the agent's.
 */
export function unprocessedAnswer(observation: Observation, unacceptable: Unacceptable): Observation | undefined {
  const { code } = unacceptable;
  const readFailed = (call: AgentCall, why: string, cycle = false): Observation => ({ kind: 'read-failed', call, code, retryable: false, unacceptable, why, cycle });
  switch (observation.kind) {
    case 'send-answered': {
      const error: RecordedError = { code, message: unacceptable.message, retryable: false, delivery: 'received', answer: 'unreadable', ...(unacceptable.limit ? { limit: unacceptable.limit } : {}) };
      return { kind: 'send-failed', afterMark: true, delivery: 'received', effect: 'maybe', error, permanent: true, lastAttempt: false, unacceptable };
    }
    case 'task-read':
      return readFailed(observation.call, `${observation.why}; the answer could not be processed`, observation.cycle);
    case 'search-result':
      // The search's answer cannot be used: a failed search (bounded rounds, then a person), never another search.
      return observation.finding.kind === 'found' ? { ...observation, finding: { kind: 'failed', error: unacceptable, retryable: false } } : undefined;
    case 'stream-event':
    case 'push-received':
      return { kind: 'stream-failed', code, retryable: false, unacceptable };
    case 'cancel-answered':
      return readFailed('cancel', 'the CancelTask answer could not be processed');
    case 'reply-delivered':
      return observation.task ? readFailed('reply', 'the answer to our reply could not be processed') : undefined;
    default:
      return undefined;
  }
}
