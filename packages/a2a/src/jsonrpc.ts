/**
 * A2A 1.0 over JSON-RPC 2.0 (spec §9): every call is a POST of an envelope to
 * the interface URL with `Content-Type: application/json`; streams answer with
 * SSE whose `data:` lines are envelopes too (spec §9.4).
 */
import { z } from 'zod';
import { type A2AError, InvalidAgentResponseError, ProtocolError, refusesCredentialsByStatus, ResponseIdMismatchError } from './errors.ts';
import { errorFromHttp, errorFromJsonRpc, excerpt, isJsonMediaType, mediaType, taskBesideError, tryParseJson } from './error-mapping.ts';
import { createHttpClient, type HttpClient } from './http.ts';
import { answerContentProof } from './ownership.ts';
import { jsonBodyOf, parseJsonText, validateWith } from './response.ts';
import { readingAnswer } from './answer-fault.ts';
import {
  ListTaskPushNotificationConfigsResponseSchema,
  ListTasksResponseSchema,
  SendMessageResponseSchema,
  type StreamResponse,
  StreamResponseSchema,
  TaskPushNotificationConfigSchema,
  TaskResultSchema,
} from './schema.ts';
import { serverSentEventsOf, type SseMessage } from './sse.ts';
import { followEventStream, streamOptionsOf, type EventStreamOptions, idleOf, type StreamErrorDecoder } from './stream.ts';
import type { A2ATransport, AgentInterface, CallOptions, EventStream, TransportOptions } from './transport.ts';

/** JSON-RPC response envelope (JSON-RPC 2.0 §5). `result` and `error` are checked separately. */
const EnvelopeSchema = z.object({
  jsonrpc: z.literal('2.0'),
  id: z.union([z.string(), z.number(), z.null()]).optional(),
  result: z.unknown().optional(),
  error: z.unknown().optional(),
});

/** A2A 1.0 JSON-RPC method names (spec §9.3; identical to the gRPC names). */
export const JSON_RPC_METHODS = {
  sendMessage: 'SendMessage',
  sendStreamingMessage: 'SendStreamingMessage',
  getTask: 'GetTask',
  listTasks: 'ListTasks',
  cancelTask: 'CancelTask',
  subscribeToTask: 'SubscribeToTask',
  createTaskPushNotificationConfig: 'CreateTaskPushNotificationConfig',
  getTaskPushNotificationConfig: 'GetTaskPushNotificationConfig',
  listTaskPushNotificationConfigs: 'ListTaskPushNotificationConfigs',
  deleteTaskPushNotificationConfig: 'DeleteTaskPushNotificationConfig',
} as const;

/** A JSON-RPC request id (JSON-RPC 2.0 §4). */
export type JsonRpcId = string | number;

/**
 * Ownership at the transport (docs/a2a-edge.md "Ownership"): an answer must carry our request id (JSON-RPC 2.0 §5),
 * compared as text so `1` and `"1"` match. An error may carry `null` or no id (the server could not read
 * ours: §5.1 parse errors); a result never. Throws `ResponseIdMismatchError` (a `ProtocolError`).
 */
export function checkResponseId(id: unknown, expectedId: JsonRpcId, isError: boolean, rawBody: string, what: string, contentProvesOurs?: () => boolean): void {
  if (isError && (id === null || id === undefined)) return;
  if ((typeof id === 'string' || typeof id === 'number') && String(id) === String(expectedId)) return;
  // A33: a missing or null id on the answer to a plain HTTP request (one request, one answer) is weak evidence, not
  // proof of foreignness: the content decides (our messageId in the task's history, the task id we asked about).
  // Another request's id is still refused, and so is a null id whose content proves nothing.
  if ((id === null || id === undefined) && contentProvesOurs?.()) return;
  throw new ResponseIdMismatchError(`${what} carries id ${JSON.stringify(id) ?? 'none'}, not our request id ${JSON.stringify(expectedId)}`, {
    cause: rawBody,
    bodyExcerpt: excerpt(rawBody),
  });
}

