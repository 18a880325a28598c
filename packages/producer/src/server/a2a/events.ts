/**
 * The events of a front task for SendStreamingMessage and SubscribeToTask (spec §3.1.2, §3.1.6): first the
 * current Task (a reconnect gets the same snapshot), then a status update whenever the state or its message
 * changes and an artifact update for every artifact that is new or changed, until the task is terminal or
 * waits for the caller (INPUT_REQUIRED / AUTH_REQUIRED). Woken by the journal's change channel (via
 * `producer.waitFor`); the channel announces state changes and questions only, so a stream also reads the
 * journal again every `refreshMs` to pass on WORKING and artifacts as they arrive.
 */
import type { StreamResponse, Task } from '@a2a-js/sdk';
import { setTimeout as sleep } from 'node:timers/promises';
import type { WorkflowView } from '../../view.ts';
import { WaitTimeoutError, isSettled, type WaitForOptions } from '../../wait.ts';
import { INTERRUPTED_TASK_STATES, TERMINAL_TASK_STATES, frontTask } from './task.ts';

/**
 * Resolves once the caller's connection has taken what was written to it (its buffer back under its high-water mark)
 * or closed. A stream waits on it before it reads the next view, so a client that reads slowly (or never) gets the
 * views it can take, each update computed against what it was last sent, and the server holds at most one view's
 * updates for it, not every update of a growing artifact. Default: never waits.
 */
export type Drained = () => Promise<void>;

/** How often an open stream reads the journal again besides the change channel (ms). */
export const STREAM_REFRESH_MS = 1_000;

/** What a stream reads: the producer's view and its change-channel wait. */
export interface TaskReader {
  get(id: string): Promise<WorkflowView>;
  waitFor(id: string, options?: WaitForOptions): Promise<WorkflowView>;
}

/** True once nothing more is streamed for the task: terminal, or waiting for the caller. */
export function streamEndsAt(task: Task): boolean {
  const state = task.status?.state;
  return state !== undefined && (TERMINAL_TASK_STATES.has(state) || INTERRUPTED_TASK_STATES.has(state));
}

/** The next view: on a change (or a question) within `refreshMs`, else as it is then. Rejects with the signal's reason. */
export async function nextView(reader: TaskReader, taskId: string, previous: WorkflowView, signal: AbortSignal, refreshMs: number): Promise<WorkflowView> {
  // Settled for waitFor but not ended for the caller (a person decides; a question while a cancel runs): waitFor would answer at once.
  if (isSettled(previous, true)) {
    await sleep(refreshMs, undefined, { signal });
    return reader.get(taskId);
  }
  try {
    return await reader.waitFor(taskId, { untilQuestion: true, timeoutMs: refreshMs, signal });
  } catch (error) {
    if (error instanceof WaitTimeoutError) return error.view;
    throw error;
  }
}

/** The status update that carries `task`'s current status. */
export function statusUpdateOf(task: Task): StreamResponse {
  return { payload: { $case: 'statusUpdate', value: { taskId: task.id, contextId: task.contextId, status: task.status, metadata: undefined } } };
}

/** The updates that turn `before` into `after`: changed artifacts first, then the status when it changed. */
export function updatesBetween(before: Task, after: Task): StreamResponse[] {
  const updates: StreamResponse[] = [];
  const seen = new Map(before.artifacts.map((artifact) => [artifact.artifactId, JSON.stringify(artifact)]));
  for (const artifact of after.artifacts) {
    if (seen.get(artifact.artifactId) === JSON.stringify(artifact)) continue;
    updates.push({ payload: { $case: 'artifactUpdate', value: { taskId: after.id, contextId: after.contextId, artifact, append: false, lastChunk: true, metadata: undefined } } });
  }
  const statusKey = (task: Task) => `${task.status?.state}:${task.status?.message?.messageId ?? ''}`;
  if (statusKey(before) !== statusKey(after)) {
    updates.push(statusUpdateOf(after));
  }
  return updates;
}

/**
 * The event stream of `taskId`. Ends when the task ends or waits for the caller, or quietly when `signal`
 * aborts (the caller left). Each next view is read once the caller took what was written (`drained`).
 * Rejects with NotFoundError for a missing task.
 */
export async function* taskEvents(
  reader: TaskReader,
  taskId: string,
  signal: AbortSignal,
  refreshMs: number = STREAM_REFRESH_MS,
  drained: Drained = async () => undefined,
): AsyncGenerator<StreamResponse, void, undefined> {
  let view = await reader.get(taskId);
  let task = frontTask(view);
  yield { payload: { $case: 'task', value: task } };
  while (!streamEndsAt(task) && !signal.aborted) {
    try {
      await drained();
      if (signal.aborted) return;
      view = await nextView(reader, taskId, view, signal, refreshMs);
    } catch (error) {
      if (signal.aborted) return;
      throw error;
    }
    const next = frontTask(view);
    yield* updatesBetween(task, next);
    task = next;
  }
}
