/**
 * Journal first, then SendMessage (`returnImmediately: true`, spec §3.2.2):
 * delivers a delegation's journaled message with our journaled ids. The
 * journal decides first: a delegation that may already have been sent
 * (`sendStartedAt` set) is never resent from here; the reconciler asks the
 * agent and decides (`recover.ts`). Crash windows 1, 2 and 8. An agent may hold
 * the send (V2): SendMessage is searched for meanwhile (`send-held.ts`), or,
 * with `streamingSends` and a streaming card, SendStreamingMessage journals the
 * task id with the first event (`send-stream.ts`). What the agent answered, or how the send failed
 * (`io/send-errors.ts` sendFailureObservation: delivery, effect, limit), is applied by `apply.ts`.
 */
import {
  taskShownOurs,
  type A2ATransport,
  type Message,
  type SendMessageRequest,
  type SendMessageResponse,
  type Task,
} from '@durable-a2a/a2a';
import {
  ReplicationTimeoutError,
  isFinished,
  type AgentInterfaceRef,
  type DelegationRecord,
  type RunMark,
  lazyChildLogger,
} from '@durable-a2a/shared';
import type { JobRun, WorkerContext } from '../../context.ts';
import { apply, type Applied } from '../apply.ts';
import { messageAnswerProof, type Observation, type Ownership } from '../core/observation.ts';
import { attemptTimeLeftMs } from '../attempt-step.ts';
import { enforceAttemptDeadline } from '../deadline.ts';
import { refuseUnknownVerifier } from '../verifier-check.ts';
import { refuseUnassigned } from '../unassigned.ts';
import { afterAnswer, holdingSendLease, releaseSendLease, sendRunToken } from '../io/send-errors.ts';
import { sendFailed } from './send-failure.ts';
import { sendWhileSearching, type HeldSendResult } from '../io/send-held.ts';
import { HANDLER_PREFIX, runHandler } from './handler.ts';
import { sendStreaming, STREAM_MARK_GIVEN_BACK } from './send-stream.ts';
import { pushConfigOf, wantedPushConfig } from '../io/push-config.ts';
import { takeSendTurn, type SendTurn } from './flow.ts';

type Log = WorkerContext['logger'];

/** The wire message of a delegation (spec §5.5 Message): our journaled ids, never new ones. */
export function outgoingMessage(record: DelegationRecord): Message {
  return {
    messageId: record.messageId,
    role: 'ROLE_USER',
    parts: record.message.parts,
    ...(record.contextRefused || !record.requestedContextId ? {} : { contextId: record.requestedContextId }),
    ...(record.message.metadata ? { metadata: record.message.metadata } : {}),
    ...(record.message.referenceTaskIds ? { referenceTaskIds: record.message.referenceTaskIds } : {}),
  };
}

/** Sends a delegation's journaled message once. Returns a short outcome for logs and tests. */
export async function sendMessage(ctx: WorkerContext, record: DelegationRecord, job: JobRun): Promise<string> {
  if (isFinished(record.state)) {
    await apply(ctx, record, { kind: 'row-checked' });
    return 'already-finished';
  }
  if (record.state !== 'INTENT') return 'already-sent';
  if (record.held) return 'held';
  if (record.sendStartedAt !== undefined) {
    await apply(ctx, record, { kind: 'send-in-doubt', reason: 'the send was marked before' });
    return 'may-have-sent';
  }
  const log = lazyChildLogger(ctx.logger, { queue: 'send', workflowId: record.workflowId, step: record.step, delegationId: record.delegationId, messageId: record.messageId, jobId: job.id, attempt: job.attemptsMade });
  if (await enforceAttemptDeadline(ctx, record, log)) return 'deadline-exceeded';
  if (await refuseUnassigned(ctx, record, log)) return 'agent-missing';
  if (await refuseUnknownVerifier(ctx, record, log)) return 'verifier-unknown';
  // The agent's turn before the mark (nothing has left): a send over its agent's limits waits, never fails.
  const turn = record.agentCardUrl.startsWith(HANDLER_PREFIX) ? undefined : await takeSendTurn(ctx, record, sendRunToken(ctx, job));
  if (turn && 'untilMs' in turn) {
    await apply(ctx, record, { kind: 'send-deferred', untilMs: turn.untilMs, reason: turn.reason }, { fence: record.fence, log, source: 'send', place: job.place });
    log.info({ reason: turn.reason, nextTryAt: turn.untilMs }, `waiting for a slot at ${record.agentCardUrl}`);
    return 'waiting-for-slot';
  }
  try {
    let current = record;
    for (let given = 0; ; given++) {
      const prepared = await prepareSend(ctx, current, job, log);
      if (typeof prepared === 'string') return prepared;
      const outcome = await deliver(ctx, current, job, prepared, log, turn);
      if (outcome !== MARK_GIVEN_BACK) return outcome;
      // The run stalled after its mark and sent nothing; its mark is given back (the row as before the mark). It sends
      // again under a fresh mark, from the row as it is now; past MAX_MARKS_GIVEN_BACK the unmarked row is the
      // reconciler's ("not sent yet": it enqueues the send again), as after a crash before the mark.
      const again = given + 1 < MAX_MARKS_GIVEN_BACK ? await ctx.journal.getDelegation({ workflowId: record.workflowId, delegationId: record.delegationId }) : undefined;
      if (!again || again.state !== 'INTENT' || again.held || again.sendStartedAt !== undefined) return 'stalled-before-request';
      if (await enforceAttemptDeadline(ctx, again, log)) return 'deadline-exceeded';
      current = again;
    }
  } finally {
    turn?.release();
  }
}

