/**
 * The one table of the delegation core: `(record, observation, policy) → { write?, next }`. Every observation kind
 * has its row here (the `switch` is exhaustive: the compiler refuses a missing kind), and every row names exactly
 * one `Next`. `delegation/apply.ts` performs the write (the journal's transition scripts) and then the next.
 * Pure: no I/O; the clock and randomness come from `policy`.
 *
 * The three facts an observation carries are read where they decide (field cases round 3 §A):
 *   - an answer that arrived but cannot be accepted proves delivery: the attempt is never re-delegated blind
 *     (a person decides, with the evidence), and never shown as a result-less success;
 *   - a partial read (a ListTasks summary, a stream of appended chunks) identifies a task but never settles it: the
 *     outcome comes from a full read;
 *   - TaskNotFound from any call (the binding's own, never a bare 404 or NOT_FOUND: `readFailure`) is one row (a
 *     window of answers, then a ListTasks check, then LOST), but for a task
 *     a Message answer named and nothing read since: at the window's end that Message was the whole answer
 *     (COMPLETED with it).
 */
import { isAwaitingAnswer, isFinished, isParked, isTerminalTaskState, journalStateOf, refusedResultOf } from '@durable-a2a/shared/pure';
import type { Message, StreamResponse, Task } from '@durable-a2a/a2a';
import type { AgentInterfaceRef, DelegationRecord, JournalState, LimitRefusal, QuestionExpiryAction, RecordedError } from '@durable-a2a/shared';
import type { Next } from './next.ts';
import { PARTIAL_ARTIFACTS_CAUSE, type AgentCall, type HeldBack, type Observation, type SearchFinding, type Unacceptable } from './observation.ts';
import { earlierSendsMayHaveLeft, fullJitterDelayMs, mayHaveReachedAgent, namedTask, notFoundVerdict, questionOpen, unboundEvidence, unreachableVerdict, type Policy } from './policy.ts';
import { overLimit, refusalNoted, refusalOf, refusedResultJudged, resultShown } from './refused-result.ts';
import { deadlineWithEvidence, foreignEventHolder, foreignHolder, namedTaskNotOurs, otherHolder, searchRow, severalHolders, suspectsUnread, type NamedTaskRead } from './search-row.ts';

/** How a write is guarded: by the run's fencing token, by the version the caller read, or not at all (an agent's answer about our send is the truth whoever holds the row). */
export type Guard = 'fence' | 'version' | 'none';

/** What a step writes through the journal (one transition script each). */
export type Write =
  /**
   * A full Task read replaces state (and artifacts); `bindAgent`: a first task id is bound to the row's agent;
   * `namedTaskUnread`: the Task is the placeholder of a task a Message answer named (`namedTaskRow`), the row flagged
   * unread until a status of the agent is applied.
   */
  | { kind: 'snapshot'; task: Task; guard: Guard; bindAgent?: boolean; namedTaskUnread?: true }
  /** Stream (or push) events, forward only; two events are an artifact update and its status update (one script). */
  | { kind: 'events'; responses: [StreamResponse] | [StreamResponse, StreamResponse] }
  /**
   * Our own decision: a local outcome or a state with its reason. `unsent`: an outcome saying nothing of ours was sent
   * (FAILED AGENT_UNREACHABLE), written only while the row is as the run's try left it (`marked`: its own mark;
   * `unmarked`: no mark; `as-read`: the row the step read, unmarked (a marked one is refused: attack36), with its version: the reconciler's
   * deadline, deadline35), with no suspect, task or refused result on it (applyStatus-5.lua ARGV[21]); else nothing is
   * written and the reconciler decides.
   */
  | { kind: 'outcome'; state: JournalState; guard: Guard; error?: RecordedError; result?: unknown; contextId?: string; unsent?: 'marked' | 'unmarked' | 'as-read' }
  /** A send error on a row that stays INTENT: the reconciler reads its `delivery` (never downgraded from `received`). */
  | { kind: 'note-send-error'; error: RecordedError }
  /** A try that could not reach the agent (nothing created): the row waits for `nextTryAt`; `marked`: the try's send mark is cleared. */
  | { kind: 'note-unreachable'; error: RecordedError; nextTryAt: number; marked: boolean }
  /** A send that waits for its agent's flow control before the mark: the row waits for `nextTryAt` (nothing sent). */
  | { kind: 'note-slot-wait'; nextTryAt: number }
  /** A protocol error an agent caused without ending the attempt. */
  | { kind: 'note-protocol-error'; error: RecordedError }
  /**
   * A part of the result refused over a limit (A32): journaled on the row (`refusedResult`, `Journal.noteRefusedResult`)
   * until a full read shows the result; `refusal.artifactId` the refused artifact, when the refusal knew it.
   */
  | { kind: 'note-refused-result'; refusal: LimitRefusal }
  /** One more TaskNotFound answer (count, first time). */
  | { kind: 'note-not-found' }
  /** The send is released so the same messageId goes again (on `agentInterface` when given: P37). */
  | { kind: 'release-for-resend'; contextRefused: boolean; agentInterface?: AgentInterfaceRef; provenAbsent?: boolean }
  /** The reply's fate, under the reply's 'sending' lease (the run's fence and token). */
  | { kind: 'mark-reply'; replyMessageId: string; replyState: 'sent' | 'refused'; reason: string }
  /**
   * The open question expired unanswered (compare-and-set against an answer: expireQuestion-2.lua), with what is
   * done; with `answer`, `reply` is journaled as the reply (by `expiry`). A refused expiry ends the step's writes.
   */
  | ({ kind: 'expire-question'; questionKey: string } & ({ action: Exclude<QuestionExpiryAction, 'answer'> } | { action: 'answer'; reply: { messageId: string; text: string } }))
  /** The verifier's finding, journaled once. */
  | { kind: 'record-effect'; effect: 'present' | 'absent' | 'unknown'; evidence: unknown };

/**
 * One row's result: the writes (in order; most rows have one or none) and exactly one `Next`. `warning`: what the
 * executor logs as a warning with the write (a result kept from a partial view).
 */
export interface Step {
  write?: Write | readonly [Write, Write];
  next: Next;
  warning?: string;
}

const route: Next = { kind: 'route' };

/** P36: the stream delivered events before it ended: the read after it starts a fresh no-progress run. */
const live = (observation: { delivered?: number }): { afterLiveStream?: true } => ((observation.delivered ?? 0) > 0 ? { afterLiveStream: true } : {});

