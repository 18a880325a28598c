/**
 * Turns what an agent (or a proxy in front of it) answered into a typed
 * `A2AError`, using the one table in `errors.ts`.
 */
import { z } from 'zod';
import { JsonObjectSchema } from './proto-names.ts';
import {
  type A2AError,
  a2aReasonOf,
  AuthenticationError,
  InternalAgentError,
  InvalidAgentResponseError,
  ProtocolError,
  UpstreamError,
  errorClassForHttpStatus,
  errorClassForJsonRpcCode,
  errorClassForReason,
  refusesCredentialsByStatus,
  withRetryAfter,
} from './errors.ts';
import { retryAfterOfData, retryAfterOfHeader } from './retry-after.ts';

/** Characters of an unexpected body kept on the error for logs. */
export const BODY_EXCERPT_LENGTH = 500;

export const excerpt = (text: string): string =>
  text.length > BODY_EXCERPT_LENGTH ? `${text.slice(0, BODY_EXCERPT_LENGTH)}…` : text;

const ErrorInfoSchema = z.object({
  '@type': z.string().optional(),
  reason: z.string(),
  domain: z.string().optional(),
  metadata: JsonObjectSchema.optional(),
});

/** JSON-RPC `error` member (JSON-RPC 2.0 §5.1; A2A puts ErrorInfo objects in `data`, spec §9.5). */
export const JsonRpcErrorObjectSchema = z.object({
  code: z.number().int(),
  message: z.string().optional(),
  data: z.unknown().optional(),
});
export type JsonRpcErrorObject = z.infer<typeof JsonRpcErrorObjectSchema>;

/** HTTP+JSON error body: a google.rpc.Status inside `error` (spec §11.6). */
export const HttpErrorBodySchema = z.object({
  error: z.object({
    code: z.number().int().optional(),
    status: z.string().optional(),
    message: z.string().optional(),
    details: z.array(z.unknown()).optional(),
  }),
});

/**
 * The `ErrorInfo.reason` of a `data` / `details` array (or a single object, as 0.3 agents send), as `a2aReasonOf`
 * keeps it: the A2A domain's bare, another domain's qualified by it.
 */
export function findErrorInfoReason(details: unknown): string | undefined {
  const candidates = Array.isArray(details) ? details : [details];
  return a2aReasonOf(candidates.flatMap((candidate) => {
    const parsed = ErrorInfoSchema.safeParse(candidate);
    return parsed.success ? [parsed.data] : [];
  }));
}

/**
 * Maps a JSON-RPC `error` object to a typed error. Order: known JSON-RPC code,
 * then `ErrorInfo.reason`, then an HTTP status a proxy put into `code`
 * (field case R08 c: `502` is an `UpstreamError`), then implementation-defined
 * server errors (-32000..-32099) as `InternalAgentError`; anything else is a
 * `ProtocolError`. `rawBody` is kept as `cause`. Only the first (the spec's own code) can prove a refusal: a class
 * named by a reason over another code, or by an HTTP status in `code` (404 → `TaskNotFoundError`), describes the
 * error for the logs, and `sendEffectOf` reads it as effect `maybe` from `jsonRpcCode` (an agent booked, then
 * answered code 404: read as "nothing created", the step went to a second agent and booked twice).
 */
export function errorFromJsonRpc(errorObject: unknown, rawBody: string, httpStatus?: number): A2AError {
  const parsed = JsonRpcErrorObjectSchema.safeParse(errorObject);
  if (!parsed.success) {
    return new ProtocolError('malformed JSON-RPC error object', { cause: rawBody, bodyExcerpt: excerpt(rawBody), httpStatus });
  }
  const { code, data } = parsed.data;
  // The agent's own text, as long as the response limit allows: kept as an excerpt (logs, journal; attack 23).
  const message = excerpt(parsed.data.message ?? '');
  const reason = findErrorInfoReason(data);
  const retryAfterMs = retryAfterOfData(data);
  const details = { jsonRpcCode: code, httpStatus, reason, cause: rawBody, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) };
  const errorClass =
    errorClassForJsonRpcCode(code) ??
    (reason === undefined ? undefined : errorClassForReason(reason)) ??
    (code >= 100 && code <= 599 ? errorClassForHttpStatus(code) : undefined);
  if (errorClass) return new errorClass(message || undefined, details);
  if (code <= -32000 && code >= -32099) return new InternalAgentError(message || undefined, details);
  return new ProtocolError(`unknown JSON-RPC error code ${code}: ${message}`, { ...details, bodyExcerpt: excerpt(rawBody) });
}

