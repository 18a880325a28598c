/**
 * Typed A2A client errors. One table (`A2A_ERROR_TABLE`) maps JSON-RPC codes,
 * HTTP statuses and `ErrorInfo.reason` strings to classes (spec §3.3.2, §5.4,
 * §9.5, §11.6). Every error says whether retrying the same call may succeed,
 * and keeps what the agent sent as `cause`.
 */

/**
 * Did the request reach the agent? (docs/a2a-edge.md "Delivery (V5)"; field case V5)
 * - `not-sent`: it never reached the agent: it never left us (connection refused, DNS failure, a blocked address, a
 *   request we could not build), or the agent's server refused its bytes before any handler ran (`RequestTooLargeError`);
 * - `maybe`: it may have (a timeout or a reset before any answer);
 * - `received`: an answer arrived (any HTTP status with a body, a stream that opened): the agent had it.
 * Only `not-sent` allows "never reached the agent"; an unreadable 200 is `received`.
 */
export type Delivery = 'not-sent' | 'maybe' | 'received';

/** Fields every A2A error may carry besides its message. */
export interface A2AErrorDetails {
  /** Whether the request reached the agent. Default: `received` when the error carries anything an answer said (status, code, reason, body), else `maybe`. */
  delivery?: Delivery;
  /** JSON-RPC `error.code` as received. */
  jsonRpcCode?: number;
  /** HTTP status of the response. */
  httpStatus?: number;
  /** gRPC status code as received (`google.rpc.Code`). */
  grpcStatus?: number;
  /** `google.rpc.ErrorInfo.reason`, e.g. `TASK_NOT_FOUND`. */
  reason?: string;
  /** What was received (raw body text or the thrown error). */
  cause?: unknown;
  /** The first `BODY_EXCERPT_LENGTH` characters of an unexpected body. */
  bodyExcerpt?: string;
  /** How long the agent asked us to wait before the next request (ms): `Retry-After`, JSON-RPC or gRPC RetryInfo. */
  retryAfterMs?: number;
}

/**
 * Every `code` an error of this client carries: the A2A errors (spec §5.4), the JSON-RPC 2.0 errors (§5.1), and this
 * client's own (transport, stream, protocol, limits, Agent Card, address policy). One list, so a code is spelled once.
 */
export const A2A_CLIENT_ERROR_CODES = [
  'TASK_NOT_FOUND',
  'TASK_NOT_CANCELABLE',
  'PUSH_NOTIFICATION_NOT_SUPPORTED',
  'UNSUPPORTED_OPERATION',
  'CONTENT_TYPE_NOT_SUPPORTED',
  'INVALID_AGENT_RESPONSE',
  'EXTENDED_AGENT_CARD_NOT_CONFIGURED',
  'EXTENSION_SUPPORT_REQUIRED',
  'VERSION_NOT_SUPPORTED',
  'JSON_RPC_PARSE_ERROR',
  'INVALID_REQUEST',
  'METHOD_NOT_FOUND',
  'INVALID_PARAMS',
  'INTERNAL_ERROR',
  'UPSTREAM_ERROR',
  'CONFLICT',
  'NETWORK_ERROR',
  'STREAM_IDLE',
  'PROTOCOL_ERROR',
  'UNKNOWN_WIRE_VALUE',
  'LIMIT_EXCEEDED',
  'RESPONSE_ID_MISMATCH',
  'REQUEST_TOO_LARGE',
  'AUTHENTICATION_ERROR',
  'AGENT_CARD_ERROR',
  'BLOCKED_ADDRESS',
] as const;

/** A code of `A2A_CLIENT_ERROR_CODES`. */
export type A2AClientErrorCode = (typeof A2A_CLIENT_ERROR_CODES)[number];

/** Base of every error this client throws. `code` is stable and safe to match on in tests and logs. */
export class A2AError extends Error {
  readonly code: A2AClientErrorCode;
  readonly retryable: boolean;
  readonly jsonRpcCode?: number;
  readonly httpStatus?: number;
  readonly grpcStatus?: number;
  readonly reason?: string;
  readonly bodyExcerpt?: string;
  /** Whether the request reached the agent (`Delivery`). Never `not-sent` for an answer that arrived. */
  readonly delivery: Delivery;
  /**
   * How long the agent asked every caller to wait (ms), when it said so: the `Retry-After` header of a 429 or 503,
   * a RetryInfo (or `retryAfter` seconds) in a JSON-RPC error's data, a gRPC RESOURCE_EXHAUSTED's RetryInfo.
   */
  readonly retryAfterMs?: number;
  /**
   * The agent reported this error in a frame of an event stream (`event: error`, or an `error` member in a frame's
   * data), not as the whole answer: set by `inStreamFrame`. Never proof that nothing was created (`sendEffectOf`).
   */
  readonly inStreamFrame?: true;