/**
 * The table (see the module header). `record` is the row as last read or written by the caller; the journal's
 * scripts remain the last word on forward-only rules (a stale `record` can only make a row ask again).
 * Whatever row a Task comes through (a read, CancelTask's answer or the GetTask after its refusal, a search, a stream
 * or push Task, the reply's answer), the first one applied to a task a Message answer named is judged for ownership
 * first (`namedTaskJudged`): one rule for every path, not one check per row.
 */
export function transition(record: DelegationRecord, observation: Observation, policy: Policy): Step {
  const row = tableRow(record, observation, policy);
  const step = namedTaskJudged(record, observation, row) ?? row;
  // A32: a part of the result refused over a limit is judged on every finishing path (`refused-result.ts`).
  return refusedResultJudged(record, observation, step) ?? step;
}

/** The table's rows, before the named task's judgement (`transition`). */
function tableRow(record: DelegationRecord, observation: Observation, policy: Policy): Step {
  // A finished row never changes again: whatever arrives, it is (re)settled, once more at most.
  // (The verifier's finding is the one write a finished row still takes.)
  if (isFinished(record.state) && observation.kind !== 'lease-lost' && observation.kind !== 'closing' && observation.kind !== 'effect-verified') return { next: { kind: 'settle' } };
  if ('heldBack' in observation && observation.heldBack) return afterPartialStream(record, observation, observation.heldBack);
  switch (observation.kind) {
    case 'send-answered': {
      const { answer, ownership } = observation;
      if (ownership.kind === 'disproven' || ('message' in answer && ownership.kind !== 'proven')) {
        // The agent had our message (delivery received); what it answered is not shown ours (a Task, or a Message by
        // `messageAnswerProof`): the work may have happened (effect maybe), never COMPLETED from it: a search decides.
        const reason = ownership.kind === 'disproven' ? ownership.reason : 'the answer is not shown ours';
        return {
          write: { kind: 'note-send-error', error: { code: 'FOREIGN_TASK', message: reason, retryable: false, delivery: 'received', answer: 'unreadable' } },
          next: { kind: 'ask-reconciler' },
        };
      }
      if ('message' in answer) {
        // A Message naming a task of ours: the task is bound and followed, its result read from it, never from this
        // interim Message (kept: the task not found, it was the whole answer). A plain direct reply completes the
        // delegation with its parts (spec §3.1.1).
        if (observation.namesTask !== undefined) return namedTaskRow(record, answer.message, observation.namesTask);
        return { write: { kind: 'outcome', state: 'COMPLETED', guard: 'none', result: { message: answer.message }, ...(answer.message.contextId ? { contextId: answer.message.contextId } : {}) }, next: route };
      }
      // A35: a summary found while the send was held identifies the task; a finished one is read in full first.
      if (observation.summary && isTerminalTaskState(answer.task.status.state)) {
        return { next: { kind: 'read-once', why: 'a summary of a finished task found by our messageId while the send was held', taskId: answer.task.id } };
      }
      // The first subscription of new work is not rate-limited; a streaming send keeps reading its own stream.
      const next: Next = observation.via === 'stream' ? { kind: 'continue' } : { kind: 'route', plan: { again: false } };
      return { write: { kind: 'snapshot', task: answer.task, guard: 'none', bindAgent: record.taskId === undefined }, next };
    }
    case 'send-failed': {
      const { afterMark, delivery, error, permanent, lastAttempt, unacceptable } = observation;
      if (afterMark && unacceptable?.limit && delivery === 'received') {
        // A31: the answer arrived (delivery) but is over a limit: the agent may have done the work (effect maybe). The
        // refusal is journaled as every refused part of the result is (`refusedResult`), whatever the outcome's write.
        return { write: refusalNoted(unacceptable), next: overLimit(unacceptable, 'the SendMessage answer') };
      }
      if (afterMark && observation.credentialsRefused) {
        // P34: a 401/403 proves nothing was created. Credentials are asked per request: the same messageId is resent
        // in bounded rounds with backoff; then a person (AUTH), the agent's task untouched, no other agent picked.
        if (record.resendCount + 1 >= policy.sendAttempts) {
          const message = `the agent refused our credentials on ${record.resendCount + 1} SendMessage attempts (last: ${error.message}); nothing was created`;
          return { next: { kind: 'needs-person', code: 'AUTH', message, delivery: 'received' } };
        }
        const delayMs = fullJitterDelayMs(record.resendCount + 1, policy.followBackoff, policy.random);
        return { write: { kind: 'release-for-resend', contextRefused: false }, next: { kind: 'resend', contextRefused: false, delayMs } };
      }
      if (afterMark && observation.nextInterface && record.resendCount + 1 < policy.sendAttempts) {
        // P37: -32009 proves nothing was created; the card lists another interface we speak after this one: one try
        // there with the same messageId (card order, forward only: bounded by the card's interfaces).
        return { write: { kind: 'release-for-resend', contextRefused: false, agentInterface: observation.nextInterface }, next: { kind: 'resend', contextRefused: false } };
      }
      if (observation.addressRefused && delivery === 'none') {
        // Our own address policy refused the URL before anything left: not the agent's verdict and not the step's
        // failure (it would spend the budget on a configuration): a person fixes the workers' configuration and
        // retries from the attention (a retry approved does not count against the budget).
        return { next: { kind: 'needs-person', code: 'ADDRESS_REFUSED', message: observation.addressRefused.message, delivery: 'not-sent' } };
      }
      if (observation.unreachable && delivery === 'none' && observation.effect === 'none' && !permanent && record.state === 'INTENT' && record.taskId === undefined) {
        // The agent could not be reached and nothing was created: the attempt waits for it (a restart is not a failure).
        return waitForAgent(record, observation, policy);
      }
      if (afterMark && observation.effect !== 'none') {
        // The agent may have created the task: never FAILED, never resent blind; a search decides.
        const next: Next = delivery === 'maybe' ? { kind: 'ask-reconciler', dueAt: policy.now() + policy.sendSettleMs } : { kind: 'ask-reconciler' };
        return { write: { kind: 'note-send-error', error }, next };
      }
      // Nothing was created (a refusal after the mark) or nothing left (before it).
      if ((permanent || lastAttempt) && record.taskId === undefined && earlierSendsMayHaveLeft(record) > 0) {
        // review36: THIS try created nothing, but an earlier SendMessage of ours left and was released for a resend
        // without proof of absence (attack36): the agent may hold our message; FAILED would re-delegate. A person.
        return deadlineWithEvidence(record, `SendMessage failed (${error.code}: ${error.message}) and is not tried again (${permanent ? 'a permanent error' : 'the last attempt'})`);
      }
      if (permanent || lastAttempt) return { write: { kind: 'outcome', state: 'FAILED', guard: 'fence', error: { ...error, retryable: !permanent } }, next: route };
      return afterMark ? { write: { kind: 'note-send-error', error }, next: { kind: 'retry' } } : { next: { kind: 'retry' } };
    }
    case 'send-in-doubt':
      return { next: { kind: 'ask-reconciler', dueAt: (observation.since ?? record.sendStartedAt ?? policy.now()) + policy.sendSettleMs } };
    case 'stream-event': {
      // Another task holding our message, shown on our task's own stream: the agent has it twice (`foreignEventHolder`),
      // a person, both ids named; nothing of the stream applied after it (the stream stops here).
      for (const response of observation.responses) {
        const twice = foreignEventHolder(record, response);
        if (twice) return severalHolders(record, twice.taskIds, `the stream of our task ${namedTask(record.taskId ?? '')} carried task ${namedTask(twice.taskIds[1])}, which holds it`, twice.messageId);
      }
      const unproven = namedTaskEvent(record, observation.responses);
      if (unproven) return unproven;
      // A finished status after a partial view of the artifacts: the artifact update before it is journaled, the
      // status is held back for one full read (whose artifacts replace the streamed ones).
      const [first, second] = observation.responses;
      const status = second ?? first;
      if (observation.partialArtifacts && 'statusUpdate' in status && isTerminalTaskState(status.statusUpdate.status.state)) {
        const heldBack: HeldBack = { responses: [status], partialArtifacts: observation.partialArtifacts };
        const why = `stream finished ${status.statusUpdate.status.state} after ${PARTIAL_ARTIFACTS_CAUSE[observation.partialArtifacts]}: its artifacts are a partial view`;
        return { ...(second ? { write: { kind: 'events', responses: [first] } } : {}), next: { kind: 'read-once', why, heldBack } };
      }
      return { write: { kind: 'events', responses: observation.responses }, next: { kind: 'continue' } };
    }
    case 'push-received': {
      const unproven = namedTaskEvent(record, observation.responses);
      if (unproven) return unproven;
      // Forward-only events; the stream keeps being read unless the row finished or asks a question (apply decides from the row as written).
      return { write: { kind: 'events', responses: observation.responses }, next: { kind: 'continue' } };
    }
    case 'stream-ended':
      // Only a stream ended at an open question parks. Any other end before a finished state (an interrupted state
      // whose question has our reply delivered: the agent still shows it; SUBMITTED, WORKING) is one read, a follow
      // cycle the progress rule counts and backs off: no route leads to an immediate, uncounted resubscribe.
      if (observation.how === 'interrupted' && questionOpen(record)) return { next: route };
      return { next: { kind: 'read-once', why: `stream ended (${observation.how}) in ${record.state}`, ...live(observation) } };
    case 'stream-failed': {
      // A32: an event over a limit was refused: one full read must make up for it (the task-read row decides).
      // The refusal is a durable fact of the attempt (`refusedResult`): every finishing path reads it (`refusedResultJudged`).
      if (observation.unacceptable?.limit) {
        return { write: refusalNoted(observation.unacceptable), next: { kind: 'read-once', why: `a stream event was refused: ${observation.unacceptable.message}`, refused: observation.unacceptable } };
      }
      const why = observation.quiet ? `stream quiet (${observation.code})` : `stream ${observation.retryable ? 'dropped' : 'refused or broke the protocol'}: ${observation.code}`;
      return { next: { kind: 'read-once', why, ...live(observation) } };
    }
    case 'task-read': {
      const { task, ownership, complete, call, why, cycle, afterLiveStream } = observation;
      // Another task than ours holding our message (its history): the agent has it twice, whichever call read it (in a
      // follow cycle or not, a parked re-read, the task a refused push named): a person, both ids named, nothing of it
      // applied. The read itself is the proof: no ListTasks needed (it may not list that task at all).
      const twice = foreignHolder(record, task);
      if (twice) return severalHolders(record, twice.taskIds, readOfOther(record, call, task.id));
      // The task a refused push named (GetTask, the agent's own read path) without our message: nothing about our task,
      // never adopted or applied (the push was journaled PUSH_NOT_OURS); the reconciler goes on as for any check.
      if (call === 'push') return { next: { kind: 'nothing' } };
      if (ownership.kind === 'disproven' || (record.taskId !== undefined && task.id !== record.taskId)) {
        const error: RecordedError = { code: 'FOREIGN_TASK', message: `${call} about ${record.taskId ?? 'our message'} answered task ${task.id}`, retryable: false };
        // A follow cycle reads our task by ListTasks instead; elsewhere nothing of it is applied and the row is routed as it is.
        // (A follow cycle's evidence is the progress rule's note; elsewhere the protocol error is journaled.)
        if (cycle || record.taskId === undefined) return { next: { kind: 'search', purpose: 'read', why: `${why}; ${call} answered another task` } };
        return { write: { kind: 'note-protocol-error', error }, next: { kind: 'route', plan: { cancelIfRequested: call !== 'cancel' } } };
      }
      if (record.taskId === undefined && ownership.kind !== 'proven') {
        return { next: { kind: 'needs-person', code: 'AMBIGUOUS', message: `found task ${task.id}, which is not provably ours` } };
      }
      // A35: a summary identifies the task; its outcome is read in full before it is journaled.
      if (!complete && isTerminalTaskState(task.status.state)) return { next: { kind: 'read-once', why: `${why}; a summary of a finished task`, taskId: task.id } };
      // A32: a finished task read after we refused a part of its result over a limit, not showing that result (no
      // artifacts of its own, or not the refused artifact: `resultShown`): the refused event may have been the
      // result; never shown as a result-less success.
      const journaled = record.refusedResult ?? (observation.afterRefused ? refusedResultOf(observation.afterRefused) : undefined);
      const refused = observation.afterRefused ?? (journaled ? refusalOf(journaled) : undefined);
      // (A task finished otherwise than COMPLETED needs only artifacts of its own: its result is not taken as done.)
      const judgedBy = journaled && journalStateOf(task.status.state) !== 'COMPLETED' ? { message: journaled.message, code: journaled.code } : journaled;
      const shown = judgedBy && isTerminalTaskState(task.status.state) ? resultShown(judgedBy, task.artifacts) : undefined;
      if (refused && shown && !shown.shown) return { next: overLimit(refused, `a part of the result of task ${task.id} (finished ${task.status.state} ${shown.missing})`) };
      const guard: Guard = cycle ? 'fence' : call === 'cancel' || call === 'reply' ? 'none' : 'version';
      const write: Write = { kind: 'snapshot', task, guard, ...(record.taskId === undefined ? { bindAgent: true } : {}) };
      const state = journalStateOf(task.status.state);
      // (After a refused event the cycle counts as one that ended on an answer we cannot accept: bounded.)
      if (cycle && !isFinished(state)) {
        const what = `${why}; ${call === 'list-tasks' ? 'ListTasks' : 'GetTask'} ${task.status.state}`;
        return { write, next: { kind: 'progress', what, ...(refused ? { unacceptable: { code: 'LIMIT_EXCEEDED' } } : {}), ...(afterLiveStream && !refused ? { live: true } : {}) } };
      }
      return { write, next: { kind: 'route', plan: { cancelIfRequested: call !== 'cancel' } } };
    }
    case 'task-not-found': {
      const verdict = notFoundVerdict(record, policy);
      if (verdict.verdict === 'ask-later') return { write: { kind: 'note-not-found' }, next: { kind: 'check-later', atMs: verdict.atMs } };
      // The task a Message answer named, never read since, is one the agent has said all through the window does not
      // exist: that Message was its whole answer (an SDK executor that copies its request's task id into a reply and
      // keeps no task), a plain direct reply: COMPLETED with it, compare-and-set on the row as read (a read of the task
      // meanwhile wins). Not at the first denial: a task store that lags behind the agent's answer (the window's
      // reason) would have the interim Message taken for the result and the task's own result lost.
      const answered = unreadNamedTask(record);
      if (answered) return { write: { kind: 'outcome', state: 'COMPLETED', guard: 'version', result: { message: answered }, ...(answered.contextId ? { contextId: answered.contextId } : {}) }, next: route };
      // The check before LOST found the task again, a summary of a finished task, and the agent denies the full read of
      // it again: its listing and its GetTask contradict each other, and asking both again answers the same (attack
      // 30: before, GetTask and ListTasks about 300 times a second, for ever, the row WORKING). Its result cannot be
      // read: a person decides, never LOST (the listing shows the work done) nor COMPLETED without its result.
      if (observation.afterFoundAgain) {
        const message = `the agent denied task ${record.taskId} ${verdict.count} times over ${verdict.spanMs} ms, but its ListTasks still shows it finished (a summary without its result): which is true, and the result, are for a person`;
        return { next: { kind: 'needs-person', code: 'AMBIGUOUS', message, delivery: 'received' } };
      }
      return { write: { kind: 'note-not-found' }, next: { kind: 'search', purpose: 'lost-check', why: `the agent denied task ${record.taskId} ${verdict.count} times over ${verdict.spanMs} ms` } };
    }
    case 'read-failed': {
      const { unacceptable, why, code, call } = observation;
      // A31/A32: an answer about our task over a limit: journaled as every refused part of the result is, then a person.
      if (unacceptable?.limit) return { write: refusalNoted(unacceptable), next: overLimit(unacceptable, `the ${call} answer`) };
      // An answer we cannot use (another request id, an unreadable shape): ListTasks may still show our task (in a
      // follow cycle, or reading a task found by our messageId before adopting it).
      // Our credentials refused (P34): counted rounds (credentials are asked per request), then a person with AUTH.
      if (unacceptable?.outcome === 'AUTH') return { next: { kind: 'progress', what: `${why}; ${call} refused our credentials: ${unacceptable.message}`, unacceptable: { code, outcome: 'AUTH' } } };
      if (unacceptable && (observation.cycle || record.taskId === undefined)) return { next: { kind: 'search', purpose: 'read', why: `${why}; ${call} failed: ${code}` } };
      // Counted by the progress rule in a cycle or not (a task found by our messageId whose full read we cannot use,
      // a parked re-read): an answer we can never accept ends in bounded calls, never in an endless re-check.
      // A task found by our messageId (the row not yet bound) cannot be adopted without its full read: a read that
      // keeps failing, even with a retryable error (-32603, a drop), is a counted round too, never an uncounted
      // re-check at every reconcile interval (ListTasks + GetTask for ever).
      const unbound = record.taskId === undefined;
      if (observation.cycle || unacceptable || unbound) {
        const counted = unacceptable || unbound ? { unacceptable: { code } } : observation.afterLiveStream ? { live: true } : {};
        return { next: { kind: 'progress', what: `${why}; ${call} failed: ${code}`, ...counted } };
      }
      // A drop outside a follow cycle (a reconcile re-read): the row is looked at again at its next check.
      return { next: { kind: 'check-later', atMs: policy.now() + policy.reconcileIntervalMs } };
    }
    case 'search-result':
      return searchRow(record, observation, policy);
    case 'reply-delivered':
      // The reply is journaled sent; what the agent answered with it is applied when it is about our task (never another's).
      const sent: Write = { kind: 'mark-reply', replyMessageId: observation.replyMessageId, replyState: 'sent', reason: '' };
      const next: Next = { kind: 'route', plan: { again: false } };
      if (!observation.task) return { write: sent, next };
      // The answer names another task holding our message or this reply (its history): the agent acted on our message in
      // another task than ours, and the work (or what follows the answer) may happen there, or in both: a person, both
      // ids named. The reply stays journaled sent (the agent has it: never sent again).
      const twice = foreignHolder(record, observation.task, observation.replyMessageId);
      if (twice) return { write: sent, ...severalHolders(record, twice.taskIds, readOfOther(record, 'reply', observation.task.id), twice.messageId) };
      if (observation.ownership.kind === 'disproven' || observation.task.id !== record.taskId) {
        // An answer about another task: nothing of it is applied (a protocol error), our task is followed as it is.
        const error: RecordedError = { code: 'FOREIGN_TASK', message: `the reply on ${record.taskId} was answered with task ${observation.task.id}`, retryable: false };
        return { write: [sent, { kind: 'note-protocol-error', error }], next };
      }
      return { write: [sent, { kind: 'snapshot', task: observation.task, guard: 'none' }], next };
    case 'reply-refused': {
      // The question is open again: a person answers anew (the row stays parked).
      const refused: Write = { kind: 'mark-reply', replyMessageId: observation.replyMessageId, replyState: 'refused', reason: observation.message };
      // Unless it expired (the refused answer was its default answer): an expired question takes no answer, so the row
      // would wait, silent, for its attempt deadline. A person decides now (the agent never got the answer).
      // (Journaled refused already: the reconciler's re-read after a crash, `question-life.ts`; nothing to write again.)
      if (record.questionKey !== undefined && record.questionExpired === record.questionKey) {
        const journaled = record.replyState === 'refused' && record.replyMessageId === observation.replyMessageId;
        const next: Next = { kind: 'needs-person', code: 'QUESTION_EXPIRED', message: `the question expired and its default answer was refused for good: ${observation.message}`, delivery: 'received' };
        return journaled ? { next } : { write: refused, next };
      }
      return { write: refused, next: { kind: 'nothing' } };
    }
    case 'task-bound-elsewhere':
      // One task cannot be ours and another delegation's: the agent had our message (it answered about it), so the
      // work may have happened. Nothing a later search finds can change the binding: a person decides at once
      // (before, every search found the same task again and the row stayed INTENT, searched for ever).
      return { next: { kind: 'needs-person', code: 'AMBIGUOUS', message: `${observation.reason}; the agent had our message, so the work may have happened`, delivery: 'received' } };
    case 'suspects-unread':
      return suspectsUnread(record, observation.lost, observation.pending);
    case 'cancel-answered': {
      // CancelTask answered with another task holding our message: the same kind as a read's (`foreignHolder`).
      const twice = foreignHolder(record, observation.task);
      if (twice) return severalHolders(record, twice.taskIds, readOfOther(record, 'cancel', observation.task.id));
      if (observation.ownership.kind === 'disproven' || observation.task.id !== record.taskId) {
        const error: RecordedError = { code: 'FOREIGN_TASK', message: `CancelTask ${record.taskId} answered task ${observation.task.id}`, retryable: false };
        return { write: { kind: 'note-protocol-error', error }, next: { kind: 'route', plan: { cancelIfRequested: false } } };
      }
      // A task the agent will not cancel that waits for an answer: the stopping workflow never gives one (its answers
      // are refused), so it would wait for ever, CancelTask again every reconcile interval. A person decides.
      // The same when the agent accepts CancelTask round after round and its task still waits (`unacceptableAnswerLimit`).
      // Not when the agent has, or may have, our answer to the question it shows (`replyMayBeWithAgent`): the task is
      // about to work on it, not waiting for ever; it is followed (the progress rule bounds it) and its result kept.
      const waits = isParked(journalStateOf(observation.task.status.state)) && !replyMayBeWithAgent(record, observation.task, policy.now());
      if (waits && (observation.refused !== undefined || (observation.parkedRounds ?? 0) >= policy.unacceptableAnswerLimit)) {
        const how =
          observation.refused === undefined
            ? `answered CancelTask of task ${record.taskId} ${observation.parkedRounds} times without canceling it`
            : observation.unreadable
              ? `answered CancelTask of task ${record.taskId} with an answer we could not read (${observation.refused}), so it is not known to be canceled`
              : `refused CancelTask of task ${record.taskId} (${observation.refused})`;
        const message = `the workflow is stopping; the agent ${how} and the task waits for an answer that will not come (${observation.task.status.state}); it may have done part of its work`;
        return { next: { kind: 'needs-person', code: 'CANCEL_REFUSED', message, delivery: 'received' } };
      }
      // Keep following until the agent reports the cancellation (it may finish first); no second CancelTask.
      return { write: { kind: 'snapshot', task: observation.task, guard: 'none' }, next: { kind: 'route', plan: { cancelIfRequested: false } } };
    }
    case 'cancel-before-task':
      if (observation.mayHaveSent || mayHaveReachedAgent(record)) return { next: { kind: 'ask-reconciler', dueAt: (record.sendStartedAt ?? policy.now()) + policy.sendSettleMs } };
      // attack37: unmarked, but an earlier send of ours may have left (a resend released on no proof, suspects, a
      // refused result): the agent may hold our message and be doing the step; CANCELED "before it was sent" would
      // skip its compensation. A person decides (AMBIGUOUS: the cancel compensates what may have been done).
      if (unboundEvidence(record)) return deadlineWithEvidence(record, 'the workflow was canceled');
      return { write: { kind: 'outcome', state: 'CANCELED', guard: 'version', error: { code: 'CANCELED_BEFORE_SEND', message: 'canceled before it was sent' } }, next: route };
    case 'deadline-passed': {
      const message = `the attempt passed its deadline (${observation.deadlineAt - record.createdAt} ms after it was journaled) in state ${record.state}`;
      // deadline35: no task bound, but suspects (a refused push showed a task holding our message) or a refused result
      // (an answer of the agent about our message): it may hold our message and be doing the step. Never FAILED
      // (re-delegable: a second agent would do it too): a person decides, the suspects named.
      if (unboundEvidence(record)) return deadlineWithEvidence(record, message);
      // attack36: a marked row's SendMessage may have left (whatever error an earlier try left on the row): never FAILED
      // blind at the deadline; the reconciler's search decides (a proven absence past the deadline is FAILED there).
      if (record.taskId === undefined && mayHaveReachedAgent(record)) return { next: { kind: 'ask-reconciler' } };
      // Either FAILED below only over the row as read, unmarked (applyStatus-5.lua ARGV[21]): a suspect noted since does
      // not move the version, so the write is refused then and the next reconcile takes the branch above.
      const unsent = record.state === 'INTENT' ? 'as-read' : undefined;
      if (record.state === 'INTENT' && record.unreachableCount > 0 && record.sendStartedAt === undefined) {
        // The attempt was waiting for an agent that could not be reached: nothing was sent, say so.
        const message = `the agent could not be reached until the attempt deadline (${observation.deadlineAt - record.createdAt} ms after it was journaled): ${record.unreachableCount} tries (last: ${record.error?.message ?? 'unknown'}); nothing was sent`;
        return { write: { kind: 'outcome', state: 'FAILED', guard: 'version', unsent: 'as-read', error: { code: 'AGENT_UNREACHABLE', message, retryable: true, delivery: 'not-sent' } }, next: route };
      }
      if (record.taskId !== undefined) {
        // The agent took our message (a task of ours exists): the work may have happened (effect maybe), so the step is
        // never re-delegated blind. A person decides with the evidence; an agent still asking for credentials is AUTH.
        const code = record.state === 'AUTH_REQUIRED' ? 'AUTH' : 'DEADLINE_EXCEEDED';
        return { next: { kind: 'needs-person', code, message: `${message}; the agent took our message (task ${record.taskId}), so the work may have happened`, delivery: 'received' } };
      }
      return { write: { kind: 'outcome', state: 'FAILED', guard: 'version', ...(unsent ? { unsent } : {}), error: { code: 'DEADLINE_EXCEEDED', message, retryable: false } }, next: route };
    }
    case 'question-expired':
      return questionExpiredRow(record, observation);
    case 'verifier-missing': {
      // review36: a resend's check (a worker of another release without the verifier) after an earlier SendMessage of
      // ours left and was released without proof of absence: the agent may hold it; FAILED would re-delegate.
      if (record.taskId === undefined && earlierSendsMayHaveLeft(record) > 0) return deadlineWithEvidence(record, `verifier ${observation.verifier} is not registered in this worker, so this try sends nothing`);
      const message = `verifier ${observation.verifier} is not registered in the workers (verifiers option or DA2A_HTTP_VERIFIERS); nothing was sent`;
      return { write: { kind: 'outcome', state: 'FAILED', guard: 'version', error: { code: 'VERIFIER_UNKNOWN', message, retryable: false, delivery: 'not-sent' } }, next: route };
    }
    case 'agent-missing': {
      const message = `no registered agent has skill ${observation.skill} (with the compensation's tags) to run this compensation; nothing was sent`;
      return { write: { kind: 'outcome', state: 'FAILED', guard: 'version', error: { code: 'NO_AGENT', message, retryable: false, delivery: 'not-sent' } }, next: route };
    }
    case 'handler-ran':
      return observation.ok
        ? { write: { kind: 'outcome', state: 'COMPLETED', guard: 'fence', result: { handler: observation.handler, evidence: observation.evidence ?? null } }, next: route }
        : { write: { kind: 'outcome', state: 'FAILED', guard: 'fence', error: { code: 'HANDLER_FAILED', message: observation.message } }, next: route };
    case 'handler-interrupted':
      return { write: { kind: 'release-for-resend', contextRefused: false }, next: { kind: 'resend', contextRefused: false } };
    case 'effect-verified':
      return { write: { kind: 'record-effect', effect: observation.effect, evidence: observation.evidence }, next: route };
    case 'row-checked':
      return { next: { kind: 'route', ...(observation.plan ? { plan: observation.plan } : {}) } };
    case 'follow-deferred':
      return { next: { kind: 'follow', plan: { resubscription: observation.resubscription, delayMs: observation.delayMs } } };
    case 'send-deferred':
      // Only an unmarked INTENT waits (nothing left); any other row is routed as it is.
      if (record.state !== 'INTENT' || record.sendStartedAt !== undefined || record.taskId !== undefined) return { next: route };
      return { write: { kind: 'note-slot-wait', nextTryAt: observation.untilMs }, next: { kind: 'send-later', atMs: observation.untilMs } };
    case 'stream-handed-off':
      return { next: { kind: 'route', plan: { again: false } } };
    case 'workflow-stopped':
      if (record.state !== 'INTENT' || !record.held) return { next: { kind: 'nothing' } };
      return { write: { kind: 'outcome', state: 'CANCELED', guard: 'version', error: { code: 'NEVER_SENT', message: 'the workflow stopped before this step was sent' } }, next: { kind: 'nothing' } };
    case 'auth-exhausted':
      // P33: never FAILED by us, never re-delegated: the agent's task is left as it is, a person decides.
      return {
        next: {
          kind: 'needs-person',
          code: 'AUTH',
          message: `the agent asked for authentication again after ${observation.rounds} runs of its auth handler: ${observation.challenge || '(no challenge text)'}`,
          delivery: 'received',
        },
      };
    case 'lease-lost':
      return { next: { kind: 'nothing' } };
    case 'closing':
      // This worker is closing: another one follows at once (a follow job, no delay).
      return { next: isFinished(record.state) ? { kind: 'nothing' } : { kind: 'follow', plan: {} } };
  }
}