/**
 * Ownership before the code, for every JSON-RPC error answer however it came (attack 33): a body that is a JSON-RPC
 * error envelope carrying ANOTHER request's id (JSON-RPC 2.0 §5: an error carries the id of the request it answers, or
 * null when the server could not read ours) answers another request, on any HTTP status and to a plain or a
 * streaming call: its code refuses nothing of ours (delivery received, effect maybe: a `ResponseIdMismatchError`),
 * as on a 2xx (`checkResponseId`). Undefined for any other body (our id, null or none, no envelope: the status and
 * the body decide, `errorFromHttp`), and for HTTP 401/403, which refuse our credentials by the status alone. Before,
 * a 400 or 500 carrying another request's -32602 was read as our refusal: the step was FAILED and went to a second
 * agent after the first had booked.
 */
export function foreignErrorAnswer(status: number, bodyText: string, expectedId: JsonRpcId, what: string): ResponseIdMismatchError | undefined {
  if (refusesCredentialsByStatus(status)) return undefined;
  const value = tryParseJson(bodyText);
  if (typeof value !== 'object' || value === null || Array.isArray(value) || !('jsonrpc' in value) || !('error' in value)) return undefined;
  try {
    checkResponseId((value as { id?: unknown }).id, expectedId, true, bodyText, what);
    return undefined;
  } catch (error) {
    if (error instanceof ResponseIdMismatchError) return error;
    throw error;
  }
}

/**
 * Decodes a JSON-RPC envelope: with `expectedId`, the answer must carry it (`checkResponseId`);
 * an `error` member becomes the typed error (an error is never an empty success, even with
 * HTTP 200); otherwise `result` is validated with `schema`.
 */
export function decodeJsonRpcEnvelope<Schema extends z.ZodType>(
  value: unknown,
  rawBody: string,
  schema: Schema,
  what: string,
  httpStatus?: number,
  expectedId?: JsonRpcId,
  contentProof?: (result: unknown) => boolean,
): z.output<Schema> {
  const envelope = validateWith(EnvelopeSchema, value, rawBody, what);
  const isError = envelope.error !== undefined && envelope.error !== null;
  if (expectedId !== undefined) checkResponseId(envelope.id, expectedId, isError, rawBody, what, contentProof && (() => contentProof(envelope.result)));
  if (isError) throw taskBesideError(rawBody, httpStatus) ?? errorFromJsonRpc(envelope.error, rawBody, httpStatus);
  if (!('result' in (value as object))) throw new InvalidAgentResponseError(`${what} has neither result nor error`, { cause: rawBody, bodyExcerpt: excerpt(rawBody) });
  return validateWith(schema, envelope.result, rawBody, what);
}

/**
 * One SSE message of a JSON-RPC stream → StreamResponse; `event: error` or an `error` member → typed
 * error (R08 b, c). With `expectedId`, every frame must carry our request id (`checkResponseId`; a null or missing
 * id passes when `contentProof` proves the frame ours, see `streamFrameProof`).
 */
export function decodeJsonRpcStreamEvent(message: SseMessage, expectedId?: JsonRpcId, contentProof?: (result: unknown) => boolean): z.output<typeof StreamResponseSchema> {
  const value = parseJsonText(message.data, 'SSE event data');
  if (message.event === 'error' && !(typeof value === 'object' && value !== null && 'error' in value)) {
    throw new ProtocolError('SSE error event without a JSON-RPC error', { cause: message.data, bodyExcerpt: excerpt(message.data) });
  }
  return decodeJsonRpcEnvelope(value, message.data, StreamResponseSchema, 'stream event', undefined, expectedId, contentProof);
}

/**
 * The content proof of one response stream's frames (a null or missing id on a stream, as on a plain answer, is weak
 * evidence, not foreignness): a frame whose content proves it answers `rpc` (our messageId in the task's history, the
 * task id we asked about), or any frame after one this stream already proved ours (one request, one response stream;
 * every event's task is still checked against ours by the follower). Another request's id is refused whatever the
 * content. `accepted()` is called with each frame decoded.
 */
