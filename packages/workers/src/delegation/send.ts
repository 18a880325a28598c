/**
 * Journal first, then SendMessage (`returnImmediately: true`, spec §3.2.2):
 * delivers a delegation's journaled message with our journaled ids. The
 * journal decides first: a delegation that may already have been sent
 * (`sendStartedAt` set) is never resent from here; the reconciler asks the
 * agent and decides (`recover.ts`). Crash windows 1, 2 and 8. An agent may hold
 * the send (V2): SendMessage is searched for meanwhile (`send-held.ts`), or,
 * with `streamingSends` and a streaming card, SendStreamingMessage journals the
 * task id with the first event (`send-stream.ts`). Failures: `send-failure.ts`.
 */
import {
  ReplicationTimeoutError,
  applyTask,
  isFinished,
  taskOwnership,
  type A2ATransport,
  type AgentInterfaceRef,
  type DelegationRecord,
  type Message,
  type SendMessageRequest,
  type SendMessageResponse,
  type StatusChange,
  type StatusChangeResult,
  type Task,
  lazyChildLogger,
} from '@durable-a2a/shared';
import type { JobRun, WorkerContext } from '../context.ts';
import { routeDelegation, type RoutePlan } from './route.ts';
import { HANDLER_PREFIX, runHandler } from './handler.ts';
import { attemptTimeLeftMs, enforceAttemptDeadline } from './deadline.ts';
import { refuseUnknownVerifier } from './verifier-check.ts';
import { holdingSendLease, releaseSendLease, sendRunToken } from './send-errors.ts';
import { askReconciler, handleSendFailure, refuseForeignAnswer } from './send-failure.ts';
import { sendWhileSearching, type HeldSendResult } from './send-held.ts';
import { sendStreaming } from './send-stream.ts';
import { jitteredCheckTime } from './backoff.ts';

export { askReconciler };

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
    await routeDelegation(ctx, record, { known: record });
    return 'already-finished';
  }
  if (record.state !== 'INTENT') return 'already-sent';
  if (record.held) return 'held';
  if (record.sendStartedAt !== undefined) {
    await askReconciler(ctx, record);
    return 'may-have-sent';
  }
  const log = lazyChildLogger(ctx.logger, { queue: 'send', workflowId: record.workflowId, step: record.step, delegationId: record.delegationId, messageId: record.messageId, jobId: job.id, attempt: job.attemptsMade });
  if (await enforceAttemptDeadline(ctx, record, log)) return 'deadline-exceeded';
  if (await refuseUnknownVerifier(ctx, record, log)) return 'verifier-unknown';
  const prepared = await prepareSend(ctx, record, job, log);
  return typeof prepared === 'string' ? prepared : deliver(ctx, record, job, prepared, log);
}

/** A send ready to leave: our fence, the interface (journaled by the mark) and when the mark was written. */
interface PreparedSend {
  fence: number;
  agentInterface: AgentInterfaceRef;
  markedAt: number;
  /** The Agent Card declares `capabilities.streaming`: send with SendStreamingMessage (V2). */
  streaming: boolean;
  /** The mark took the send lease (false: another holder has it). */
  leaseHeld: boolean;
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
  try {
    agentInterface ??= await ctx.agents.chooseInterface(record.agentCardUrl, Math.max(1, await attemptTimeLeftMs(ctx, record)));
    if ((await attemptTimeLeftMs(ctx, record)) <= 0 && (await enforceAttemptDeadline(ctx, (await ctx.journal.getDelegation(ref)) ?? record, log))) return 'deadline-exceeded';
    if (ctx.options.streamingSends) streaming = await ctx.agents.card(record.agentCardUrl, Math.max(1, await attemptTimeLeftMs(ctx, record))).then((card) => card.capabilities.streaming === true, () => false);
    // The send lease is taken by the mark itself: the reconciler waits from here on (no re-read before the request).
    // The stall guard counts from the mark's sendStartedAt, where the reconciler's sendSettleMs starts: a stall anywhere
    // after it counts (the WAIT after the mark too), the WAIT before the mark does not (the reconciler waits from the mark).
    ctx.crashPoint('send.before-mark', record.step);
    ({ leaseHeld, sendStartedAt: markedAt, fence } = await ctx.journal.markSending(ref, fence, record.agentInterface ? undefined : agentInterface, {
      token: sendRunToken(ctx, job),
      durationMs: ctx.options.lockDurationMs,
      claim: true,
    }));
  } catch (error) {
    // Not on enough replicas: nothing leaves, and a replica outage does not use up the send's attempts.
    if (error instanceof ReplicationTimeoutError) {
      // The mark (and its send lease) may be written: the lease is given back so the reconciler need not wait for it.
      await releaseSendLease(ctx, ref, job);
      return askReconciler(ctx, { ...record, sendStartedAt: ctx.options.now() }).then(() => 'replicas-behind');
    }
    return handleSendFailure(ctx, { record, fence, error, log, job, afterMark: false });
  }
  ctx.crashPoint('send.after-mark', record.step);
  return { fence, agentInterface, markedAt, streaming, leaseHeld };
}