/**
 * A task a Message answer of ours named (`messageAnswerProof`): the row is bound to it as SUBMITTED (its state unknown
 * until read, as a send stream's first status identifies a task, A34), the Message kept as that status's message, and
 * routed: the follow reads it (SubscribeToTask's snapshot, or GetTask) and only what it reads settles the row. A read
 * that finds the task replaces the status whole (the Message with it); one that finds no such task completes the row
 * from the Message kept (`unreadNamedTask`), in whichever process reads it. Already bound to it: routed.
 */
function namedTaskRow(record: DelegationRecord, message: Message, taskId: string): Step {
  const next: Next = { kind: 'route', plan: { again: false } };
  if (record.taskId === taskId) return { next };
  const task: Task = { id: taskId, ...(message.contextId ? { contextId: message.contextId } : {}), status: { state: 'TASK_STATE_SUBMITTED', message } };
  return { write: { kind: 'snapshot', task, guard: 'none', bindAgent: record.taskId === undefined, namedTaskUnread: true }, next };
}

/**
 * Stream or push events of a task a Message answer named, before any read of it was applied: only a Task of it is
 * judged (`namedTaskNotOurs`) and applied when shown ours (the flag cleared); a status or artifact update carries no
 * context or history to prove it ours, so nothing of it is applied and the task is read once in full instead.
 */
