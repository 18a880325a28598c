/**
 * The push webhook (spec §9 / §4.3.3; field cases R17, R18):
 * `POST /v1/push/:workflowId/:delegationId`, the URL the workers register per
 * delegation. A push is only a hint: it is applied forward-only and unfenced
 * (duplicates and late pushes change nothing), then a reconcile job lets the
 * workers settle or follow the delegation. A whole Task settles the row with
 * its artifacts in one transition; a completion pushed without its result (a
 * status update, a Task without artifacts) is not applied: the workers read
 * the task in full first (a partial read never settles). The reconciler's fallback poll
 * stays the backstop for agents that push once and never again (R17). An
 * artifact update pushed as a chunk (appended, or not the last) is not applied
 * (`isPushedChunk`), nor the artifacts of a pushed Task of an unfinished task
 * (`appliedPart`): pushes come late, out of order and repeated.
 *
 * A body in a content coding (an agent that gzips its POSTs) is decoded in `preParsing` with the A2A client's
 * decoder, the body limit counting decoded bytes (`coded-body.ts`; docs/a2a-edge.md "Content codings").
 *
 * Authentication runs in `onRequest`, before the body is even read (R18).
 * The secret is the delegation's push token, journaled with its intent and
 * registered by the workers both as the config's `token` and as `Bearer`
 * credentials; agents send one or the other (spec §9: the SDK sends
 * `X-A2A-Notification-Token` only when the config has no authentication):
 * - `Authorization: Bearer <secret>` is accepted;
 * - `X-A2A-Notification-Token: <secret>` alone (no Authorization header) is
 *   accepted. A present but wrong Authorization header is never rescued by
 *   the token header. Both compare in constant time.
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Queue } from 'bullmq';
import {
  LimitExceededError,
  checkResponseParts,
  historyHolds,
  isTerminalTaskState,
  normalizePushBody,
  pushBodyHoldsMessage,
  pushBodyNamesOverLongId,
  pushedTaskIdOf,
  resolveLimits,
  taskOwnership,
  WIRE_ID_BYTES_MAX,
  type A2ALimits,
  type Message,
  type StreamResponse,
} from '@durable-a2a/a2a';
import {
  ID_PATTERN,
  WORKFLOW_ID_PATTERN,
  JournalError,
  SUSPECT_TASK_ID_MAX,
  SUSPECTS_PENDING_MAX,
  applyStreamResponse,
  enqueueReconcile,
  isFinished,
  limitRefusalOf,
  refusedResultShown,
  type DelegationRecord,
  type DelegationRef,
  type Journal,
  type LimitRefusal,
  type Metrics,
} from '@durable-a2a/shared';
import type { Readable } from 'node:stream';
import { bearerOf, secretEquals } from '../auth.ts';
import { ACCEPTED_REQUEST_CODINGS, decodedRequestBody } from '../coded-body.ts';
import { depthCheckedJsonParser } from '../json-body.ts';
import { problem, sendProblem } from '../problem.ts';
import { PushParamsSchema, problemResponses } from '../schemas.ts';
import { z } from 'zod';

export interface PushRouteOptions {
  journal: Journal;
  reconcile: Queue;
  metrics: Metrics;
  /** Input limits (default `DEFAULT_A2A_LIMITS`): `jsonDepth`, `partsPerMessage`; the body is bounded by `PUSH_BODY_LIMIT_BYTES`. */
  limits?: Partial<A2ALimits>;
}

/**
 * Pushes carry one task event; a 0.3 body is the whole Task with its
 * artifacts and history, so the limit is above fastify's 1 MiB default.
 * Bytes over it are not read (413).
 */
export const PUSH_BODY_LIMIT_BYTES = 4 * 1024 * 1024;

/**
 * Whether a push may be applied to `record` (docs/a2a-edge.md "Ownership"): only once we recorded a
 * task id, only for that task, and a whole Task only in our context. Returns the refusal's reason.
 */
function pushRefusal(record: DelegationRecord, response: StreamResponse): string | undefined {
  const taskId = taskIdOf(response);
  if (!record.taskId) return `a push for task ${taskId ?? '(none)'} arrived before this delegation recorded its task`;
  if (taskId !== undefined && taskId !== record.taskId) return `the push names task ${taskId}, not this delegation's task ${record.taskId}`;
  if ('task' in response) {
    const ownership = taskOwnership(response.task, { taskId: record.taskId, contextId: record.contextId ?? record.requestedContextId }, 'found');
    if (!ownership.ours) return ownership.detail;
  }
  return undefined;
}