  constructor(message: string, code: A2AClientErrorCode, retryable: boolean, details: A2AErrorDetails = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = new.target.name;
    this.code = code;
    this.retryable = retryable;
    if (details.jsonRpcCode !== undefined) this.jsonRpcCode = details.jsonRpcCode;
    if (details.httpStatus !== undefined) this.httpStatus = details.httpStatus;
    if (details.grpcStatus !== undefined) this.grpcStatus = details.grpcStatus;
    if (details.reason !== undefined) this.reason = details.reason;
    if (details.bodyExcerpt !== undefined) this.bodyExcerpt = details.bodyExcerpt;
    if (details.retryAfterMs !== undefined) this.retryAfterMs = details.retryAfterMs;
    const answered = [details.httpStatus, details.jsonRpcCode, details.reason, details.bodyExcerpt].some((field) => field !== undefined);
    this.delivery = details.delivery ?? (answered ? 'received' : 'maybe');
  }
}

/** What `error` says about delivery: an `A2AError`'s `delivery`, `maybe` for anything else. */
export const deliveryOf = (error: unknown): Delivery => (error instanceof A2AError ? error.delivery : 'maybe');

/**
 * Records what we know better about delivery (e.g. a stream had opened: `received`). Never downgrades
 * `received`. Returns the same error.
 */
export function withDelivery<E>(error: E, delivery: Delivery): E {
  if (error instanceof A2AError && error.delivery !== 'received') {
    Object.defineProperty(error, 'delivery', { value: delivery, enumerable: true, configurable: true, writable: false });
  }
  return error;
}

/**
 * Marks an error the agent reported in a frame of an event stream (`A2AError.inStreamFrame`); returns the same error.
 * An agent answers a refusal before any work as the whole answer (JSON, not SSE: spec §9.4 and the SDKs, digest §5,
 * "errors before the first event come back as plain JSON"); an error in a frame comes from a stream that had opened,
 * whose other frames may name the task our message created (attack 31: a send stream whose first frame said -32602
 * and whose next frame was our task COMPLETED; the refusal was read as "nothing created" and the step re-delegated,
 * booked twice). A plain call's answer framed as a stream is read only when it is one event (`jsonrpc.ts`).
 */
export function inStreamFrame<E>(error: E): E {
  if (error instanceof A2AError && !error.inStreamFrame) {
    Object.defineProperty(error, 'inStreamFrame', { value: true, enumerable: true, configurable: true, writable: false });
  }
  return error;
}

/** Records the wait an answer asked for (`retryAfterMs`) on an error built without it. Returns the same error. */
export function withRetryAfter<E>(error: E, retryAfterMs: number | undefined): E {
  if (error instanceof A2AError && retryAfterMs !== undefined) {
    Object.defineProperty(error, 'retryAfterMs', { value: retryAfterMs, enumerable: true, configurable: true, writable: false });
  }
  return error;
}

type Details = A2AErrorDetails;

/** The `domain` of every A2A `google.rpc.ErrorInfo` (spec §10.6, §11.6: MUST be "a2a-protocol.org"). */
export const A2A_ERROR_DOMAIN = 'a2a-protocol.org';

/**
 * The reason an answer's ErrorInfo list gives, as this client keeps it (`A2AError.reason`): the first ErrorInfo of the
 * A2A domain's bare reason (`TASK_NOT_FOUND`), which the table reads; else the first other one's, qualified by its
 * domain (`googleapis.com/API_KEY_INVALID`, `/TASK_NOT_FOUND` without a domain), kept for the logs and never one of
 * the table's reasons (spec §10.6, §11.6: an A2A error's ErrorInfo has the A2A domain; a gateway's or another API's
 * TASK_NOT_FOUND says nothing of our task: edges35, before it proved the task gone and the step went toward LOST).
 * Undefined for a list without a reason.
 */
export function a2aReasonOf(errorInfos: readonly { reason: string; domain?: string | undefined }[]): string | undefined {
  const withReason = errorInfos.filter((info) => info.reason !== '');
  const ours = withReason.find((info) => info.domain === A2A_ERROR_DOMAIN);
  if (ours) return ours.reason;
  const first = withReason[0];
  return first === undefined ? undefined : `${first.domain ?? ''}/${first.reason}`;
}

// A2A errors (spec §5.4). None is retryable: the same request gets the same answer.
/**
 * -32001 / HTTP 404 / gRPC NOT_FOUND: the agent knows no such task (never had it, or forgot it), or, named from a
 * status alone, a server on the way knows no such route. Delivery `received`. Only `taskNotFoundProven` says which:
 * the class describes the error for the logs.
 */
