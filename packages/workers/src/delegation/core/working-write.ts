/**
 * Which stream status writes may wait (`workingWriteDelayMs`, the run side is `runs/working-write.ts`), and what a
 * waiting one becomes when the stream's next observation arrives. A follow's first snapshot of a task the agent is
 * working on (`WORKING` over the send's `SUBMITTED`) moves nothing but the state's name and its stamps; with a
 * typical agent its finished status follows within a fraction of a second, and that write replaces it. Holding it a
 * moment saves a status transition (one applyStatus-5.lua call) for most delegations.
 *
 * The rule: a write that waits is the same event arriving later (the journal already orders events that race with
 * pushes and reads: its script decides from the row as it is then), and one that is never written is one a later
 * write of this stream makes moot. Everything else is written in the order the stream brought it. Pure.
 */
import { isFinished, isTerminalTaskState, journalStateOf } from '@durable-a2a/shared/pure';
import type { StreamResponse, TaskStatus } from '@durable-a2a/a2a';
import type { DelegationRecord, JournalState } from '@durable-a2a/shared';
import type { Observation } from './observation.ts';

/** The states a waiting write may move between (and only these: a question or an outcome is written at once). */
const WAITING_STATES: ReadonlySet<JournalState> = new Set(['SUBMITTED', 'WORKING']);

/**
 * True when `observation` may wait before it is written over `record` (the row as the stream's last write left it):
 * one stream event, a status update or a Task without an artifacts field, about the row's task, whose state and the
 * row's are both SUBMITTED or WORKING, and that writes nothing else: no status message (nor one on the row, which the
 * write would clear), no new context id, not the first status of a task a Message answer named (`namedTaskUnread`:
 * its ownership is proven by that status), no not-found count to reset, no push config to register beside it. A
 * question (INPUT_REQUIRED, AUTH_REQUIRED), an artifact and any finished state never wait.
 */
export function mayWait(record: DelegationRecord, observation: Observation): boolean {
  if (observation.kind !== 'stream-event' || observation.responses.length !== 1) return false;
  const [response] = observation.responses;
  const event = statusOf(response);
  if (!event || record.taskId === undefined || event.taskId !== record.taskId) return false;
  if ('task' in response && response.task.artifacts !== undefined) return false;
  if (!WAITING_STATES.has(record.state) || !WAITING_STATES.has(journalStateOf(event.status.state))) return false;
  if (event.status.message !== undefined || record.statusMessage !== undefined) return false;
  if (event.contextId && event.contextId !== record.contextId) return false;
  if (record.namedTaskUnread || record.notFoundCount > 0 || record.firstNotFoundAt !== undefined) return false;
  return !(record.push && (record.pushConfigState === undefined || record.pushConfigState === 'creating'));
}

/**
 * What a waiting write becomes when `observation` arrives next (`record`: the row as the stream's last write left it):
 * - `drop`: a finished status of the row's task that is written as it came (not held back for a full read: a
 *   COMPLETED after a partial view of the artifacts), a full read of the task finished, or the lease lost (another
 *   follower holds the task: our fence no longer writes, and its subscription's first snapshot replaces the state).
 *   A finished state outranks both waiting states and is applied whatever their stamps, so the row ends as it
 *   would after both writes. If the row is somehow not finished after it, the waiting write is written then.
 * - `keep`: an artifact update or a Message alone: it writes no state and commutes with the waiting write.
 * - `flush`: anything else (another status, the stream's end or failure, the deadline, closing): the waiting write
 *   goes first, so the journal sees the stream's order.
 */
export function whenNextArrives(record: DelegationRecord, observation: Observation): 'drop' | 'keep' | 'flush' {
  switch (observation.kind) {
    case 'lease-lost':
      return 'drop';
    case 'task-read':
      return observation.complete && observation.task.id === record.taskId && isTerminalTaskState(observation.task.status.state) ? 'drop' : 'flush';
    case 'stream-event': {
      const { responses, partialArtifacts } = observation;
      const statuses = responses.map(statusOf).filter((event) => event !== undefined);
      if (statuses.length === 0) return 'keep';
      const last = responses[responses.length - 1]!;
      const status = statusOf(last);
      if (!status || !isTerminalTaskState(status.status.state) || statuses.some((event) => event.taskId !== record.taskId)) return 'flush';
      // A finished status update after a partial view waits for a full read (transitions.ts), which may not finish it.
      if (partialArtifacts && 'statusUpdate' in last) return 'flush';
      return responses.every((response) => taskIdOf(response) === record.taskId) ? 'drop' : 'flush';
    }
    default:
      return 'flush';
  }
}

/** True when `record` is finished: a waiting write over it would be refused (`finished`), so it is not sent. */
export const waitingWriteMoot = (record: DelegationRecord | undefined): boolean => record !== undefined && isFinished(record.state);

/** The status an event carries, with the task it names (a Task or a status update; else undefined). */
function statusOf(response: StreamResponse): { taskId: string; contextId: string | undefined; status: TaskStatus } | undefined {
  if ('task' in response) return { taskId: response.task.id, contextId: response.task.contextId, status: response.task.status };
  if ('statusUpdate' in response) return { taskId: response.statusUpdate.taskId, contextId: response.statusUpdate.contextId, status: response.statusUpdate.status };
  return undefined;
}

/** The task an event names (undefined for a Message). */
function taskIdOf(response: StreamResponse): string | undefined {
  if ('task' in response) return response.task.id;
  if ('statusUpdate' in response) return response.statusUpdate.taskId;
  if ('artifactUpdate' in response) return response.artifactUpdate.taskId;
  return undefined;
}
