/**
 * The search row of the table (`transitions.ts`): what a search for our messageId (`io/search.ts`) decides, by the
 * purpose it ran for: `reconcile` (a maybe-sent INTENT: adopt, resend the same messageId, FAILED, or a person),
 * `lost-check` (once more before LOST), `read` (our task by ListTasks when GetTask could not be used). Pure.
 */
import { historyHolds, isFinished, isTerminalTaskState, journalStateOf, taskShownOurs } from '@durable-a2a/shared/pure';
import type { StreamResponse, Task } from '@durable-a2a/a2a';
import type { DelegationRecord } from '@durable-a2a/shared';
import type { Next } from './next.ts';
import type { AgentCall, Observation, SearchFinding } from './observation.ts';
import { earlierSendsMayHaveLeft, namedTask, namedTasks, unfoundVerdict, type Policy } from './policy.ts';
import { refusalNoted } from './refused-result.ts';
import type { Step, Write } from './transitions.ts';

const route: Next = { kind: 'route' };

/**
 * A search for our message that failed (P32): a drop or HTTP 5xx is one counted round (the progress rule ends
 * `unacceptableAnswerLimit` rounds in a row with SEARCH_UNAVAILABLE, never a retry for ever); a refusal retrying
 * will not change ends with a person at once. Either way nothing is resent: the send may have happened.
 */
function searchFailed(finding: Extract<SearchFinding, { kind: 'failed' }>, why: string): Step {
  // A ListTasks answer (with artifacts) over a limit may hold a part of our result: journaled as every refusal is (A32).
  const noted = finding.error.limit ? { write: refusalNoted(finding.error) } : {};
  if (!finding.retryable) return { ...noted, next: { kind: 'needs-person', code: 'SEARCH_UNAVAILABLE', message: `${why}: the search for our message failed: ${finding.error.message}` } };
  return { next: { kind: 'progress', what: `${why}: the search for our message failed (${finding.error.code}: ${finding.error.message})`, unacceptable: { code: finding.error.code, outcome: 'SEARCH_UNAVAILABLE' } } };
}

/**
 * Several tasks at the agent hold our messageId, whatever search found them (the reconciler's, the read after a
 * partial stream, the one while the agent held our send): a person (AMBIGUOUS), every id named, nothing adopted,
 * resent, re-delegated or written. The work may have been done more than once; settling from one task (the first
 * listed, the one our stream followed, the one the held send answers) would leave the other unseen. `seen`: what
 * we saw of our own task meanwhile (a stream's finished status held back for its full read), kept in the message.
 * The ids come from the agent: the message names the first few, clipped, and how many (`namedTasks`).
 */
export function severalHolders(record: DelegationRecord, taskIds: readonly string[], seen = '', messageId = record.messageId): Step {
  const bound = record.taskId === undefined ? '' : ` (our task is ${namedTask(record.taskId)})`;
  const which = messageId === record.messageId ? `our message ${messageId}` : `our message ${messageId} (the reply to the agent's question; our first message is ${record.messageId})`;
  const message = `${which} is in ${taskIds.length} tasks at the agent: ${namedTasks(taskIds)}${bound}${seen ? `; ${seen}` : ''}; the work may have been done more than once, and which task is ours is for a person to decide`;
  // A fact about our messageId, whoever wrote the row since the search (a woken sender's answer binding one of the
  // tasks, a peer's adoption): written on any unfinished row (review20: refused by the version read, T1 unseen).
  return { next: { kind: 'needs-person', code: 'AMBIGUOUS', message, anyRow: true } };
}

/**
 * Pushes showed our message in tasks we could not read (`lost`: not kept, over the pending cap or with an id too long,
 * or never read to a conclusion; `pending`: still waiting unread): the agent may have our message twice, and which of
 * its tasks do is more than our reads can tell. A person (AMBIGUOUS) on any unfinished row, as for a holder read
 * (`severalHolders`): dropping the evidence would leave a duplicate unseen. The pending ids are named, clipped.
 */
