/**
 * Is what an agent said about us? (docs/a2a-edge.md "Ownership"; field case RT-ownership.)
 * Nothing an agent sends is adopted before it is proven ours:
 * - the answer to our request: JSON-RPC answers must carry our request id (checked in the
 *   transport, `checkResponseId`; `ResponseIdMismatchError` otherwise);
 * - about our task: a stream event must name the task we subscribed to (`eventOwnership`);
 * - in our context, and, when the call cannot tell (a search, a push, a task found rather
 *   than returned to our own send), holding our messageId in its history (`taskOwnership`).
 * - an answer whose framing proves nothing (a JSON-RPC answer without an id, an HTTP+JSON answer
 *   in a non-2xx status): its content (`answerContentProof`, the transports' one rule for every binding).
 * These are pure checks; the workers call them before journaling anything.
 */
import type { Message, StreamResponse, Task } from './schema.ts';
import { rawField } from './proto-names.ts';
import { roleFromWire } from './spelling.ts';

/** What we know about the delegation the answer should belong to. */
export interface OwnershipExpectation {
  /** The contextId we journaled for the delegation (sent with the message). */
  contextId?: string;
  /** Our message's id (SendMessage `message.messageId`). */
  messageId?: string;
  /** The task id we recorded, once known. */
  taskId?: string;
}

/** Where the task came from: `answer` = returned to our own SendMessage (request id checked); `found` = a search, a push, anything else. */
export type TaskSource = 'answer' | 'found';

/** The verdict, with a typed reason when it is not ours (for the journal and the reconciler). */
export type Ownership =
  | { ours: true }
  | { ours: false; reason: 'foreign-task' | 'foreign-context' | 'message-not-in-history' | 'no-task-id'; detail: string };

const notOurs = (reason: Exclude<Ownership, { ours: true }>['reason'], detail: string): Ownership => ({ ours: false, reason, detail });

/**
 * `true` when `history` holds our message: one with `messageId` written by us (any role but the agent's). An agent's
 * own message that carries our messageId (a quote, a copy, an echo) proves nothing: the one rule of every ownership
 * check by messageId (reads, pushes, the reconciler's search, a send answer's content proof).
 */
export const historyHolds = (history: readonly Message[] | undefined, messageId: string): boolean =>
  (history ?? []).some((message) => message.messageId === messageId && message.role !== 'ROLE_AGENT');

/**
 * `historyHolds` on a history not yet validated (a JSON-RPC answer whose id proves nothing): an entry holds our
 * message when it carries `messageId` and a role that is not the agent's in any spelling (`roleFromWire`).
 */
const rawHistoryHolds = (history: unknown, messageId: string): boolean =>
  Array.isArray(history) &&
  history.some((entry) => {
    return rawField(entry, 'messageId') === messageId && roleFromWire(rawField(entry, 'role')) !== 'ROLE_AGENT';
  });

/**
 * Whether `task` is ours:
 * - its id, when we recorded one, is that id;
 * - its contextId, when both sides have one, is ours (an agent that drops contextId is judged by messageId);
 * - when `source` is `found` (the call cannot tell: search, push), or the task carries no context to
 *   compare, its history holds our messageId.
 * A task returned to our own SendMessage in our context is ours without the history (agents may not keep it, spec §3.7).
 */
export function taskOwnership(task: Task, expected: OwnershipExpectation, source: TaskSource = 'found'): Ownership {
  if (expected.taskId !== undefined && task.id !== expected.taskId) return notOurs('foreign-task', `task ${task.id} is not our task ${expected.taskId}`);
  const contextKnown = expected.contextId !== undefined && task.contextId !== undefined && task.contextId !== '';
  if (contextKnown && task.contextId !== expected.contextId) return notOurs('foreign-context', `task ${task.id} is in context ${task.contextId}, not ours ${expected.contextId}`);
  const callTells = source === 'answer' && (contextKnown || expected.taskId !== undefined);
  if (callTells || expected.messageId === undefined) return { ours: true };
  if (historyHolds(task.history, expected.messageId)) return { ours: true };
  return notOurs('message-not-in-history', `task ${task.id} does not hold our message ${expected.messageId} in its history`);
}

