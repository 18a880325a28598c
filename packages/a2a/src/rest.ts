/**
 * A2A 1.0 over HTTP+JSON (spec §11): resource paths, `application/a2a+json`
 * bodies (spec §11.1, 1.0.1), errors as google.rpc.Status with ErrorInfo
 * (spec §11.6), streams as SSE of bare StreamResponse objects (spec §11.7).
 */
import { z } from 'zod';
import { readingAnswer } from './answer-fault.ts';
import { type A2AError, ProtocolError } from './errors.ts';
import { errorFromHttp, excerpt, findErrorInfoReason, HttpErrorBodySchema, isJsonMediaType, tryParseJson } from './error-mapping.ts';
import { createHttpClient, type HttpClient, type HttpRequest, type HttpResponse } from './http.ts';
import { checkJsonDepth, DEFAULT_A2A_LIMITS } from './limits.ts';
import { answerContentProof } from './ownership.ts';
import { hasErrorMember, jsonBodyOf, parseJsonText, provenAnswerIn, validateWith } from './response.ts';
import {
  ListTaskPushNotificationConfigsResponseSchema,
  ListTasksResponseSchema,
  SendMessageResponseSchema,
  StreamResponseSchema,
  TaskPushNotificationConfigSchema,
  TaskResultSchema,
} from './schema.ts';
import { readBodyText, type SseMessage } from './sse.ts';
import { followEventStream, streamOptionsOf, type EventStreamOptions, idleOf } from './stream.ts';
import type { A2ATransport, AgentInterface, CallOptions, EventStream, TransportOptions } from './transport.ts';

/** Content type of HTTP+JSON bodies (spec §11.1). */
export const A2A_JSON_CONTENT_TYPE = 'application/a2a+json';

/** One SSE message of a REST stream → StreamResponse; an `{"error":{..}}` body or `event: error` → typed error. */
export function decodeRestStreamEvent(message: SseMessage): z.output<typeof StreamResponseSchema> {
  const value = parseJsonText(message.data, 'SSE event data');
  if (HttpErrorBodySchema.safeParse(value).success) {
    const status = (value as { error: { code?: unknown } }).error.code;
    // The SDK sends later errors as `event: error`; the status in the body picks the fallback class.
    throw errorFromHttp(typeof status === 'number' ? status : 500, 'application/json', message.data);
  }
  if (message.event === 'error') {
    throw new ProtocolError('SSE error event without an error body', { cause: message.data, bodyExcerpt: excerpt(message.data) });
  }
  return validateWith(StreamResponseSchema, value, message.data, 'stream event');
}

/** A non-SSE answer to a REST stream request → its typed error. */
export function decodeRestStreamError(status: number, contentType: string | undefined, bodyText: string): A2AError {
  if (status >= 200 && status < 300) {
    return new ProtocolError('JSON answer to a streaming call', { httpStatus: status, cause: bodyText, bodyExcerpt: excerpt(bodyText) });
  }
  return errorFromHttp(status, contentType, bodyText);
}

/**
 * An HTTP+JSON answer (1.0 or 0.3) → the call's result, validated with `schema`. A non-2xx is `errorOf`'s typed error,
 * unless its body is the answer proven ours by `proof` (`provenAnswerIn`; `isErrorBody` tells the binding's error
 * bodies, never adopted); a 204 or an empty 2xx is `{}`; any other 2xx must be JSON.
 */
export function readRestAnswer<Schema extends z.ZodType>(
  response: HttpResponse,
  what: string,
  schema: Schema,
  proof: ((result: unknown) => boolean) | undefined,
  isErrorBody: (value: unknown) => boolean,
  errorOf: (status: number, contentType: string | undefined, bodyText: string) => A2AError,
): z.output<Schema> {
  if (response.status < 200 || response.status >= 300) {
    const answer = provenAnswerIn(response.bodyText, response.contentType, response.status, schema, proof, isErrorBody);
    if (answer === undefined) throw errorOf(response.status, response.contentType, response.bodyText);
    return answer.result;
  }
  if (response.status === 204 || response.bodyText === '') return validateWith(schema, {}, response.bodyText, what);
  return validateWith(schema, jsonBodyOf(response.contentType, response.bodyText, response.status, what), response.bodyText, what);
}

/** Query string from defined values, camelCase names as-is (spec §11.5). */
function query(params: Record<string, string | number | boolean | undefined>): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) if (value !== undefined) search.set(name, String(value));
  const text = search.toString();
  return text === '' ? '' : `?${text}`;
}

const segment = encodeURIComponent;

/** `A2ATransport` over HTTP+JSON/REST, protocol version 1.0. */
export class RestTransport implements A2ATransport {
  readonly binding = 'HTTP+JSON' as const;
  readonly protocolVersion = '1.0' as const;
  readonly url: string;
  private readonly base: string;
  private readonly http: HttpClient;
  private readonly streamOptions: EventStreamOptions;

  constructor(agentInterface: AgentInterface, options: TransportOptions = {}) {
    this.url = agentInterface.url;
    const tenant = agentInterface.tenant || undefined;
    // Every path may carry a `/{tenant}` prefix; with a tenant it MUST (spec §8.3.2).
    this.base = agentInterface.url.replace(/\/+$/, '') + (tenant === undefined ? '' : `/${segment(tenant)}`);
    this.http = createHttpClient({ ...options, a2aVersion: this.protocolVersion });
    this.streamOptions = streamOptionsOf(options, this.url);
  }