export class TaskNotFoundError extends A2AError {
  constructor(message = 'Task not found', details?: Details) { super(message, 'TASK_NOT_FOUND', false, details); }
}
/** -32002: the task cannot be canceled in its current state (e.g. already terminal). */
export class TaskNotCancelableError extends A2AError {
  constructor(message = 'Task not cancelable', details?: Details) { super(message, 'TASK_NOT_CANCELABLE', false, details); }
}
/** -32003: the agent does not support push notification configs. */
export class PushNotificationNotSupportedError extends A2AError {
  constructor(message = 'Push notifications not supported', details?: Details) { super(message, 'PUSH_NOTIFICATION_NOT_SUPPORTED', false, details); }
}
/** -32004: the agent does not support this operation (also how agents refuse to stream a terminal task). */
export class UnsupportedOperationError extends A2AError {
  constructor(message = 'Unsupported operation', details?: Details) { super(message, 'UNSUPPORTED_OPERATION', false, details); }
}
/** -32005 / HTTP 415: a part's media type is not accepted by the agent. */
export class ContentTypeNotSupportedError extends A2AError {
  constructor(message = 'Content type not supported', details?: Details) { super(message, 'CONTENT_TYPE_NOT_SUPPORTED', false, details); }
}
/** -32006, or an answer we cannot read (wrong shape, not JSON): the request did reach the agent. */
export class InvalidAgentResponseError extends A2AError {
  constructor(message = 'Invalid agent response', details?: Details) { super(message, 'INVALID_AGENT_RESPONSE', false, details); }
}
/** -32007: the agent has no authenticated extended card. */
export class ExtendedAgentCardNotConfiguredError extends A2AError {
  constructor(message = 'Extended agent card not configured', details?: Details) { super(message, 'EXTENDED_AGENT_CARD_NOT_CONFIGURED', false, details); }
}
/** -32008: the agent requires an extension the request did not declare. */
export class ExtensionSupportRequiredError extends A2AError {
  constructor(message = 'Extension support required', details?: Details) { super(message, 'EXTENSION_SUPPORT_REQUIRED', false, details); }
}
/** -32009: the agent does not speak the `A2A-Version` we sent; try another interface of its card. */
export class VersionNotSupportedError extends A2AError {
  constructor(message = 'Version not supported', details?: Details) { super(message, 'VERSION_NOT_SUPPORTED', false, details); }
}

// Standard JSON-RPC errors (JSON-RPC 2.0 §5.1).
/** -32700: the agent could not parse our JSON. */
export class JsonRpcParseError extends A2AError {
  constructor(message = 'Parse error', details?: Details) { super(message, 'JSON_RPC_PARSE_ERROR', false, details); }
}
/** -32600 / HTTP 400: not a valid request, per the agent. */
export class InvalidRequestError extends A2AError {
  constructor(message = 'Invalid request', details?: Details) { super(message, 'INVALID_REQUEST', false, details); }
}
/** -32601 / HTTP 405: the agent has no such method (e.g. no ListTasks). */
export class MethodNotFoundError extends A2AError {
  constructor(message = 'Method not found', details?: Details) { super(message, 'METHOD_NOT_FOUND', false, details); }
}
/** -32602: the agent refused our parameters. */
export class InvalidParamsError extends A2AError {
  constructor(message = 'Invalid params', details?: Details) { super(message, 'INVALID_PARAMS', false, details); }
}
/** -32603 (or HTTP 500 with that reason). Retryable: like an HTTP 500 it is often transient; callers cap attempts. */
export class InternalAgentError extends A2AError {
  constructor(message = 'Internal error', details?: Details) { super(message, 'INTERNAL_ERROR', true, details); }
}

// Transport-level errors.
/** 5xx, 429, 408, or a proxy's HTTP status inside a JSON-RPC envelope (field case R08 c). Retryable. */
export class UpstreamError extends A2AError {
  constructor(message = 'Upstream unavailable', details?: Details) { super(message, 'UPSTREAM_ERROR', true, details); }
}
/** Connection refused/reset, DNS failure, or our request timeout. Retryable. `delivery` says whether the request may have left. */
export class NetworkError extends A2AError {
  constructor(message = 'Network error', details?: Details) { super(message, 'NETWORK_ERROR', true, details); }
}
/** Our idle watchdog closed a stream that sent no bytes for `idleTimeoutMs` (field case R05). Retryable. */
export class StreamIdleError extends A2AError {
  constructor(message = 'Stream idle', details?: Details) { super(message, 'STREAM_IDLE', true, details); }
}
/** The peer does not speak the protocol: HTML page, non-JSON, wrong content type, oversize event (R08 d). */
export class ProtocolError extends A2AError {
  constructor(message = 'Protocol error', details?: Details) { super(message, 'PROTOCOL_ERROR', false, details); }
}
/**
 * An agent sent a value none of the known spellings explains (a task state, a role; `spelling.ts`, R26).
 * Permanent for the attempt: the same agent sends the same value again. `field` is the path, `value` an excerpt.
 */
export class UnknownWireValueError extends ProtocolError {
  override readonly code: A2AClientErrorCode = 'UNKNOWN_WIRE_VALUE';
  readonly field?: string;
  readonly value?: string;
  constructor(message = 'Unknown wire value', details?: Details & { field?: string; value?: string }) {
    super(message, details);
    if (details?.field !== undefined) this.field = details.field;
    if (details?.value !== undefined) this.value = details.value;
  }
}
/** Names of the input limits (`limits.ts`). */
export type LimitName = 'responseBodyBytes' | 'sseEventBytes' | 'agentCardBytes' | 'partsPerMessage' | 'jsonDepth' | 'artifactBytesPerDelegation' | 'artifactsPerDelegation' | 'statusMessageBytes';
/**
 * An answer went over one of the input limits (`limits.ts`; field cases RT2/RT4/RT5/RT7). Reading
 * stopped at the limit. Permanent for the attempt (the agent sends the same answer again); the attempt
 * may be delegated again elsewhere. `limit` names the limit, `limitValue` its value (bytes, parts or levels).
 */