/**
 * The task a refused push names that the workers must read (`wakeForSuspect`), else undefined: another task than the
 * delegation's own whose pushed body shows a message of ours (our messageId, or the reply journaled for the agent's
 * question) in what it carries of the task's conversation: a Task's history or status message, a status update's
 * message, a pushed Message. The body alone proves nothing (anyone holding the token can push it): it only tells the
 * workers which task to read from the agent. A task id over `SUSPECT_TASK_ID_MAX` is returned too: the journal cannot
 * keep it, so it counts it as evidence lost (`Journal.noteSuspect`) and a person decides. A finished row's too: its
 * state never changes, but the read may show the agent holding our message twice (DUPLICATE_TASK, a person hears of
 * it: docs/people.md "A task done twice"); the journal keeps each id once, so a flood of the same push is one read.
 */
export function suspectOf(record: DelegationRecord, response: StreamResponse): string | undefined {
  const taskId = taskIdOf(response);
  if (taskId === undefined || taskId === '' || taskId === record.taskId) return undefined;
  const carried: Message[] =
    'task' in response
      ? [...(response.task.history ?? []), ...(response.task.status.message ? [response.task.status.message] : [])]
      : 'statusUpdate' in response
        ? response.statusUpdate.status.message ? [response.statusUpdate.status.message] : []
        : 'message' in response ? [response.message] : [];
  const ours = ourMessageIds(record);
  return ours.some((messageId) => historyHolds(carried, messageId)) ? taskId : undefined;
}

/** The messages of ours a task may hold: our message, and the reply journaled for the agent's question. */
function ourMessageIds(record: DelegationRecord): string[] {
  return [record.messageId, ...(record.replyMessageId !== undefined ? [record.replyMessageId] : [])];
}

/** The task a StreamResponse speaks about (a Message may name none). */
function taskIdOf(response: StreamResponse): string | undefined {
  if ('task' in response) return response.task.id;
  if ('statusUpdate' in response) return response.statusUpdate.taskId;
  if ('artifactUpdate' in response) return response.artifactUpdate.taskId;
  return response.message.taskId;
}

/**
 * Whether a push would settle the row COMPLETED without the result: a status update (it never carries artifacts),
 * or a Task that does not show the result (`refusedResultShown`): without artifacts (agents that push a trimmed Task),
 * or, after a part of the result was refused over a limit (the row's `refusedResult`), without every refused artifact.
 * A full read settles, a partial one never does (docs/delegation-core.md): such a push is not applied; the workers
 * read the task in full (GetTask) instead, as a stream's COMPLETED status update without artifacts is read in full
 * first. A pushed Task showing the result is a full read and settles the row with it, in one transition (`applyTask`).
 */
function isCompletionWithoutResult(record: DelegationRecord, response: StreamResponse): boolean {
  if ('statusUpdate' in response) return response.statusUpdate.status.state === 'TASK_STATE_COMPLETED';
  if ('task' in response) return response.task.status.state === 'TASK_STATE_COMPLETED' && !refusedResultShown(record.refusedResult ?? {}, response.task.artifacts);
  return false;
}

/** Whether a push would settle the row COMPLETED (a pushed COMPLETED Task): applied only on the row as judged (compare-and-set). */
const isCompletion = (response: StreamResponse): boolean => 'task' in response && response.task.status.state === 'TASK_STATE_COMPLETED';

/**
 * Whether a pushed status or artifact update names a context other than the delegation's (the agent's, else the one
 * we asked for): an update of our task id in another context is no proof it is ours (a whole Task in another context
 * is refused, `pushRefusal`), so it is not applied; the workers read the task in full (attack 27: a FAILED update of
 * T1 in "ctx-other" settled the row FAILED at once while T1 went on working). An update without a context (0.3 agents
 * may omit it) is judged by its task id alone, as before.
 */