/** Sends the marked message and applies the answer (or the task a search found while the send was held). */
async function deliver(ctx: WorkerContext, record: DelegationRecord, job: JobRun, prepared: PreparedSend, log: Log): Promise<string> {
  const ref = { workflowId: record.workflowId, delegationId: record.delegationId };
  // The mark took the send lease: a send that stops before the request gives it back (the reconciler need not wait for it).
  const giveBack = () => (prepared.leaseHeld ? releaseSendLease(ctx, ref, job) : undefined);
  const ready = await requestReady(ctx, record, prepared).catch(async (error: unknown) => {
    await giveBack();
    throw error;
  });
  if (!ready) {
    await giveBack();
    log.warn('stalled between the mark and the request; leaving the delegation to the reconciler');
    return 'stalled-before-request';
  }
  const { transport, request, timeLeftMs } = ready;
  const held: HeldSend = { record, job, fence: prepared.fence, transport, request, log };
  if (prepared.streaming) {
    ctx.metrics.sends.inc({ kind: record.resendCount > 0 ? 'resend' : 'message' });
    const applyAnswer = (response: SendMessageResponse, route: boolean) => applySendAnswer(ctx, record, response, log, { route });
    // A card that claims streaming, an agent that refuses it (no task created): the same message goes by
    // SendMessage inside the same lease, with the time left read again (the refusal may have come late);
    // its answer is applied once the lease is released, so the follow it routes to is not turned away.
    const fallback = async () => requestHeld(ctx, held, Math.max(1, await attemptTimeLeftMs(ctx, record)));
    const outcome = await sendStreaming(ctx, { record, job, fence: prepared.fence, transport, request, timeLeftMs, log, applyAnswer, fallback, leaseHeld: prepared.leaseHeld });
    return typeof outcome === 'string' ? outcome : applyHeldResult(ctx, held, outcome);
  }
  // An answer (or a task found meanwhile) gives the lease back with its own transition (`endsLease`): one round trip less.
  const result = await holdingSendLease(ctx, ref, sendRunToken(ctx, job), () => requestHeld(ctx, held, timeLeftMs), prepared.leaseHeld, (answer) => typeof answer !== 'string');
  if (typeof result === 'string') return result;
  return applyHeldResult(ctx, { ...held, holdsLease: prepared.leaseHeld }, result);
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
  transport: A2ATransport;
  request: SendMessageRequest;
  log: Log;
  /** This run still holds its send lease: the answer's transition gives it back (`endsLease`), or it is released before anything else. */
  holdsLease?: boolean;
}

/** Sends with SendMessage (the caller holds the send lease): the answer, the task found meanwhile, or the failure's outcome. */
async function requestHeld(ctx: WorkerContext, send: HeldSend, timeLeftMs: number): Promise<HeldSendResult | string> {
  const { record, job, transport, request, log } = send;
  try {
    ctx.metrics.sends.inc({ kind: record.resendCount > 0 ? 'resend' : 'message' });
    if (record.resendCount > 0) ctx.metrics.resends.inc();
    // V2: an agent may hold the send until the work is done; the attempt's deadline bounds it, the send
    // lease keeps the reconciler from deciding "may have been sent" while the answer can still come, and
    // a search may find the task meanwhile (send-held.ts).
    return await sendWhileSearching(ctx, record, transport, request, timeLeftMs);
  } catch (error) {
    return handleSendFailure(ctx, { record, fence: send.fence, error, log, job, afterMark: true });
  }
}

/**
 * Applies a SendMessage's answer, or the task a search found while the agent held the send. With `holdsLease`,
 * the send lease is given back by the answer's transition; on any other path (a foreign answer, a journal error
 * before or in the transition) it is released here, so the reconciler never waits for a lease nobody holds.
 */
async function applyHeldResult(ctx: WorkerContext, send: HeldSend, result: HeldSendResult): Promise<string> {
  ctx.crashPoint('send.after-request', send.record.step);
  // The lease goes back with the answer's transition; to this process's follow when it can start one now, which
  // then needs no takeFollow (`handover`: only when the answer leaves the task to be followed), nor its own move of
  // the reconciler's next check (`checkAt`, written by the same script on one server).
  const followToken = send.holdsLease ? ctx.localFollowToken?.() : undefined;
  const token = sendRunToken(ctx, send.job);
  const endsLease: StatusChange['endsLease'] = !send.holdsLease
    ? undefined
    : followToken
      ? { token, when: 'handover', to: followToken, durationMs: ctx.options.lockDurationMs, checkAt: jitteredCheckTime(ctx.options.now(), ctx.options.reconcileIntervalMs) }
      : { token, when: 'always' };
  const release = () => (send.holdsLease ? releaseSendLease(ctx, send.record, send.job) : undefined);
  try {
    return result.kind === 'found'
      ? await adoptFound(ctx, send.record, result.task, send.log, endsLease)
      : await applySendAnswer(ctx, send.record, result.response, send.log, { ...(endsLease ? { endsLease } : {}), releaseLease: release });
  } catch (error) {
    // The transition may have run (and handed the lease over) before the error: both tokens' leases go back.
    // Nothing throws once the router passed the lease on to a running follow.
    await release();
    if (followToken) await ctx.journal.lease(send.record, 'release', followToken).catch(() => undefined);
    throw error;
  }
}