export class LimitExceededError extends ProtocolError {
  override readonly code: A2AClientErrorCode = 'LIMIT_EXCEEDED';
  readonly limit: LimitName;
  readonly limitValue: number;
  /**
   * The artifact refused, when the limit was found on one artifact (its parts over `partsPerMessage`): what a later
   * full read must show for the result to be whole. Undefined when the refusal knew no artifact (bytes over a limit
   * before anything was parsed, a message over a limit).
   */
  readonly artifactId?: string;
  constructor(limit: LimitName, limitValue: number, message = `${limit} limit of ${limitValue} exceeded`, details?: Details & { artifactId?: string }) {
    super(message, details);
    this.limit = limit;
    this.limitValue = limitValue;
    if (details?.artifactId !== undefined) this.artifactId = details.artifactId;
  }
}
/**
 * A JSON-RPC answer that does not carry our request id (JSON-RPC 2.0 §5; docs/a2a-edge.md "Ownership"):
 * it is not proven to answer our request, so nothing in it is adopted. Permanent for the attempt.
 */
export class ResponseIdMismatchError extends ProtocolError {
  override readonly code: A2AClientErrorCode = 'RESPONSE_ID_MISMATCH';
  constructor(message = 'JSON-RPC answer carries another request id', details?: Details) { super(message, details); }
}
/**
 * The agent's server refused our request as over ITS receive size cap before any handler ran (a gRPC server's
 * RESOURCE_EXHAUSTED "Received message larger than max (<n> vs <its max>)", its max not our cap: status-table.ts).
 * Resending the same bytes meets the same cap, so not retryable; the agent never had the request (delivery
 * `not-sent`), so nothing was created (effect none): the step fails at once, or goes to another agent.
 */
export class RequestTooLargeError extends A2AError {
  constructor(message = 'Request over the agent\'s size limit', details?: Details) { super(message, 'REQUEST_TOO_LARGE', false, { delivery: 'not-sent', ...details }); }
}
/**
 * HTTP 409 or gRPC ALREADY_EXISTS: the request conflicts with something the agent already holds (a task for our
 * messageId, say). Not retryable; never proof that nothing was created (the conflict may be with our own task).
 */
export class ConflictError extends A2AError {
  constructor(message = 'Conflict', details?: Details) { super(message, 'CONFLICT', false, details); }
}
/** HTTP 401/403. Not retryable with the same credentials. */
export class AuthenticationError extends A2AError {
  constructor(message = 'Authentication failed', details?: Details) { super(message, 'AUTHENTICATION_ERROR', false, details); }
}

type ErrorClass = new (message?: string, details?: Details) => A2AError;

/** One row per mapped error: how each binding signals it (spec §5.4 table). */
export interface ErrorTableRow {
  errorClass: ErrorClass;
  jsonRpcCode?: number;
  /** HTTP status used when no `ErrorInfo.reason` is present (several errors share 400, so they have none). */
  httpStatus?: number;
  reason?: string;
  /** Every row is an answer the agent sent, so the request reached it (V5): never "not sent". */
  delivery: Delivery;
  /**
   * What a SendMessage answered with this error proves about its effect: `none`, the agent refused the request
   * before acting on it (JSON-RPC 2.0 §5.1 request errors, the A2A errors raised while validating a request, spec
   * §3.3.2, §3.6, §5.4, and 401/403), so no task was created; `maybe`, it may come after the task was created
   * (-32603, -32002, -32006, 408, 409 / ALREADY_EXISTS, 429): a search for our messageId decides. `none` holds only
   * when the binding signalled the row by its own code (`sendEffectOf`, `codeRefuses`): the class alone, named from a
   * reason or from an HTTP status in a JSON-RPC `code`, is no proof.
   */
  effect: 'none' | 'maybe';
  /**
   * The part of the request the error is about, when its refusal needs one (spec §5.4): TaskNotFoundError is about
   * "the specified task ID", so it refuses only a request that names a task. To a request that names none (a step's
   * first SendMessage, its resend) it refuses nothing of ours: an agent that created our task and then failed to find
   * it answers it too (attack28: the step went to a second agent and was booked twice). `sendEffectOf` reads it.
   */
  concerns?: 'task';
}