export function streamFrameProof(rpc: JsonRpcRequest): { proof: (result: unknown) => boolean; accepted(): void } {
  let proven = false;
  return {
    proof: (result) => proven || rpc.contentProof?.(result) === true,
    accepted() {
      proven = true;
    },
  };
}

/**
 * A non-SSE answer to a JSON-RPC stream request → its typed error (R08 a: HTTP 200 + JSON error envelope).
 * `fromErrorObject` maps the envelope's error (the 0.3 adapter passes its own table).
 */
export function decodeJsonRpcStreamError(
  status: number,
  contentType: string | undefined,
  bodyText: string,
  fromErrorObject: (error: unknown, rawBody: string, httpStatus?: number) => A2AError = errorFromJsonRpc,
): A2AError {
  if (status < 200 || status >= 300 || !isJsonMediaType(contentType)) return errorFromHttp(status, contentType, bodyText);
  const value = parseJsonText(bodyText, 'stream response', status);
  const error = typeof value === 'object' && value !== null ? (value as { error?: unknown }).error : undefined;
  if (error !== undefined && error !== null) return taskBesideError(bodyText, status) ?? fromErrorObject(error, bodyText, status);
  return new ProtocolError('JSON answer without an error to a streaming call', { httpStatus: status, cause: bodyText, bodyExcerpt: excerpt(bodyText) });
}

/** One JSON-RPC request: its id, its serialized envelope, and what in an answer's content proves it answers this request. */
export interface JsonRpcRequest {
  id: JsonRpcId;
  body: string;
  /** True when an answer's `result` proves by its content that it is ours (used only when the answer carries no id, A33). */
  contentProof?: (result: unknown) => boolean;
}

/** Builds a request envelope `{jsonrpc, id, method, params}`. */
export const jsonRpcRequest = (id: JsonRpcId, method: string, params: object): JsonRpcRequest => {
  const contentProof = answerContentProof(params, method === JSON_RPC_METHODS.listTasks ? 'list' : 'one');
  return { id, body: JSON.stringify({ jsonrpc: '2.0', id, method, params }), ...(contentProof ? { contentProof } : {}) };
};

/**
 * One JSON-RPC call over HTTP POST: a non-2xx status or a non-JSON answer is a typed error, and so is a
 * JSON-RPC error returned with HTTP 200 (never an empty success), and an answer without our request id
 * (`ResponseIdMismatchError`). `prepare` adapts the parsed body before decoding (the 0.3 adapter drops
 * its free-form error data).
 */