/**
 * Maps a non-2xx HTTP response to a typed error (spec §11.6). For a JSON error
 * body, `ErrorInfo.reason` wins over the status because several errors share 400.
 * A non-JSON body (say, a proxy's HTML page) is an `UpstreamError` for 5xx/408/429,
 * an `AuthenticationError` for 401/403, and otherwise a `ProtocolError` with an
 * excerpt: an HTML 404 is no missing task, nor proof of a wrong URL (its effect is `maybe`, `sendEffectOf`: the
 * agent may have acted before its server answered 404; fourohfour). A body that is a task
 * (`namesTask`) on any other status, 401/403 and A2A error bodies included, is an
 * `InvalidAgentResponseError` (effect maybe): the agent has a task, ours or not.
 */
export function errorFromHttp(status: number, contentType: string | undefined, bodyText: string, headers?: Readonly<Record<string, string>>): A2AError {
  return withStatusRetryAfter(errorFromHttpBody(status, contentType, bodyText), status, headers);
}

/**
 * `error` with the `Retry-After` header of a 429 or 503 answer (RFC 9110 §10.2.3: the server says when to come back),
 * unless it already has a delay (a JSON-RPC RetryInfo already read wins); other statuses: `error` itself.
 */
export function withStatusRetryAfter(error: A2AError, status: number, headers?: Readonly<Record<string, string>>): A2AError {
  if ((status === 429 || status === 503) && error.retryAfterMs === undefined) return withRetryAfter(error, retryAfterOfHeader(headers?.['retry-after'], Date.now()));
  return error;
}

/** `errorFromHttp` without the headers. */
function errorFromHttpBody(status: number, contentType: string | undefined, bodyText: string): A2AError {
  const base = { httpStatus: status, cause: bodyText };
  const json = isJsonMediaType(contentType) ? tryParseJson(bodyText) : undefined;
  const transient = status >= 500 || status === 408 || status === 429;
  // A body naming a task says a task exists, whatever the status: never a refusal, a 401/403's "nothing created" or an
  // error body's verdict included (attack12: FAILED, the work done twice; review: a 401 with a task was resent).
  if (!transient && namesTask(json ?? tryParseJson(bodyText))) {
    return new InvalidAgentResponseError(`HTTP ${status} whose body is a task the answer does not prove ours`, { ...base, bodyExcerpt: excerpt(bodyText) });
  }
  if (refusesCredentialsByStatus(status)) return new AuthenticationError(`HTTP ${status}`, base);
  // A JSON-RPC envelope on an error status (some JSON-RPC servers answer 4xx/5xx with one).
  if (json !== null && typeof json === 'object' && 'jsonrpc' in json && 'error' in json) {
    return errorFromJsonRpc((json as { error: unknown }).error, bodyText, status);
  }
  const httpBody = HttpErrorBodySchema.safeParse(json);
  if (httpBody.success) {
    const { details } = httpBody.data.error;
    const message = httpBody.data.error.message === undefined ? undefined : excerpt(httpBody.data.error.message);
    const reason = findErrorInfoReason(details);
    const errorClass = (reason === undefined ? undefined : errorClassForReason(reason)) ?? errorClassForHttpStatus(status);
    if (errorClass) return new errorClass(message || undefined, { ...base, reason });
    return new ProtocolError(`HTTP ${status}: ${message ?? ''}`, { ...base, reason, bodyExcerpt: excerpt(bodyText) });
  }
  const Class = transient ? UpstreamError : ProtocolError;
  return new Class(`HTTP ${status} (${contentType ?? 'no content type'})`, { ...base, bodyExcerpt: excerpt(bodyText) });
}