/** `deliver`'s outcome when the run stalled after its mark, sent nothing, and gave its mark back (`giveBackUnsentMark`). */
const MARK_GIVEN_BACK = 'mark-given-back';
/** How many times one send run gives back its own unsent mark and marks again before it leaves the row to the reconciler. */
const MAX_MARKS_GIVEN_BACK = 3;

/**
 * Gives back the run's own mark after it stalled between the mark and the request (nothing left): markSending-2.lua
 * refuses a second mark while one is set, so under this mark only this run could have sent. Compare-and-set on the
 * run's fence and its mark, the version it wrote included (giveBackMark-1.lua): when anyone wrote the row since, or suspect
 * evidence waits on it (a task a refused push showed holding our message), nothing is written and the reconciler
 * decides, as before. Without this, the reconciler searched for a message that never left
 * and, at a busy agent whose ListTasks outgrows its call budget, asked a person (AMBIGUOUS).
 * @returns true when given back (the run may mark again)
 */
async function giveBackUnsentMark(ctx: WorkerContext, record: DelegationRecord, mark: { fence: number; markedAt: number; markedVersion: number }): Promise<boolean> {
  const ref = { workflowId: record.workflowId, delegationId: record.delegationId };
  return ctx.journal.giveBackMark(ref, { fence: mark.fence, sendStartedAt: mark.markedAt, markedVersion: mark.markedVersion });
}

/** A send ready to leave: our fence, the interface (journaled by the mark) and when the mark was written. */
interface PreparedSend {
  fence: number;
  agentInterface: AgentInterfaceRef;
  markedAt: number;
  /** The version the mark wrote (`markSending`'s `markedVersion`): the give-back compares it, known or not the row before. */
  markedVersion: number;
  /** The Agent Card declares `capabilities.streaming`: send with SendStreamingMessage (V2). */
  streaming: boolean;
  /** The mark took the send lease (false: another holder has it). */
  leaseHeld: boolean;
  /** The row as the mark left it (`markSending`'s `record`), which the answer's status change holds. */
  marked?: DelegationRecord;
}

/**
 * Chooses the interface, then marks the send and claims the delegation in one script (journal first); an outcome
 * string when it stops here. Until the mark, this run's writes compare with the fencing token it read with the
 * record: a run that another one claimed meanwhile is refused (FENCE_LOST), as after a claim of its own.
 */