/** How `taskShownOurs` judges: `requestIdProves`, the task is the answer to our own request (its id checked at the edge). */
export interface ShownOursOptions {
  /**
   * The request id proves the task ours when its content cannot be compared: we sent no context, or it answers about
   * the task id we hold (`expected.taskId`) in no context. Default false: the task's own content alone decides (a task
   * another answer merely named, a Message's claim).
   */
  requestIdProves?: boolean;
}

/**
 * Whether `task` shows it is ours, the rule for a Task an agent gave us about our message (the answer to our
 * SendMessage, R16; the first full read of a task an agent's Message named): its id, when we hold one, is that id;
 * and it is in the context we sent (`expected.contextId`), or its history holds our messageId (`historyHolds`: an
 * agent may replace our context with its own), or, with `requestIdProves`, nothing to compare (see there).
 * Not ours: `foreign-task`, else `message-not-in-history` (its context, when it has one, not ours either).
 */
export function taskShownOurs(task: Task, expected: OwnershipExpectation, options: ShownOursOptions = {}): Ownership {
  if (expected.taskId !== undefined && task.id !== expected.taskId) return notOurs('foreign-task', `task ${task.id} is not our task ${expected.taskId}`);
  const contextKnown = expected.contextId !== undefined && task.contextId !== undefined && task.contextId !== '';
  if (contextKnown && task.contextId === expected.contextId) return { ours: true };
  if (expected.messageId !== undefined && historyHolds(task.history, expected.messageId)) return { ours: true };
  if (options.requestIdProves && !contextKnown && (expected.contextId === undefined || expected.taskId !== undefined)) return { ours: true };
  const where = contextKnown ? `is in context ${task.contextId}, not ours ${expected.contextId}, and ` : '';
  return notOurs('message-not-in-history', `task ${task.id} ${where}does not hold our message ${expected.messageId ?? '(none)'} in its history`);
}

/** Boolean form of `taskOwnership` (see there). */
export const isTaskOurs = (task: Task, expected: OwnershipExpectation, source: TaskSource = 'found'): boolean =>
  taskOwnership(task, expected, source).ours;

/** The task id a stream event names, if any (a `message` names it only through `message.taskId`). */
export function eventTaskId(response: StreamResponse): string | undefined {
  if ('task' in response) return response.task.id;
  if ('statusUpdate' in response) return response.statusUpdate.taskId;
  if ('artifactUpdate' in response) return response.artifactUpdate.taskId;
  return response.message.taskId || undefined;
}

/** The contextId a stream event names, if any. */
export function eventContextId(response: StreamResponse): string | undefined {
  const value = 'task' in response ? response.task.contextId
    : 'statusUpdate' in response ? response.statusUpdate.contextId
    : 'artifactUpdate' in response ? response.artifactUpdate.contextId
    : response.message.contextId;
  return value || undefined;
}

/**
 * Whether a stream event is about our task. On SubscribeToTask (or a send stream once the task id is
 * known) pass `taskId`: the event must name exactly it. Before the task id is known (the first events of
 * SendStreamingMessage) an event naming a context must name ours. An event naming no task (a direct
 * message reply) is ours only on our own send stream (`taskId` unknown). With a matching task id, the
 * context is not judged (field case R16: agents send "" or another context on events of our task).
 */
