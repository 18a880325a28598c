/**
 * gRPC status codes → the typed errors of `errors.ts` (spec §5.4 table, §10.6).
 * An A2A error carries a `google.rpc.ErrorInfo` in the `grpc-status-details-bin`
 * trailer; its `reason` decides through the one reason table of `errors.ts`.
 * Without one, the status code decides through `GRPC_STATUS_TABLE` below.
 */
import { fromBinary, type DescMessage } from '@bufbuild/protobuf';
import { status as GrpcStatus, type ServiceError } from '@grpc/grpc-js';
import {
  type A2AError,
  a2aReasonOf,
  type Delivery,
  InvalidAgentResponseError,
  LimitExceededError,
  ProtocolError,
  RequestTooLargeError,
  GRPC_STATUS_TABLE as STATUS_TABLE,
  errorClassForReason,
  withRetryAfter,
} from '../errors.ts';
import { RETRY_INFO_TYPE_URL, retryAfterOfRetryInfo } from '../retry-after.ts';
import { namesTask } from '../error-mapping.ts';
import { GRPC_REGISTRY, decodeToJson, messageType } from './codec.ts';

type ErrorClass = new (message?: string, details?: { reason?: string; cause?: unknown; grpcStatus?: number; delivery?: Delivery }) => A2AError;

/** The status → error table of `errors.ts` (one row per gRPC status code), keyed by the gRPC client's status type. */
export const GRPC_STATUS_TABLE: ReadonlyMap<GrpcStatus, ErrorClass> = STATUS_TABLE;

/** Trailer carrying a serialized `google.rpc.Status` (gRPC richer error model). */
export const GRPC_STATUS_DETAILS_KEY = 'grpc-status-details-bin';
const ERROR_INFO_TYPE_URL = 'type.googleapis.com/google.rpc.ErrorInfo';

let statusType: DescMessage | undefined;
let errorInfoType: DescMessage | undefined;

/** The `google.rpc.Status` details in the error's `grpc-status-details-bin` trailer ([] when absent or undecodable). */
function statusDetails(error: Pick<ServiceError, 'metadata'>): { typeUrl: string; value: Uint8Array }[] {
  const raw = error.metadata?.get(GRPC_STATUS_DETAILS_KEY)[0];
  if (raw === undefined) return [];
  statusType ??= messageType('google.rpc.Status');
  try {
    return (fromBinary(statusType, typeof raw === 'string' ? Buffer.from(raw, 'binary') : raw) as unknown as { details: { typeUrl: string; value: Uint8Array }[] }).details;
  } catch {
    return [];
  }
}

/** The wait (ms) a RetryInfo in the error's status details asks for, if any. */
export function retryInfoDelayMs(error: Pick<ServiceError, 'metadata'>): number | undefined {
  const detail = statusDetails(error).find((entry) => entry.typeUrl === RETRY_INFO_TYPE_URL);
  return detail ? retryAfterOfRetryInfo(detail.value) : undefined;
}

/**
 * The `ErrorInfo.reason` in the error's `grpc-status-details-bin` trailer, if any, as `a2aReasonOf` keeps it (the A2A
 * domain's bare, another domain's qualified by it). Undecodable details are ignored.
 */
export function errorInfoReason(error: Pick<ServiceError, 'metadata'>): string | undefined {
  const details = statusDetails(error);
  const infoType = (errorInfoType ??= messageType('google.rpc.ErrorInfo'));
  try {
    const infos = details.filter((detail) => detail.typeUrl === ERROR_INFO_TYPE_URL).map((detail) => fromBinary(infoType, detail.value) as unknown as { reason: string; domain: string });
    return a2aReasonOf(infos);
  } catch {
    return undefined;
  }
}

/**
 * Whether the status details name a task, by the HTTP bindings' rule (`namesTask`; attack13: a task beside an error
 * is no refusal): a detail of a message type the vendored registry knows, other than the google.rpc error model's
 * (an A2A Task, SendMessageResponse, StreamResponse, 1.0 or 0.3), read in its ProtoJSON form. A detail of such a
 * type whose bytes do not decode may be one too: the agent said it put one there (an answer we cannot read proves
 * delivery, never the absence of effect).
 */
export function detailsNameTask(error: Pick<ServiceError, 'metadata'>): boolean {
  for (const detail of statusDetails(error)) {
    const typeName = detail.typeUrl.slice(detail.typeUrl.lastIndexOf('/') + 1);
    const type = typeName.startsWith('google.rpc.') ? undefined : GRPC_REGISTRY.getMessage(typeName);
    if (type === undefined) continue;
    try {
      if (namesTask(decodeToJson(type, detail.value))) return true;
    } catch {
      return true;
    }
  }
  return false;
}

/**
 * grpc-js reports a message over `grpc.max_receive_message_length` as a local
 * RESOURCE_EXHAUSTED with this text (`(<received> vs <max>)`). A grpc-js server refusing OUR request as over ITS
 * cap sends the very same text as its status (the handler never ran): only `<max>` equal to our own cap is ours.
 */
const LOCAL_SIZE_CAP = /^Received message larger than max \((\d+) vs\.? (\d+)\)/;