async function prepareSend(ctx: WorkerContext, record: DelegationRecord, job: JobRun, log: Log): Promise<PreparedSend | string> {
  const ref = { workflowId: record.workflowId, delegationId: record.delegationId };
  if (record.agentCardUrl.startsWith(HANDLER_PREFIX)) return runHandler(ctx, record, await ctx.journal.claim(ref, sendRunToken(ctx, job)));
  let fence = record.fence;
  let agentInterface = record.agentInterface;
  let streaming = false;
  let leaseHeld: boolean;
  let markedAt: number;
  let markedVersion: number;
  let marked: DelegationRecord | undefined;
  try {
    agentInterface ??= await ctx.agents.chooseInterface(record.agentCardUrl, Math.max(1, await attemptTimeLeftMs(ctx, record)));
    if ((await attemptTimeLeftMs(ctx, record)) <= 0 && (await enforceAttemptDeadline(ctx, (await ctx.journal.getDelegation(ref)) ?? record, log))) return 'deadline-exceeded';
    if (ctx.options.streamingSends) streaming = await ctx.agents.card(record.agentCardUrl, Math.max(1, await attemptTimeLeftMs(ctx, record))).then((card) => card.capabilities.streaming === true, () => false);
    // The send lease is taken by the mark itself: the reconciler waits from here on (no re-read before the request).
    // The stall guard counts from the mark's sendStartedAt, where the reconciler's sendSettleMs starts: a stall anywhere
    // after it counts (the WAIT after the mark too), the WAIT before the mark does not (the reconciler waits from the mark).
    ctx.crashPoint('send.before-mark', record.step);
    ({ leaseHeld, sendStartedAt: markedAt, fence, markedVersion, record: marked } = await ctx.journal.markSending(record, fence, record.agentInterface ? undefined : agentInterface, {
      token: sendRunToken(ctx, job),
      durationMs: ctx.options.lockDurationMs,
      claim: true,
    }));
  } catch (error) {
    // Not on enough replicas: nothing leaves, and a replica outage does not use up the send's attempts.
    if (error instanceof ReplicationTimeoutError) {
      // The mark (and its send lease) may be written: the lease is given back so the reconciler need not wait for it.
      await releaseSendLease(ctx, ref, job);
      await apply(ctx, record, { kind: 'send-in-doubt', since: ctx.options.now(), reason: 'the mark is not confirmed by enough replicas' });
      return 'replicas-behind';
    }
    return sendFailed(ctx, { record, fence, error, log, job, afterMark: false });
  }
  ctx.crashPoint('send.after-mark', record.step);
  return { fence, agentInterface, markedAt, markedVersion, streaming, leaseHeld, ...(marked ? { marked } : {}) };
}

/**
 * Sends the marked message and applies the answer (or the task a search found while the send was held). `turn`: the
 * send's turn at its agent; a held send may hand it over and go on outside its job (`waitOrMoveOut`).
 */