function namedTaskEvent(record: DelegationRecord, responses: readonly StreamResponse[]): Step | undefined {
  if (!record.namedTaskUnread) return undefined;
  // A Task of it is applied as any event, judged first (`namedTaskJudged`).
  const [first] = responses;
  if (responses.length === 1 && first && 'task' in first && first.task.id === record.taskId) return undefined;
  return { next: { kind: 'read-once', why: `an event of task ${namedTask(record.taskId ?? '')}, which a Message answer named, before a full read of it` } };
}

/** The Task a write applies whole (a snapshot, a stream or push Task event); the named task's placeholder is none. */
function appliedTask(write: Write): Task | undefined {
  if (write.kind === 'snapshot') return write.namedTaskUnread ? undefined : write.task;
  if (write.kind !== 'events' || write.responses.length !== 1) return undefined;
  const [response] = write.responses;
  return 'task' in response ? response.task : undefined;
}

/** Which call brought the Task an observation applies, for the words of `namedTaskNotOurs`, and whether it is a full read. */
function readOf(observation: Observation): NamedTaskRead {
  switch (observation.kind) {
    case 'task-read':
      return { call: observation.call, complete: observation.complete };
    case 'search-result':
      return { call: 'list-tasks', complete: observation.finding.kind !== 'found' || observation.finding.complete };
    case 'send-answered':
      return { call: 'send', complete: !observation.summary };
    case 'cancel-answered':
      return { call: 'cancel', complete: true };
    case 'reply-delivered':
      return { call: 'reply', complete: true };
    case 'push-received':
      return { call: 'push', complete: true };
    default:
      return { call: 'subscribe', complete: true };
  }
}

