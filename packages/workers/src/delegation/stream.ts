/**
 * One SubscribeToTask stream of a delegation (spec §3.1.6), applied event by
 * event through the journal (`applyStreamResponse`: forward-only, our task id
 * only). Every `{task}` event is a snapshot (V4). Ends in `route.ts` (finished,
 * parked; once the row is finished our side closes the stream at once: what an
 * agent sends after the terminal update changes nothing, and an agent that never
 * closes must not hold the settle back) or `read.ts` (one GetTask, then the progress rule): a refusal, a drop,
 * an early end, a protocol error (bad `data:`, an event over the size cap, an
 * answer id mismatch, a foreign event: RT4) or a stream that carried no event
 * for `streamQuietMs` (keep-alives only: RT6) is read once, never resubscribed
 * in a loop. `durable_a2a_resubscriptions_total{reason}`: quiet, idle, dropped, ended, protocol, or terminal
 * (subscription refused and GetTask found the task finished: the normal answer for a terminal task).
 */
import {
  A2AError,
  JournalError,
  applyStreamResponse,
  applyStreamResponsePair,
  type ArtifactThenStatus,
  isFinished,
  isRetryable,
  isTerminalTaskState,
  type DelegationRecord,
  type EventStream,
  type ObservationResult,
  type StreamEnd,
  type StreamEvent,
  type StatusChange,
  type StreamResponse,
  type TaskStatusUpdateEvent,
  type WorkflowAtFinish,
  lazyChildLogger,
} from '@durable-a2a/shared';
import { FINISHED_ABORT_REASON, type JobRun, type WorkerContext } from '../context.ts';
import { handleAuthRequired } from './auth.ts';
import { park, shouldPark } from './park.ts';
import { codeOf, collectBeforeTerminal, leftFinished, readOnce, type ReadSeen } from './read.ts';
import { followLater, routeDelegation } from './route.ts';

const stateOf = (response: StreamResponse) =>
  'task' in response ? response.task.status.state : 'statusUpdate' in response ? response.statusUpdate.status.state : undefined;

type Log = WorkerContext['logger'];

/** One subscription being read: what the helpers below share. */
export interface StreamRun {
  ctx: WorkerContext;
  record: DelegationRecord;
  fence: number;
  log: Log;
  /** An event carried artifacts (a terminal status update then needs no GetTask to collect them, R26). */
  sawArtifacts: boolean;
  /** The row as the last applied event wrote it (a finished one is routed without a read). */
  written?: DelegationRecord;
  /** The workflow as the event that finished the row read it (the settle reads nothing more). */
  writtenWorkflow?: WorkflowAtFinish;
  /** The row is finished (an event of this stream finished it, or the journal answered "finished"): nothing more applies. */
  finished?: boolean;
  /** The follow lease this stream holds, when the status change that finishes the row may give it back (`StreamLease`). */
  lease?: StreamLease;
}

/**
 * The follow lease a stream holds: the status change that leaves the row finished releases it in the same script
 * (`StatusChange.endsLease`). `ending()` is called just before such a change is issued; its `ended()` once the
 * change left the row finished, so the holder stops renewing it and releases it only if a renewal issued meanwhile
 * may have taken it back.
 */
export interface StreamLease {
  ending(): { endsLease: NonNullable<StatusChange['endsLease']>; ended(): void };
}

/** Thrown inside the loop when an event names another task (RT4: a protocol error, one GetTask). */
class ForeignEventError extends Error {
  readonly code = 'FOREIGN_EVENT';
}

/**
 * Reads one subscription: every `{task}` event is a snapshot, other events apply forward-only. Parks on a
 * question; anything else that ends the stream before a terminal state gets one GetTask (`read.ts`).
 * `open` gives a stream already open (the rest of a streaming send, V2) instead of a SubscribeToTask;
 * it receives the signal that must close it.
 */
