/**
 * One GetTask on terminal-subscribe or a dropped stream: a subscription
 * refused as terminal (-32004, -32001, an empty stream), a stream that ended
 * early, broke the protocol (RT4) or stayed quiet (RT6) is read once, never
 * looped; then the progress rule (`progress.ts`) settles, parks, resubscribes
 * with backoff, slow-polls or asks for a person. A GetTask answer that cannot
 * be used (another request id, another task, a refusal) is replaced by one
 * ListTasks read of our task (found by our messageId). TaskNotFound goes to
 * `not-found.ts`.
 */
import {
  A2AError,
  JournalError,
  LimitExceededError,
  ProtocolError,
  TaskNotFoundError,
  applyTask,
  isFinished,
  isRetryable,
  isTerminalTaskState,
  type DelegationRecord,
  type ObservationResult,
  type StatusChangeResult,
  type Task,
  type TaskState,
  type WorkflowAtFinish,
} from '@durable-a2a/shared';
import { findTaskByMessageId } from './search.ts';
import type { WorkerContext } from '../context.ts';
import { handleTaskNotFound } from './not-found.ts';
import { afterObservation } from './progress.ts';
import type { StreamLease } from './stream.ts';

/** Error code of an A2A error (or the error's name), for logs and evidence. */
export const codeOf = (error: unknown): string =>
  (error as { code?: unknown }).code !== undefined ? String((error as { code?: unknown }).code) : error instanceof Error ? error.name : 'unknown';

/**
 * One GetTask, then the progress rule. `why` says what the stream observed before (evidence text).
 * A GetTask that fails transiently or with a protocol error (an answer we cannot understand) is an
 * observation without progress, never a retry loop. Only a lost fence and journal errors other than
 * that are thrown.
 */
export async function readOnce(ctx: WorkerContext, record: DelegationRecord, fence: number, why: string, log: WorkerContext['logger'], seen: ReadSeen = {}): Promise<string> {
  const ref = { workflowId: record.workflowId, delegationId: record.delegationId };
  try {
    const transport = await ctx.agents.transportFor(record);
    const task = await transport.getTask({ id: record.taskId! });
    // Ownership (issue 12 kind 1): GetTask must answer about the task we asked for.
    if (task.id !== record.taskId) throw new ForeignTaskError(`GetTask ${record.taskId} answered task ${task.id}`);
    return await applyRead(ctx, record, fence, task, `${why}; GetTask ${task.status.state}`, seen);
  } catch (error) {
    if (error instanceof JournalError && error.code === 'FENCE_LOST') return 'fence-lost';
    // Possibly purged or an agent restart: decided over a window, never on one answer (R13).
    if (error instanceof TaskNotFoundError) return handleTaskNotFound(ctx, record, log);
    if (error instanceof JournalError) throw error;
    const protocolErrorCode = !isRetryable(error) && error instanceof A2AError ? codeOf(error) : undefined;
    if (!isRetryable(error) && !protocolErrorCode) throw error;
    log.warn({ err: error }, 'GetTask failed; the progress rule decides when to look again');
    // A GetTask answer we cannot use (another request id, another task, a refusal): ListTasks may still show the task.
    // Not an answer over a limit: ListTasks would carry the same task (and the same excess).
    const listed = protocolErrorCode && !(error instanceof LimitExceededError) ? await readByList(ctx, record, log) : undefined;
    if (listed) return applyRead(ctx, record, fence, listed, `${why}; GetTask failed: ${protocolErrorCode}; ListTasks ${listed.status.state}`, { ...(seen.lease ? { lease: seen.lease } : {}) });
    return afterObservation(ctx, ref, { what: `${why}; GetTask failed: ${codeOf(error)}`, protocolErrorCode }, fence);
  }
}

/** What `readOnce` tells its caller: the row as the GetTask answer's snapshot wrote it (when applied). */
export interface ReadSeen {
  written?: DelegationRecord;
  /** The workflow as the read that finished `written` read it. */
  writtenWorkflow?: WorkflowAtFinish;
  /** Given by the caller: the follow lease it holds, given back by the snapshot that leaves the row finished (`StreamLease`). */
  lease?: StreamLease;
}

/**
 * Ownership (issue 12 kind 1) of an answer to a request about our task (GetTask, CancelTask): one about
 * another task is a protocol error, journaled (FOREIGN_TASK, the reconciler looks again) and never applied.
 * @returns true when `task` is not our task (the caller applies nothing of it).
 */
