/**
 * Reads of one task (spec §3.1.3 GetTask) as observations: the answer (`task-read`, with its ownership: a GetTask
 * about the id we asked is about that task, an answer naming another id is disproven), TaskNotFound
 * (`task-not-found`), or a failure (`read-failed`: a drop is retryable; an answer over a limit, one we cannot parse
 * or prove ours is `unacceptable`). Never writes the journal, never routes: `apply.ts` does.
 */
import { A2AError, AuthenticationError, LimitExceededError, TaskNotFoundError, isRetryable } from '@durable-a2a/a2a';
import { JournalError, limitRefusalOf, recordedErrorCodeOf, type DelegationRecord } from '@durable-a2a/shared';
import type { WorkerContext } from '../../context.ts';
import type { AgentCall, Observation, Unacceptable } from '../core/observation.ts';

/** The journal code of a failed call's error (`recordedErrorCodeOf`: an A2A client code, else `UNEXPECTED_ERROR`). */
export const codeOf = recordedErrorCodeOf;

/** How to read: why (evidence text), another task id than the row's (a found task read in full before adoption), part of a follow cycle. */
export interface ReadRequest {
  why: string;
  /** The task to read; default the row's own task. */
  taskId?: string;
  /** Part of a follow cycle (the progress rule applies to what it shows). Default true when the row has a task. */
  cycle?: boolean;
  /** The stream event we refused (over a limit) that this read makes up for (A32). */
  refused?: Unacceptable;
  /** The stream before this read delivered events (P36). */
  afterLiveStream?: boolean;
  /** The check before LOST found the task again as a summary of a finished task (a denial of this read says so). */
  foundAgain?: boolean;
  /** What the read is for, in the observation: `push` reads the task a refused push named (not ours); default `get-task`. */
  call?: Extract<AgentCall, 'get-task' | 'push'>;
  log?: WorkerContext['logger'];
}

/**
 * One GetTask of our task as an observation. Rethrows only what is not the agent's (journal errors, programming
 * errors before the request); every answer and failure of the agent becomes an observation: the transports type a
 * failure to read an answer that arrived (`answerFault`, delivery `received`), and `apply` turns a fault applying it
 * into a `read-failed` (`unprocessedAnswer`).
 */
export async function readTask(ctx: WorkerContext, record: DelegationRecord, request: ReadRequest): Promise<Observation> {
  const taskId = request.taskId ?? record.taskId;
  const cycle = request.cycle ?? (request.taskId === undefined && record.taskId !== undefined);
  if (!taskId) return { kind: 'read-failed', call: 'get-task', code: 'NO_TASK_ID', retryable: false, why: `${request.why}; no task id to read`, cycle };
  try {
    const transport = await ctx.agents.transportFor(record);
    const task = await transport.getTask({ id: taskId });
    // Ownership (docs/a2a-edge.md): GetTask must answer about the task we asked for.
    const ownership = task.id === taskId ? ({ kind: 'proven', by: 'task-id' } as const) : ({ kind: 'disproven', reason: `GetTask ${taskId} answered task ${task.id}` } as const);
    const live = request.afterLiveStream ? { afterLiveStream: true } : {};
    return { kind: 'task-read', task, call: request.call ?? 'get-task', complete: true, ownership, why: request.why, cycle, ...(request.refused ? { afterRefused: request.refused } : {}), ...live };
  } catch (error) {
    const failed = readFailure(error, request.call ?? 'get-task', request.why, cycle, request.log ?? ctx.logger);
    if (failed.kind === 'task-not-found' && request.foundAgain) return { ...failed, afterFoundAgain: true };
    return failed.kind === 'read-failed' && request.afterLiveStream ? { ...failed, afterLiveStream: true } : failed;
  }
}

/**
 * A failed call about our task as an observation: TaskNotFound from any call is `task-not-found`; an A2A error is
 * `read-failed` (retryable: a drop; otherwise `unacceptable`). Rethrows journal and programming errors.
 */
export function readFailure(error: unknown, call: AgentCall, why: string, cycle: boolean, log: WorkerContext['logger']): Observation {
  if (error instanceof TaskNotFoundError) return { kind: 'task-not-found', call };
  if (error instanceof JournalError || !(error instanceof A2AError || isRetryable(error))) throw error;
  const retryable = isRetryable(error);
  log.warn({ err: error, call }, retryable ? 'a call about our task failed; looking again later' : 'an answer about our task cannot be used');
  const code = codeOf(error);
  const unacceptable: Unacceptable | undefined = retryable ? undefined : unacceptableOf(error);
  return { kind: 'read-failed', call, code, retryable, why, cycle, ...(unacceptable ? { unacceptable } : {}) };
}

/** An answer we cannot accept, as its observation carries it: the error's code, message, limit (and AUTH for refused credentials). */
export function unacceptableOf(error: unknown): Unacceptable {
  return {
    code: codeOf(error),
    message: error instanceof Error ? error.message : String(error),
    ...limitOf(error),
    ...(error instanceof AuthenticationError ? { outcome: 'AUTH' as const } : {}),
  };
}

/** The limit an error went over and the artifact it refused, when it was a limit (`LimitExceededError`); else nothing. */
export function limitOf(error: unknown): Pick<Unacceptable, 'limit' | 'artifactId'> {
  if (!(error instanceof LimitExceededError)) return {};
  const { message: _message, ...limit } = limitRefusalOf(error);
  return limit;
}