export async function followStream(
  ctx: WorkerContext,
  record: DelegationRecord,
  fence: number,
  job: JobRun,
  leaseLost: AbortSignal,
  open?: (signal: AbortSignal) => EventStream,
  lease?: StreamLease,
): Promise<string> {
  const log = lazyChildLogger(ctx.logger, { queue: open ? 'send' : 'follow', workflowId: record.workflowId, step: record.step, delegationId: record.delegationId, taskId: record.taskId, jobId: job.id });
  const run: StreamRun = { ctx, record, fence, log, sawArtifacts: false, ...(lease ? { lease } : {}) };
  const controller = new AbortController();
  const quiet = new AbortController();
  let quietTimer = setTimeout(() => quiet.abort(), ctx.options.streamQuietMs);
  const signal = AbortSignal.any([controller.signal, quiet.signal, ctx.shutdownSignal, leaseLost]);
  const stream = open ? open(signal) : (await ctx.agents.transportFor(record)).subscribeToTask({ id: record.taskId! }, { signal });
  let end: StreamEnd | undefined;
  // The event read ahead after an artifact update (`readAhead`), taken by the next turn.
  let readAheadEvent: Promise<IteratorResult<StreamEvent, StreamEnd>> | undefined;
  try {
    for (;;) {
      const next = await (readAheadEvent ?? stream.next());
      readAheadEvent = undefined;
      job.opened?.();
      if (next.done) {
        end = next.value;
        break;
      }
      clearTimeout(quietTimer);
      quietTimer = setTimeout(() => quiet.abort(), ctx.options.streamQuietMs);
      let parkOn: DelegationRecord | undefined;
      const response = next.value.response;
      const ahead = 'artifactUpdate' in response ? await readAhead(stream) : undefined;
      if (ahead?.ready) {
        const following = ahead.ready;
        if (!following.done && pairable(record, response, following.value.response)) parkOn = await applyEvents(run, [response, following.value.response]);
        else {
          // Not a pair: the event read ahead is the next turn's.
          readAheadEvent = Promise.resolve(following);
          parkOn = await applyEvents(run, [response]);
        }
      } else {
        readAheadEvent = ahead?.pending;
        parkOn = await applyEvents(run, [response]);
      }
      if (parkOn) {
        // Parked on a question: close our side; a human may take hours.
        controller.abort();
        await stream.return(undefined as never).catch(() => undefined);
        await park(ctx, parkOn);
        return 'parked';
      }
      // A finished row takes no more events (a resent final Task, late artifacts: spec §11.7): close our side and
      // settle now, instead of waiting for an agent that may never close (the lease renewal keeps the reconciler away).
      if (run.finished) break;
    }
  } catch (error) {
    if (leaseLost.aborted) return 'lease-lost';
    if (quiet.signal.aborted && !ctx.shutdownSignal.aborted) {
      ctx.metrics.resubscriptions.inc({ reason: 'quiet' });
      log.info({ quietMs: ctx.options.streamQuietMs }, 'stream carried no event for the quiet window; handing over to polling');
      return readOnce(ctx, record, fence, `stream quiet for ${ctx.options.streamQuietMs} ms`, log, leaseOf(run));
    }
    return onStreamError(run, error);
  } finally {
    clearTimeout(quietTimer);
    // Whatever ended the loop, the connection goes with it (no socket left to a fenced-out worker).
    controller.abort(FINISHED_ABORT_REASON);
    await stream.return(undefined as never).catch(() => undefined);
  }
  return afterStreamEnd(run, end);
}

/**
 * The next event of `stream`, when it is already there: read from what the stream has buffered before this process
 * turns to other I/O (an artifact update and the status update an agent sends right after it arrive together).
 * Otherwise the pending read, for the loop's next turn (it settles, or rejects, there: never unobserved).
 */
async function readAhead(stream: EventStream): Promise<{ ready: IteratorResult<StreamEvent, StreamEnd>; pending?: undefined } | { ready?: undefined; pending: Promise<IteratorResult<StreamEvent, StreamEnd>> }> {
  const pending = stream.next();
  // A rejection is taken by the next turn's await; this handler only keeps it from being reported as unhandled here.
  pending.catch(() => undefined);
  const notYet = new Promise<undefined>((resolve) => setImmediate(resolve, undefined));
  const ready = await Promise.race([pending, notYet]).catch(() => undefined);
  return ready ? { ready } : { pending };
}

