/**
 * One stream of a delegation's task (spec §3.1.6 SubscribeToTask, or the rest of a SendStreamingMessage), read event
 * by event and handed, as observations, to the caller's `sink` (the run applies them: `apply.ts`). Every `{task}`
 * event is a snapshot (V4). The stream stops when the sink's step does not `continue` (the row finished or asks a
 * question: once the row is finished our side closes the stream at once, since what an agent sends after the terminal
 * update changes nothing and an agent that never closes must not hold the settle back). A refusal, a drop, an early
 * end, a protocol error (bad `data:`, an event over a limit, an answer id mismatch, a foreign event: RT4) or a stream
 * that carried no event for `streamQuietMs` (keep-alives only: RT6) is one observation (`stream-failed`,
 * `stream-ended`); the table reads the task once, or, for an event over a limit, ends the attempt. Never writes the
 * journal, never routes. `durable_a2a_resubscriptions_total{reason}`: quiet, idle, dropped, ended, protocol, or
 * terminal (subscription refused and GetTask found the task finished: the normal answer for a terminal task).
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import {
  A2AError,
  isRetryable,
  operationUnsupportedProven,
  isTerminalTaskState,
  setLongTimeout,
  type EventStream,
  type StreamEnd,
  type StreamEvent,
  type StreamResponse,
  type TaskStatusUpdateEvent,
} from '@durable-a2a/a2a';
import { JournalError, StreamQuestionWords, lazyChildLogger, type DelegationRecord, type ObservationResult } from '@durable-a2a/shared';
import { FINISHED_ABORT_REASON, type JobRun, type WorkerContext } from '../../context.ts';
import type { NextKind } from '../core/next.ts';
import type { Observation, PartialArtifacts } from '../core/observation.ts';
import { STALE_READ_REREADS, staleReadDelayMs } from '../core/policy.ts';
import { codeOf, limitOf, readFailure } from './read.ts';

/** What the run's sink tells the stream after applying an observation. */
export interface SinkResult {
  next: NextKind;
  record?: DelegationRecord;
  foreignTaskId?: string;
  /** What the events' write returned (`Applied.events`): a Task's `status.leftOut` feeds the stream's `takenBack`. */
  events?: readonly ObservationResult[];
}

/** Applies one observation of the stream (the run's `apply`); `continue` keeps the stream open. */
export type StreamSink = (observation: Observation) => Promise<SinkResult>;

/** Thrown inside the loop when an event names another task (RT4: a protocol error, one GetTask). */
class ForeignEventError extends Error {
  readonly code = 'FOREIGN_EVENT';
}

/** Where a stream comes from (all optional: a SubscribeToTask of a first subscription). */
export interface StreamSource {
  /** A stream already open (the rest of a streaming send, V2) instead of a SubscribeToTask; it receives the signal that must close it. */
  open?: (signal: AbortSignal) => EventStream;
  /**
   * The stream's id when its first event was applied before this read (a streaming send's answer: `send-stream.ts`),
   * so the rest is of the same ordered channel; default: a new one.
   */
  stream?: string;
  /** Events applied once the stream ended cleanly, before its end is observed (a streaming send's finished first status, A34). */
  atEnd?: readonly StreamResponse[];
  /** An earlier stream of the task ended before its finished status: the artifacts journaled so far are a partial view. */
  resubscribed?: boolean;
  /**
   * The attempt's deadline (epoch ms; `delegation/deadline.ts`): the stream closes there and `deadline-passed` is
   * observed, however lively the stream (its lease renewals keep the reconciler's next check ahead of it). Default: none.
   */
  deadlineAt?: number;
}

/**
 * Reads one stream (see the module header and `StreamSource`). Every stream event observed says whether the artifacts
 * streamed so far are a partial view (`PartialArtifacts`). Returns the last step's next kind (or `lease-lost`,
 * `handed-over`). Rethrows only errors that are not the agent's (journal, programming errors).
 */