export function isUpdateInAnotherContext(record: { contextId?: string; requestedContextId?: string }, response: StreamResponse): boolean {
  const event = 'statusUpdate' in response ? response.statusUpdate : 'artifactUpdate' in response ? response.artifactUpdate : undefined;
  const ours = record.contextId ?? record.requestedContextId;
  return event !== undefined && !!event.contextId && ours !== undefined && event.contextId !== ours;
}

/**
 * Whether a pushed artifact update is a chunk of an artifact rather than the whole of it: it appends (`append: true`)
 * or announces more (`lastChunk` not `true`). Pushes are separate POSTs that arrive late, out of order and repeated
 * (spec §9: duplicates happen) and carry no sequence number, so a chunk applied from a push can double (a repeated
 * append) or cut (a late first chunk replacing the artifact a snapshot held whole) the result, and a stream's finished
 * status would then settle the row with it (attack13). A chunk is not applied: the artifact comes whole from the
 * stream (ordered), a full read or a pushed Task. A whole artifact (`lastChunk: true`, not appended) replaces the
 * artifact with the same content however often and late it comes, and seals it: it is applied.
 */
export function isPushedChunk(event: { append?: boolean; lastChunk?: boolean }): boolean {
  return event.append === true || event.lastChunk !== true;
}

/**
 * What of a push is applied: a pushed Task of an unfinished task without its artifacts. Its status goes through the
 * journal's forward-only rules, but its artifacts, a view at a time nothing orders against the stream and the reads,
 * would replace the journal's whole (attack13: a stale Task pushed with a new status message and "artifacts": [] after a
 * stream's snapshot held the result wiped it, and the stream's COMPLETED settled without it). A finished Task's
 * artifacts are its result (a finished task never changes): applied with its status.
 */
export function appliedPart(response: StreamResponse): StreamResponse {
  if (!('task' in response) || response.task.artifacts === undefined || isTerminalTaskState(response.task.status.state)) return response;
  const { artifacts: _unordered, ...task } = response.task;
  return { task };
}

/** What the push route works with, built once per plugin. */
interface PushContext {
  journal: Journal;
  limits: A2ALimits;
  /** Counts one push by outcome (`da2a_pushes_total`). */
  count: (outcome: string) => void;
  /**
   * A reconcile job for the delegation (the workers settle or follow it); `readFor`: the status timestamp (ms, 0: none)
   * of a pushed completion to read in full; `at`: the push's time in ms (default now; one job per delegation and `at`).
   */
  wakeWorkers: (ref: DelegationRef, readFor?: number, at?: number) => Promise<unknown>;
  /**
   * `taskId`, a task a refused push showed holding our message (`suspectOf`), kept among the delegation's pending
   * suspects (`Journal.noteSuspect`: at most `SUSPECTS_PENDING_MAX` wait, the oldest unread kept; one not kept is
   * counted as evidence lost, which the workers leave to a person), then a reconcile job: the workers read the pending
   * suspects by GetTask first. One job per delegation per second (review: it kept only the first, so a decoy pushed
   * first hid the task holding our message): a flood of foreign pushes is at most `SUSPECT_READS_PER_JOB` GetTask calls
   * a second, the rest read by the next second's job.
   */
  wakeForSuspect: (ref: DelegationRef, taskId: string) => Promise<Awaited<ReturnType<Journal['noteSuspect']>>>;
  /** The requests whose push credentials were accepted (`pushAuthentication`): only theirs refused bodies are journaled. */
  authorized: WeakSet<FastifyRequest>;
}

/**
 * `onRequest`: the delegation's push token as Bearer credentials, or as `X-A2A-Notification-Token` without an
 * Authorization header; anything else is 401 before the body is read (R18).
 */
function pushAuthentication(context: PushContext) {
  return async function authenticate(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const { workflowId, delegationId } = request.params as Record<string, string | undefined>;
    const deny = () => {
      context.count('unauthorized');
      return sendProblem(reply, problem('UNAUTHORIZED', 'push credentials missing or wrong'));
    };
    // Unknown delegations, delegations without push and malformed ids all look the same: 401.
    if (!workflowId || !delegationId || !WORKFLOW_ID_PATTERN.test(workflowId) || !ID_PATTERN.test(delegationId)) return void (await deny());
    const secret = await context.journal.pushToken({ workflowId, delegationId });
    if (!secret) return void (await deny());
    const bearer = bearerOf(request);
    const tokenHeader = request.headers['x-a2a-notification-token'];
    const authorized =
      bearer !== undefined
        ? secretEquals(bearer, secret)
        : request.headers.authorization === undefined && typeof tokenHeader === 'string' && secretEquals(tokenHeader, secret);
    if (!authorized) return void (await deny());
    context.authorized.add(request);
  };
}

