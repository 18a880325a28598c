/**
 * The streaming send (field case V2; spec §3.1.2 SendStreamingMessage), used for
 * agents whose Agent Card declares `capabilities.streaming`: the task id arrives
 * with the first event and is journaled at once (bound to this delegation), so
 * an agent that holds the work until it is done cannot leave us without a task
 * id, and a crash after the send recovers by the task id (or, before the first
 * event, by a search for our messageId) without a second send. The rest of the
 * stream is then the follow (`stream.ts`), under the delegation's lease, within
 * the agent's share of follow slots (`followSlotsPerAgent`): beyond it, or when
 * the followed stream stays quiet for `streamQuietMs`, our side closes and polling /
 * SubscribeToTask take over. Before the first event the send is held, as a held
 * SendMessage is (`send-held.ts`): an agent that has our message may work on it
 * silently and show no task yet, and one that does not deduplicate by messageId
 * runs a second request again, so our side never closes a silent send stream
 * for quietness (a search miss would then resend a message the agent has). From
 * `streamQuietMs` on it searches for our messageId meanwhile and adopts the task
 * it finds; else it waits for the first event up to the attempt's time left.
 * A first event that is not ours, or a stream that ends or fails before one,
 * is a send failure like any other (`send.ts` sendFailed: the reconciler searches),
 * except a refusal of the method itself in the binding's own form (-32601, -32004, or the ErrorInfo reason over
 * HTTP+JSON and gRPC: `operationUnsupportedProven`): then SendMessage.
 * Enabled by the `streamingSends` option (DA2A_STREAMING_SENDS).
 */
import { randomUUID } from 'node:crypto';
import {
  ProtocolError,
  StreamIdleError,
  isTerminalTaskState,
  operationUnsupportedProven,
  sendEffectOf,
  setLongTimeout,
  type A2ATransport,
  type EventStream,
  type SendMessageRequest,
  type StreamEnd,
  type StreamEvent,
  type SendMessageResponse,
  type StreamResponse,
} from '@durable-a2a/a2a';
import type { DelegationRecord, RunMark } from '@durable-a2a/shared';
import { FINISHED_ABORT_REASON, type JobRun, type WorkerContext } from '../../context.ts';
import { afterAnswer, holdingSendLease, sendRunToken } from '../io/send-errors.ts';
import { searchWhileHeld, type HeldSearchHit, type HeldSendResult } from '../io/send-held.ts';
import { readStream } from '../io/stream.ts';
import { apply, type Applied } from '../apply.ts';
import { attemptDeadlineAt } from '../attempt-step.ts';
import { namedTasks } from '../core/policy.ts';
import { streamSink } from './follow.ts';
import { holdWorkingWrites } from './working-write.ts';
import { sendFailed } from './send-failure.ts';

type Log = WorkerContext['logger'];

/** What the send path gives the streaming send. */
export interface StreamingSend {
  record: DelegationRecord;
  job: JobRun;
  fence: number;
  /** The run's own mark (its sendStartedAt and the version it wrote): a refused or unreachable send compares it. */
  mark: RunMark;
  transport: A2ATransport;
  request: SendMessageRequest;
  /** The attempt's time left (ms): how long the agent may hold the stream's headers. */
  timeLeftMs: number;
  log: Log;
  /**
   * Applies the first event as the send's answer (a Task or a Message): `continue` when the stream is to be followed on.
   * `stream`: the stream's id (the follow reads its rest under it: one ordered channel, applyStatus-5.lua "Ordered channels").
   */
  applyAnswer: (response: SendMessageResponse, stream: string) => Promise<Applied>;
  /**
   * Sends the same message with SendMessage when the agent refuses SendStreamingMessage (-32601, -32004:
   * no task created). Called inside the same send lease, only while it was held throughout, so the
   * reconciler cannot have searched and resent meanwhile.
   */
  fallback: () => Promise<string | HeldSendResult>;
  /** The mark took the send lease (`markSending`); false: another holder has it. */
  leaseHeld: boolean;
  /**
   * Gives back the run's own mark when nothing was created under it (giveBackMark-1.lua, compare-and-set on the mark):
   * true when given back (the send run marks again), false when anyone wrote the row since (the reconciler decides).
   */
  giveBackMark: () => Promise<boolean>;
}