export async function readStream(ctx: WorkerContext, record: DelegationRecord, job: JobRun, leaseLost: AbortSignal, sink: StreamSink, source: StreamSource = {}): Promise<string> {
  const { open, atEnd = [] } = source;
  const log = lazyChildLogger(ctx.logger, { queue: open ? 'send' : 'follow', workflowId: record.workflowId, step: record.step, delegationId: record.delegationId, taskId: record.taskId, jobId: job.id });
  // One signal for the stream: our end, the quiet window, the fleet closing, the lease lost. The listeners on the
  // longer-lived signals go in `finally` (cheaper than `AbortSignal.any`'s weak references).
  const controller = new AbortController();
  const signal = controller.signal;
  let quiet = false;
  const onQuiet = () => {
    quiet = true;
    controller.abort();
  };
  const quietTimer = setTimeout(onQuiet, ctx.options.streamQuietMs);
  // The attempt's deadline, however far (a month's deadline passes Node's timer range).
  let pastDeadline = false;
  const { deadlineAt } = source;
  const deadlineTimer = deadlineAt === undefined ? undefined : setLongTimeout(() => ((pastDeadline = true), controller.abort()), deadlineAt - ctx.options.now());
  const deadlinePassed = async (): Promise<string> => (await sink({ kind: 'deadline-passed', deadlineAt: deadlineAt! })).next;
  // The fleet's close through its fan-out (O(1) per stream, not one more listener on the fleet-wide signal).
  const unlistenShutdown = ctx.shutdownListeners.add(() => controller.abort(ctx.shutdownSignal.reason));
  // Taken off in `finally` (and when the stream does not open): `addEventListener`'s `signal` option would cost a weak
  // reference and a finalizer per stream.
  const onLeaseLost = () => controller.abort(leaseLost.reason);
  if (leaseLost.aborted) controller.abort(leaseLost.reason);
  else leaseLost.addEventListener('abort', onLeaseLost, { once: true });
  let stream: EventStream;
  try {
    // A task taken up again (a reattach after a crash: thousands at once) streams on a connection of its own, so the
    // agent's pool does not look through every open stream for each request (`CallOptions.ownConnection`).
    stream = open ? open(signal) : (await ctx.agents.transportFor(record)).subscribeToTask({ id: record.taskId! }, { signal, ...(source.resubscribed ? { ownConnection: true } : {}) });
  } catch (error) {
    // Not opened (no interface and no Agent Card, say): the listeners and the timers go now, not at the fleet's close.
    clearTimeout(quietTimer);
    deadlineTimer?.clear();
    unlistenShutdown();
    leaseLost.removeEventListener('abort', onLeaseLost);
    controller.abort(FINISHED_ABORT_REASON);
    throw error;
  }
  let end: StreamEnd | undefined;
  let stopped: NextKind | undefined;
  // An event carried artifacts (a terminal status update then needs no GetTask to collect them, R26).
  let sawArtifacts = false;
  // A Task with "artifacts": [] came after artifacts were streamed (a stale snapshot, or the agent taking them back):
  // which of them the agent keeps only a full read tells; artifacts streamed after it do not make the view whole
  // (review12: a1 in doubt, a2 streamed, COMPLETED settled without a1). A later Task with artifacts is whole again.
  // The journal keeps what it holds meanwhile (an unfinished Task's list is merged in: observe.ts applyTask), so its
  // view shows the result until that read decides.
  // review13: artifacts the journal held before this stream (an earlier stream's, a send's answer) count like artifacts
  // this stream carried: a first snapshot with "artifacts": [] puts them in doubt, and what is streamed after it is no
  // whole view either (the first Task's write names them: `leftOut` below).
  // review14: the same for a Task that lists SOME of them (a stale snapshot taken between two artifact updates, or an
  // agent taking one back): a COMPLETED settled from it without a full read lost the others (the journal keeps them
  // now, merged, but which of them the agent keeps only a full read tells). Any artifact this stream showed, or the journal held, missing from a Task's list puts the view in
  // doubt (`known`: every id shown so far), until a later Task lists every one of them again or a full read is done
  // (review15: a1, a2 streamed, then [a1] twice: the second [a1] leaves out a2 still). A push writes a whole artifact
  // beside the stream (review15: a2 pushed between two snapshots holding a1): the journal's ids a Task leaves out come
  // from the script that applies the Task (`StatusChangeResult.leftOut`, read and kept in that one transition: mend15,
  // no push lands between a read and the write), and join `known`. A Task whose write answered none (not written)
  // keeps the view in doubt.
  // review16m: a Task that lists an artifact with other content than the journal held (a stale snapshot taken between
  // two chunks of it, its first chunk alone) wrote its copy over the journal's (`StatusChangeResult.rewritten`): which
  // copy is the agent's only a full read tells, whatever Task comes later (one listing the stale copy again agrees with
  // the journal, and is no proof). In doubt for the rest of this stream (`rewritten`).
  let takenBack = false;
  const known = new Set<string>();
  const rewritten = new Set<string>();
  const takeList = (task: { artifacts?: readonly { artifactId: string }[] }, result: SinkResult): void => {
    const listed = new Set(task.artifacts!.map((artifact) => artifact.artifactId));
    const status = result.events?.[0]?.status;
    const leftOut = status?.leftOut;
    for (const id of leftOut ?? []) known.add(id);
    for (const id of (status?.applied && status.rewritten) || []) rewritten.add(id);
    takenBack = leftOut === undefined || rewritten.size > 0 || [...known].some((id) => !listed.has(id));
    for (const id of listed) known.add(id);
    sawArtifacts = listed.size > 0;
  };
  const artifactsHeld = (): boolean => sawArtifacts && !takenBack;
  // Updates this stream delivered beyond the task snapshot SubscribeToTask sends first (spec §3.1.6). P36: a stream
  // that delivered updates before it ended is not "no progress"; a snapshot-only stream proves nothing new.
  let delivered = 0;
  // Whether the artifacts streamed so far are a partial view (a finished status then waits for one full read).
  let partial: PartialArtifacts | undefined = source.resubscribed ? 'resubscribed' : undefined;
  const seen = (response: StreamResponse): void => {
    if ('artifactUpdate' in response && (response.artifactUpdate.append === true || response.artifactUpdate.lastChunk === false)) partial = 'appended';
    else if ('task' in response && response.task.artifacts?.length) partial = undefined;
  };
  // This stream's id: its events are one ordered channel (the journal applies a later event of the stream that wrote
  // the row's status whatever its timestamp: applyStatus-5.lua "Ordered channels").
  const streamId = source.stream ?? randomUUID();
  const event = (responses: [StreamResponse] | [StreamResponse, StreamResponse], ordered = true): Observation => ({ kind: 'stream-event', responses, ...(ordered ? { stream: streamId } : {}), ...(partial ? { partialArtifacts: partial } : {}) });
  // A subscription's first event is its Task snapshot (spec §3.1.6): one that starts with anything else never showed
  // the task whole, and the artifacts the journal held from before it (a send's answer, an earlier read of the task
  // still working) may lack what the agent added since (attack13). Looked at once, at the first event.
  let firstEvent = !open;
  const snapshotMissing = async (response: StreamResponse): Promise<void> => {
    if (!firstEvent) return;
    firstEvent = false;
    if ('task' in response || partial) return;
    const heldBefore = await ctx.journal.heldArtifactIds({ workflowId: record.workflowId, delegationId: record.delegationId });
    if (heldBefore.length > 0) partial = 'no-snapshot';
  };
  // A sink's answer: a foreign event is a protocol error (RT4, thrown in the loop); anything but `continue` stops the
  // stream (settled or parked: our side closes; a person may take hours, an agent may never close).
  const stops = (result: SinkResult): boolean => {
    if (result.foreignTaskId) throw new ForeignEventError(`event for task ${result.foreignTaskId} on the stream of ${record.taskId}`);
    if (result.next !== 'continue') stopped = result.next;
    return stopped !== undefined;
  };
  // The agent's Message events since the stream's last status: the words of a parked status without a message
  // (question35; a Message after such a status gives it again with them), in the stream's order.
  const questionWords = new StreamQuestionWords(() => ({ taskId: record.taskId, contextId: record.contextId }));
  const withWords = (response: StreamResponse): StreamResponse => ('message' in response ? (questionWords.wordsAfter(response.message) ?? response) : questionWords.withWords(response));
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
      // The quiet window starts again: the same timer re-armed (no new timer per event).
      quietTimer.refresh();
      const response = withWords(next.value.response);
      await snapshotMissing(response);
      let responses: [StreamResponse] | [StreamResponse, StreamResponse] = [response];
      const ahead = 'artifactUpdate' in response ? await readAhead(stream) : undefined;
      if (ahead?.ready) {
        const following = ahead.ready;
        if (!following.done && pairable(record, response, following.value.response)) responses = [response, withWords(following.value.response)];
        // Not a pair: the event read ahead is the next turn's.
        else readAheadEvent = Promise.resolve(following);
      } else readAheadEvent = ahead?.pending;
      // A Task is never paired (only an artifact update with the status update after it): its list is taken once its
      // write answered (`takeList`), before the next event is looked at.
      const listing = 'task' in response && response.task.artifacts !== undefined ? response.task : undefined;
      for (const each of responses) {
        if ('artifactUpdate' in each) {
          sawArtifacts = true;
          known.add(each.artifactUpdate.artifact.artifactId);
        }
        seen(each);
      }
      const last = responses[responses.length - 1]!;
      // R26: a COMPLETED status update that brought no artifacts: one GetTask collects them first (a full read).
      const collecting = 'statusUpdate' in last && last.statusUpdate.status.state === 'TASK_STATE_COMPLETED' && !artifactsHeld();
      // An artifact update paired with it is applied first, on its own: the read replaces it or keeps it, never drops it
      // (a read without artifacts keeps what the journal holds; attack13: after a Task that took artifacts back).
      const paired = collecting && responses.length === 2;
      if (paired && stops(await sink(event([responses[0]])))) break;
      const collected = collecting ? await collectBeforeTerminal(ctx, record, log, takenBack) : undefined;
      const result = await sink(collected ?? event(paired ? [last] : responses));
      if (responses.some((each) => !('task' in each))) delivered++;
      if (listing) takeList(listing, result);
      if (stops(result)) break;
    }
  } catch (error) {
    if (leaseLost.aborted) return (await sink({ kind: 'lease-lost' }), 'lease-lost');
    if (pastDeadline && !ctx.shutdownSignal.aborted) return await deadlinePassed();
    if (quiet && !ctx.shutdownSignal.aborted) {
      ctx.metrics.resubscriptions.inc({ reason: 'quiet', agent: ctx.metrics.agentLabels.of(record.agentCardUrl) });
      log.info({ quietMs: ctx.options.streamQuietMs }, 'stream carried no event for the quiet window; handing over to polling');
      return (await sink({ kind: 'stream-failed', code: 'STREAM_QUIET', retryable: true, quiet: true, delivered })).next;
    }
    return onStreamError(ctx, error, sink, log, delivered, ctx.metrics.agentLabels.of(record.agentCardUrl));
  } finally {
    clearTimeout(quietTimer);
    deadlineTimer?.clear();
    unlistenShutdown();
    leaseLost.removeEventListener('abort', onLeaseLost);
    // Whatever ended the loop, the connection goes with it (no socket left to a fenced-out worker).
    controller.abort(FINISHED_ABORT_REASON);
    await stream.return(undefined as never).catch(() => undefined);
  }
  if (stopped) return stopped;
  // Closed by the deadline while between events (the stream's end then looks like an interruption).
  if (pastDeadline && !ctx.shutdownSignal.aborted && !leaseLost.aborted) return deadlinePassed();
  // Events held back until the stream ended (a streaming send's finished first status, A34): applied now, in order.
  for (const response of atEnd) {
    const last = atEnd.at(-1) === response;
    const collected = last && 'statusUpdate' in response && response.statusUpdate.status.state === 'TASK_STATE_COMPLETED' && !artifactsHeld() ? await collectBeforeTerminal(ctx, record, log, takenBack) : undefined;
    seen(response);
    // (Earlier on the stream than the events applied above: not of its order, so no stream id; ordered by the rules.)
    const result = await sink(collected ?? event([response], false));
    if (result.next !== 'continue') return result.next;
  }
  // Ended before a terminal state (a clean close, an unterminated last event, an empty stream: R04), or interrupted.
  if (end?.kind !== 'interrupted') ctx.metrics.resubscriptions.inc({ reason: 'ended', agent: ctx.metrics.agentLabels.of(record.agentCardUrl) });
  return (await sink({ kind: 'stream-ended', how: end?.kind ?? 'closed', delivered })).next;
}