/**
 * An artifact update and the status update after it apply together (`applyStreamResponsePair`, one round trip) when
 * the row has its task id and both name it; anything else goes one event at a time (a foreign event is a protocol
 * error there, RT4).
 */
function pairable(record: DelegationRecord, first: StreamResponse, second: StreamResponse): second is { statusUpdate: TaskStatusUpdateEvent } {
  return (
    record.taskId !== undefined &&
    'artifactUpdate' in first &&
    first.artifactUpdate.taskId === record.taskId &&
    'statusUpdate' in second &&
    second.statusUpdate.taskId === record.taskId
  );
}

/**
 * Applies one event, or an artifact update and the status update after it (one round trip), through the journal;
 * returns the record to park on when the agent asks a question.
 */
async function applyEvents(run: StreamRun, responses: [StreamResponse] | [StreamResponse, StreamResponse]): Promise<DelegationRecord | undefined> {
  const { ctx, record, log } = run;
  const last = responses[responses.length - 1]!;
  const state = stateOf(last);
  if (state && isTerminalTaskState(state)) ctx.crashPoint('follow.after-terminal-seen', record.step);
  for (const response of responses) if ('artifactUpdate' in response || ('task' in response && response.task.artifacts?.length)) run.sawArtifacts = true;
  // R26: a COMPLETED status update that brought no artifacts: one GetTask collects them first.
  const collect = 'statusUpdate' in last && state === 'TASK_STATE_COMPLETED' && !run.sawArtifacts;
  const collected = collect ? await collectBeforeTerminal(ctx, record, run.fence, log) : undefined;
  if (collected) return absorb(run, last, collected, undefined);
  const ending = run.lease?.ending();
  const options = { fence: run.fence, ...(ending ? { endsLease: ending.endsLease } : {}) };
  const [first, second] = responses;
  if (second !== undefined) {
    const [artifactResult, statusResult] = await applyStreamResponsePair(ctx.journal, record, [first, second] as ArtifactThenStatus, options);
    await absorb(run, first, artifactResult, undefined);
    if (run.finished) {
      // The artifact update found the row finished: the status change was refused, nothing more to absorb (one at a
      // time it would not have been read), but its script gave the lease back, as a finished row's change does.
      if (statusResult.status && leftFinished(statusResult.status, stateOf(second))) ending?.ended();
      return undefined;
    }
    return absorb(run, second, statusResult, ending);
  }
  return absorb(run, first, await applyStreamResponse(ctx.journal, record, first, { ...options, snapshot: 'task' in first }), ending);
}

/**
 * What one applied event means for the stream: metrics, the row as written, finished (the lease `ending` given back
 * with it), a question to park on.
 */
async function absorb(run: StreamRun, response: StreamResponse, result: ObservationResult, ending: ReturnType<StreamLease['ending']> | undefined): Promise<DelegationRecord | undefined> {
  const { ctx, record, log } = run;
  const state = stateOf(response);
  if (result.foreignTaskId) throw new ForeignEventError(`event for task ${result.foreignTaskId} on the stream of ${record.taskId}`);
  if (result.contextAnomaly) log.warn({ contextId: result.contextAnomaly, recorded: record.contextId }, 'event names another context (kept by taskId)');
  if (result.artifact === 'sealed') log.warn({ event: response }, 'artifact update after lastChunk dropped (agent bug)');
  if (result.status?.applied === false) ctx.metrics.staleObservations.inc({ reason: result.status.reason });
  if (result.status?.applied && state) ctx.metrics.transitions.inc({ state, source: 'stream' });
  if (result.status?.applied) {
    run.written = result.status.record;
    run.writtenWorkflow = result.status.finishedWorkflow;
  }
  const finishedByStatus = result.status !== undefined && leftFinished(result.status, state);
  // The status change that left the row finished gave the follow lease back in its script (not a GetTask's, R26).
  if (finishedByStatus) ending?.ended();
  if (finishedByStatus || result.artifact === 'finished') run.finished = true;
  if (state === 'TASK_STATE_AUTH_REQUIRED' && result.status?.applied) {
    // Keep the stream open (the agent may resume on its own); the handler runs beside it.
    const current = await ctx.journal.getDelegation(record);
    if (current) void handleAuthRequired(ctx, current).catch((error: unknown) => log.warn({ err: error }, 'auth handler failed'));
  }
  if (state !== 'TASK_STATE_INPUT_REQUIRED') return undefined;
  const current = await ctx.journal.getDelegation(record);
  return current && shouldPark(current) ? current : undefined;
}