export async function isForeignAnswer(ctx: WorkerContext, record: DelegationRecord, task: Task, request: string): Promise<boolean> {
  if (task.id === record.taskId) return false;
  const ref = { workflowId: record.workflowId, delegationId: record.delegationId };
  await ctx.journal.noteProtocolError(ref, { code: 'FOREIGN_TASK', message: `${request} ${record.taskId} answered task ${task.id}`, retryable: false });
  ctx.logger.warn({ ...ref, taskId: record.taskId, answered: task.id, request }, 'an answer about another task; nothing applied');
  return true;
}

/** A GetTask answer about another task (a protocol error: nothing in it is applied). */
class ForeignTaskError extends ProtocolError {
  override readonly code = 'FOREIGN_TASK' as string;
}

/** Applies a read of our task as the snapshot, then the progress rule. */
async function applyRead(ctx: WorkerContext, record: DelegationRecord, fence: number, task: Task, what: string, seen: ReadSeen = {}): Promise<string> {
  const ref = { workflowId: record.workflowId, delegationId: record.delegationId };
  // Crash window 4 on this path too: a terminal state seen by a read, not yet recorded.
  if (isTerminalTaskState(task.status.state)) ctx.crashPoint('follow.after-terminal-seen', record.step);
  const ending = seen.lease?.ending();
  const applied = await applyTask(ctx.journal, ref, task, { fence, snapshot: true, ...(ending ? { endsLease: ending.endsLease } : {}) });
  // The snapshot that left the row finished gave the follow lease back in its script.
  if (leftFinished(applied, task.status.state)) ending?.ended();
  if (applied.applied) ctx.metrics.transitions.inc({ state: task.status.state, source: 'get-task' });
  seen.written = applied.applied ? applied.record : undefined;
  seen.writtenWorkflow = applied.applied ? applied.finishedWorkflow : undefined;
  return afterObservation(ctx, ref, { what }, fence, seen.written, seen.writtenWorkflow);
}

/**
 * Whether a status change left the row finished: it applied a finished state, or found the row finished. The row as
 * written decides, not the state observed: a snapshot over the artifact limit ends FAILED (LIMIT_EXCEEDED) whatever
 * state it reported. Exactly when applyStatus-5.lua gives an `endsLease: finished` lease back.
 */
export function leftFinished(result: StatusChangeResult, observed: TaskState | undefined): boolean {
  if (!result.applied) return result.reason === 'finished';
  return result.record ? isFinished(result.record.state) : observed !== undefined && isTerminalTaskState(observed);
}

/** Our task as ListTasks shows it (found by our messageId, artifacts included), when GetTask cannot be used. */
async function readByList(ctx: WorkerContext, record: DelegationRecord, log: WorkerContext['logger']): Promise<Task | undefined> {
  try {
    const transport = await ctx.agents.transportFor(record);
    const options = { marginMs: ctx.options.searchMarginMs, maxListTasksCalls: ctx.options.maxListTasksCalls, now: ctx.options.now, includeArtifacts: true, readCandidates: false };
    const result = await findTaskByMessageId(transport, record, options);
    return result.kind === 'found' && result.task.id === record.taskId ? result.task : undefined;
  } catch (error) {
    log.warn({ err: error }, 'ListTasks read after an unusable GetTask failed');
    return undefined;
  }
}

/**
 * R26: before a COMPLETED status update that brought no artifacts is applied, one GetTask collects them:
 * a terminal answer about our task is applied as the snapshot (state and artifacts). Returns undefined when
 * the record already holds artifacts, the answer is not terminal or not about our task, or GetTask fails:
 * the caller then applies the status update itself.
 */
export async function collectBeforeTerminal(ctx: WorkerContext, record: DelegationRecord, fence: number, log: WorkerContext['logger']): Promise<ObservationResult | undefined> {
  const ref = { workflowId: record.workflowId, delegationId: record.delegationId };
  const view = await ctx.journal.getDelegationView(ref);
  if (!view || view.artifacts.length > 0) return undefined;
  try {
    const task = await (await ctx.agents.transportFor(record)).getTask({ id: record.taskId! });
    if (task.id !== record.taskId || !isTerminalTaskState(task.status.state)) return undefined;
    return { kind: 'status', status: await applyTask(ctx.journal, ref, task, { fence, snapshot: true }) };
  } catch (error) {
    if (error instanceof JournalError) throw error;
    log.warn({ err: error }, 'GetTask to collect the artifacts of a finished task failed; applying the status update alone');
    return undefined;
  }
}
