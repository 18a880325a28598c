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

type Log = WorkerContext['logger'];

/** One subscription being read: what the helpers below share. */
interface StreamRun {
  ctx: WorkerContext;
  record: DelegationRecord;
  fence: number;
  resubscription: number;
  log: Log;
  /** A change after the snapshot was applied (resets the backoff exponent). */
  progressed: boolean;
}

/**
 * Reads one subscription: the first event is the authoritative snapshot (replaces state), later events
 * apply forward-only. Parks on a question; a refusal (-32004, -32001: most likely terminal) or a stream
 * that drops or ends before a terminal state gets one GetTask (`read.ts`), then backoff; progress
 * (a change after the snapshot) resets the backoff exponent.
 */
export async function followStream(ctx: WorkerContext, record: DelegationRecord, fence: number, resubscription: number, job: JobRun, leaseLost: AbortSignal): Promise<string> {
  const log = ctx.logger.child({ queue: 'follow', workflowId: record.workflowId, step: record.step, delegationId: record.delegationId, taskId: record.taskId, jobId: job.id, resubscription });
  const run: StreamRun = { ctx, record, fence, resubscription, log, progressed: false };
  const transport = await ctx.agents.transportFor(record);
  const controller = new AbortController();
  const stream = transport.subscribeToTask({ id: record.taskId! }, { signal: AbortSignal.any([controller.signal, ctx.shutdownSignal, leaseLost]) });
  let end: StreamEnd | undefined;
  try {
    for (let first = true; ; first = false) {
      const next = await stream.next();
      if (next.done) {
        end = next.value;
        break;
      }
      const parkOn = await applyEvent(run, next.value.response, first);
      if (parkOn) {
        // Parked on a question: close our side; a human may take hours.
        controller.abort();
        await stream.return(undefined as never).catch(() => undefined);
        await park(ctx, parkOn);
        return 'parked';
      }
    }
  } catch (error) {
    if (leaseLost.aborted) return 'lease-lost';
    return onStreamError(run, error);
  } finally {
    // Whatever ended the loop, the connection goes with it (no socket left to a fenced-out worker).
    controller.abort();
    await stream.return(undefined as never).catch(() => undefined);
  }
  return afterStreamEnd(run, end);
}

/** Applies one event through the journal; returns the record to park on when the agent asks a question. */
async function applyEvent(run: StreamRun, response: StreamResponse, first: boolean): Promise<DelegationRecord | undefined> {
  const { ctx, record, log } = run;
  const state = stateOf(response);
  if (state && isTerminalTaskState(state)) ctx.crashPoint('follow.after-terminal-seen', record.step);
  const result = await applyStreamResponse(ctx.journal, record, response, { fence: run.fence, snapshot: first && 'task' in response });
  if (!first && (result.status?.applied || result.artifact === 'applied')) run.progressed = true;
  if (result.contextAnomaly) log.warn({ contextId: result.contextAnomaly, recorded: record.contextId }, 'event names another context (kept by taskId)');
  if (result.foreignTaskId) log.warn({ foreignTaskId: result.foreignTaskId }, 'event for another task ignored');
  if (result.artifact === 'sealed') log.warn({ event: response }, 'artifact update after lastChunk dropped (agent bug)');
  if (result.status?.applied === false) ctx.metrics.staleObservations.inc({ reason: result.status.reason });
  if (result.status?.applied && state) ctx.metrics.transitions.inc({ state, source: 'stream' });
  if (state === 'TASK_STATE_AUTH_REQUIRED' && result.status?.applied) {
    // Keep the stream open (the agent may resume on its own); the handler runs beside it.
    const current = await ctx.journal.getDelegation(record);
    if (current) void handleAuthRequired(ctx, current).catch((error: unknown) => log.warn({ err: error }, 'auth handler failed'));
  }
  if (state !== 'TASK_STATE_INPUT_REQUIRED') return undefined;
  const current = await ctx.journal.getDelegation(record);
  return current && shouldPark(current) ? current : undefined;
}

/** A stream that failed: hand over (closing), stop (fenced out), one GetTask (refused or dropped), or rethrow. */
async function onStreamError(run: StreamRun, error: unknown): Promise<string> {
  const { ctx, record, fence, resubscription, log } = run;
  if (ctx.shutdownSignal.aborted) {
    // This worker is closing: hand the delegation to another worker at once.
    await followLater(ctx, record, 0);
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
    log.info({ err: error, progressed: run.progressed }, 'stream dropped; reading the task before resubscribing');
    return readOnce(ctx, record, fence, run.progressed ? 0 : resubscription + 1, log);
  }
  throw error;
}

/** A stream that ended: route a finished or parked delegation, else one GetTask before resubscribing. */
async function afterStreamEnd(run: StreamRun, end: StreamEnd | undefined): Promise<string> {
  const { ctx, record } = run;
  const current = await ctx.journal.getDelegation(record);
  if (!current) return 'missing';
  if (isFinished(current.state)) {
    await routeDelegation(ctx, record, { known: current });
    return 'finished';
  }
  if (end?.kind === 'interrupted' && shouldPark(current)) {
    await park(ctx, current);
    return 'parked';
  }
  // Ended before a terminal state (a clean close, an unterminated last event, an empty stream: R04).
  ctx.metrics.resubscriptions.inc({ reason: 'ended' });
  return readOnce(ctx, current, run.fence, run.progressed ? 0 : run.resubscription + 1, run.log);
}
