/**
 * Applies what an agent told us (a Task read, a stream event, a push) to the
 * journal. Shared by the follow, send and reconcile workers and the push
 * webhook, so every path uses the same forward-only rules. Events are keyed by
 * taskId: an empty contextId is accepted, a different one is an anomaly that is
 * reported, not a failure (field case R16).
 */
import type { Message, StreamResponse, Task, TaskArtifactUpdateEvent, TaskStatus, TaskStatusUpdateEvent } from '@durable-a2a/a2a/pure';
import type { DelegationRef, FinishStepResult, Journal, OneStepFinish, StatusChange, StatusChangeResult } from './journal.ts';
import type { DelegationRecord, RecordedError } from './record.ts';
import { cutsOf, historyQuestionWords, historyWordsCut, streamWordsCut, wordsBasisOf, wordsCutFor, wordsFilled } from './question-words.ts';
import { journalStateOf } from './states.ts';

/** What applying one observation did, for logs and metrics. */
export interface ObservationResult {
  kind: 'status' | 'artifact' | 'message' | 'ignored';
  status?: StatusChangeResult;
  artifact?: 'applied' | 'sealed' | 'finished';
  /** Set when the event named another context than the task's (R16). */
  contextAnomaly?: string;
  /** Set when the event named another task than ours: nothing was applied. */
  foreignTaskId?: string;
}

export interface ObserveOptions {
  /** Fencing token of the job run; undefined for unfenced writers (push, reconcile use versions). */
  fence?: number;
  /** Compare-and-set on the version the caller read (reconciler). */
  expectedVersion?: number;
  /** Treat a Task as a snapshot that replaces state even when it equals the row's (a subscription's first event, a GetTask); a Task's artifacts are stored either way. */
  snapshot?: boolean;
  /** The delegation's Agent Card URL when the caller's record has no task id yet (binds a new one first, see `StatusChange`). */
  agentCardUrl?: string;
  /** With `agentCardUrl`: the attempt deadline (ms since epoch): the new task id stays bound at least that long (see `StatusChange.bindUntilMs`). */
  bindUntilMs?: number;
  /** A lease the status change ends (see `StatusChange.endsLease`); artifact updates never end one. */
  endsLease?: StatusChange['endsLease'];
  /** The row as the caller holds it (see `StatusChange.held`): the status change's reply may then carry only what changed. */
  held?: DelegationRecord;
  /** The Task is the placeholder of a task a Message answer named, not yet read (see `StatusChange.namedTaskUnread`). */
  namedTaskUnread?: true;
  /** The stream the event came on (see `StatusChange.stream`); undefined: an unordered observation (a read, a push). */
  stream?: string;
}

/** The error a finished unsuccessful status records (FAILED, REJECTED, CANCELED: the agent's message), else undefined. */
export const statusErrorOf = (status: TaskStatus): RecordedError | undefined => {
  const state = journalStateOf(status.state);
  if (state !== 'FAILED' && state !== 'REJECTED' && state !== 'CANCELED') return undefined;
  const text = status.message?.parts.map((part) => part.text ?? '').join(' ').trim();
  return { code: `TASK_${state}`, message: text || `the agent reported ${state}`, retryable: false };
};

/**
 * Applies a full Task (snapshot or event: a GetTask, a SendMessage answer, a stream's Task, ListTasks with artifacts,
 * a push). A Task is the task as the agent holds it, so its artifacts (when it carries the field) are stored in the
 * same transition as its status: a finished Task's list replaces the stored ones (`[]` included: the agent's last word
 * on its result) and settles the row with its result, never before it. An unfinished Task's list is merged in: the
 * held artifacts it leaves out are kept (applyStatus-5.lua), since a Task read while the task runs may be a stale
 * snapshot (an agent's store behind its stream or a push) and the journal's view must not show less than the agent
 * showed meanwhile; the result's `leftOut` names them (the stream's `takenBack`: a full read before COMPLETED settles).
 * `snapshot` decides only whether an equal status is applied again (snapshot) or a duplicate (event).
 * A ListTasks summary is no full Task: it never settles a row (the delegation core reads it in full first).
 */
export async function applyTask(
  journal: Journal,
  ref: DelegationRef,
  task: Task,
  options: ObserveOptions = {},
): Promise<StatusChangeResult> {
  return journal.applyStatus(ref, taskChangeOf(task, options));
}

/**
 * The question's words of a parked Task without a status message, from its history (`historyQuestionWords`), cut after
 * the last status message the row recorded (`held`: its status message, else its `questionWordsAfter`): none without the
 * held row, on a row parked on words already, nor on a row parked without words that does not say what came before (a
 * progress message must never become the question, A36).
 */
