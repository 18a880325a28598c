/**
 * A2A 0.3 over HTTP+JSON (spec v0.3.0 §3.2.3, §3.5.6): `/v1`-prefixed routes,
 * `application/json` bodies in the 0.3 ProtoJSON shapes (`rest-wire.ts`),
 * errors as a bare `{code, message, data?}` body with the JSON-RPC code, and SSE
 * of bare StreamResponse objects (`event: error` for a later failure).
 * Routes as served by @a2a-js/sdk 0.3.14 and the 1.3.0 `legacyCompat` router.
 */
import { z } from 'zod';
import { readingAnswer } from '../answer-fault.ts';
import { type A2AError, ProtocolError, refusesCredentialsByStatus, UnsupportedOperationError } from '../errors.ts';
import { errorFromHttp, excerpt, JsonRpcErrorObjectSchema, tryParseJson, withStatusRetryAfter } from '../error-mapping.ts';
import { createHttpClient, type HttpClient, type HttpRequest } from '../http.ts';
import { answerContentProof } from '../ownership.ts';
import { readRestAnswer } from '../rest.ts';
import { hasErrorMember, parseJsonText, provenAnswerIn, validateWith } from '../response.ts';
import type { SseMessage } from '../sse.ts';
import { followEventStream, streamOptionsOf, type EventStreamOptions, idleOf } from '../stream.ts';
import type { A2ATransport, AgentInterface, CallOptions, EventStream, TransportOptions } from '../transport.ts';
import { stopAtFinal } from './final.ts';
import { A2A_VERSION_V03, errorFromJsonRpcV03 } from './jsonrpc.ts';
import {
  ProtoListPushConfigsSchema,
  ProtoSendResponseSchema,
  ProtoStreamResponseSchema,
  ProtoTaskPushConfigSchema,
  ProtoTaskSchema,
  protoPushConfig,
  protoSendRequest,
  pushConfigName,
} from './rest-wire.ts';

/** 0.3 REST path prefix (spec v0.3.0 §3.5.6). */
export const REST_V03_PREFIX = '/v1';

/**
 * A non-2xx 0.3 REST answer → typed error. The body is `{code, message, data?}`
 * with a JSON-RPC code (so -32001 with 404 is `TaskNotFoundError`); 401/403 stay
 * `AuthenticationError`; anything else goes through the 1.0 HTTP mapping. With `headers`,
 * a 429's or 503's `Retry-After` is kept, as on 1.0.
 */
export function errorFromHttpV03(status: number, contentType: string | undefined, bodyText: string, headers?: Readonly<Record<string, string>>): A2AError {
  const body = refusesCredentialsByStatus(status) ? undefined : JsonRpcErrorObjectSchema.safeParse(tryParseJson(bodyText));
  if (body?.success) return withStatusRetryAfter(errorFromJsonRpcV03(body.data, bodyText, status), status, headers);
  return errorFromHttp(status, contentType, bodyText, headers);
}

/** A 0.3 error body: `{code, message, data?}` (or anything with an `error` member), never an answer. */
const isErrorBodyV03 = (value: unknown): boolean => hasErrorMember(value) || JsonRpcErrorObjectSchema.safeParse(value).success;

function decodeStreamError(status: number, contentType: string | undefined, bodyText: string): A2AError {
  if (status >= 200 && status < 300) {
    return new ProtocolError('JSON answer to a streaming call', { httpStatus: status, cause: bodyText, bodyExcerpt: excerpt(bodyText) });
  }
  return errorFromHttpV03(status, contentType, bodyText);
}

/** One SSE message → `{response, final}`; `event: error` carries `{code, message}` (status unknown, so 500 decides the fallback). */
export function decodeRestV03StreamEvent(message: SseMessage): z.output<typeof ProtoStreamResponseSchema> {
  const value = parseJsonText(message.data, 'SSE event data');
  if (message.event === 'error') throw errorFromHttpV03(500, 'application/json', message.data);
  return validateWith(ProtoStreamResponseSchema, value, message.data, 'stream event');
}

/** A 0.3 stream event as its 1.0 `response` (what a content proof reads; a whole answer is the stream's one event, so `final` says nothing more). */
const ProtoStreamEventSchema = ProtoStreamResponseSchema.transform(({ response }) => response);

const segment = encodeURIComponent;

/** `A2ATransport` over 0.3 HTTP+JSON. `listTasks` throws `UnsupportedOperationError` (0.3 has no list). */
export class RestV03Transport implements A2ATransport {
  readonly binding = 'HTTP+JSON' as const;
  readonly protocolVersion = '0.3' as const;
  readonly url: string;
  private readonly base: string;
  private readonly http: HttpClient;
  private readonly streamOptions: EventStreamOptions;

  constructor(agentInterface: AgentInterface, options: TransportOptions = {}) {
    this.url = agentInterface.url;
    this.base = agentInterface.url.replace(/\/+$/, '') + REST_V03_PREFIX;
    this.http = createHttpClient({ ...options, a2aVersion: A2A_VERSION_V03 });
    this.streamOptions = streamOptionsOf(options, this.url);
  }