/**
 * `preParsing`: a push in a content coding (an agent that gzips what it POSTs) decoded before it is parsed, its
 * decoded bytes held to `PUSH_BODY_LIMIT_BYTES` (`decodedRequestBody`). A coding we cannot decode is 415 with the
 * codings we can in `Accept-Encoding` (RFC 9110 §15.5.16), so the agent can send it again; the news is not lost
 * either way: the workers are woken (one reconcile job per delegation per second at most) to read the task.
 */
function pushDecoding(context: PushContext) {
  return async function decode(request: FastifyRequest, reply: FastifyReply, payload: Readable): Promise<Readable> {
    try {
      return decodedRequestBody(payload, request.headers['content-encoding'], PUSH_BODY_LIMIT_BYTES, 'push body');
    } catch (error) {
      const { workflowId, delegationId } = request.params as DelegationRef;
      context.count('unsupported-encoding');
      request.log.warn({ workflowId, delegationId, contentEncoding: request.headers['content-encoding'] }, 'push in a content coding we do not decode; the workers read the task');
      reply.header('accept-encoding', ACCEPTED_REQUEST_CODINGS);
      await context.wakeWorkers({ workflowId, delegationId }, undefined, Math.floor(Date.now() / 1000) * 1000);
      throw error;
    }
  };
}

/** Applies one accepted push; answers 204, or the problem when the journal refuses it. */
async function applyPush(context: PushContext, request: FastifyRequest, reply: FastifyReply, record: DelegationRecord, response: StreamResponse): Promise<FastifyReply> {
  const ref = { workflowId: record.workflowId, delegationId: record.delegationId };
  let changed: boolean;
  try {
    // A completion was judged on the row as read (`isCompletionWithoutResult`: a refused part of the result): it is
    // applied on that row only, so a refusal journaled meanwhile (a stream's, another push's) is never passed over.
    const result = await applyStreamResponse(context.journal, record, response, isCompletion(response) ? { expectedVersion: record.version } : {});
    changed = result.status?.applied === true || result.artifact === 'applied';
    if (result.contextAnomaly) request.log.warn({ ...ref, contextId: result.contextAnomaly }, 'push names another context (kept by taskId)');
  } catch (error) {
    // The row changed since it was read: the workers read the task in full and settle from what it shows.
    if (error instanceof JournalError && error.code === 'VERSION_CONFLICT') {
      context.count('read-in-full');
      await context.wakeWorkers(ref, pushedTimestampMs(response));
      return reply.code(204).send(null);
    }
    // The journal saw another task id first (a race with the first SendMessage answer).
    if (error instanceof JournalError && error.code === 'TASK_MISMATCH') {
      context.count('foreign-task');
      return sendProblem(reply, problem('TASK_MISMATCH', `the push names task ${taskIdOf(response)}, not this delegation's task`));
    }
    // Over artifactBytesPerDelegation: nothing stored, the attempt ended AMBIGUOUS (LIMIT_EXCEEDED: a person decides); wake the workers.
    if (error instanceof JournalError && error.code === 'ARTIFACT_LIMIT') {
      context.count('limit-exceeded');
      await context.wakeWorkers(ref);
      return sendProblem(reply, problem('PAYLOAD_TOO_LARGE', 'the artifacts of this delegation are over the limit; the attempt ended'));
    }
    throw error;
  }
  context.count(changed ? 'applied' : 'duplicate');
  // Only a push that moved the journal wakes the workers: a flood of duplicates
  // must not become a flood of GetTask calls (spec §9: receivers SHOULD rate-limit).
  if (changed) await context.wakeWorkers(ref);
  return reply.code(204).send(null);
}