function taskQuestionWords(task: Task, held: DelegationRecord | undefined): Message | undefined {
  if (task.status.message || !held) return undefined;
  const heldParked = held.state === 'INPUT_REQUIRED' || held.state === 'AUTH_REQUIRED';
  const owner = { taskId: held.taskId, contextId: held.contextId };
  const after = cutsOf(held.questionWordsAfter);
  if (!heldParked) return historyQuestionWords(task, owner, [held.statusMessage?.messageId, ...after]);
  // Parked with words: they stay (a bare read keeps them, applyStatus-5.lua). Without: after the status message
  // recorded before the question (not said on an older row: none taken).
  if (held.question || !held.questionWordsAfter) return undefined;
  return historyQuestionWords(task, owner, after);
}

/**
 * The status change a full Task asks for (`applyTask`). An unparked, unfinished status records the last agent message
 * it was read with (its history's, else the stream's before it: `wordsCut`, A36).
 */
function taskChangeOf(task: Task, options: ObserveOptions): StatusChange {
  const words = taskQuestionWords(task, options.held);
  const wordsCut = wordsCutFor(task.status.state, historyWordsCut(task) ?? streamWordsCut(task));
  return {
    fence: options.fence,
    expectedVersion: options.expectedVersion,
    mode: options.snapshot ? 'snapshot' : 'event',
    state: journalStateOf(task.status.state),
    statusTimestamp: task.status.timestamp,
    taskId: task.id,
    contextId: task.contextId,
    statusMessage: words ?? task.status.message,
    // Cut from the caller's copy (`held`): the script checks that cut against the row as stored (review35).
    ...(words && options.held ? { questionWords: true as const, questionWordsOn: wordsBasisOf(options.held) } : {}),
    ...(wordsCut !== undefined ? { wordsCut } : {}),
    error: statusErrorOf(task.status),
    artifacts: task.artifacts,
    agentCardUrl: options.agentCardUrl,
    ...(options.bindUntilMs !== undefined ? { bindUntilMs: options.bindUntilMs } : {}),
    endsLease: options.endsLease,
    held: options.held,
    ...(options.namedTaskUnread ? { namedTaskUnread: true as const } : {}),
    ...(options.stream !== undefined ? { stream: options.stream } : {}),
  };
}

/**
 * `applyTask` of a finished Task with the one-step finish (`Journal.finishStep`): the same result, and `finished`
 * when the workflow was finished in the same script (`removedFromIndex`: the delegation's own index entry was
 * there). Otherwise the change ran alone and the caller settles as after `applyTask`.
 * @throws JournalError as `applyTask`
 */
export async function applyTaskFinishing(
  journal: Journal,
  ref: DelegationRef,
  task: Task,
  options: ObserveOptions,
  finish: OneStepFinish,
): Promise<{ status: StatusChangeResult; finished?: { removedFromIndex: boolean } }> {
  return finishedStatus(await journal.finishStep(ref, taskChangeOf(task, options), finish));
}

/** A `finishStep` result as the status change's result, and whether (and how) it finished the workflow. */
function finishedStatus(outcome: FinishStepResult): { status: StatusChangeResult; finished?: { removedFromIndex: boolean } } {
  if (!outcome.finished) return { status: outcome.status };
  return { status: { applied: true, version: outcome.record.version, record: outcome.record }, finished: { removedFromIndex: outcome.removedFromIndex } };
}

/**
 * Applies one StreamResponse for the delegation whose record is `record`.
 * Events for another task id are ignored and reported (`foreignTaskId`).
 */
export async function applyStreamResponse(
  journal: Journal,
  record: Pick<DelegationRecord, 'workflowId' | 'delegationId' | 'taskId' | 'contextId'>,
  response: StreamResponse,
  options: ObserveOptions = {},
): Promise<ObservationResult> {
  const ref = { workflowId: record.workflowId, delegationId: record.delegationId };
  const contextAnomaly = (contextId: string | undefined) =>
    contextId && record.contextId && contextId !== record.contextId ? contextId : undefined;
  if ('task' in response) {
    if (record.taskId && response.task.id !== record.taskId) return { kind: 'ignored', foreignTaskId: response.task.id };
    return { kind: 'status', status: await applyTask(journal, ref, response.task, options), contextAnomaly: contextAnomaly(response.task.contextId) };
  }
  if ('statusUpdate' in response) {
    const event = response.statusUpdate;
    if (record.taskId && event.taskId !== record.taskId) return { kind: 'ignored', foreignTaskId: event.taskId };
    const status = await journal.applyStatus(ref, statusChangeOf(event, options));
    return { kind: 'status', status, contextAnomaly: contextAnomaly(event.contextId) };
  }
  if ('artifactUpdate' in response) {
    const event = response.artifactUpdate;
    if (record.taskId && event.taskId !== record.taskId) return { kind: 'ignored', foreignTaskId: event.taskId };
    const artifact = await journal.applyArtifact(ref, options.fence, event);
    return { kind: 'artifact', artifact, contextAnomaly: contextAnomaly(event.contextId) };
  }
  // A direct Message reply on a task stream carries no state of its own.
  return { kind: 'message' };
}

