/**
 * Reads of one task (spec §3.1.3 GetTask) as observations: the answer (`task-read`, with its ownership: a GetTask
 * about the id we asked is about that task, an answer naming another id is disproven), TaskNotFound proven by the
 * binding (`task-not-found`), or a failure (`read-failed`: a drop is retryable; an answer over a limit, one we cannot
 * parse or prove ours, a not-found the binding does not speak is `unacceptable`). Never writes the journal, never
 * routes: `apply.ts` does.
 */
import { A2AError, AuthenticationError, LimitExceededError, TaskNotFoundError, isRetryable, taskNotFoundProven } from '@durable-a2a/a2a';
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
 * A failed call about our task as an observation, the one place a read's "not found" is read: the agent's
 * TaskNotFoundError as its binding speaks it (`taskNotFoundProven`: JSON-RPC -32001, the ErrorInfo reason
 * TASK_NOT_FOUND on HTTP+JSON and gRPC), from any call, is `task-not-found` (the not-found window, then LOST); a bare
 * HTTP 404 or gRPC NOT_FOUND (a proxy's, a route's; an A2A 0.3 gRPC agent's) is an answer that proves nothing about
 * the task: `read-failed`, unacceptable (`PROTOCOL_ERROR`: bounded rounds, then a person), the row keeping its state
 * (readnotfound: a proxy answering NOT_FOUND to every read ended a running task LOST, and the step went to another
 * agent). Any other A2A error is `read-failed` (retryable: a drop; otherwise `unacceptable`). Rethrows journal and
 * programming errors.
 */
export function readFailure(error: unknown, call: AgentCall, why: string, cycle: boolean, log: WorkerContext['logger']): Observation {
  if (taskNotFoundProven(error)) return { kind: 'task-not-found', call };
  if (error instanceof JournalError || !(error instanceof A2AError || isRetryable(error))) throw error;
  const retryable = isRetryable(error);
  const unproven = error instanceof TaskNotFoundError;
  log.warn({ err: error, call }, unproven ? 'a not-found the binding does not speak (no TaskNotFoundError): it proves nothing about our task' : retryable ? 'a call about our task failed; looking again later' : 'an answer about our task cannot be used');
  const unacceptable: Unacceptable | undefined = unproven ? unprovenNotFound(error) : retryable ? undefined : unacceptableOf(error);
  const code = unacceptable?.code ?? codeOf(error);
  return { kind: 'read-failed', call, code, retryable, why, cycle, ...(unacceptable ? { unacceptable } : {}) };
}

/** A not-found without the binding's TaskNotFoundError, as the unusable answer it is: `PROTOCOL_ERROR`, what arrived named. */
function unprovenNotFound(error: TaskNotFoundError): Unacceptable {
  const status = error.grpcStatus !== undefined ? `gRPC status ${error.grpcStatus}` : error.jsonRpcCode !== undefined ? `JSON-RPC code ${error.jsonRpcCode}` : `HTTP ${error.httpStatus ?? '?'}`;
  const reason = error.reason === undefined ? 'no ErrorInfo' : `ErrorInfo reason ${error.reason}`;
  return { code: 'PROTOCOL_ERROR', message: `a not-found the binding does not speak (${status}, ${reason}): no proof the agent lost the task: ${error.message}` };
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