async function deliver(ctx: WorkerContext, record: DelegationRecord, job: JobRun, prepared: PreparedSend, log: Log, turn?: SendTurn): Promise<string> {
  const ref = { workflowId: record.workflowId, delegationId: record.delegationId };
  // The mark took the send lease: a send that stops before the request gives it back (the reconciler need not wait for it).
  const giveBack = () => (prepared.leaseHeld ? releaseSendLease(ctx, ref, job) : undefined);
  const ready = await requestReady(ctx, record, prepared).catch(async (error: unknown) => {
    await giveBack();
    throw error;
  });
  if (!ready) {
    // Nothing left: the mark is given back (compare-and-set on it) before the lease, so the reconciler never finds our
    // unsent mark without its lease; a crash between the two leaves an unmarked row (sent again, as before the mark).
    const givenBack = await giveBackUnsentMark(ctx, record, prepared);
    // A crash here leaves the run's send lease on the unmarked row until its TTL: the next mark takes it over
    // (markSending-2.lua: its claim fences this run out), so the next request never leaves unheld (attack33b).
    if (givenBack) ctx.crashPoint('send.after-give-back', record.step);
    await giveBack();
    if (givenBack) {
      log.warn('stalled between the mark and the request; nothing was sent: the mark is given back and the message sent under a new one');
      return MARK_GIVEN_BACK;
    }
    log.warn('stalled between the mark and the request; leaving the delegation to the reconciler');
    return 'stalled-before-request';
  }
  const { transport, request, timeLeftMs } = ready;
  const mark = { sendStartedAt: prepared.markedAt, markedVersion: prepared.markedVersion };
  const held: HeldSend = { record, job, fence: prepared.fence, mark, transport, request, log, ...(prepared.marked ? { marked: prepared.marked } : {}) };
  if (prepared.streaming) {
    ctx.metrics.sends.inc({ kind: record.resendCount > 0 ? 'resend' : 'message', agent: ctx.metrics.agentLabels.of(record.agentCardUrl) });
    const applyAnswer = (response: SendMessageResponse, stream: string) => apply(ctx, record, answerObservation(record, response, 'stream', stream), { log, source: 'send' });
    // A card that claims streaming, an agent that refuses it (no task created): the same message goes by
    // SendMessage inside the same lease, with the time left read again (the refusal may have come late);
    // its answer is applied once the lease is released, so the follow it routes to is not turned away.
    const fallback = async () => requestHeld(ctx, held, Math.max(1, await attemptTimeLeftMs(ctx, record)));
    const outcome = await sendStreaming(ctx, { record, job, fence: prepared.fence, mark, transport, request, timeLeftMs, log, applyAnswer, fallback, leaseHeld: prepared.leaseHeld, giveBackMark: () => giveBackUnsentMark(ctx, record, prepared) });
    if (outcome === STREAM_MARK_GIVEN_BACK) return MARK_GIVEN_BACK;
    return typeof outcome === 'string' ? outcome : applyHeldResult(ctx, held, outcome);
  }
  // An answer (or a task found meanwhile) gives the lease back with its own transition (`endsLease`): one round trip less.
  const stop = new AbortController();
  const run = holdingSendLease(ctx, ref, sendRunToken(ctx, job), () => requestHeld(ctx, held, timeLeftMs, stop.signal), prepared.leaseHeld, (answer) => typeof answer !== 'string').then(
    (result) => (typeof result === 'string' ? result : applyHeldResult(ctx, { ...held, holdsLease: prepared.leaseHeld }, result)),
  );
  return waitOrMoveOut(ctx, record, run, { turn, stop, log });
}

/**
 * Waits for the send's run; when the agent still holds the send after `requestTimeoutMs`, the run goes on outside the
 * job in the held sends' pool (`held-sends.ts`: its job's send slot goes to other sends) if the pool has room for
 * this agent. The run's errors after that are logged (its send lease runs out and the reconciler decides).
 */
async function waitOrMoveOut(ctx: WorkerContext, record: DelegationRecord, run: Promise<string>, moving: { turn: SendTurn | undefined; stop: AbortController; log: Log }): Promise<string> {
  const { turn, stop, log } = moving;
  if (!turn || ctx.options.heldSendSlots === 0) return run;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const held = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ctx.options.requestTimeoutMs);
  });
  try {
    const first = await Promise.race([run, held]);
    if (first !== undefined) return first;
  } finally {
    clearTimeout(timer);
  }
  const detached = run.catch((error: unknown) => {
    log.warn({ err: error }, 'a held send moved out of its job ended with an error; its lease runs out and the reconciler decides');
    return 'failed';
  });
  if (!ctx.heldSends.adopt(record.agentCardUrl, detached)) return run;
  const onClose = () => stop.abort();
  ctx.heldSends.signal.addEventListener('abort', onClose, { once: true });
  void detached.finally(() => ctx.heldSends.signal.removeEventListener('abort', onClose));
  turn.handOver(detached);
  log.info('the agent holds the send: it waits outside its job, whose send slot goes to other sends');
  return 'held-moved-out';
}

/**
 * The request and the time it may take, or undefined when the worker stalled after the mark. Crash window 8:
 * a worker that stalled after the mark may find that the reconciler (which waits sendSettleMs = request
 * timeout + 1 s) already decided. Past the 1 s margin it must not send: the reconciler owns the delegation
 * now. Within it nobody else decides: the mark took the send lease in the same script (a lease held
 * elsewhere: the reconciler also waits sendSettleMs after the mark).
 */