/** How a send's answer is applied (`applySendAnswer`). */
interface AnswerOptions {
  /** Route after the transition (default true; a streaming send follows its own stream instead). */
  route?: boolean;
  /** The send lease the answer's transition gives back (`StatusChange.endsLease`). */
  endsLease?: StatusChange['endsLease'];
  /** Gives that lease back on a path without a transition (a foreign answer), before the reconciler is asked. */
  releaseLease?: () => Promise<unknown> | undefined;
}

/**
 * Applies the answer to our SendMessage: a direct Message completes; a Task is adopted once proven ours,
 * then routed (see `AnswerOptions`).
 */
async function applySendAnswer(ctx: WorkerContext, record: DelegationRecord, response: SendMessageResponse, log: Log, options: AnswerOptions = {}): Promise<string> {
  const { route = true, endsLease, releaseLease } = options;
  const ref = { workflowId: record.workflowId, delegationId: record.delegationId };
  if ('message' in response) {
    // A direct Message reply completes the delegation (spec §3.1.1).
    const applied = await ctx.journal.applyStatus(ref, { mode: 'outcome', state: 'COMPLETED', result: { message: response.message }, contextId: response.message.contextId, ...(endsLease ? { endsLease } : {}) });
    log.info('agent replied with a message');
    await routeDelegation(ctx, ref, knownAfter(applied));
    return 'completed-by-message';
  }
  // Ownership (issue 12 kind 1): a task in the answer to our own SendMessage must be in our context.
  // Without a context of ours to compare, the request id (checked at the edge) is the proof.
  const contextId = record.contextRefused ? undefined : record.requestedContextId;
  let ownership = taskOwnership(response.task, { contextId, messageId: contextId ? record.messageId : undefined, taskId: record.taskId }, 'answer');
  // An agent may replace our context with its own (R16): then its history must hold our messageId.
  if (!ownership.ours && ownership.reason === 'foreign-context') ownership = taskOwnership(response.task, { messageId: record.messageId, taskId: record.taskId }, 'found');
  if (!ownership.ours) {
    // The reconciler searches at once: the lease goes first, so it does not wait for it.
    await releaseLease?.();
    return refuseForeignAnswer(ctx, record, ownership, log);
  }
  // Unfenced on purpose: the agent's answer is the truth about this send, so it is recorded even if
  // another worker claimed the delegation meanwhile (forward-only rules and the task id check still hold).
  const applied = await applyTask(ctx.journal, ref, response.task, { snapshot: true, agentCardUrl: record.taskId ? undefined : record.agentCardUrl, ...(endsLease ? { endsLease } : {}) });
  log.info({ taskId: response.task.id, state: response.task.status.state }, 'task created');
  // The first subscription of new work is not rate-limited. Not routed here: a lease handed over goes back.
  if (route) await routeDelegation(ctx, ref, { again: false, ...knownAfter(applied) });
  else if (applied.applied && applied.followLease) await ctx.journal.lease(ref, 'release', applied.followLease.token).catch(() => undefined);
  return 'sent';
}

/** Our task, found by our messageId while the agent held the send (V2): journaled at once, then followed. */
async function adoptFound(ctx: WorkerContext, record: DelegationRecord, task: Task, log: Log, endsLease?: StatusChange['endsLease']): Promise<string> {
  const applied = await applyTask(ctx.journal, record, task, { snapshot: true, agentCardUrl: record.taskId ? undefined : record.agentCardUrl, ...(endsLease ? { endsLease } : {}) });
  ctx.metrics.adoptions.inc();
  log.info({ taskId: task.id, state: task.status.state }, 'the agent holds the send; its task was found by our messageId');
  await routeDelegation(ctx, record, { again: false, ...knownAfter(applied) });
  return 'found-while-held';
}

/**
 * What an applied transition tells the router (the row as written, the workflow's flags, the follow lease it
 * handed over): saves its reads and the follow's takeFollow.
 */
function knownAfter(result: StatusChangeResult): Pick<RoutePlan, 'known' | 'workflow' | 'finishedWorkflow' | 'followLease'> {
  return result.applied ? { known: result.record, workflow: result.workflow, finishedWorkflow: result.finishedWorkflow, ...(result.followLease ? { followLease: result.followLease } : {}) } : {};
}

/** Registers our webhook for this task when the step asked for push (spec §4.3.3). */
function pushConfiguration(ctx: WorkerContext, record: DelegationRecord, token: string | undefined) {
  if (!record.push || !ctx.options.webhookUrl || !token) return {};
  const url = `${ctx.options.webhookUrl}/${encodeURIComponent(record.workflowId)}/${encodeURIComponent(record.delegationId)}`;
  // The same per-delegation secret as token and as Bearer credentials: agents send one or the other (R18).
  return { taskPushNotificationConfig: { url, token, authentication: { scheme: 'Bearer', credentials: token } } };
}