export function suspectsUnread(record: DelegationRecord, lost: number, pending: readonly string[]): Step {
  const count = lost + pending.length;
  const bound = record.taskId === undefined ? '' : ` (our task is ${namedTask(record.taskId)})`;
  const named = pending.length > 0 ? `, among them ${namedTasks(pending)}` : '';
  const message = `pushes showed our message ${record.messageId} in ${count} other task${count === 1 ? '' : 's'} we could not read${named}${bound}: more than the journal keeps waiting, an id too long to keep, or reads that kept failing; the work may have been done more than once, and which task is ours is for a person to decide`;
  return { next: { kind: 'needs-person', code: 'AMBIGUOUS', message, anyRow: true } };
}

/**
 * The row's pending suspect ids (its `suspects` field, a JSON list of task ids, noteSuspect-1.lua), for a message only;
 * none when absent or unreadable (a pure module: the list is checked by hand, as `Journal.pendingSuspects` does by schema).
 */
function pendingSuspectsOf(record: Pick<DelegationRecord, 'suspects'>): string[] {
  if (record.suspects === undefined || record.suspects === '') return [];
  try {
    const ids: unknown = JSON.parse(record.suspects);
    return Array.isArray(ids) ? ids.filter((id): id is string => typeof id === 'string') : [];
  } catch {
    return [];
  }
}

/**
 * An attempt past its deadline (`deadline-passed`, `why`) with no task of ours bound, on a row that keeps evidence that
 * the agent may hold our message: suspects (tasks refused pushes showed holding it, pending or counted lost), a
 * refused result (an answer about it we could not accept), or an earlier send that may have left (`earlierSendsMayHaveLeft`,
 * attack36), as `why` (default the deadline's) says. deadline35: before, FAILED (re-delegable) on the version
 * alone, and the step went to a second agent while the first may have been doing it. A person (AMBIGUOUS, delivery
 * maybe: a push's body alone proves nothing), the suspects named, clipped. Guarded by the version read, as any
 * reconcile's decision; a refusal re-reads the row on the next reconcile, where the evidence still stands.
 */
export function deadlineWithEvidence(record: DelegationRecord, why: string): Step {
  const pending = pendingSuspectsOf(record);
  const count = pending.length + record.suspectsLost;
  const named = pending.length > 0 ? `: ${namedTasks(pending)}` : '';
  const lost = record.suspectsLost > 0 ? ` (${record.suspectsLost} of them not kept or not readable)` : '';
  const suspects = count > 0 ? `pushes showed our message ${record.messageId} in ${count} other task${count === 1 ? '' : 's'} at the agent${named}${lost}` : '';
  const refused = record.refusedResult !== undefined ? `${suspects ? '; ' : ''}an answer about our message arrived that we could not accept` : '';
  const left = earlierSendsMayHaveLeft(record);
  const sent = left > 0 ? `${suspects || refused ? '; ' : ''}${left} SendMessage${left === 1 ? '' : 's'} of ours may have reached it, and no search proved our message absent since` : '';
  const message = `${why}; no task of ours is bound, but ${suspects}${refused}${sent}: the agent may hold our message and the work may have happened, so the step is not sent to another agent; a person decides`;
  return { next: { kind: 'needs-person', code: 'AMBIGUOUS', message, delivery: 'maybe' } };
}

/**
 * Another task than our bound one shown holding our message by its history (ours listed without it, or not listed):
 * the agent has our message twice, the same kind as `several` (`severalHolders`, both ids). The task ids, else undefined.
 */
export function otherHolder(record: DelegationRecord, finding: SearchFinding): [string, string] | undefined {
  if (finding.kind !== 'found' || record.taskId === undefined || finding.task.id === record.taskId) return undefined;
  return finding.ownership.kind === 'proven' && finding.ownership.by === 'message-id' ? [record.taskId, finding.task.id] : undefined;
}