  private spec(method: HttpRequest['method'], path: string, body: unknown, options?: CallOptions): HttpRequest {
    return {
      method,
      url: this.base + path,
      headers: body === undefined ? { accept: 'application/json' } : { accept: 'application/json', 'content-type': 'application/json' },
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
    return readingAnswer(`${method} ${REST_V03_PREFIX}${path}`, () => readRestAnswer(response, `${method} ${REST_V03_PREFIX}${path}`, schema, proof, isErrorBodyV03, (status, contentType, bodyText) => errorFromHttpV03(status, contentType, bodyText, response.headers)));
  }

  /** One stream request; a whole JSON answer proven ours by `proof` is its one event (`provenAnswerIn`), as on 1.0. */
  private async *stream(spec: HttpRequest, options?: CallOptions, proof?: (result: unknown) => boolean): EventStream {
    const response = await this.http.openStream(spec);
    const state = { final: false };
    const decode = (message: SseMessage) => {
      const { response: event, final } = decodeRestV03StreamEvent(message);
      if (final) state.final = true;
      return event;
    };
    const answer = (bodyText: string) => provenAnswerIn(bodyText, response.contentType, response.status, ProtoStreamEventSchema, proof, isErrorBodyV03)?.result;
    const inner = followEventStream(response, decode, decodeStreamError, { ...this.streamOptions, ...idleOf(options), signal: options?.signal }, answer);
    return yield* stopAtFinal(inner, () => state.final);
  }

  sendMessage: A2ATransport['sendMessage'] = (request, options) =>
    this.call('POST', '/message:send', protoSendRequest(request), ProtoSendResponseSchema, options, answerContentProof(request));

  sendStreamingMessage: A2ATransport['sendStreamingMessage'] = (request, options) =>
    this.stream(this.spec('POST', '/message:stream', protoSendRequest(request), options), options, answerContentProof(request));

  getTask: A2ATransport['getTask'] = ({ id, historyLength }, options) =>
    this.call('GET', `/tasks/${segment(id)}${historyLength === undefined ? '' : `?historyLength=${historyLength}`}`, undefined, ProtoTaskSchema, options, answerContentProof({ id }));

  listTasks: A2ATransport['listTasks'] = () =>
    Promise.reject(new UnsupportedOperationError('A2A 0.3 HTTP+JSON has no task list (spec v0.3.0 §3.5.6)', { delivery: 'not-sent' }));

  /** 0.3 cancel takes no body fields; `metadata` has nowhere to go. */
  cancelTask: A2ATransport['cancelTask'] = ({ id }, options) =>
    this.call('POST', `/tasks/${segment(id)}:cancel`, {}, ProtoTaskSchema, options, answerContentProof({ id }));

  subscribeToTask: A2ATransport['subscribeToTask'] = ({ id }, options) =>
    this.stream(this.spec('POST', `/tasks/${segment(id)}:subscribe`, {}, options), options, answerContentProof({ id }));

  /**
   * The body is the `TaskPushNotificationConfig` (`{name, pushNotificationConfig}`,
   * the proto's `body: "config"` transcoding, as the 1.3.0 compat router reads it)
   * plus the whole-request fields `parent` / `configId` / `config` that the 0.3.14
   * SDK reads instead. Each server ignores the other's fields.
   */
  createTaskPushNotificationConfig: A2ATransport['createTaskPushNotificationConfig'] = (config, options) => {
    const taskPushConfig = { name: pushConfigName(config.taskId, config.id), pushNotificationConfig: protoPushConfig(config) };
    const body = { ...taskPushConfig, parent: `tasks/${config.taskId}`, ...(config.id ? { configId: config.id } : {}), config: taskPushConfig };
    return this.call('POST', `/tasks/${segment(config.taskId)}/pushNotificationConfigs`, body, ProtoTaskPushConfigSchema, options);
  };

  getTaskPushNotificationConfig: A2ATransport['getTaskPushNotificationConfig'] = ({ taskId, id }, options) =>
    this.call('GET', `/tasks/${segment(taskId)}/pushNotificationConfigs/${segment(id)}`, undefined, ProtoTaskPushConfigSchema, options);

  listTaskPushNotificationConfigs: A2ATransport['listTaskPushNotificationConfigs'] = async ({ taskId }, options) => {
    const result = await this.call('GET', `/tasks/${segment(taskId)}/pushNotificationConfigs`, undefined, ProtoListPushConfigsSchema, options);
    return { configs: result.configs, ...(result.nextPageToken ? { nextPageToken: result.nextPageToken } : {}) };
  };

  deleteTaskPushNotificationConfig: A2ATransport['deleteTaskPushNotificationConfig'] = async ({ taskId, id }, options) => {
    await this.call('DELETE', `/tasks/${segment(taskId)}/pushNotificationConfigs/${segment(id)}`, undefined, z.unknown(), options);
  };
}
