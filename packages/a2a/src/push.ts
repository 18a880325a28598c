/**
 * Push notification bodies (spec §4.3.3): a 1.0 agent POSTs a StreamResponse
 * (`{task}` | `{message}` | `{statusUpdate}` | `{artifactUpdate}`); a 0.3 agent
 * POSTs the event object itself, told apart by `kind` (spec v0.3.0 §9.5: usually
 * the whole Task, `kind:"task"`). One webhook accepts both.
 */
import { InvalidAgentResponseError } from './errors.ts';
import { checkResponseParts, DEFAULT_A2A_LIMITS } from './limits.ts';
import { validateWith } from './response.ts';
import { type StreamResponse, StreamResponseSchema } from './schema.ts';
import { isWithinIdBytes } from './wire-id.ts';
import { rawField } from './proto-names.ts';
import { roleFromWire } from './spelling.ts';
import { EventV03Schema, TaskV03Schema, eventFromV03, taskFromV03 } from './v03/wire.ts';

/**
 * The parsed JSON body of a push notification → a 1.0 StreamResponse. A body
 * with a `kind` member is read as 0.3 (a Task without `kind` too, if its state
 * is a 0.3 state); anything else must be a 1.0 StreamResponse. States and roles
 * in any spelling (`spelling.ts`). Throws `InvalidAgentResponseError` for a body
 * that is neither, `UnknownWireValueError` for a value no spelling explains, and
 * `LimitExceededError('partsPerMessage')` over `maxParts` (default 1,000). The
 * caller bounds the body's bytes and checks its depth (`checkJsonDepth`) before `JSON.parse`.
 */
export function normalizePushBody(body: unknown, options: { maxParts?: number } = {}): StreamResponse {
  const response = readPushBody(body);
  checkResponseParts(response, options.maxParts ?? DEFAULT_A2A_LIMITS.partsPerMessage);
  return response;
}

function readPushBody(body: unknown): StreamResponse {
  const raw = JSON.stringify(body) ?? String(body);
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new InvalidAgentResponseError('push body is not a JSON object', { cause: raw });
  }
  if ('kind' in body) return eventFromV03(validateWith(EventV03Schema, body, raw, '0.3 push body'));
  const v1 = StreamResponseSchema.safeParse(body);
  if (v1.success) return v1.data;
  const kindlessTask = TaskV03Schema.safeParse(body);
  if (kindlessTask.success) return { task: taskFromV03(kindlessTask.data) };
  return validateWith(StreamResponseSchema, body, raw, 'push body');
}

/** Keys whose string values are identifiers in a push body (1.0 and 0.3): `id`, `taskId`, `contextId`, `messageId`, … */
const ID_KEY = /^(id|[A-Za-z]+Id)$/;

/**
 * Whether a parsed push body (any JSON, not yet validated) names an identifier over `WIRE_ID_BYTES_MAX` UTF-8 bytes at
 * an id key (`id`, `…Id`; `metadata`, free-form, is not read): the answer is over a limit, not merely unreadable, so
 * the webhook journals it as such (a refused part of the result, or a suspect too long to keep) instead of dropping
 * it. The walk visits each value once; the caller has bounded the body's bytes and depth.
 */
export function pushBodyNamesOverLongId(body: unknown): boolean {
  const pending: unknown[] = [body];
  while (pending.length > 0) {
    const value = pending.pop();
    if (Array.isArray(value)) {
      pending.push(...value);
      continue;
    }
    if (typeof value !== 'object' || value === null) continue;
    for (const [key, member] of Object.entries(value)) {
      if (typeof member === 'string' && ID_KEY.test(key) && !isWithinIdBytes(member)) return true;
      if (typeof member === 'object' && member !== null && key !== 'metadata') pending.push(member);
    }
  }
  return false;
}

/**
 * The task id a parsed push body names, read without validating it (a 1.0 StreamResponse's `task.id`,
 * `statusUpdate.taskId`, `artifactUpdate.taskId` or `message.taskId`; a 0.3 event's own `taskId`, or a 0.3 Task's
 * `id`): for a body refused over a limit, to tell our task's from another's. Undefined when none is a string.
 */
export function pushedTaskIdOf(body: unknown): string | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const read = (value: unknown, key: string): unknown => (typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[key] : undefined);
  const candidates = 'kind' in body
    ? [read(body, 'taskId'), read(body, 'kind') === 'task' ? read(body, 'id') : undefined]
    : [read(read(body, 'task'), 'id'), read(read(body, 'statusUpdate'), 'taskId'), read(read(body, 'artifactUpdate'), 'taskId'), read(read(body, 'message'), 'taskId'), read(body, 'id')];
  return candidates.find((candidate): candidate is string => typeof candidate === 'string');
}

/**
 * Whether a parsed push body (any JSON, not validated) shows one of `messageIds` as a message of ours in what it
 * carries of the task's conversation, as the push route's `suspectOf` reads a validated one (`historyHolds`): a Task's
 * `history` or status message, a status update's message, a pushed Message (1.0 and 0.3 shapes), an entry carrying the
 * id with a role that is not the agent's in any spelling. An agent's echo of our id, or a quote of it elsewhere in the
 * body (an artifact's text, metadata), proves nothing (review35: any quote was taken for a holder).
 */
export function pushBodyHoldsMessage(body: unknown, messageIds: readonly string[]): boolean {
  const read = (value: unknown, key: string): unknown => (typeof value === 'object' && value !== null ? rawField(value, key) : undefined);
  const kind = read(body, 'kind');
  const task = kind === 'task' ? body : read(body, 'task');
  const statusUpdate = kind === 'status-update' ? body : read(body, 'statusUpdate');
  const message = kind === 'message' ? body : read(body, 'message');
  const history = read(task, 'history');
  const carried = [...(Array.isArray(history) ? history : []), read(read(task, 'status'), 'message'), read(read(statusUpdate, 'status'), 'message'), message];
  return carried.some((entry) => {
    const messageId = read(entry, 'messageId');
    return typeof messageId === 'string' && messageIds.includes(messageId) && roleFromWire(read(entry, 'role')) !== 'ROLE_AGENT';
  });
}