/**
 * The step's application of a Task of the row's task while a Message answer named it and nothing of it was read
 * (`namedTaskUnread`), judged before it is written (`namedTaskNotOurs`): not shown ours, the step is replaced by the
 * judgement (FOREIGN_TASK noted, a person), the step's other writes kept (a reply journaled sent stays so); a summary,
 * one full read first. Undefined: the step applies no such Task, or the Task is shown ours (the step as it is).
 */
function namedTaskJudged(record: DelegationRecord, observation: Observation, step: Step): Step | undefined {
  if (!record.namedTaskUnread || record.taskId === undefined || step.write === undefined) return undefined;
  const writes: readonly Write[] = isWriteList(step.write) ? step.write : [step.write];
  const applied = writes.find((write) => appliedTask(write)?.id === record.taskId);
  if (applied === undefined) return undefined;
  const judged = namedTaskNotOurs(record, appliedTask(applied)!, readOf(observation));
  if (judged === undefined) return undefined;
  const judgedWrites: readonly Write[] = judged.write === undefined ? [] : isWriteList(judged.write) ? judged.write : [judged.write];
  const [first, second] = [...writes.filter((write) => write !== applied), ...judgedWrites];
  const write = first === undefined ? undefined : second === undefined ? first : ([first, second] as const);
  return { next: judged.next, ...(write ? { write } : {}) };
}