/** The single source of truth for code/status/reason → class. */
export const A2A_ERROR_TABLE: readonly ErrorTableRow[] = [
  { errorClass: TaskNotFoundError, jsonRpcCode: -32001, httpStatus: 404, reason: 'TASK_NOT_FOUND', delivery: 'received', effect: 'none', concerns: 'task' },
  { errorClass: TaskNotCancelableError, jsonRpcCode: -32002, reason: 'TASK_NOT_CANCELABLE', delivery: 'received', effect: 'maybe' },
  { errorClass: PushNotificationNotSupportedError, jsonRpcCode: -32003, reason: 'PUSH_NOTIFICATION_NOT_SUPPORTED', delivery: 'received', effect: 'none' },
  { errorClass: UnsupportedOperationError, jsonRpcCode: -32004, reason: 'UNSUPPORTED_OPERATION', delivery: 'received', effect: 'none' },
  { errorClass: ContentTypeNotSupportedError, jsonRpcCode: -32005, httpStatus: 415, reason: 'CONTENT_TYPE_NOT_SUPPORTED', delivery: 'received', effect: 'none' },
  { errorClass: InvalidAgentResponseError, jsonRpcCode: -32006, reason: 'INVALID_AGENT_RESPONSE', delivery: 'received', effect: 'maybe' },
  { errorClass: ExtendedAgentCardNotConfiguredError, jsonRpcCode: -32007, reason: 'EXTENDED_AGENT_CARD_NOT_CONFIGURED', delivery: 'received', effect: 'maybe' },
  { errorClass: ExtensionSupportRequiredError, jsonRpcCode: -32008, reason: 'EXTENSION_SUPPORT_REQUIRED', delivery: 'received', effect: 'none' },
  { errorClass: VersionNotSupportedError, jsonRpcCode: -32009, reason: 'VERSION_NOT_SUPPORTED', delivery: 'received', effect: 'none' },
  { errorClass: JsonRpcParseError, jsonRpcCode: -32700, reason: 'PARSE_ERROR', delivery: 'received', effect: 'none' },
  { errorClass: InvalidRequestError, jsonRpcCode: -32600, httpStatus: 400, reason: 'INVALID_REQUEST', delivery: 'received', effect: 'none' },
  { errorClass: MethodNotFoundError, jsonRpcCode: -32601, httpStatus: 405, reason: 'METHOD_NOT_FOUND', delivery: 'received', effect: 'none' },
  { errorClass: InvalidParamsError, jsonRpcCode: -32602, reason: 'INVALID_PARAMS', delivery: 'received', effect: 'none' },
  { errorClass: InternalAgentError, jsonRpcCode: -32603, reason: 'INTERNAL_ERROR', delivery: 'received', effect: 'maybe' },
  { errorClass: AuthenticationError, httpStatus: 401, delivery: 'received', effect: 'none' },
  { errorClass: AuthenticationError, httpStatus: 403, delivery: 'received', effect: 'none' },
  { errorClass: ConflictError, httpStatus: 409, reason: 'ALREADY_EXISTS', delivery: 'received', effect: 'maybe' },
  { errorClass: UpstreamError, httpStatus: 408, delivery: 'received', effect: 'maybe' },
  { errorClass: UpstreamError, httpStatus: 429, delivery: 'received', effect: 'maybe' },
];

const byJsonRpcCode = new Map(A2A_ERROR_TABLE.filter((row) => row.jsonRpcCode !== undefined).map((row) => [row.jsonRpcCode, row]));
const byReason = new Map(A2A_ERROR_TABLE.filter((row) => row.reason !== undefined).map((row) => [row.reason, row]));
const byHttpStatus = new Map(A2A_ERROR_TABLE.filter((row) => row.httpStatus !== undefined).map((row) => [row.httpStatus, row]));

const refusals = [...new Set(A2A_ERROR_TABLE.filter((row) => row.effect === 'none').map((row) => row.errorClass))];
/** Refusal classes about a task (`concerns: 'task'`): no refusal of a request that names none. */
const taskRefusals = [...new Set(A2A_ERROR_TABLE.filter((row) => row.concerns === 'task').map((row) => row.errorClass))];
/** HTTP statuses whose row says the work may have been done (408, 409, 429). */
const maybeStatuses = new Set(A2A_ERROR_TABLE.filter((row) => row.effect === 'maybe' && row.httpStatus !== undefined).map((row) => row.httpStatus));

/** An HTTP status that may carry a refusal (HTTP+JSON, spec §11.6): a 4xx whose row does not say `maybe` (408, 409, 429). */
const statusRefuses = (status: number): boolean => status >= 400 && status < 500 && !maybeStatuses.has(status);

/**
 * Whether an HTTP status may carry a refusal spoken in its body, on every binding over HTTP: a 2xx (JSON-RPC's own way:
 * spec §9.5 sets no status, and the SDKs answer a refusal on 200) or a 4xx that may refuse (`statusRefuses`; HTTP+JSON's
 * refusals are 4xx, spec §5.4, §11.6, and a 0.3 agent's are too). A 5xx is a server's report of its own trouble (a
 * gateway's 502, a balancer's 503, an agent's server that threw after the work: the SDKs answer -32603 on 500), 408,
 * 409 and 429 may follow the work, and a 1xx or 3xx answers nothing: whatever code the body carries (-32602 in a
 * JSON-RPC envelope or a 0.3 `{code}` body, an ErrorInfo INVALID_PARAMS) it proves delivery and nothing about the work
 * (edges35: a 502 with `{"code":-32602}` was read as the agent's refusal, the step re-delegated, booked twice).
 */
const statusMayCarryRefusal = (status: number): boolean => (status >= 200 && status < 300) || statusRefuses(status);

