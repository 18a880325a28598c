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