/**
 * Another task than our bound one, read from the agent (GetTask of ours answering another task, CancelTask's answer,
 * the reply's answer, the task a refused push named read by GetTask), whose history or status message holds a message of
 * ours (`historyHolds`: written by us, not an agent's echo of it): our first message, or `reply` (default the row's), the
 * reply journaled for the agent's question (a message only we could have sent). The agent has our message in two
 * tasks: the same kind as `several` (`severalHolders`, both ids), whatever path read it. Delivery is proven (the
 * agent holds it), ownership of that task is not ours (we bound another), and the effect may have happened twice.
 * The task ids and the message found, else undefined: a task without a message of ours in its history stays a
 * protocol error (nothing of it applied).
 */
export function foreignHolder(record: DelegationRecord, task: Task, reply = record.replyMessageId): { taskIds: [string, string]; messageId: string } | undefined {
  if (record.taskId === undefined || task.id === record.taskId) return undefined;
  const messageId = messageOfOursIn(record, task, reply);
  return messageId === undefined ? undefined : { taskIds: [record.taskId, task.id], messageId };
}

/**
 * A stream event (SubscribeToTask's, or the rest of a streaming send's) naming another task than our bound one and
 * carrying a message of ours (`foreignHolder`: a Task's history or status message, a status update's message, a
 * Message event itself): the agent answered on our task's own stream that another task holds our message, as a
 * GetTask of ours answering it would (`foreignHolder`). The task ids and the message found, else undefined (an event
 * naming another task without a message of ours stays a protocol error: one read of our task).
 */
export function foreignEventHolder(record: DelegationRecord, response: StreamResponse): { taskIds: [string, string]; messageId: string } | undefined {
  if ('task' in response) return foreignHolder(record, response.task);
  if ('statusUpdate' in response) return foreignHolder(record, { id: response.statusUpdate.taskId, status: response.statusUpdate.status });
  if ('message' in response && response.message.taskId) return foreignHolder(record, { id: response.message.taskId, status: { state: 'TASK_STATE_UNSPECIFIED' }, history: [response.message] });
  return undefined;
}

/**
 * The message of ours `task` holds (`historyHolds` over what it carries of its conversation: its history and its
 * status message, where an agent may keep our message only, as the push route's `suspectOf` counts it; attack22: the
 * two disagreed and the duplicate went unseen): our first message, or `reply` (default the row's). Undefined: none.
 */
export function messageOfOursIn(record: DelegationRecord, task: Task, reply = record.replyMessageId): string | undefined {
  const carried = task.status.message ? [...(task.history ?? []), task.status.message] : task.history;
  return [record.messageId, ...(reply !== undefined ? [reply] : [])].find((id) => historyHolds(carried, id));
}

/** How a Task of a named task came (`namedTaskNotOurs`): the call (`send`: a send's answer), and whether it is a full read (default true; a ListTasks summary is not). */
export interface NamedTaskRead {
  call: AgentCall | 'send';
  complete?: boolean;
}

/**
 * Whether `task`, read in full for the first time since a Message answer named it (the row's `namedTaskUnread`), is
 * shown ours as a Task answer must be (`taskShownOurs`, the rule runs/send.ts judges a Task answer by, R16): in the
 * context we sent, or its history holding our messageId; the id it was read by proves nothing. A Message's claim is no proof: a read of that id may show another client's task (attack24). Not shown
 * ours: FOREIGN_TASK noted (delivery received: the agent had our message; the effect maybe), nothing of it applied,
 * never COMPLETED from it: a person decides (the row is bound to that id, so no other task can be adopted by our
 * messageId). Undefined: not such a read, or the task shown ours (applied as any read; the flag cleared with it).
 */
export function namedTaskNotOurs(record: DelegationRecord, task: Task, read: NamedTaskRead): Step | undefined {
  const { call, complete = true } = read;
  if (!record.namedTaskUnread || task.id !== record.taskId) return undefined;
  // A summary (ListTasks) is no full read: the task is read in full before anything of it is applied.
  if (!complete) return { next: { kind: 'read-once', why: `a summary of task ${namedTask(task.id)}, which a Message answer named, before a full read of it` } };
  const contextId = record.contextRefused ? undefined : record.requestedContextId;
  if (taskShownOurs(task, { ...(contextId !== undefined ? { contextId } : {}), messageId: record.messageId }).ours) return undefined;
  const where = task.contextId ? `in context ${task.contextId}` : 'in no context';
  const message = `task ${namedTask(task.id)}, which the agent's Message answer named, is not shown ours (${call}): ${where}, its history without our message ${record.messageId}`;
  return {
    write: { kind: 'note-protocol-error', error: { code: 'FOREIGN_TASK', message, retryable: false, delivery: 'received', answer: 'unreadable' } },
    next: { kind: 'needs-person', code: 'AMBIGUOUS', message: `${message}; the agent had our message, so the work may have happened`, delivery: 'received' },
  };
}