/** HTTP statuses whose row refuses by the status alone, whatever the body: 401 and 403, credentials refused before any handler ran. */
const credentialStatuses = new Set(A2A_ERROR_TABLE.filter((row) => row.errorClass === AuthenticationError && row.httpStatus !== undefined).map((row) => row.httpStatus));

/**
 * Whether an HTTP status refuses our credentials by itself, whatever the body (the table's `AuthenticationError` rows:
 * 401 and 403, refused before any handler ran; effect none, resent to the same agent, never another). Every binding
 * over HTTP reads these two statuses so (`errorFromHttp`, `foreignErrorAnswer`, 0.3 `errorFromHttpV03`).
 */
export const refusesCredentialsByStatus = (status: number): boolean => credentialStatuses.has(status);

/**
 * gRPC status codes (`google.rpc.Code`: the values of @grpc/grpc-js `status`, spelled here so this pure module loads
 * no gRPC client; a test keeps the two equal).
 */
export const GRPC_CODE = {
  CANCELLED: 1, UNKNOWN: 2, INVALID_ARGUMENT: 3, DEADLINE_EXCEEDED: 4, NOT_FOUND: 5, ALREADY_EXISTS: 6, PERMISSION_DENIED: 7, RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9, ABORTED: 10, OUT_OF_RANGE: 11, UNIMPLEMENTED: 12, INTERNAL: 13, UNAVAILABLE: 14, DATA_LOSS: 15, UNAUTHENTICATED: 16,
} as const;

/**
 * gRPC status code → the typed error it means without an `ErrorInfo.reason` (spec §5.4 gRPC column, §10.6), one row per
 * status, with why where it is not obvious (`grpc/status-table.ts` `errorFromGrpc` reads it).
 */
export const GRPC_STATUS_TABLE: ReadonlyMap<number, ErrorClass> = new Map<number, ErrorClass>([
  // Not our abort (that rethrows the caller's reason): a proxy or the server dropped the call. Try again.
  [GRPC_CODE.CANCELLED, NetworkError],
  // A server that threw without a status: like HTTP 500, often transient; callers cap attempts.
  [GRPC_CODE.UNKNOWN, InternalAgentError],
  [GRPC_CODE.INVALID_ARGUMENT, InvalidParamsError],
  // Our `requestTimeoutMs` deadline (or the server's): the call may or may not have run. Transient.
  [GRPC_CODE.DEADLINE_EXCEEDED, NetworkError],
  // Named for the logs; alone it proves no missing task (a proxy's answer for an unknown route): `taskNotFoundProven`.
  [GRPC_CODE.NOT_FOUND, TaskNotFoundError],
  // Conflicts with something the agent holds (a task for our messageId, say): never proof nothing was created.
  [GRPC_CODE.ALREADY_EXISTS, ConflictError],
  [GRPC_CODE.PERMISSION_DENIED, AuthenticationError],
  // Quota or overload, like HTTP 429 (our own size cap is told apart in `errorFromGrpc`).
  [GRPC_CODE.RESOURCE_EXHAUSTED, UpstreamError],
  // Spec §5.4: several A2A errors share FAILED_PRECONDITION; without an ErrorInfo none can be named.
  [GRPC_CODE.FAILED_PRECONDITION, InvalidRequestError],
  // A concurrency conflict on the server: retrying later may succeed.
  [GRPC_CODE.ABORTED, UpstreamError],
  [GRPC_CODE.OUT_OF_RANGE, InvalidParamsError],
  // The method is not served (a server without push, or an older service version).
  [GRPC_CODE.UNIMPLEMENTED, UnsupportedOperationError],
  [GRPC_CODE.INTERNAL, InternalAgentError],
  // Connection refused or reset, server shutting down, overloaded proxy. Transient.
  [GRPC_CODE.UNAVAILABLE, UpstreamError],
  [GRPC_CODE.DATA_LOSS, InternalAgentError],
  [GRPC_CODE.UNAUTHENTICATED, AuthenticationError],
]);

/**
 * gRPC statuses that may carry a refusal: those `GRPC_STATUS_TABLE` maps to a refusal class (a row whose effect is
 * `none`): INVALID_ARGUMENT, NOT_FOUND, PERMISSION_DENIED, FAILED_PRECONDITION, OUT_OF_RANGE, UNIMPLEMENTED,
 * UNAUTHENTICATED. The others (UNKNOWN, INTERNAL, UNAVAILABLE, ABORTED, DATA_LOSS, ...) report trouble that may come
 * after the work. Alone, only the credentials ones refuse (`statusRefusalProven`).
 */
export const GRPC_REFUSING_STATUSES: ReadonlySet<number> = new Set([...GRPC_STATUS_TABLE].filter(([, errorClass]) => refusals.includes(errorClass)).map(([status]) => status));

/** gRPC statuses that refuse by the status alone: UNAUTHENTICATED and PERMISSION_DENIED, our credentials (the table's `AuthenticationError` rows, as HTTP 401/403). */
const grpcCredentialStatuses = new Set([...GRPC_STATUS_TABLE].filter(([, errorClass]) => errorClass === AuthenticationError).map(([status]) => status));