export function eventOwnership(response: StreamResponse, expected: OwnershipExpectation): Ownership {
  const taskId = eventTaskId(response);
  const contextId = eventContextId(response);
  if (expected.taskId !== undefined) {
    if (taskId === undefined) return notOurs('no-task-id', 'event names no task');
    if (taskId !== expected.taskId) return notOurs('foreign-task', `event names task ${taskId}, not our task ${expected.taskId}`);
    // The task id was proven ours when recorded; a wrong or empty context on its events is an agent bug (R16).
    return { ours: true };
  }
  if (contextId !== undefined && expected.contextId !== undefined && contextId !== expected.contextId) {
    return notOurs('foreign-context', `event names context ${contextId}, not ours ${expected.contextId}`);
  }
  return { ours: true };
}

/** Boolean form of `eventOwnership` with a subscribed task id: the event names `taskId`. */
export const eventNamesTask = (response: StreamResponse, taskId: string): boolean => eventTaskId(response) === taskId;

/** The task in a result: 1.0 `{task}`, or a 0.3 / bare Task. */
function taskOfResult(result: unknown): { id?: unknown; history?: unknown } | undefined {
  if (typeof result !== 'object' || result === null) return undefined;
  const task = 'task' in result ? (result as { task: unknown }).task : result;
  return typeof task === 'object' && task !== null ? (task as { id?: unknown; history?: unknown }) : undefined;
}

/** The Task or Message a send result carries: 1.0 `{task}` / `{message}`, or a bare (0.3, kind-tagged) one. */
function messageOrTaskOfResult(result: unknown): { history?: unknown; contextId?: unknown } | undefined {
  if (typeof result !== 'object' || result === null) return undefined;
  const inner = 'message' in result ? (result as { message: unknown }).message : taskOfResult(result);
  return typeof inner === 'object' && inner !== null ? (inner as { history?: unknown; contextId?: unknown }) : undefined;
}

/** The task id a result names: a Task's id (1.0 `{task}`, bare, 0.3), or a stream event's `taskId` (1.0 updates, 0.3 events). */
function taskIdOfResult(result: unknown): unknown {
  if (typeof result !== 'object' || result === null) return undefined;
  return rawField(rawField(result, 'statusUpdate'), 'taskId') ?? rawField(rawField(result, 'artifactUpdate'), 'taskId') ?? rawField(result, 'taskId') ?? taskOfResult(result)?.id;
}

/**
 * What proves by its content that an answer (`result`, in the 1.0 shapes or a bare 0.3 Task / event) answers a request
 * with these `params`, when the framing cannot (a JSON-RPC answer without an id, A33; an HTTP+JSON answer in a non-2xx
 * status; docs/a2a-edge.md "Ownership"): our messageId in the history of the task, or the context we sent on the Task
 * or Message answered (SendMessage); the task id we asked about (GetTask, CancelTask, and each frame of
 * SubscribeToTask); for a `list` request (ListTasks), a page that lists tasks, each in the context we asked for (an
 * empty page proves nothing). Other requests have no content proof (`undefined`). The same rules on every binding.
 */
export function answerContentProof(params: object, kind: 'one' | 'list' = 'one'): ((result: unknown) => boolean) | undefined {
  if (kind === 'list') {
    const contextId = (params as { contextId?: unknown }).contextId;
    return (result) => {
      const tasks = (result as { tasks?: unknown } | null)?.tasks;
      return Array.isArray(tasks) && tasks.length > 0 && tasks.every((task) => contextId === undefined || rawField(task, 'contextId') === contextId);
    };
  }
  const { messageId, contextId } = (params as { message?: { messageId?: unknown; contextId?: unknown } }).message ?? {};
  if (typeof messageId === 'string') {
    return (result) => {
      const answered = messageOrTaskOfResult(result);
      if (rawHistoryHolds(answered?.history, messageId)) return true;
      // Our context (a fresh one per delegation, sent with the message) on the Task or Message answered.
      return typeof contextId === 'string' && contextId !== '' && rawField(answered, 'contextId') === contextId;
    };
  }
  const taskId = (params as { id?: unknown }).id;
  if (typeof taskId === 'string' && taskId !== '') return (result) => taskIdOfResult(result) === taskId;
  return undefined;
}