export async function postJsonRpc<Schema extends z.ZodType>(
  http: HttpClient,
  url: string,
  method: string,
  rpc: JsonRpcRequest,
  schema: Schema,
  options?: CallOptions,
  prepare: (value: unknown) => unknown = (value) => value,
): Promise<z.output<Schema>> {
  const response = await http.request({
    method: 'POST',
    url,
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: rpc.body,
    signal: options?.signal,
    ...(options?.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
  });
  const what = `${method} response`;
  // The answer arrived: whatever reading it throws is the answer's fault (delivery `received`, `answer-fault.ts`).
  return readingAnswer(what, () => {
    if (response.status < 200 || response.status >= 300) {
      // A success envelope answering our request is the answer whatever the HTTP status around it (a server or proxy
      // that reports its own trouble in the status after the work was done): decoded as on a 2xx, never discarded.
      // Not proven ours: the status decides, as for any other body.
      const answer = isJsonMediaType(response.contentType) ? ourSuccessIn(response.bodyText, rpc, schema, what, response.status, rpc.contentProof, prepare) : undefined;
      if (answer === undefined) throw foreignErrorAnswer(response.status, response.bodyText, rpc.id, what) ?? errorFromHttp(response.status, response.contentType, response.bodyText, response.headers);
      return answer.result;
    }
    // A server that answers every call as a stream (SSE): its first event is the answer, read as a JSON body would be.
    const framed = mediaType(response.contentType) === 'text/event-stream' ? serverSentEventsOf(response.bodyText, {}, 2) : undefined;
    const event = framed?.events[0];
    // The first event, and whether there is another (reading stops at 2). A frame that could not be read (over the
    // event size limit, unterminated at the body's end) is a frame all the same: it may say otherwise.
    const frames = framed === undefined ? 0 : framed.events.length + (framed.unreadableAfter ? 1 : 0);
    const bodyText = event?.data ?? response.bodyText;
    const parsed = event === undefined ? jsonBodyOf(response.contentType, bodyText, response.status, what) : parseJsonText(bodyText, what, response.status);
    const value = ourEnvelope(prepare(parsed), rpc.id, bodyText, what);
    if (frames > 1 && !(SENDS.has(method) && isSuccessEnvelope(value))) throw severalEvents(frames, response.bodyText, what, response.status, framed?.unreadableAfter);
    return decodeJsonRpcEnvelope(value, bodyText, schema, what, response.status, rpc.id, rpc.contentProof);
  });
}

/** SendMessage in either version: its answer's task is followed, so its first event may be read alone (`severalEvents`). */
const SENDS = new Set(['SendMessage', 'message/send']);

/**
 * A plain call's answer framed as several events is one answer we cannot read from one of them: a later event may say
 * otherwise (a page listing our task after one listing nothing, our task after a refusal): an unreadable answer
 * (`ProtocolError`, delivery `received`). Only a SendMessage whose first event is our success envelope is read from it
 * (the task it names is followed, and each later state comes from reads of that task). Attack 31: ListTasks framed as
 * an empty page then one holding our message was read as the empty page, the search concluded "absent" and our
 * message went again; a SendMessage framed as -32602 then our task COMPLETED was FAILED and re-delegated.
 */
function severalEvents(count: number, bodyText: string, what: string, httpStatus: number, unreadable: Error | undefined): ProtocolError {
  const detail = unreadable ? ` (one of them unreadable: ${unreadable.message})` : '';
  return new ProtocolError(`${what} is framed as ${count} or more events${detail}: a call answered once is not read from one of them`, { httpStatus, cause: unreadable ?? bodyText, bodyExcerpt: excerpt(bodyText), delivery: 'received' });
}

/**
 * Our success envelope in `bodyText` (an object, or the one element of a batch carrying our id), decoded with
 * `schema` (`prepare` first), as `{ result }`; undefined when the body holds none proven ours (not JSON, an error
 * envelope, another request's id), and the framing around it decides. A success envelope ours whose result breaks
 * `schema` throws as `decodeJsonRpcEnvelope` does.
 */
function ourSuccessIn<Schema extends z.ZodType>(
  bodyText: string,
  rpc: JsonRpcRequest,
  schema: Schema,
  what: string,
  httpStatus: number,
  contentProof: ((result: unknown) => boolean) | undefined,
  prepare: (value: unknown) => unknown = (value) => value,
): { result: z.output<Schema> } | undefined {
  const parsed = tryParseJson(bodyText);
  const envelope = parsed === undefined ? undefined : ourEnvelope(prepare(parsed), rpc.id, bodyText, what, true);
  if (!isSuccessEnvelope(envelope)) return undefined;
  try {
    return { result: decodeJsonRpcEnvelope(envelope, bodyText, schema, what, httpStatus, rpc.id, contentProof) };
  } catch (error) {
    if (error instanceof ResponseIdMismatchError) return undefined;
    throw error;
  }
}

/** A JSON-RPC success envelope: an object with `jsonrpc`, a `result` member and no error. */
const isSuccessEnvelope = (value: unknown): value is object =>
  typeof value === 'object' && value !== null && !Array.isArray(value) && 'jsonrpc' in value && 'result' in value && ((value as { error?: unknown }).error ?? null) === null;

/**
 * The envelope answering request `id` in a parsed answer. An object is itself (its id is checked when decoded). A
 * batch (an array, JSON-RPC 2.0 §6, though we sent one request) is read for the one element carrying our id, compared
 * as text: that element is the answer; none, or more than one, proves nothing and is `InvalidAgentResponseError`
 * (delivery `received`). With `lenient`, an array that holds no single answer gives `undefined` instead of throwing.
 */
export function ourEnvelope(value: unknown, id: JsonRpcId, rawBody: string, what: string, lenient = false): unknown {
  if (!Array.isArray(value)) return value;
  const ours = value.filter((item) => {
    const itemId = (item as { id?: unknown } | null)?.id;
    return (typeof itemId === 'string' || typeof itemId === 'number') && String(itemId) === String(id);
  });
  if (ours.length === 1) return ours[0];
  if (lenient) return undefined;
  throw new InvalidAgentResponseError(`${what} is a batch of ${value.length} with ${ours.length} answers carrying our request id ${JSON.stringify(id)}`, {
    cause: rawBody,
    bodyExcerpt: excerpt(rawBody),
  });
}

/**
 * How one protocol version reads a JSON-RPC stream (1.0 here, 0.3 in `v03/jsonrpc.ts`): `decodeFrame` decodes one SSE
 * message to a result of `schema` (checking our request id, see `decodeJsonRpcStreamEvent`), `toEvent` makes that
 * result the 1.0 event, `decodeError` reads a non-stream answer's error, `prepare` adapts a parsed whole answer before
 * decoding (the 0.3 adapter drops its free-form error data).
 */
export interface JsonRpcStreamReading<Schema extends z.ZodType> {
  schema: Schema;
  decodeFrame: (message: SseMessage, expectedId: JsonRpcId, contentProof: (result: unknown) => boolean) => z.output<Schema>;
  toEvent: (result: z.output<Schema>) => StreamResponse;
  decodeError: StreamErrorDecoder;
  prepare?: (value: unknown) => unknown;
}

/**
 * One JSON-RPC stream request (a POST of `rpc` to `url`) followed to its end, for every protocol version alike: each
 * SSE frame decoded by `reading` (our request id, or content proving it ours, `streamFrameProof`), and a whole JSON
 * answer in place of the stream (the streaming method served as the plain one, any HTTP status) read as the stream's
 * one event when it is our success envelope (`ourSuccessIn`), else as the error it carries (`followEventStream`).
 */
export async function* followJsonRpcStream<Schema extends z.ZodType>(
  http: HttpClient,
  url: string,
  rpc: JsonRpcRequest,
  reading: JsonRpcStreamReading<Schema>,
  streamOptions: EventStreamOptions,
  options?: CallOptions,
): EventStream {
  const response = await http.openStream({
    method: 'POST',
    url,
    headers: { 'content-type': 'application/json' },
    body: rpc.body,
    signal: options?.signal,
    ...(options?.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    ...(options?.ownConnection ? { ownConnection: true } : {}),
  });
  const frames = streamFrameProof(rpc);
  const decode = (message: SseMessage): StreamResponse => {
    const result = reading.decodeFrame(message, rpc.id, frames.proof);
    frames.accepted();
    return reading.toEvent(result);
  };
  const answer = (bodyText: string): StreamResponse | undefined => {
    const ours = ourSuccessIn(bodyText, rpc, reading.schema, 'JSON answer to a stream request', response.status, frames.proof, reading.prepare);
    return ours === undefined ? undefined : reading.toEvent(ours.result);
  };
  // A whole error answer in place of the stream: ownership first (`foreignErrorAnswer`), then its code.
  const decodeError: StreamErrorDecoder = (status, contentType, bodyText) =>
    foreignErrorAnswer(status, bodyText, rpc.id, 'an error answer to a stream request') ?? reading.decodeError(status, contentType, bodyText);
  return yield* followEventStream(response, decode, decodeError, { ...streamOptions, ...idleOf(options), signal: options?.signal }, answer);
}

/** `A2ATransport` over JSON-RPC 2.0, protocol version 1.0. */
export class JsonRpcTransport implements A2ATransport {
  readonly binding = 'JSONRPC' as const;
  readonly protocolVersion = '1.0' as const;
  readonly url: string;
  private readonly tenant: string | undefined;
  private readonly http: HttpClient;
  private readonly streamOptions: EventStreamOptions;
  private nextRequestId = 1;

  constructor(agentInterface: AgentInterface, options: TransportOptions = {}) {
    this.url = agentInterface.url;
    this.tenant = agentInterface.tenant || undefined;
    this.http = createHttpClient({ ...options, a2aVersion: this.protocolVersion });
    this.streamOptions = streamOptionsOf(options, this.url);
  }

  private envelope(method: string, params: object): JsonRpcRequest {
    const withTenant = this.tenant === undefined ? params : { ...params, tenant: this.tenant };
    return jsonRpcRequest(this.nextRequestId++, method, withTenant);
  }

  private call<Schema extends z.ZodType>(method: string, params: object, schema: Schema, options?: CallOptions): Promise<z.output<Schema>> {
    return postJsonRpc(this.http, this.url, method, this.envelope(method, params), schema, options);
  }

  private stream(method: string, params: object, options?: CallOptions): EventStream {
    const reading = { schema: StreamResponseSchema, decodeFrame: decodeJsonRpcStreamEvent, toEvent: (result: StreamResponse) => result, decodeError: decodeJsonRpcStreamError };
    return followJsonRpcStream(this.http, this.url, this.envelope(method, params), reading, this.streamOptions, options);
  }

  sendMessage: A2ATransport['sendMessage'] = (request, options) =>
    this.call(JSON_RPC_METHODS.sendMessage, request, SendMessageResponseSchema, options);

  sendStreamingMessage: A2ATransport['sendStreamingMessage'] = (request, options) =>
    this.stream(JSON_RPC_METHODS.sendStreamingMessage, request, options);

  getTask: A2ATransport['getTask'] = (params, options) => this.call(JSON_RPC_METHODS.getTask, params, TaskResultSchema, options);

  listTasks: A2ATransport['listTasks'] = (request, options) =>
    this.call(JSON_RPC_METHODS.listTasks, request, ListTasksResponseSchema, options);

  cancelTask: A2ATransport['cancelTask'] = (params, options) => this.call(JSON_RPC_METHODS.cancelTask, params, TaskResultSchema, options);

  subscribeToTask: A2ATransport['subscribeToTask'] = (params, options) =>
    this.stream(JSON_RPC_METHODS.subscribeToTask, params, options);

  createTaskPushNotificationConfig: A2ATransport['createTaskPushNotificationConfig'] = (config, options) =>
    this.call(JSON_RPC_METHODS.createTaskPushNotificationConfig, config, TaskPushNotificationConfigSchema, options);

  getTaskPushNotificationConfig: A2ATransport['getTaskPushNotificationConfig'] = (params, options) =>
    this.call(JSON_RPC_METHODS.getTaskPushNotificationConfig, params, TaskPushNotificationConfigSchema, options);

  listTaskPushNotificationConfigs: A2ATransport['listTaskPushNotificationConfigs'] = async (params, options) => {
    const result = await this.call(JSON_RPC_METHODS.listTaskPushNotificationConfigs, params, ListTaskPushNotificationConfigsResponseSchema, options);
    return { configs: result.configs ?? [], ...(result.nextPageToken ? { nextPageToken: result.nextPageToken } : {}) };
  };

  deleteTaskPushNotificationConfig: A2ATransport['deleteTaskPushNotificationConfig'] = async (params, options) => {
    // Result is Empty: the SDK sends `"result": null`, others `{}`.
    await this.call(JSON_RPC_METHODS.deleteTaskPushNotificationConfig, params, z.unknown(), options);
  };
}