/**
 * Statuses grpc-js raises by itself with no answer from the far side: our cancel or deadline, a connection refused or
 * dropped, a frame it could not read, a size cap, a server that threw without a status. Any other status of the table
 * came from a server on the way (the agent's, a proxy's; grpc-js reads an HTTP 401, 403 or 404 answer as
 * UNAUTHENTICATED, PERMISSION_DENIED, UNIMPLEMENTED): the request reached it, delivery `received`, as any HTTP status
 * (V5). So a bare refusing status whose search finds nothing of ours ends the attempt FAILED after one search, as a
 * 404 page does, instead of resending our message (`unfoundVerdict`).
 */
const LOCAL_STATUSES: ReadonlySet<number> = new Set([
  GrpcStatus.CANCELLED, GrpcStatus.UNKNOWN, GrpcStatus.DEADLINE_EXCEEDED, GrpcStatus.RESOURCE_EXHAUSTED, GrpcStatus.INTERNAL, GrpcStatus.UNAVAILABLE,
]);

/**
 * The typed error for a failed gRPC call: the ErrorInfo reason first (known
 * reasons only), then the status code. The gRPC error is kept as `cause`. `receiveCapBytes`: our channel's
 * `grpc.max_receive_message_length`: a size error reporting it is an answer over our cap (`LimitExceededError`).
 * `requestBytes`: the length of our request message, given while nothing of the answer arrived: a size error reporting
 * another max AND our request's very length is the server's refusal of our request (`RequestTooLargeError`). One
 * reporting another length is about some other message: an answer a proxy (or the agent's own call to another
 * service) refused after the agent's handler had our request, so nothing proves the agent never had it (the status
 * table decides: retryable, delivery not proven not-sent). Without them neither can be told.
 */
export function errorFromGrpc(error: ServiceError, url: string, receiveCapBytes?: number, requestBytes?: number): A2AError {
  const reason = errorInfoReason(error);
  // The status is the gRPC binding's own code: a reason over one that does not refuse proves no refusal (`sendEffectOf`).
  const details = { reason, cause: error, grpcStatus: error.code };
  const message = error.details || `gRPC status ${GrpcStatus[error.code] ?? error.code} from ${url}`;
  const overCap = error.code === GrpcStatus.RESOURCE_EXHAUSTED ? LOCAL_SIZE_CAP.exec(error.details ?? '') : null;
  if (overCap && receiveCapBytes !== undefined && Number(overCap[2]) === receiveCapBytes) {
    // The agent answered (a message arrived, over our cap): as an answer over a limit on the other bindings (A31),
    // delivery received, never "nothing happened" (attack12: a plain protocol error, delivery maybe, let the search
    // resend when it did not see the task).
    return new LimitExceededError('sseEventBytes', receiveCapBytes, `message from ${url} over the size limit: ${error.details}`, { ...details, delivery: 'received' });
  }
  // Reported max not our cap, reported length our request's: the server refused our request's bytes before its
  // handler ran (review12: read as an answer, a person decided). Not a quota: the same bytes meet the same cap, so
  // never retried (it was, until the attempts ran out); nothing reached the agent. Another length (review14) is no
  // refusal of our request: a proxy relaying its refusal of the agent's answer (grpc-js, C-core and Go proxies word
  // their receive cap the same), after the agent's handler ran: "not sent, re-delegate" would do the work twice.
  if (overCap && receiveCapBytes !== undefined && requestBytes !== undefined && Number(overCap[1]) === requestBytes) return new RequestTooLargeError(`request to ${url} over the agent's size limit: ${error.details}`, details);
  // A status whose details name a task (attack 33: INVALID_ARGUMENT with the ErrorInfo INVALID_PARAMS and the booked
  // task beside it was a refusal: FAILED, the step sent to a second agent): the agent has a task, ours or not, as a
  // JSON-RPC or HTTP+JSON error answer naming one (`taskBesideError`, `errorFromHttp`): never the status's verdict.
  if (detailsNameTask(error)) return new InvalidAgentResponseError(`gRPC status ${GrpcStatus[error.code] ?? error.code} from ${url} whose details name a task (the answer does not prove it ours): ${message}`, { ...details, delivery: 'received' });
  const errorClass = (reason === undefined ? undefined : errorClassForReason(reason)) ?? GRPC_STATUS_TABLE.get(error.code);
  const answered = GRPC_STATUS_TABLE.has(error.code) && !LOCAL_STATUSES.has(error.code);
  const mapped = errorClass ? new errorClass(message, answered ? { ...details, delivery: 'received' } : details) : new ProtocolError(`unknown gRPC status ${error.code}: ${message}`, details);
  // Quota or overload with RetryInfo (the richer error model): the server says when to come back.
  return error.code === GrpcStatus.RESOURCE_EXHAUSTED ? withRetryAfter(mapped, retryInfoDelayMs(error)) : mapped;
}

/** `true` for what grpc-js raises for a failed call (a `ServiceError`: numeric `code`, `details`, trailers). */
export function isServiceError(error: unknown): error is ServiceError {
  return error instanceof Error && typeof (error as Partial<ServiceError>).code === 'number' && 'details' in error;
}