/** The status change a TaskStatusUpdateEvent asks for; on a stream, with the last Message event it follows (`wordsCut`). */
function statusChangeOf(event: TaskStatusUpdateEvent, options: ObserveOptions): StatusChange {
  const wordsCut = wordsCutFor(event.status.state, streamWordsCut(event));
  return {
    fence: options.fence,
    mode: 'event',
    state: journalStateOf(event.status.state),
    statusTimestamp: event.status.timestamp,
    taskId: event.taskId,
    // Only a non-empty context is recorded, and only if none is known (R16).
    contextId: event.contextId || undefined,
    statusMessage: event.status.message,
    ...(wordsFilled(event) ? { questionWords: true as const } : {}),
    ...(wordsCut !== undefined ? { wordsCut } : {}),
    error: statusErrorOf(event.status),
    endsLease: options.endsLease,
    held: options.held,
    ...(options.stream !== undefined ? { stream: options.stream } : {}),
  };
}

/** A stream's artifact update and the status update that arrived right after it (`applyStreamResponsePair`). */
export type ArtifactThenStatus = [{ artifactUpdate: TaskArtifactUpdateEvent }, { statusUpdate: TaskStatusUpdateEvent }];

/**
 * Applies an artifact update and the status update after it in one journal round trip
 * (`Journal.applyArtifactThenStatus`), for a record that has its task id and events that both name it (a caller
 * checks that first: a foreign event goes through `applyStreamResponse`, one by one). The results are what
 * `applyStreamResponse` on each, in order, would give; `options.endsLease` applies to the status change.
 * @throws JournalError as `applyStreamResponse`
 */
export async function applyStreamResponsePair(
  journal: Journal,
  record: Pick<DelegationRecord, 'workflowId' | 'delegationId' | 'taskId' | 'contextId'>,
  [{ artifactUpdate }, { statusUpdate }]: ArtifactThenStatus,
  options: ObserveOptions = {},
): Promise<[ObservationResult, ObservationResult]> {
  const ref = { workflowId: record.workflowId, delegationId: record.delegationId };
  const contextAnomaly = (contextId: string | undefined) =>
    contextId && record.contextId && contextId !== record.contextId ? contextId : undefined;
  const { artifact, status } = await journal.applyArtifactThenStatus(ref, options.fence, artifactUpdate, statusChangeOf(statusUpdate, options));
  return [
    { kind: 'artifact', artifact, contextAnomaly: contextAnomaly(artifactUpdate.contextId) },
    { kind: 'status', status, contextAnomaly: contextAnomaly(statusUpdate.contextId) },
  ];
}

/**
 * `applyStreamResponse` of a stream's terminal status update, or `applyStreamResponsePair` of an artifact update and
 * the terminal status update after it, with the one-step finish (`Journal.finishStep`): the same results (an event
 * naming another task applies nothing), and `finished` when the workflow was finished in the same script (its
 * `removedFromIndex`: the delegation's own index entry was there). Otherwise the change ran alone and the caller
 * settles as after `applyStreamResponse`.
 * @throws JournalError as `applyStreamResponse` (`applyStreamResponsePair`)
 */
export async function applyTerminalFinishing(
  journal: Journal,
  record: Pick<DelegationRecord, 'workflowId' | 'delegationId' | 'taskId' | 'contextId'>,
  responses: [{ statusUpdate: TaskStatusUpdateEvent }] | ArtifactThenStatus,
  options: ObserveOptions,
  finish: OneStepFinish,
): Promise<{ results: ObservationResult[]; finished?: { removedFromIndex: boolean } }> {
  const ref = { workflowId: record.workflowId, delegationId: record.delegationId };
  const contextAnomaly = (contextId: string | undefined) =>
    contextId && record.contextId && contextId !== record.contextId ? contextId : undefined;
  const [first, second] = responses;
  const event = second ? second.statusUpdate : (first as { statusUpdate: TaskStatusUpdateEvent }).statusUpdate;
  if (!second && record.taskId && event.taskId !== record.taskId) return { results: [{ kind: 'ignored', foreignTaskId: event.taskId }] };
  const artifactUpdate = second ? (first as { artifactUpdate: TaskArtifactUpdateEvent }).artifactUpdate : undefined;
  const outcome = await journal.finishStep(ref, statusChangeOf(event, options), finish, artifactUpdate ? { fence: options.fence, update: artifactUpdate } : undefined);
  const { status, finished } = finishedStatus(outcome);
  const statusResult: ObservationResult = { kind: 'status', status, contextAnomaly: contextAnomaly(event.contextId) };
  const results: ObservationResult[] = artifactUpdate ? [{ kind: 'artifact', artifact: outcome.artifact, contextAnomaly: contextAnomaly(artifactUpdate.contextId) }, statusResult] : [statusResult];
  return { results, ...(finished ? { finished } : {}) };
}