async function requestReady(ctx: WorkerContext, record: DelegationRecord, prepared: PreparedSend): Promise<{ transport: A2ATransport; request: SendMessageRequest; timeLeftMs: number } | undefined> {
  const ref = { workflowId: record.workflowId, delegationId: record.delegationId };
  const transport = ctx.agents.transport(record.agentCardUrl, prepared.agentInterface);
  const request: SendMessageRequest = {
    message: outgoingMessage(record),
    configuration: { returnImmediately: true, ...pushConfiguration(ctx, record, record.push && ctx.options.webhookUrl ? await ctx.journal.pushToken(ref) : undefined) },
  };
  // The time left may read the definition: read before the guard, so the guard is the last step before the request.
  const timeLeftMs = Math.max(1, await attemptTimeLeftMs(ctx, record));
  if (ctx.options.now() - prepared.markedAt > ctx.options.sendSettleMs - ctx.options.requestTimeoutMs) return undefined;
  return { transport, request, timeLeftMs };
}

/** What a SendMessage needs once the mark is written and the stall guard passed. */
interface HeldSend {
  record: DelegationRecord;
  job: JobRun;
  fence: number;
  /** The run's own mark (its sendStartedAt and the version it wrote). */
  mark: RunMark;
  transport: A2ATransport;
  request: SendMessageRequest;
  log: Log;
  /** This run still holds its send lease: the answer's transition gives it back (`endsLease`), or it is released before anything else. */
  holdsLease?: boolean;
  /** The row as the mark left it: the answer is applied to it (its status change replies with the change only). */
  marked?: DelegationRecord;
}

/**
 * Sends with SendMessage (the caller holds the send lease): the answer, the task found meanwhile, or the failure's
 * outcome. `stop`: aborts the request (a held send outside its job when the fleet closes).
 */
async function requestHeld(ctx: WorkerContext, send: HeldSend, timeLeftMs: number, stop?: AbortSignal): Promise<HeldSendResult | string> {
  const { record, job, transport, request, log } = send;
  try {
    ctx.metrics.sends.inc({ kind: record.resendCount > 0 ? 'resend' : 'message', agent: ctx.metrics.agentLabels.of(record.agentCardUrl) });
    if (record.resendCount > 0) ctx.metrics.resends.inc();
    // V2: an agent may hold the send until the work is done; the attempt's deadline bounds it, the send
    // lease keeps the reconciler from deciding "may have been sent" while the answer can still come, and
    // a search may find the task meanwhile (send-held.ts).
    return await sendWhileSearching(ctx, record, transport, request, timeLeftMs, stop);
  } catch (error) {
    return sendFailed(ctx, { record, fence: send.fence, mark: send.mark, error, log, job, afterMark: true });
  }
}

/**
 * Applies a SendMessage's answer, or the task a search found while the agent held the send (V2). With `holdsLease`,
 * the send lease is ended by the answer's transition (`apply.ts`: given back, or handed to a local follow); on any
 * other path it is released there, so the reconciler never waits for a lease nobody holds.
 */
async function applyHeldResult(ctx: WorkerContext, send: HeldSend, result: HeldSendResult): Promise<string> {
  ctx.crashPoint('send.after-request', send.record.step);
  const sendLease = send.holdsLease ? { token: sendRunToken(ctx, send.job), release: () => releaseSendLease(ctx, send.record, send.job) } : undefined;
  let observation: Observation;
  try {
    observation =
      result.kind === 'found'
        ? { kind: 'send-answered', answer: { task: result.task }, ownership: { kind: 'proven', by: 'message-id' }, via: 'search-while-held', summary: !result.complete }
        : result.kind === 'several'
          ? { kind: 'search-result', purpose: 'reconcile', finding: result, deduplicates: ctx.options.deduplicatingAgents.has(send.record.agentCardUrl), why: 'searching while the agent held our send' }
          : answerObservation(send.record, result.response, 'answer');
  } catch (error) {
    // The answer arrived: failing to read it is the answer's failure (delivery received), applied as a send failure.
    await sendLease?.release();
    return sendFailed(ctx, { record: send.marked ?? send.record, fence: send.fence, mark: send.mark, error: afterAnswer(ctx, error, 'the SendMessage answer'), log: send.log, job: send.job, afterMark: true });
  }
  const applied = await apply(ctx, send.marked ?? send.record, observation, { log: send.log, source: 'send', ...(sendLease ? { sendLease } : {}) });
  return outcomeOf(ctx, send.log, observation, applied);
}