/**
 * A stream that failed: hand over (closing), stop (fenced out), else one observation (`stream-failed`): a refusal
 * (most likely terminal, spec §3.1.6), a drop, a protocol error (RT4) or an event over a limit.
 */
async function onStreamError(ctx: WorkerContext, error: unknown, sink: StreamSink, log: WorkerContext['logger'], delivered: number, agent: string): Promise<string> {
  if (ctx.shutdownSignal.aborted) {
    // This worker is closing: hand the delegation to another worker at once.
    await sink({ kind: 'closing' });
    return 'handed-over';
  }
  if (error instanceof JournalError && error.code === 'FENCE_LOST') {
    log.warn('another worker took this delegation over; stopping');
    await sink({ kind: 'lease-lost' });
    return 'fence-lost';
  }
  if (!(error instanceof A2AError) && !(error instanceof ForeignEventError)) throw error;
  const code = codeOf(error);
  const dropped = isRetryable(error);
  const unacceptable = !dropped ? { code, message: error.message, ...limitOf(error) } : undefined;
  const result = await sink({ kind: 'stream-failed', code, retryable: dropped, delivered, ...(unacceptable ? { unacceptable } : {}) });
  // A refusal of a task that GetTask then found finished is the spec's answer for a terminal task (§3.1.6), not a fault.
  const reason = code === 'STREAM_IDLE' ? 'idle' : dropped ? 'dropped' : result.next === 'settle' ? 'terminal' : 'protocol';
  ctx.metrics.resubscriptions.inc({ reason, agent });
  if (reason === 'terminal') log.debug({ code }, 'subscription refused: the task is already terminal; read it once');
  else log.info({ code, reason, message: error.message }, 'stream ended by an error; read the task once');
  log.debug({ err: error }, 'stream error: stack');
  return result.next;
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
 * An artifact update and the status update after it apply together (one round trip) when the row has its task id
 * and both name it; anything else goes one event at a time (a foreign event is a protocol error there, RT4).
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
 * R26: before a COMPLETED status update that brought no artifacts is applied, one GetTask collects them: a terminal
 * answer about our task is the observation instead (a full read). An answer older than the stream (not terminal) is
 * read again, at most `STALE_READ_REREADS` times with jittered delays (`staleReadDelayMs`). Undefined when the record
 * already holds artifacts (unless the stream's artifacts were `takenBack` by a Task that left some out, or held none:
 * then the journal's may lack some the agent keeps), the answers stay older or are not about our task (the stream's COMPLETED stands, R12), or
 * the agent cannot be read (no GetTask: its binding's -32601 or UnsupportedOperation, `operationUnsupportedProven`; a
 * bare UNIMPLEMENTED or 405 is no such proof): the status update is applied alone. Any other
 * failure is its observation (`read-failed`, `task-not-found`): the status update is not applied (a finished row
 * takes no more artifacts; settling now would show a result-less success) and the follow reads the task again.
 */
async function collectBeforeTerminal(ctx: WorkerContext, record: DelegationRecord, log: WorkerContext['logger'], takenBack = false): Promise<Observation | undefined> {
  const view = await ctx.journal.getDelegationView(record);
  if (!view || (view.artifacts.length > 0 && !takenBack)) return undefined;
  const why = 'collecting the artifacts of a finished task';
  try {
    const transport = await ctx.agents.transportFor(record);
    for (let reread = 0; ; reread++) {
      const task = await transport.getTask({ id: record.taskId! });
      if (task.id !== record.taskId) return undefined;
      if (isTerminalTaskState(task.status.state)) return { kind: 'task-read', task, call: 'get-task', complete: true, ownership: { kind: 'proven', by: 'task-id' }, why, cycle: true };
      // Older than the stream's COMPLETED (a store updated after the event was sent): read again, a bounded number of times.
      if (reread >= STALE_READ_REREADS || ctx.shutdownSignal.aborted) {
        log.warn({ state: task.status.state, reads: reread + 1 }, 'GetTask still answers an older state than the stream said; applying the stream\'s status update alone');
        return undefined;
      }
      await delay(staleReadDelayMs(reread, ctx.policy), undefined, { signal: ctx.shutdownSignal }).catch(() => undefined);
    }
  } catch (error) {
    if (error instanceof JournalError) throw error;
    // Only the agent's own "not served" (`operationUnsupportedProven`): a bare UNIMPLEMENTED or 405 is a proxy's answer,
    // a read that failed (below): the COMPLETED waits for a read that can collect the artifacts (R26), never settled
    // result-less on a status a server on the way gave.
    if (operationUnsupportedProven(error)) {
      log.warn({ err: error }, 'the agent cannot be read with GetTask; applying the status update alone');
      return undefined;
    }
    if (error instanceof A2AError || isRetryable(error)) return readFailure(error, 'get-task', why, true, log);
    log.warn({ err: error }, 'GetTask to collect the artifacts of a finished task failed; reading it again');
    return { kind: 'read-failed', call: 'get-task', code: codeOf(error), retryable: true, why, cycle: true };
  }
}