/**
 * The search row: adopt, read in full first, resend the same messageId, FAILED with the agent's error, LOST, or a person.
 * Several tasks holding our messageId (`several`) is a person whatever the purpose, both ids named: the work may have
 * been done twice, and adopting the one listed first would leave the other running unseen (or settle the step from
 * the wrong one); nothing is resent, re-delegated or written. So is a read of our bound task by ListTasks that shows
 * another task holding our message (`otherHolder`).
 */
export function searchRow(record: DelegationRecord, observation: Extract<Observation, { kind: 'search-result' }>, policy: Policy): Step {
  const { finding, purpose } = observation;
  if (finding.kind === 'several') return severalHolders(record, finding.taskIds);
  if (purpose === 'read') {
    // Another task than ours shown holding our message: the agent has it twice (a person, as after a partial stream).
    const twice = otherHolder(record, finding);
    if (twice) return severalHolders(record, twice);
    // GetTask could not be used; ListTasks (with artifacts) showed our task, or nothing usable.
    // Ours: our bound task, or (not yet bound: a task found by our messageId whose GetTask we could not use) proven by our messageId.
    const ours = finding.kind === 'found' && (record.taskId !== undefined ? finding.task.id === record.taskId : finding.ownership.kind === 'proven');
    if (finding.kind === 'found' && ours && finding.complete) {
      const write: Write = record.taskId === undefined ? { kind: 'snapshot', task: finding.task, guard: 'version', bindAgent: true } : { kind: 'snapshot', task: finding.task, guard: 'fence' };
      return { write, next: isFinished(journalStateOf(finding.task.status.state)) ? route : { kind: 'progress', what: `${observation.why ?? 'read'}; ListTasks ${finding.task.status.state}` } };
    }
    return { next: { kind: 'progress', what: observation.why ?? 'GetTask unusable; ListTasks did not show our task', unacceptable: { code: 'PROTOCOL_ERROR' } } };
  }
  if (purpose === 'lost-check') {
    if (finding.kind === 'found' && finding.task.id === record.taskId) {
      // Found again: the task is still there. Its outcome from a full read only (A35), then routed as any read.
      if (!finding.complete && isTerminalTaskState(finding.task.status.state)) return { next: { kind: 'read-once', why: 'found again by ListTasks', foundAgain: true } };
      return { write: { kind: 'snapshot', task: finding.task, guard: 'none' }, next: route };
    }
    // Another task proven to hold our message: the agent has it, under another id (a replay, a task re-created), and
    // may have done or be doing the work; LOST would re-delegate it (the work twice, that task's result dropped).
    if (finding.kind === 'found' && finding.ownership.kind === 'proven') {
      const message = `${observation.why ?? `the agent denied task ${record.taskId}`}, but task ${finding.task.id} (${finding.task.status.state}) holds our message ${record.messageId}: the work may have been done there; which task is ours is for a person to decide`;
      return { next: { kind: 'needs-person', code: 'AMBIGUOUS', message } };
    }
    // A search that failed proves no absence: never LOST on it; bounded rounds, then a person (P32).
    if (finding.kind === 'failed') return searchFailed(finding, observation.why ?? 'checking before LOST');
    // A search that cannot conclude proves no absence either: a task in the context we sent (our message delivered,
    // under an id the agent did not deny), a history too short to tell, a listing paged badly. LOST would re-delegate.
    if (finding.kind === 'not-found' && (finding.inconclusive || finding.paginationBroken)) {
      const why = finding.paginationBroken ? 'ListTasks pagination is broken, or its listing shows fewer tasks than it counts' : `candidate task(s) ${namedTasks(finding.candidates)} may hold it (in the context we sent, or too little history to tell)`;
      return { next: { kind: 'needs-person', code: 'AMBIGUOUS', message: `${observation.why ?? `the agent denied task ${record.taskId}`}; the search for our message cannot tell whether the agent still has it: ${why}` } };
    }
    const message = `${observation.why ?? `the agent denied task ${record.taskId}`}; ListTasks does not show our message either`;
    return { write: { kind: 'outcome', state: 'LOST', guard: 'none', error: { code: 'TASK_LOST', message, retryable: false } }, next: route };
  }
  // purpose 'reconcile': a maybe-sent INTENT (crash window 2).
  if (finding.kind === 'failed') return searchFailed(finding, observation.why ?? 'reconciling a send that may have happened');
  if (finding.kind === 'found') {
    if (finding.ownership.kind !== 'proven') return { next: { kind: 'needs-person', code: 'AMBIGUOUS', message: `the search found task ${finding.task.id}, which is not provably ours` } };
    // A35: a ListTasks summary (no artifacts by the spec's default) identifies the task; a finished one is read in full first.
    if (!finding.complete && isTerminalTaskState(finding.task.status.state)) return { next: { kind: 'read-once', why: 'adopting a task found by our messageId', taskId: finding.task.id } };
    return { write: { kind: 'snapshot', task: finding.task, guard: 'version', bindAgent: true }, next: route };
  }
  const verdict = unfoundVerdict({ ...(record.error ? { error: record.error } : {}), deduplicates: observation.deduplicates, search: finding });
  if ('fail' in verdict) return { write: { kind: 'outcome', state: 'FAILED', guard: 'version', error: verdict.fail }, next: route };
  if (!verdict.resend) return { next: { kind: 'needs-person', code: 'AMBIGUOUS', message: verdict.reason } };
  // The attempt's deadline (epoch ms) once it has passed, else undefined.
  const passedDeadlineAt = observation.deadlineAt !== undefined && policy.now() >= observation.deadlineAt ? observation.deadlineAt : undefined;
  if (!verdict.proven && (passedDeadlineAt !== undefined || record.resendCount + 1 >= policy.sendAttempts)) {
    // attack36: a deduplicating agent that cannot list tasks lets us resend to IT; nothing proves our message absent,
    // so no FAILED (another agent would do the step too): a person decides.
    const why = passedDeadlineAt !== undefined ? 'the attempt passed its deadline' : `SendMessage was sent ${record.resendCount + 1} times`;
    const message = `${why}; the agent cannot list tasks, so nothing proves our message ${record.messageId} absent (it is listed as deduplicating by messageId, which makes a resend to it safe, not another agent): the work may have happened there; a person decides`;
    return { next: { kind: 'needs-person', code: 'AMBIGUOUS', message, delivery: 'maybe' } };
  }
  if (record.resendCount + 1 >= policy.sendAttempts) {
    const answered = record.error?.answer === 'error' ? `; the agent's last answer: ${record.error.code}` : '';
    const message = `SendMessage created no task at the agent in ${record.resendCount + 1} attempts${answered}`;
    return { write: { kind: 'outcome', state: 'FAILED', guard: 'version', error: { code: 'SEND_ATTEMPTS_EXHAUSTED', message, retryable: true } }, next: route };
  }
  if (passedDeadlineAt !== undefined) {
    // Proven absent, but past the deadline: the step moves on instead of a resend.
    const message = `the attempt passed its deadline (${passedDeadlineAt - record.createdAt} ms after it was journaled); our message was proven absent`;
    return { write: { kind: 'outcome', state: 'FAILED', guard: 'version', error: { code: 'DEADLINE_EXCEEDED', message, retryable: false } }, next: route };
  }
  // A proven absence covers every send so far (`provenAbsentSends`): none of them counts as "may have left" after it.
  return { write: { kind: 'release-for-resend', contextRefused: finding.kind === 'not-found' && finding.contextRefused, provenAbsent: verdict.proven }, next: { kind: 'resend', contextRefused: finding.kind === 'not-found' && finding.contextRefused } };
}