/**
 * A Task as any binding spells it (1.0, 0.3 `kind: "task"`): an id and a TaskStatus, which always has a `state`
 * (`TaskStatusSchema` in `schema.ts`). An error body's `{id, status: {code, message}}` is no task (review12: it went to a person).
 */
const TaskLikeSchema = z.looseObject({ id: z.string().min(1), status: z.looseObject({ state: z.string().min(1) }) });

/** How deep `namesTask` looks for a task in an error answer. */
const TASK_SEARCH_DEPTH = 8;

/**
 * Whether an answer's body names a task anywhere: a Task, `{task}` (SendMessage 1.0), a JSON-RPC envelope's `result`
 * (whatever its id), or a task beside an error (a sibling `task`, in `error.data`, in a google.rpc `details` entry;
 * attack13: a JSON-RPC error envelope carrying a task was a refusal, a 401 envelope with one resent). Such an answer
 * is no refusal: the agent has a task (effect maybe, `sendEffectOf`), ours or not (only `answerContentProof` adopts
 * it). Looks `TASK_SEARCH_DEPTH` levels deep, level by level, over every value: no count of values seen, since a cap
 * let padding anywhere in the body (a long `error.data` list) hide the task beside it (review15: the work done twice).
 * The walk is linear in the body, which `responseBodyBytes` bounds; only an object with a string `id` and an object
 * `status` is parsed.
 */
export function namesTask(value: unknown): boolean {
  let level: unknown[] = [value];
  for (let depth = 0; depth <= TASK_SEARCH_DEPTH && level.length > 0; depth++) {
    const below: object[] = [];
    for (const current of level) {
      if (typeof current !== 'object' || current === null) continue;
      if (!Array.isArray(current) && mayBeTask(current) && TaskLikeSchema.safeParse(current).success) return true;
      if (depth < TASK_SEARCH_DEPTH) for (const child of Object.values(current)) if (typeof child === 'object' && child !== null) below.push(child);
    }
    level = below;
  }
  return false;
}

/** The cheap half of `TaskLikeSchema`: a string `id` and an object `status`. */
function mayBeTask(value: object): boolean {
  const { id, status } = value as { id?: unknown; status?: unknown };
  return typeof id === 'string' && typeof status === 'object' && status !== null;
}

/**
 * A JSON-RPC error answer (`rawBody`, any HTTP status, a 2xx included) that also names a task (`namesTask`: in
 * `result` beside the error, in `error.data`, as a sibling): an `InvalidAgentResponseError` (delivery received, effect
 * maybe), never the error's own verdict (a refusal's "nothing created", a 401's resend). Undefined otherwise.
 */
export function taskBesideError(rawBody: string, httpStatus?: number): InvalidAgentResponseError | undefined {
  if (!namesTask(tryParseJson(rawBody))) return undefined;
  return new InvalidAgentResponseError('a JSON-RPC error answer that also names a task (the answer does not prove it ours)', { cause: rawBody, bodyExcerpt: excerpt(rawBody), ...(httpStatus === undefined ? {} : { httpStatus }) });
}

/** The media type without parameters, lower-cased: `application/json; charset=utf-8` → `application/json`. */
export function mediaType(contentType: string | undefined): string {
  return (contentType ?? '').split(';')[0]!.trim().toLowerCase();
}

/** `application/json`, `application/a2a+json`, `application/problem+json`, ... */
export function isJsonMediaType(contentType: string | undefined): boolean {
  const type = mediaType(contentType);
  return type === 'application/json' || (type.startsWith('application/') && type.endsWith('+json'));
}

/** `JSON.parse` that returns `undefined` instead of throwing. */
export function tryParseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