/**
 * A stream that failed: hand over (closing), stop (fenced out), else one GetTask: a refusal (most likely
 * terminal, spec §3.1.6), a drop, or a protocol error (RT4), never a resubscribe loop. Rethrows only
 * errors that are not the agent's (journal, programming errors).
 */
async function onStreamError(run: StreamRun, error: unknown): Promise<string> {
  const { ctx, record, fence, log } = run;
  if (ctx.shutdownSignal.aborted) {
    // This worker is closing: hand the delegation to another worker at once.
    await followLater(ctx, record, 0);
    return 'handed-over';
  }
  if (error instanceof JournalError && error.code === 'FENCE_LOST') {
    log.warn('another worker took this delegation over; stopping');
    return 'fence-lost';
  }
  if (!(error instanceof A2AError) && !(error instanceof ForeignEventError)) throw error;
  // Finished by an event of this stream: route it as written. Otherwise one GetTask reads what the agent has
  // (a row another writer finished meanwhile stays finished: the read then changes nothing).
  const current = run.written;
  if (current && isFinished(current.state)) {
    // The stream already brought the outcome: nothing to read.
    await routeDelegation(ctx, record, { known: current, finishedWorkflow: run.writtenWorkflow });
    return 'finished';
  }
  const code = codeOf(error);
  const dropped = isRetryable(error);
  const seen: ReadSeen = leaseOf(run);
  const outcome = await readOnce(ctx, record, fence, `stream ${dropped ? 'dropped' : 'refused or broke the protocol'}: ${code}`, log, seen);
  // A refusal of a task that GetTask then found finished is the spec's answer for a terminal task (§3.1.6), not a fault.
  const after = code === 'STREAM_IDLE' || dropped ? undefined : (seen.written ?? (await ctx.journal.getDelegation(record)));
  const reason = code === 'STREAM_IDLE' ? 'idle' : dropped ? 'dropped' : after && isFinished(after.state) ? 'terminal' : 'protocol';
  ctx.metrics.resubscriptions.inc({ reason });
  if (reason === 'terminal') log.debug({ code, state: after?.state }, 'subscription refused: the task is already terminal; read it once');
  else log.info({ code, reason, message: error.message }, 'stream ended by an error; read the task once');
  log.debug({ err: error }, 'stream error: stack');
  return outcome;
}

/** A stream that ended: route a finished or parked delegation, else one GetTask. */
async function afterStreamEnd(run: StreamRun, end: StreamEnd | undefined): Promise<string> {
  const { ctx, record } = run;
  // Finished by the stream's last event: as written (a finished row never changes state again).
  const current = run.written && isFinished(run.written.state) ? run.written : await ctx.journal.getDelegation(record);
  if (!current) return 'missing';
  if (isFinished(current.state)) {
    await routeDelegation(ctx, record, { known: current, ...(current === run.written ? { finishedWorkflow: run.writtenWorkflow } : {}) });
    return 'finished';
  }
  if (end?.kind === 'interrupted' && shouldPark(current)) {
    await park(ctx, current);
    return 'parked';
  }
  // Ended before a terminal state (a clean close, an unterminated last event, an empty stream: R04).
  ctx.metrics.resubscriptions.inc({ reason: 'ended' });
  return readOnce(ctx, current, run.fence, `stream ended (${end?.kind ?? 'closed'}) in ${current.state}`, run.log, leaseOf(run));
}

/** A read's input: the follow lease its finishing snapshot may give back. */
const leaseOf = (run: StreamRun): ReadSeen => (run.lease ? { lease: run.lease } : {});