/** `sendStreaming`'s outcome when streaming was refused (nothing created) and the run's mark was given back. */
export const STREAM_MARK_GIVEN_BACK = 'stream-mark-given-back';

/** Sends with SendStreamingMessage and follows the same stream (see the module header). */
export async function sendStreaming(ctx: WorkerContext, send: StreamingSend): Promise<string | HeldSendResult> {
  const { record, job, fence, log } = send;
  const ref = { workflowId: record.workflowId, delegationId: record.delegationId };
  return holdingSendLease(ctx, ref, sendRunToken(ctx, job), async (leaseLost, held) => {
    const controller = new AbortController();
    const signal = AbortSignal.any([controller.signal, ctx.shutdownSignal, leaseLost]);
    // Held (V2): the headers and the first event may take the attempt's time left (`firstEvent`); once the stream is
    // followed, `readStream`'s quiet window ends a stream without events sooner than this.
    const idleTimeoutMs = Math.max(ctx.options.streamIdleTimeoutMs, ctx.options.streamQuietMs, send.timeLeftMs);
    const stream = send.transport.sendStreamingMessage(send.request, { signal, timeoutMs: send.timeLeftMs, idleTimeoutMs });
    const close = async () => {
      controller.abort();
      await stream.return(undefined as never).catch(() => undefined);
    };
    let answered: Applied;
    // A34: a first event that is a finished status update without anything else (a status identifies, it does not
    // settle): the task is bound SUBMITTED now and that status applied after the rest of the stream (its artifacts).
    let deferred: StreamResponse | undefined;
    let arrived = false;
    // The stream's id, from its first event on: the task's first status (the send's answer) and the events the follow
    // reads after it are one ordered channel (streamorder31: before, the answer carried none, and an event after it
    // stamped earlier by a replica with a slower clock was 'stale').
    const streamId = randomUUID();
    try {
      const next = await firstEvent(ctx, send, stream, controller);
      if ('kind' in next) {
        await close();
        if (next.kind === 'found') log.info({ taskId: next.task.id }, 'the agent holds the send stream silent; its task was found by our messageId');
        else log.warn({ taskIds: namedTasks(next.taskIds) }, 'the agent holds the send stream silent; our message is in several of its tasks');
        return next;
      }
      if (next.done) throw new ProtocolError(`the send stream ended (${next.value.kind}) before naming a task`, { delivery: 'received' });
      arrived = true;
      ctx.crashPoint('send.after-request', record.step);
      const first = next.value.response;
      if ('statusUpdate' in first && isTerminalTaskState(first.statusUpdate.status.state)) deferred = first;
      answered = await applyFirstEvent(send, first, streamId);
    } catch (error) {
      await close();
      // Streaming refused by the agent's own "not served" (`operationUnsupportedProven`, so effect none): nothing was
      // created, the plain send may follow. The same class named from a reason over another code, a 405 in a JSON-RPC
      // `code`, a bare UNIMPLEMENTED or 405 of a proxy, or one in a frame of a stream that had opened proves nothing:
      // the search decides.
      if (operationUnsupportedProven(error) && sendEffectOf(error) === 'none') {
        // Without the lease held throughout, the reconciler may already have searched (nothing: the refusal created no
        // task) and resent: nothing is sent here. Our mark is given back when the row is still as it left it
        // (compare-and-set: nobody acted since), then the send run marks again; else the reconciler owns the delegation.
        if (!held || leaseLost.aborted) {
          if (await send.giveBackMark()) {
            log.warn('streaming send refused (nothing created) after the send lease was lost; the mark is given back and the message sent under a new one');
            return STREAM_MARK_GIVEN_BACK;
          }
          log.warn('streaming send refused after the send lease was lost; leaving the delegation to the reconciler');
          return 'stalled-before-request';
        }
        return send.fallback();
      }
      // Once the first event arrived, failing to process it is the answer's failure (delivery received, `afterAnswer`).
      return sendFailed(ctx, { record, fence, mark: send.mark, error: arrived ? afterAnswer(ctx, error, 'the send stream\'s first event') : error, log, job, afterMark: true });
    }
    // Settled (a plain direct Message, a finished task), parked, a task a Message named (followed anew), or refused
    // as not ours: nothing more to read here.
    if (answered.next !== 'continue') {
      await close();
      return answered.next === 'ask-reconciler' ? 'foreign-answer' : answered.next === 'settle' ? 'completed' : answered.next;
    }
    const bound = answered.record?.taskId ? answered.record : await ctx.journal.getDelegation(ref);
    if (!bound?.taskId || !ctx.followSlots.take(record.agentCardUrl)) {
      await close();
      // Beyond the agent's share of follow slots: our side closes; SubscribeToTask follows the task anew.
      if (bound?.taskId) await apply(ctx, bound, { kind: 'stream-handed-off', reason: 'agent-share-full' }, { log });
      return 'sent';
    }
    try {
      // The rest of the stream is the follow: a WORKING that moves nothing else waits as there (`working-write.ts`),
      // and the stream closes at the attempt's deadline too (`delegation/deadline.ts`).
      const writes = holdWorkingWrites(streamSink(ctx, bound, { fence, log, source: 'stream' }), { delayMs: ctx.options.workingWriteDelayMs, log });
      const deadlineAt = await attemptDeadlineAt(ctx, bound);
      try {
        await readStream(ctx, bound, job, leaseLost, writes.sink, { open: (signal) => (signal.addEventListener('abort', () => controller.abort(), { once: true }), stream), stream: streamId, atEnd: deferred ? [deferred] : [], deadlineAt });
      } finally {
        await writes.end();
      }
      return 'sent-streaming';
    } finally {
      ctx.followSlots.release(record.agentCardUrl);
      await close();
    }
  }, send.leaseHeld);
}