/** A step's two writes (a tuple) rather than one. */
function isWriteList(write: Write | readonly [Write, Write]): write is readonly [Write, Write] {
  return Array.isArray(write);
}

/**
 * The Message answer a row bound to the task it named still holds (`namedTaskRow`): the row's status message while its
 * `namedTaskUnread` flag is set. The flag is the whole proof: only that placeholder sets it, with the Message that
 * `messageAnswerProof` showed ours naming the row's task, and any status of the agent the journal applies since (a
 * read, a stream event, a push) clears it (applyStatus-5.lua), so the row's shape is never read for it (a read may show
 * SUBMITTED, no timestamp, a status message naming the task: attack24). Undefined otherwise: the task was read, or
 * never named by a Message.
 */
export function unreadNamedTask(record: DelegationRecord): Message | undefined {
  return record.namedTaskUnread ? record.statusMessage : undefined;
}

/**
 * Whether our reply to the question the row shows may be with the agent: sent, or 'sending' while its send may still
 * reach the agent (the lease deadline `replySendUntil` not passed: the lease outlasts the send's request timeout), or
 * past it when the task read shows it (its history holds the reply's messageId). A refused cancel of such a task is no
 * task waiting for ever: the agent may work on our answer, so the row is followed to its end and the result kept.
 * Past the lease nothing else can bring the reply to the agent: a stopping workflow's step reply is never sent again
 * (reply.ts). Review14: the sender's worker still beating counted too; a fleet worker beats for as long as it runs,
 * so a reply left 'sending' (its send failed, the workflow stopped before the retry) kept the row followed, CancelTask
 * refused every round and uncounted, the workflow stuck for ever.
 */