  private spec(method: HttpRequest['method'], path: string, body: unknown, options?: CallOptions): HttpRequest {
    return {
      method,
      url: this.base + path,
      headers: body === undefined ? { accept: A2A_JSON_CONTENT_TYPE } : { accept: A2A_JSON_CONTENT_TYPE, 'content-type': A2A_JSON_CONTENT_TYPE },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: options?.signal,
      ...(options?.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
      ...(options?.ownConnection ? { ownConnection: true } : {}),
    };
  }

  /** One call, its answer read by `readRestAnswer` (a non-2xx proven ours by `proof` is the answer). */
  private async call<Schema extends z.ZodType>(method: HttpRequest['method'], path: string, body: unknown, schema: Schema, options?: CallOptions, proof?: (result: unknown) => boolean): Promise<z.output<Schema>> {
    const response = await this.http.request(this.spec(method, path, body, options));
    // The answer arrived: whatever reading it throws is the answer's fault (delivery `received`, `answer-fault.ts`).
    return readingAnswer(`${method} ${path}`, () => readRestAnswer(response, `${method} ${path}`, schema, proof, hasErrorMember, (status, contentType, bodyText) => errorFromHttp(status, contentType, bodyText, response.headers)));
  }

  /**
   * One stream request (`specs[0]`, then the fallbacks below). A whole JSON answer in place of the stream (any status)
   * whose body is an event proven ours by `proof` is the stream's one event (`provenAnswerIn`), as on JSON-RPC.
   */
  private async *stream(specs: HttpRequest[], options?: CallOptions, proof?: (result: unknown) => boolean): EventStream {
    let response = await this.http.openStream(specs[0]!);
    // SubscribeToTask: the proto says GET, the spec text POST (A2A#1574). Send POST; on a
    // 405, or a 404 that is not an A2A error (no ErrorInfo: an unknown route), retry with GET.
    for (const fallback of specs.slice(1)) {
      if (response.status !== 404 && response.status !== 405) break;
      const bodyText = await readBodyText(response.body, this.streamOptions);
      // Parsed below whatever its content type: held to `jsonDepth` as every agent text parsed is.
      checkJsonDepth(bodyText, this.streamOptions.maxJsonDepth ?? DEFAULT_A2A_LIMITS.jsonDepth);
      const reason = isJsonMediaType(response.contentType) ? findErrorInfoReason((tryParseJson(bodyText) as { error?: { details?: unknown } } | undefined)?.error?.details) : undefined;
      if (response.status === 404 && reason !== undefined) throw errorFromHttp(response.status, response.contentType, bodyText);
      response = await this.http.openStream(fallback);
    }
    const answer = (bodyText: string) => provenAnswerIn(bodyText, response.contentType, response.status, StreamResponseSchema, proof, hasErrorMember)?.result;
    return yield* followEventStream(response, decodeRestStreamEvent, decodeRestStreamError, { ...this.streamOptions, ...idleOf(options), signal: options?.signal }, answer);
  }

  sendMessage: A2ATransport['sendMessage'] = (request, options) =>
    this.call('POST', '/message:send', request, SendMessageResponseSchema, options, answerContentProof(request));

  sendStreamingMessage: A2ATransport['sendStreamingMessage'] = (request, options) =>
    this.stream([this.spec('POST', '/message:stream', request, options)], options, answerContentProof(request));

  getTask: A2ATransport['getTask'] = ({ id, historyLength }, options) =>
    this.call('GET', `/tasks/${segment(id)}${query({ historyLength })}`, undefined, TaskResultSchema, options, answerContentProof({ id }));

  /**
   * A non-2xx page is adopted only for a request with a context filter (each task in our context): without one (a
   * search by time or status) nothing in a page names what we asked, and the status decides. (A JSON-RPC answer
   * without an id keeps `answerContentProof`'s list rule: its `result` is the agent's own success, A33.)
   */
  listTasks: A2ATransport['listTasks'] = (request, options) =>
    this.call('GET', `/tasks${query({ ...request })}`, undefined, ListTasksResponseSchema, options, request.contextId ? answerContentProof(request, 'list') : undefined);

  cancelTask: A2ATransport['cancelTask'] = ({ id, metadata }, options) =>
    this.call('POST', `/tasks/${segment(id)}:cancel`, metadata === undefined ? {} : { metadata }, TaskResultSchema, options, answerContentProof({ id }));

  subscribeToTask: A2ATransport['subscribeToTask'] = ({ id }, options) =>
    this.stream([this.spec('POST', `/tasks/${segment(id)}:subscribe`, {}, options), this.spec('GET', `/tasks/${segment(id)}:subscribe`, undefined, options)], options, answerContentProof({ id }));

  createTaskPushNotificationConfig: A2ATransport['createTaskPushNotificationConfig'] = (config, options) =>
    this.call('POST', `/tasks/${segment(config.taskId)}/pushNotificationConfigs`, config, TaskPushNotificationConfigSchema, options);

  getTaskPushNotificationConfig: A2ATransport['getTaskPushNotificationConfig'] = ({ taskId, id }, options) =>
    this.call('GET', `/tasks/${segment(taskId)}/pushNotificationConfigs/${segment(id)}`, undefined, TaskPushNotificationConfigSchema, options);

  listTaskPushNotificationConfigs: A2ATransport['listTaskPushNotificationConfigs'] = async ({ taskId, pageSize, pageToken }, options) => {
    const path = `/tasks/${segment(taskId)}/pushNotificationConfigs${query({ pageSize, pageToken })}`;
    const result = await this.call('GET', path, undefined, ListTaskPushNotificationConfigsResponseSchema, options);
    return { configs: result.configs ?? [], ...(result.nextPageToken ? { nextPageToken: result.nextPageToken } : {}) };
  };

  deleteTaskPushNotificationConfig: A2ATransport['deleteTaskPushNotificationConfig'] = async ({ taskId, id }, options) => {
    await this.call('DELETE', `/tasks/${segment(taskId)}/pushNotificationConfigs/${segment(id)}`, undefined, z.unknown(), options);
  };
}