/**
 * The answer to our SendMessage as an observation, with its ownership (docs/a2a-edge.md "Ownership"): a task in the answer to our
 * own SendMessage must be in our context; an agent may replace our context with its own (R16), then its history must
 * hold our messageId. Without a context of ours to compare, the request id (checked at the edge) is the proof. A
 * Message (the SendMessage answer or a send stream's first event) is judged by `messageAnswerProof`. `stream`: the id of
 * the send stream whose first event this is (`via` 'stream'), carried by a Task's observation (an ordered channel).
 */
export function answerObservation(record: DelegationRecord, response: SendMessageResponse, via: 'answer' | 'stream', stream?: string): Observation {
  const contextId = record.contextRefused ? undefined : record.requestedContextId;
  if ('message' in response) {
    const { ownership, namesTask } = messageAnswerProof(response.message, { contextId, taskId: record.taskId }, via === 'stream' ? 'stream' : 'request-id');
    return { kind: 'send-answered', answer: { message: response.message }, ownership, via, ...(namesTask !== undefined ? { namesTask } : {}) };
  }
  if (via === 'stream') return { kind: 'send-answered', answer: { task: response.task }, ownership: streamOwnership(record, response.task), via, ...(stream !== undefined ? { stream } : {}) };
  const ownership = taskShownOurs(response.task, { contextId, messageId: record.messageId, taskId: record.taskId }, { requestIdProves: true });
  const proven: Ownership = ownership.ours ? { kind: 'proven', by: contextId ? 'context' : 'request-id' } : { kind: 'disproven', reason: `${ownership.reason}: ${ownership.detail}` };
  return { kind: 'send-answered', answer: { task: response.task }, ownership: proven, via };
}

/**
 * Ownership of the first event of a stream we opened (A34): proven by the request that opened it (its frames carry
 * our request id; a REST or gRPC stream is the answer to our one request), whatever context the agent chose and
 * though a status update carries no history. Disproven only by positive evidence: another task id than the one we
 * hold, or a history whose user messages do not include ours. Absence of evidence is not foreignness.
 */
function streamOwnership(record: DelegationRecord, task: Task): Ownership {
  if (record.taskId !== undefined && task.id !== record.taskId) return { kind: 'disproven', reason: `the stream names task ${task.id}, not our task ${record.taskId}` };
  const userMessages = (task.history ?? []).filter((message) => message.role === 'ROLE_USER');
  if (userMessages.length > 0 && !userMessages.some((message) => message.messageId === record.messageId)) {
    return { kind: 'disproven', reason: `task ${task.id} holds user messages, none of them our message ${record.messageId}` };
  }
  return { kind: 'proven', by: 'stream' };
}

/** A short outcome for logs and tests, and the log line of an applied answer. */
function outcomeOf(ctx: WorkerContext, log: Log, observation: Observation, applied: Applied): string {
  if (observation.kind !== 'send-answered') return applied.next;
  if (observation.ownership.kind !== 'proven') {
    const reason = observation.ownership.kind === 'disproven' ? observation.ownership.reason : 'not shown ours';
    log.warn({ reason }, 'the SendMessage answer is not shown ours; the reconciler will search');
    return 'foreign-answer';
  }
  if ('message' in observation.answer) {
    if (observation.namesTask !== undefined) {
      log.info({ taskId: observation.namesTask }, 'agent replied with a message naming a task; following the task');
      return 'sent';
    }
    log.info('agent replied with a message');
    return 'completed-by-message';
  }
  if (observation.via === 'search-while-held') {
    log.info({ taskId: observation.answer.task.id, state: observation.answer.task.status.state }, 'the agent holds the send; its task was found by our messageId');
    return 'found-while-held';
  }
  log.info({ taskId: observation.answer.task.id, state: observation.answer.task.status.state }, 'task created');
  return 'sent';
}

/**
 * Registers our webhook inline when the step asked for push (spec §3.2.2, §4.3.3): our config id and the token
 * journaled with the intent. `delegation/push-registration.ts` checks it once the task is bound and deletes it at the end.
 */
function pushConfiguration(ctx: WorkerContext, record: DelegationRecord, token: string | undefined) {
  if (!record.push || !ctx.options.webhookUrl || !token) return {};
  return { taskPushNotificationConfig: pushConfigOf(wantedPushConfig(ctx.options.webhookUrl, record, token)) };
}