/** How a binding whose status is its code (HTTP+JSON, gRPC) speaks a refusal: which statuses may, which refuse our credentials alone. */
const STATUS_BINDINGS = {
  http: { mayRefuse: statusRefuses, credentials: credentialStatuses },
  grpc: { mayRefuse: (status: number) => GRPC_REFUSING_STATUSES.has(status), credentials: grpcCredentialStatuses },
} satisfies Record<string, { mayRefuse(status: number): boolean; credentials: ReadonlySet<number | undefined> }>;

/**
 * Whether a status is the A2A refusal it names (spec §5.4, §10.6, §11.6; fourohfour, grpcstatus): a status that may
 * refuse AND either one that refuses our credentials (HTTP 401/403, gRPC UNAUTHENTICATED/PERMISSION_DENIED: resent to
 * the same agent, then a person, never another agent) or an `ErrorInfo.reason` of the spec's table, which the binding
 * carries with every A2A error (HTTP+JSON MUST: several errors share 400; gRPC in `grpc-status-details-bin`: several
 * share FAILED_PRECONDITION). A status alone (a framework's 404 page, a `google.rpc.Status` without an ErrorInfo or with
 * another API's reason; a proxy's UNIMPLEMENTED or NOT_FOUND for a route it does not know, an interceptor's
 * INVALID_ARGUMENT, a server that threw after booking) is the answer of a server on the way to the agent, maybe after
 * the agent acted: never proof that nothing was created (an agent booked, answered, and the step went to a second agent).
 */
const statusRefusalProven = (error: A2AError, status: number, binding: keyof typeof STATUS_BINDINGS): boolean =>
  STATUS_BINDINGS[binding].mayRefuse(status) && (STATUS_BINDINGS[binding].credentials.has(status) || (error.reason !== undefined && byReason.has(error.reason)));

/**
 * Whether the code of the binding that answered, read alone, is a refusal (spec §5.4, §9.5, §11.6, §10.6): on JSON-RPC
 * the `error.code` must be the spec's own code of a refusal row (-32001, -32003..-32005, -32008, -32009, -32600..-32602,
 * -32700); an HTTP status in `code` (a proxy's 404), a code of the implementation-defined range (-32000..-32099 outside
 * the table) or any other integer is not, whatever class an `ErrorInfo.reason` or the status named for the logs; and the
 * HTTP status around it must be one that may carry a refusal (`statusMayCarryRefusal`: a 2xx or a refusing 4xx, never a
 * 5xx), on the JSON-RPC binding and on a 0.3 HTTP+JSON `{code}` body alike. On gRPC
 * and on HTTP+JSON (and any HTTP answer without a JSON-RPC code) the status is the code: one that may refuse, spoken
 * with the ErrorInfo reason the binding carries, or one refusing our credentials (`statusRefusalProven`). A reason
 * refines a refusing code (400 or FAILED_PRECONDITION + TASK_NOT_CANCELABLE is `maybe` by its class) but never turns
 * another code into a refusal. An error raised here with no answer (a 0.3 binding lacking the method, a part we cannot
 * encode) carries no code: its class decides.
 */
function codeRefuses(error: A2AError): boolean {
  if (error.jsonRpcCode !== undefined) return (error.httpStatus === undefined || statusMayCarryRefusal(error.httpStatus)) && byJsonRpcCode.get(error.jsonRpcCode)?.effect === 'none';
  if (error.grpcStatus !== undefined) return statusRefusalProven(error, error.grpcStatus, 'grpc');
  if (error.httpStatus !== undefined) return statusRefusalProven(error, error.httpStatus, 'http');
  return true;
}

/**
 * Whether `error` is the agent's own TaskNotFoundError, spoken as the binding that answered speaks it (spec §5.4,
 * §9.5, §10.6, §11.6): JSON-RPC (1.0 and 0.3, and a 0.3 HTTP+JSON `{code}` body) the code -32001; HTTP+JSON and gRPC a
 * status that may refuse (`statusRefusalProven`) carrying the ErrorInfo reason `TASK_NOT_FOUND`; the whole answer,
 * not a frame of a stream that had opened. The same rule as a refusal of a SendMessage (`codeRefuses`): a bare HTTP 404
 * (a proxy's or a framework's page, a `google.rpc.Status` without an ErrorInfo or with another API's reason, 404 put
 * in a JSON-RPC `code`), a bare gRPC NOT_FOUND (Envoy's answer for a route it does not know, an interceptor's), or
 * TASK_NOT_FOUND over another code (a JSON-RPC -32050, a 5xx, gRPC INTERNAL) is an answer that proves delivery and
 * nothing about the task: the reads count it as an answer they cannot use (bounded rounds, then a person), never
 * toward the not-found window that ends a task LOST (a LOST step may be re-delegated: the work done twice). An A2A
 * 0.3 gRPC agent (@a2a-js/sdk 0.3.x) sends no ErrorInfo, so its NOT_FOUND is bare: its lost task goes to a person or
 * its deadline (docs/delegation-core.md). An error raised here with no answer carries no code: its class decides.
 */
export function taskNotFoundProven(error: unknown): error is TaskNotFoundError {
  return error instanceof TaskNotFoundError && !error.inStreamFrame && codeRefuses(error);
}