function replyMayBeWithAgent(record: DelegationRecord, task: Task, now: number): boolean {
  if (record.replyForQuestion === undefined || record.replyForQuestion !== record.questionKey) return false;
  if (record.replyState === 'sent') return true;
  if (record.replyState !== 'sending') return false;
  return (record.replySendUntil ?? 0) >= now || (task.history ?? []).some((message) => message.messageId === record.replyMessageId);
}

/**
 * An open question that passed its step's `question.expiresAfterMs` unanswered: journaled expired with what is done
 * (`expire-question`), then `fail` ends the attempt FAILED `QUESTION_EXPIRED` (the workflow decides as for any
 * failure: re-delegation within its budget), `cancel` cancels the workflow, `answer` routes the row, which parks and
 * sends the default answer journaled as the reply. A question answered first (or gone) is left alone: of the answer
 * and the expiry exactly one takes effect. A question already journaled expired (a run that stopped after the mark)
 * gets what was journaled then.
 */
function questionExpiredRow(record: DelegationRecord, observation: Extract<Observation, { kind: 'question-expired' }>): Step {
  const { questionKey, onExpiry } = observation;
  if (!isParked(record.state) || record.questionKey !== questionKey) return { next: route };
  const lateBy = `the question was not answered within its step's question.expiresAfterMs (expired at ${new Date(observation.expiresAt).toISOString()})`;
  const failed: Write = { kind: 'outcome', state: 'FAILED', guard: 'version', error: { code: 'QUESTION_EXPIRED', message: `${lateBy}; the attempt ends FAILED`, retryable: true, delivery: 'received' } };
  const cancel: Next = { kind: 'cancel-workflow', why: `${lateBy}; the workflow is canceled` };
  if (record.questionExpired === questionKey) {
    const done = record.questionExpiry ?? onExpiry;
    return done === 'fail' ? { write: failed, next: route } : done === 'cancel' ? { next: cancel } : { next: route };
  }
  if (!isAwaitingAnswer(record)) return { next: route };
  const expire: Write = observation.onExpiry === 'answer' ? { kind: 'expire-question', questionKey, action: 'answer', reply: observation.reply } : { kind: 'expire-question', questionKey, action: observation.onExpiry };
  if (onExpiry === 'fail') return { write: [expire, failed], next: route };
  return { write: expire, next: onExpiry === 'cancel' ? cancel : route };
}