/**
 * The stream's first event, or our task found by a search while the agent holds the stream silent (headers or not,
 * keep-alives or not): from `streamQuietMs` on, searched for by our messageId (`searchWhileHeld`). Our side closes
 * only at the attempt's time left (`StreamIdleError`, delivery maybe: the reconciler searches, and past the deadline
 * sends nothing again), on the fleet's close or a lost lease.
 */
async function firstEvent(
  ctx: WorkerContext,
  send: StreamingSend,
  stream: EventStream,
  controller: AbortController,
): Promise<IteratorResult<StreamEvent, StreamEnd> | HeldSearchHit> {
  let timedOut = false;
  const searching = new AbortController();
  let quietTimer: ReturnType<typeof setTimeout> | undefined;
  const found = new Promise<HeldSearchHit>((resolve) => {
    quietTimer = setTimeout(() => {
      void searchWhileHeld(ctx, send.record, send.transport, searching.signal).then((hit) => hit && !searching.signal.aborted && resolve(hit));
    }, ctx.options.streamQuietMs);
  });
  // The attempt's time left may pass Node's timer range (a month's deadline).
  const deadline = setLongTimeout(() => ((timedOut = true), controller.abort()), send.timeLeftMs);
  const next = stream.next();
  next.catch(() => undefined);
  try {
    return await Promise.race([next, found]);
  } catch (error) {
    if (timedOut) throw new StreamIdleError(`the send stream carried no event within the attempt's time left (${send.timeLeftMs} ms)`, { delivery: 'maybe', cause: error });
    throw error;
  } finally {
    clearTimeout(quietTimer);
    deadline.clear();
    searching.abort(FINISHED_ABORT_REASON);
  }
}

/**
 * The first event is the send's answer: a Task (or a whole-Task event) names our task, a Message is judged as
 * SendMessage's (spec §3.1.2; `messageAnswerProof`: a plain reply, a task it names, or not ours). A status update
 * naming a task is read as that task's snapshot. Anything
 * else (an artifact before the task) does not name a task we can prove: the reconciler searches. `stream`: the stream's
 * id (`StreamingSend.applyAnswer`).
 */
async function applyFirstEvent(send: StreamingSend, response: StreamResponse, stream: string): Promise<Applied> {
  if ('task' in response) return send.applyAnswer({ task: response.task }, stream);
  if ('message' in response) return send.applyAnswer({ message: response.message }, stream);
  if ('statusUpdate' in response) {
    const { taskId, contextId, status } = response.statusUpdate;
    // A finished status identifies the task; its outcome is applied after the rest of the stream (see `deferred`).
    const identified = isTerminalTaskState(status.state) ? { state: 'TASK_STATE_SUBMITTED' as const } : status;
    return send.applyAnswer({ task: { id: taskId, ...(contextId ? { contextId } : {}), status: identified } }, stream);
  }
  throw new ProtocolError('the send stream opened with an artifact, not with our task', { delivery: 'received' });
}