/** The route handler: parse the body, find the delegation, refuse what is not ours, then apply. */
async function receivePush(context: PushContext, ref: DelegationRef, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  let response: StreamResponse;
  try {
    // Parts are counted once the push is known to be about our task (`refusedOverLimit`): a refusal is journaled on it.
    response = normalizePushBody(request.body, { maxParts: Number.MAX_SAFE_INTEGER });
  } catch (error) {
    if (pushBodyNamesOverLongId(request.body)) return refusedOverLongId(context, ref, request, reply);
    context.count('invalid');
    request.log.warn({ ...ref, err: error }, 'push body is neither a 1.0 StreamResponse nor a 0.3 event');
    return sendProblem(reply, problem('INVALID_INPUT', 'push body is neither an A2A 1.0 StreamResponse nor a 0.3 event', { field: '(body)' }));
  }
  const record = await context.journal.getDelegation(ref);
  if (!record) return refusedAsExpired(context, reply);
  const refusal = pushRefusal(record, response);
  if (refusal) {
    // Nothing of it is applied; but another task that shows our message may be the agent holding it twice: the workers
    // read that task from the agent itself and decide (the task-read row: AMBIGUOUS when the read shows it).
    return refusedAsNotOurs(context, request, reply, record, { taskId: taskIdOf(response), suspect: suspectOf(record, response), journaled: refusal, answered: refusal });
  }
  try {
    checkResponseParts(response, context.limits.partsPerMessage);
  } catch (error) {
    if (!(error instanceof LimitExceededError)) throw error;
    return refusedOverLimit(context, request, reply, record, error);
  }
  if ('artifactUpdate' in response && isPushedChunk(response.artifactUpdate)) {
    // Nothing the workers need to read now (the completion brings the whole result): no wake, so a flood of chunks
    // is no flood of GetTask calls.
    context.count('chunk-not-applied');
    return reply.code(204).send(null);
  }
  if (!isFinished(record.state) && isUpdateInAnotherContext(record, response)) {
    // Our task id in another context proves nothing either way (a whole Task in another context is refused): not
    // applied; the workers read the task in full and settle from what it shows.
    context.count('another-context');
    request.log.warn({ ...ref, taskId: taskIdOf(response) }, 'push names our task in another context; not applied, the workers read the task');
    await context.wakeWorkers(ref, pushedTimestampMs(response));
    return reply.code(204).send(null);
  }
  if (!isFinished(record.state) && isCompletionWithoutResult(record, response)) {
    context.count('read-in-full');
    await context.wakeWorkers(ref, pushedTimestampMs(response));
    return reply.code(204).send(null);
  }
  return applyPush(context, request, reply, record, appliedPart(response));
}

/**
 * A push about our task refused over a limit (its parts over `partsPerMessage`; from `pushLimitRefused`, its bytes or
 * nesting): a part of the result may be in it, so the refusal is journaled on the row as every path's is
 * (`Journal.noteRefusedResult`, the refused artifact's id when the limit was found on one) and the workers are woken
 * to read the task in full; 413 to the agent. Nothing of the body is applied.
 */
async function refusedOverLimit(context: PushContext, request: FastifyRequest, reply: FastifyReply, record: DelegationRecord, error: LimitExceededError): Promise<FastifyReply> {
  const ref = { workflowId: record.workflowId, delegationId: record.delegationId };
  await noteRefused(context, request, ref, limitRefusalOf(error, `a push: ${error.message}`));
  return sendProblem(reply, problem('PAYLOAD_TOO_LARGE', error.message));
}

/**
 * A push naming an identifier over `WIRE_ID_BYTES_MAX` (a task, message, artifact or context id: unreadable, never
 * journaled whole or cut) is an answer over a limit, not "nothing happened": another task than the row's whose body
 * shows a message of ours is a suspect (too long to keep when its own id is the long one: the journal counts it as
 * evidence lost, a person decides; attack22's rule, held after edges35 bounded every id), on a row bound to its task or
 * not yet (review35: an unbound row's was a 400, nothing noted), refused as `receivePush` refuses another task's push
 * (`refusedAsNotOurs`); otherwise, about a delegation bound to its task, a refused
 * part of the result (a full read decides), as a body over the byte or depth limit. Answered 403 for another task, else
 * 413 (400 when the row has no task yet: nothing to read).
 */