/**
 * Whether `error` is the agent's own "this operation is not served" (spec §3.3.4, §5.4, §9.5, §10.6, §11.6): a
 * MethodNotFoundError or UnsupportedOperationError spoken as the binding that answered speaks it, the whole answer (not
 * a frame of a stream that had opened). JSON-RPC (1.0 and 0.3) the code -32601 or -32004; HTTP+JSON and gRPC a status
 * that may refuse carrying the ErrorInfo reason of the spec's table (METHOD_NOT_FOUND, UNSUPPORTED_OPERATION:
 * `statusRefusalProven`); an error raised here with no answer (an A2A 0.3 binding that has no ListTasks) by its class.
 * The same rule as `taskNotFoundProven` and a SendMessage's refusal (`codeRefuses`). A status alone is the answer of a
 * server on the way (a proxy's or a gateway's UNIMPLEMENTED or 405 for a route it does not serve, a framework's 405
 * page, 405 or -32601 put in a JSON-RPC `code` by a proxy... over HTTP; a METHOD_NOT_FOUND reason over another code):
 * it proves delivery and nothing about what the agent serves. Callers read it as an answer they cannot use, never as
 * "unsupported": a search that reads "the agent cannot list tasks" resends to a deduplicating agent or ends with a
 * person at once (`unfoundVerdict`), a stream that reads "no GetTask" settles COMPLETED without collecting the artifacts
 * (R26: a result-less success), a streaming send that reads "no streaming" sends again in plain. A boolean, not a type
 * guard: both classes have A2AError's shape, so a guard would narrow an A2AError to `never` where it is false.
 */
export function operationUnsupportedProven(error: unknown): boolean {
  return (error instanceof MethodNotFoundError || error instanceof UnsupportedOperationError) && !error.inStreamFrame && codeRefuses(error);
}

/** What the failed request carried that an error may be about (`ErrorTableRow.concerns`). */
export interface SentRequest {
  /** The request names a task (`message.taskId`: a reply; a push config of a task). Default true; false for a step's first SendMessage and its resends. */
  namesTask?: boolean;
}

/**
 * What a failed SendMessage proves about its effect (the table's `effect` column, the one place it is decided):
 * `none` when the error is a refusal (a class whose row says `none`) AND the answering binding's own code is a refusal
 * (`codeRefuses`: a class named from a reason over another code, or from an HTTP status a proxy put in a JSON-RPC
 * `code`, describes the error for the logs but proves nothing); also a server's size refusal (`RequestTooLargeError`).
 * Else `maybe`: a drop, a timeout, an unreadable answer, any HTTP status whose body is no A2A refusal (a 404 page, a
 * `{"message":"Task not found"}`, `application/problem+json`, nothing: a server at the agent's URL answered, maybe after
 * the agent acted; before, a 4xx was read as a wrong URL's page and the step went to a second agent, booked twice;
 * only 401/403 refuse by the status alone), any gRPC status without the binding's ErrorInfo naming a refusal (a bare
 * NOT_FOUND, UNIMPLEMENTED, INVALID_ARGUMENT, FAILED_PRECONDITION or OUT_OF_RANGE of a proxy, an interceptor or a server
 * that threw after booking; only UNAUTHENTICATED and PERMISSION_DENIED refuse alone), a code the spec does not define,
 * an error about a part `request` did not carry
 * (TaskNotFound to a SendMessage naming no task): the agent may have created the task, and a search for our messageId
 * decides (an error answer and a conclusive miss: nothing was created, `unfoundVerdict`).
 */
export function sendEffectOf(error: unknown, request: SentRequest = {}): 'none' | 'maybe' {
  // The agent's server refused our request's bytes before any handler ran: nothing was created.
  if (error instanceof RequestTooLargeError) return 'none';
  if (!(error instanceof A2AError)) return 'maybe';
  // A refusal in a frame of a stream that had opened is not the whole answer (`inStreamFrame`).
  if (error.inStreamFrame) return 'maybe';
  // An error about a part the request did not carry refuses nothing of ours (the table's `concerns` column).
  if (request.namesTask === false && taskRefusals.some((refusal) => error instanceof refusal)) return 'maybe';
  return refusals.some((refusal) => error instanceof refusal) && codeRefuses(error) ? 'none' : 'maybe';
}

/** Looks up a class by JSON-RPC code, `ErrorInfo.reason` or HTTP status. */
export const errorClassForJsonRpcCode = (code: number): ErrorClass | undefined => byJsonRpcCode.get(code)?.errorClass;
export const errorClassForReason = (reason: string): ErrorClass | undefined => byReason.get(reason)?.errorClass;
/** 5xx without a reason is an `UpstreamError` (a proxy or an overloaded agent). */
export const errorClassForHttpStatus = (status: number): ErrorClass | undefined =>
  byHttpStatus.get(status)?.errorClass ?? (status >= 500 && status <= 599 ? UpstreamError : undefined);

/** `true` when retrying the same call later may succeed. Non-A2A errors are not retryable. */
export function isRetryable(error: unknown): boolean {
  return error instanceof A2AError && error.retryable;
}
