/**
 * One SubscribeToTask stream of a delegation (spec §3.1.6), applied event by
 * event through the journal (`applyStreamResponse`: forward-only, our task id
 * only). Ends in `route.ts` (finished, parked) or `read.ts` (one GetTask).
 */
import {
  JournalError,
  TaskNotFoundError,
  UnsupportedOperationError,
  applyStreamResponse,
  isFinished,
  isRetryable,
  isTerminalTaskState,
  type DelegationRecord,
  type StreamEnd,
  type StreamResponse,
} from '@durable-a2a/shared';
import type { JobRun, WorkerContext } from '../context.ts';
import { handleAuthRequired } from './auth.ts';
import { park, shouldPark } from './park.ts';
import { readOnce } from './read.ts';
import { followLater, routeDelegation } from './route.ts';

const stateOf = (response: StreamResponse) =>
  'task' in response ? response.task.status.state : 'statusUpdate' in response ? response.statusUpdate.status.state : undefined;

/**
 * Reads one subscription: the first event is the authoritative snapshot (replaces state), later events
 * apply forward-only. Parks on a question; a refusal (-32004, -32001: most likely terminal) or a stream
 * that drops or ends before a terminal state gets one GetTask (`read.ts`), then backoff; progress
 * (a change after the snapshot) resets the backoff exponent.
 */
export async function followStream(ctx: WorkerContext, record: DelegationRecord, fence: number, resubscription: number, job: JobRun, leaseLost: AbortSignal): Promise<string> {
  const ref = { workflowId: record.workflowId, delegationId: record.delegationId };
  const log = ctx.logger.child({ queue: 'follow', workflowId: ref.workflowId, step: record.step, delegationId: ref.delegationId, taskId: record.taskId, jobId: job.id, resubscription });
  const transport = await ctx.agents.transportFor(record);
  const controller = new AbortController();
  const stream = transport.subscribeToTask({ id: record.taskId! }, { signal: AbortSignal.any([controller.signal, ctx.shutdownSignal, leaseLost]) });
  let end: StreamEnd | undefined;
  let first = true;
  // Progress = a change after the snapshot; an agent that only ever sends the snapshot and closes backs off.
  let progressed = false;
  try {
    for (;;) {
      const next = await stream.next();
      if (next.done) {
        end = next.value;
        break;
      }
      const response = next.value.response;
      const state = stateOf(response);
      if (state && isTerminalTaskState(state)) {
        ctx.crashPoint('follow.after-terminal-seen', record.step);
      }
      const result = await applyStreamResponse(ctx.journal, record, response, { fence, snapshot: first && 'task' in response });
      if (!first && (result.status?.applied || result.artifact === 'applied')) progressed = true;
      first = false;
      if (result.contextAnomaly) log.warn({ contextId: result.contextAnomaly, recorded: record.contextId }, 'event names another context (kept by taskId)');
      if (result.foreignTaskId) log.warn({ foreignTaskId: result.foreignTaskId }, 'event for another task ignored');
      if (result.artifact === 'sealed') log.warn({ event: response }, 'artifact update after lastChunk dropped (agent bug)');
      if (result.status?.applied === false) ctx.metrics.staleObservations.inc({ reason: result.status.reason });
      if (result.status?.applied && state) ctx.metrics.transitions.inc({ state, source: 'stream' });
      if (state === 'TASK_STATE_AUTH_REQUIRED' && result.status?.applied) {
        // Keep the stream open (the agent may resume on its own); the handler runs beside it.
        const current = await ctx.journal.getDelegation(ref);
        if (current) void handleAuthRequired(ctx, current).catch((error: unknown) => log.warn({ err: error }, 'auth handler failed'));
      }
      if (state === 'TASK_STATE_INPUT_REQUIRED') {
        const current = await ctx.journal.getDelegation(ref);
        if (current && shouldPark(current)) {
          // Parked on a question: close our side; a human may take hours.
          controller.abort();
          await stream.return(undefined as never).catch(() => undefined);
          await park(ctx, current);
          return 'parked';
        }
      }
    }
  } catch (error) {
    if (leaseLost.aborted) return 'lease-lost';
    if (ctx.shutdownSignal.aborted) {
      // This worker is closing: hand the delegation to another worker at once.
      await followLater(ctx, ref, 0);
      return 'handed-over';
    }
    if (error instanceof JournalError && error.code === 'FENCE_LOST') {
      log.warn('another worker took this delegation over; stopping');
      return 'fence-lost';
    }
    if (error instanceof UnsupportedOperationError || error instanceof TaskNotFoundError) {
      // Refused, most likely because the task is already terminal (spec §3.1.6): one GetTask, no loop.
      log.info({ code: (error as { code?: string }).code }, 'subscription refused; reading the task once');
      return readOnce(ctx, record, fence, resubscription, log);
    }
    if (isRetryable(error)) {
      ctx.metrics.resubscriptions.inc({ reason: (error as { code?: string }).code === 'STREAM_IDLE' ? 'idle' : 'dropped' });
      log.info({ err: error, progressed }, 'stream dropped; reading the task before resubscribing');
      return readOnce(ctx, record, fence, progressed ? 0 : resubscription + 1, log);
    }
    throw error;
  } finally {
    // Whatever ended the loop, the connection goes with it (no socket left to a fenced-out worker).
    controller.abort();
    await stream.return(undefined as never).catch(() => undefined);
  }
  const current = await ctx.journal.getDelegation(ref);
  if (!current) return 'missing';
  if (isFinished(current.state)) {
    await routeDelegation(ctx, ref, { known: current });
    return 'finished';
  }
  if (end?.kind === 'interrupted' && shouldPark(current)) {
    await park(ctx, current);
    return 'parked';
  }
  // Ended before a terminal state (a clean close, an unterminated last event, an empty stream: R04).
  ctx.metrics.resubscriptions.inc({ reason: 'ended' });
  return readOnce(ctx, current, fence, progressed ? 0 : resubscription + 1, log);
}