async function refusedOverLongId(context: PushContext, ref: DelegationRef, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const record = await context.journal.getDelegation(ref);
  if (!record) return refusedAsExpired(context, reply);
  const message = `a push naming an id over ${WIRE_ID_BYTES_MAX} UTF-8 bytes`;
  const taskId = pushedTaskIdOf(request.body);
  // Another task than the row's, the row bound or not (a push before our task was recorded is refused with its
  // suspect, as `pushRefusal` and `suspectOf` take the same body without the long id: review35).
  if (taskId !== undefined && taskId !== record.taskId) {
    const suspect = pushBodyHoldsMessage(request.body, ourMessageIds(record)) ? taskId : undefined;
    return refusedAsNotOurs(context, request, reply, record, { taskId, suspect, journaled: `${message}, naming another task`, answered: `${message}, naming another task than the delegation's` });
  }
  if (record.taskId === undefined || isFinished(record.state)) {
    context.count('invalid');
    return sendProblem(reply, problem('INVALID_INPUT', message, { field: '(body)' }));
  }
  await noteRefused(context, request, ref, { message, limit: 'wireIdBytes' });
  return sendProblem(reply, problem('PAYLOAD_TOO_LARGE', message));
}

/** A push for a delegation the journal does not hold (never was, or expired): counted `expired`, answered 404. */
function refusedAsExpired(context: PushContext, reply: FastifyReply): FastifyReply {
  context.count('expired');
  return sendProblem(reply, problem('NOT_FOUND', 'delegation not found'));
}

/**
 * Refuses a push as another task's (or not provably ours: `pushRefusal`, or a long-id push naming another task), the
 * one rule for both: nothing of it is applied; counted `foreign-task`, or `foreign-task-holding-ours` when its body
 * shows a message of ours in another task (`suspect`, that task's id); journaled as a PUSH_NOT_OURS protocol error
 * (`journaled`); the suspect kept for the workers to read (`wakeForSuspect`: one not kept, over the cap or too long, is
 * evidence lost and a person decides); answered 403 TASK_MISMATCH (`answered`). `taskId`: the task the push names,
 * logged (cut to 128 characters).
 */
async function refusedAsNotOurs(
  context: PushContext,
  request: FastifyRequest,
  reply: FastifyReply,
  record: DelegationRecord,
  refused: { taskId: string | undefined; suspect: string | undefined; journaled: string; answered: string },
): Promise<FastifyReply> {
  const ref = { workflowId: record.workflowId, delegationId: record.delegationId };
  const { suspect } = refused;
  context.count(suspect === undefined ? 'foreign-task' : 'foreign-task-holding-ours');
  request.log.warn({ ...ref, taskId: refused.taskId?.slice(0, 128), journaledTaskId: record.taskId }, suspect === undefined ? 'push refused; nothing applied' : 'push refused; it shows our message in another task: the workers read that task');
  await context.journal.noteProtocolError(ref, { code: 'PUSH_NOT_OURS', message: refused.journaled, retryable: false });
  const noted = suspect === undefined ? undefined : await context.wakeForSuspect(ref, suspect);
  if (noted === 'over-cap' || noted === 'too-long') {
    const why = noted === 'over-cap' ? `${SUSPECTS_PENDING_MAX} suspects already wait to be read` : `its id is over ${SUSPECT_TASK_ID_MAX} characters`;
    request.log.warn({ ...ref, taskId: suspect!.slice(0, 128) }, `${why}: this one is not kept, counted as evidence lost (the row's suspectsLost; a person decides)`);
  }
  // A compacted workflow keeps no rows to note it on: said here, for a person reading logs.
  if (noted === 'missing') request.log.warn({ ...ref, taskId: suspect!.slice(0, 128) }, 'push shows our message in another task, but this finished workflow was compacted: the task is not read (a person may check it)');
  return sendProblem(reply, problem('TASK_MISMATCH', refused.answered));
}

/** Journals a push refused over a limit (`refusedOverLimit`), counts it, and wakes the workers to read the task. */
async function noteRefused(context: PushContext, request: FastifyRequest, ref: DelegationRef, refusal: LimitRefusal): Promise<void> {
  context.count('limit-exceeded');
  request.log.warn({ ...ref, limit: refusal.limit, artifactId: refusal.artifactId?.slice(0, 128) }, 'push refused over a limit; journaled as a refused part of the result, the workers read the task');
  // (A finished row is left alone: nothing to read.)
  if (await context.journal.noteRefusedResult(ref, refusal)) await context.wakeWorkers(ref);
}