/**
 * A try that could not reach the agent and created nothing (`unreachableVerdict`): wait for the next try (journaled,
 * so every view shows the error, the tries and the next try), or, past the step's bound, FAILED `AGENT_UNREACHABLE`
 * (nothing was sent: the step may go to another agent).
 */
function waitForAgent(record: DelegationRecord, observation: Extract<Observation, { kind: 'send-failed' }>, policy: Policy): Step {
  const { error, afterMark } = observation;
  const verdict = unreachableVerdict(record, observation.unreachable!, error.message, policy);
  if (verdict.verdict === 'give-up') {
    // attack36: an earlier send of ours may have reached the agent (released for a resend without proof of absence):
    // the agent may hold our message; FAILED would re-delegate the step. A person decides.
    if (earlierSendsMayHaveLeft(record) > 0) return deadlineWithEvidence(record, `the agent could not be reached until the step's bound (${record.unreachableCount + 1} tries; last: ${error.message}); this try sent nothing`);
    // unreachable35: only over the row as this try left it (its own mark or none, no suspect noted since), never on
    // the fence alone: a suspect shows the agent may hold our message, and FAILED would re-delegate the step.
    const unsent = afterMark ? 'marked' : 'unmarked';
    return { write: { kind: 'outcome', state: 'FAILED', guard: 'fence', unsent, error: { code: 'AGENT_UNREACHABLE', message: verdict.message, retryable: true, delivery: 'not-sent' } }, next: route };
  }
  const noted: RecordedError = { ...error, retryable: true, delivery: 'not-sent' };
  return { write: { kind: 'note-unreachable', error: noted, nextTryAt: verdict.nextTryAt, marked: afterMark }, next: { kind: 'send-later', atMs: verdict.nextTryAt } };
}

/** How another task holding our message was read, in words for a person (`foreignHolder`): the call and what it answered. */
function readOfOther(record: DelegationRecord, call: AgentCall, taskId: string): string {
  if (call === 'push') return `a push named task ${namedTask(taskId)}, and GetTask of it shows our message in its history`;
  if (call === 'reply') return `the reply on our task ${namedTask(record.taskId ?? '')} was answered with task ${namedTask(taskId)}, which holds it`;
  const name = call === 'cancel' ? 'CancelTask' : call === 'list-tasks' ? 'ListTasks' : call === 'subscribe' ? 'SubscribeToTask' : 'GetTask';
  return `${name} of our task ${namedTask(record.taskId ?? '')} answered task ${namedTask(taskId)}, which holds it`;
}

/** The held-back finished status, in words: `the stream said task T1 COMPLETED`. */
function streamedState(heldBack: HeldBack): string {
  const [status] = heldBack.responses;
  return 'statusUpdate' in status ? `the stream said task ${namedTask(status.statusUpdate.taskId)} ${status.statusUpdate.status.state}` : 'the stream finished';
}

/**
 * The full read after a stream whose artifacts were a partial view (its finished status `heldBack`): a finished task
 * of ours read in full is journaled as read (its artifacts replace the streamed ones; without artifacts of its own
 * the streamed ones are kept, with a warning). A GetTask answer about another task or one we cannot use is made up
 * for by ListTasks with artifacts. ListTasks showing our message in several tasks is a person (`severalHolders`: the
 * work may have been done twice), the streamed status named in the message. Anything else (a failed read, a task not
 * found, an unfinished task, no usable search) journals the held-back status as streamed, with a warning: the result
 * is never lost to the read.
 */
function afterPartialStream(record: DelegationRecord, observation: Observation, heldBack: HeldBack): Step {
  const why = `a stream after ${PARTIAL_ARTIFACTS_CAUSE[heldBack.partialArtifacts]} finished`;
  const keepStreamed = (reason: string): Step => ({
    write: { kind: 'events', responses: heldBack.responses },
    next: route,
    warning: `${why}, and ${reason}: its finished status and artifacts are journaled as streamed (chunks may be repeated, missing or out of order)`,
  });
  let task: Task | undefined;
  if (observation.kind === 'task-read') {
    // Another task holding our message, read in our task's place: a person, the streamed status named (`foreignHolder`).
    const twice = foreignHolder(record, observation.task);
    if (twice) return severalHolders(record, twice.taskIds, `${why}: ${streamedState(heldBack)}; ${readOfOther(record, observation.call, observation.task.id)}`);
    const foreign = observation.ownership.kind === 'disproven' || observation.task.id !== record.taskId;
    if (foreign) return { next: { kind: 'search', purpose: 'read', why: `${observation.why}; ${observation.call} answered another task`, heldBack } };
    task = observation.task;
  } else if (observation.kind === 'read-failed') {
    if (observation.unacceptable && !observation.unacceptable.limit && observation.unacceptable.outcome !== 'AUTH') {
      return { next: { kind: 'search', purpose: 'read', why: `${observation.why}; ${observation.call} failed: ${observation.code}`, heldBack } };
    }
    return keepStreamed(`the full read failed (${observation.code})`);
  } else if (observation.kind === 'search-result') {
    const { finding } = observation;
    // Our message in several tasks (the search row's rule): a person, the streamed status named in the message. So is
    // another task than ours shown holding our message (by its history): the agent has it twice, ours trimmed or unlisted.
    if (finding.kind === 'several') return severalHolders(record, finding.taskIds, `${why}: ${streamedState(heldBack)}`);
    const twice = otherHolder(record, finding);
    if (twice) return severalHolders(record, twice, `${why}: ${streamedState(heldBack)}`);
    if (finding.kind === 'found' && finding.complete && finding.task.id === record.taskId) task = finding.task;
    else return keepStreamed('neither GetTask nor ListTasks gave a full read of our task');
  } else {
    return keepStreamed(`the full read found no task (${observation.kind})`);
  }
  if (!isTerminalTaskState(task.status.state)) return keepStreamed(`the full read shows it ${task.status.state}`);
  if (task.artifacts?.length) return { write: { kind: 'snapshot', task, guard: 'fence' }, next: route };
  // Without artifacts of its own the read replaces none: the streamed ones stay.
  const { artifacts: _none, ...withoutArtifacts } = task;
  return { write: { kind: 'snapshot', task: withoutArtifacts, guard: 'fence' }, next: route, warning: `${why}, and the full read carries no artifacts: the streamed artifacts are kept (chunks may be repeated, missing or out of order)` };
}