/**
 * `onError` of an authorized push whose body was refused before the handler ran: over `PUSH_BODY_LIMIT_BYTES` (413,
 * the raw or the decoded bytes) or nested deeper than `jsonDepth` (400, the limit's error its cause). Such a body
 * about a delegation bound to its task is a refused part of the result (nothing in it could be read, not even its
 * task id: the delegation's push token is the proof it is the agent's): journaled without an artifact id.
 */
function pushLimitRefused(context: PushContext) {
  return async function onError(request: FastifyRequest, _reply: FastifyReply, error: Error & { statusCode?: number }): Promise<void> {
    const depth = error.cause instanceof LimitExceededError ? error.cause : undefined;
    if (!context.authorized.has(request) || (error.statusCode !== 413 && depth === undefined)) return;
    const ref = request.params as DelegationRef;
    const record = await context.journal.getDelegation(ref);
    if (!record?.taskId || isFinished(record.state)) return;
    const refusal: LimitRefusal = depth ? limitRefusalOf(depth, `a push: ${depth.message}`) : { message: `a push body over ${PUSH_BODY_LIMIT_BYTES} bytes`, limit: 'pushBodyBytes' };
    await noteRefused(context, request, ref, refusal);
  };
}

/** The pushed status's timestamp in ms (0 when it has none or it does not parse). */
function pushedTimestampMs(response: StreamResponse): number {
  const status = 'task' in response ? response.task.status : 'statusUpdate' in response ? response.statusUpdate.status : undefined;
  const ms = status?.timestamp ? Date.parse(status.timestamp) : Number.NaN;
  return Number.isFinite(ms) ? ms : 0;
}

export function pushRoutes(options: PushRouteOptions): FastifyPluginAsyncZod {
  const { journal, reconcile, metrics } = options;
  const context: PushContext = {
    journal,
    limits: resolveLimits(options.limits),
    count: (outcome) => metrics.pushes.inc({ outcome }),
    authorized: new WeakSet(),
    wakeWorkers: (ref, readFor, at = Date.now()) => enqueueReconcile({ reconcile }, ref, readFor === undefined ? { push: at } : { pushedCompletion: readFor }),
    wakeForSuspect: async (ref, taskId) => {
      // Kept in the journal first (at most SUSPECTS_PENDING_MAX waiting; one not kept counted lost): the job is one a
      // second and reads them. It names this push's suspect (the first of its second) when the journal kept it.
      const noted = await journal.noteSuspect(ref, taskId);
      if (noted === 'missing') return noted;
      const now = Date.now();
      await enqueueReconcile({ reconcile }, ref, { suspect: noted === 'kept' || noted === 'pending' ? taskId : undefined, at: now, now });
      return noted;
    },
  };
  return async (app) => {
    app.removeAllContentTypeParsers();
    app.addContentTypeParser(['application/json', 'application/a2a+json'], { parseAs: 'string', bodyLimit: PUSH_BODY_LIMIT_BYTES }, depthCheckedJsonParser(context.limits.jsonDepth, 'push body'));
    app.post(
      '/push/:workflowId/:delegationId',
      {
        onRequest: pushAuthentication(context),
        preParsing: pushDecoding(context),
        onError: pushLimitRefused(context),
        bodyLimit: PUSH_BODY_LIMIT_BYTES,
        schema: {
          operationId: 'receivePushNotification',
          tags: ['push'],
          security: [{ pushToken: [] }, { notificationToken: [] }],
          response: { 204: z.null().describe('Applied, or a duplicate that changed nothing'), ...problemResponses(400, 403, 404, 413, 415) },
          summary: 'Push notification webhook for one delegation (A2A 1.0 StreamResponse or 0.3 Task body)',
          description: 'Authorization: Bearer <per-delegation push token>, or X-A2A-Notification-Token: <the same token> without Authorization. Answers 204; 401 before the body is read when credentials are missing or wrong; 403 when the body names another task. A body in a Content-Encoding (gzip, x-gzip, deflate, br, zstd; at most two layers) is decoded, its decoded size held to the body limit (413); any other coding is 415 with Accept-Encoding.',
          params: PushParamsSchema,
        },
      },
      async (request, reply) => {
        await receivePush(context, request.params, request, reply);
        return reply;
      },
    );
  };
}
