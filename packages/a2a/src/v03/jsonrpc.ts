/**
 * A2A 0.3 over JSON-RPC 2.0 (spec v0.3.0 §7): slash method names, `kind`-tagged
 * results, `final` ending a stream. Requests carry `A2A-Version: 0.3`, which a
 * 1.0 server with a 0.3 compatibility layer routes to it (spec §3.6: a missing
 * header also means 0.3), and which a plain 0.3 server ignores.
 */
import { z } from 'zod';
import { type A2AError, UnsupportedOperationError } from '../errors.ts';
import { errorFromJsonRpc } from '../error-mapping.ts';
import { createHttpClient, type HttpClient } from '../http.ts';
import { decodeJsonRpcEnvelope, decodeJsonRpcStreamError, followJsonRpcStream, type JsonRpcId, type JsonRpcRequest, jsonRpcRequest, postJsonRpc } from '../jsonrpc.ts';
import { parseJsonText } from '../response.ts';
import type { StreamResponse } from '../schema.ts';
import type { SseMessage } from '../sse.ts';
import { streamOptionsOf, type EventStreamOptions } from '../stream.ts';
import type { A2ATransport, AgentInterface, CallOptions, EventStream, TransportOptions } from '../transport.ts';
import { stopAtFinal } from './final.ts';
import {
  EventV03Schema,
  SendResultV03Schema,
  TaskPushConfigV03Schema,
  TaskV03Schema,
  eventFromV03,
  isFinalEvent,
  pushConfigFromV03,
  pushConfigToV03,
  sendParamsToV03,
  taskFromV03,
} from './wire.ts';

/** 0.3 JSON-RPC method names (spec v0.3.0 §7). There is no `tasks/list`. */
export const JSON_RPC_METHODS_V03 = {
  sendMessage: 'message/send',
  sendStreamingMessage: 'message/stream',
  getTask: 'tasks/get',
  cancelTask: 'tasks/cancel',
  subscribeToTask: 'tasks/resubscribe',
  setPushConfig: 'tasks/pushNotificationConfig/set',
  getPushConfig: 'tasks/pushNotificationConfig/get',
  listPushConfigs: 'tasks/pushNotificationConfig/list',
  deletePushConfig: 'tasks/pushNotificationConfig/delete',
} as const;

/** The `A2A-Version` value a 0.3 client sends. */
export const A2A_VERSION_V03 = '0.3';

/**
 * 0.3 `error.data` is free-form (spec v0.3.0 §8), not a list of ErrorInfo, so it
 * is dropped before mapping: only the code decides the class. The raw body stays
 * on the error as `cause`.
 */
function withoutErrorData(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value;
  const error = (value as { error?: unknown }).error;
  if (typeof error !== 'object' || error === null) return value;
  const { data: _data, ...rest } = error as Record<string, unknown>;
  return { ...value, error: rest };
}

/** A 0.3 JSON-RPC error object → the same typed error a 1.0 agent's code gives. */
export function errorFromJsonRpcV03(errorObject: unknown, rawBody: string, httpStatus?: number): A2AError {
  return errorFromJsonRpc((withoutErrorData({ error: errorObject }) as { error: unknown }).error, rawBody, httpStatus);
}

/** One SSE message of a 0.3 JSON-RPC stream → the 0.3 event (still unconverted, so `final` can be read); with `expectedId`, it must carry our request id. */
export function decodeJsonRpcV03StreamEvent(message: SseMessage, expectedId?: JsonRpcId, contentProof?: (result: unknown) => boolean): z.output<typeof EventV03Schema> {
  const value = withoutErrorData(parseJsonText(message.data, 'SSE event data'));
  return decodeJsonRpcEnvelope(value, message.data, EventV03Schema, 'stream event', undefined, expectedId, contentProof);
}

const decodeStreamError = (status: number, contentType: string | undefined, bodyText: string): A2AError =>
  decodeJsonRpcStreamError(status, contentType, bodyText, errorFromJsonRpcV03);

/** `A2ATransport` over JSON-RPC 2.0, protocol version 0.3. `listTasks` throws `UnsupportedOperationError`. */
export class JsonRpcV03Transport implements A2ATransport {
  readonly binding = 'JSONRPC' as const;
  readonly protocolVersion = '0.3' as const;
  readonly url: string;
  private readonly http: HttpClient;
  private readonly streamOptions: EventStreamOptions;
  private nextRequestId = 1;

  constructor(agentInterface: AgentInterface, options: TransportOptions = {}) {
    this.url = agentInterface.url;
    this.http = createHttpClient({ ...options, a2aVersion: A2A_VERSION_V03 });
    this.streamOptions = streamOptionsOf(options, this.url);
  }

  private envelope(method: string, params: object): JsonRpcRequest {
    return jsonRpcRequest(this.nextRequestId++, method, params);
  }

  private call<Schema extends z.ZodType>(method: string, params: object, schema: Schema, options?: CallOptions): Promise<z.output<Schema>> {
    return postJsonRpc(this.http, this.url, method, this.envelope(method, params), schema, options, withoutErrorData);
  }

  private async *stream(method: string, params: object, options?: CallOptions): EventStream {
    const state = { final: false };
    const toEvent = (event: z.output<typeof EventV03Schema>): StreamResponse => {
      if (isFinalEvent(event)) state.final = true;
      return eventFromV03(event);
    };
    const reading = { schema: EventV03Schema, decodeFrame: decodeJsonRpcV03StreamEvent, toEvent, decodeError: decodeStreamError, prepare: withoutErrorData };
    const inner = followJsonRpcStream(this.http, this.url, this.envelope(method, params), reading, this.streamOptions, options);
    return yield* stopAtFinal(inner, () => state.final);
  }

  sendMessage: A2ATransport['sendMessage'] = async (request, options) => {
    const result = await this.call(JSON_RPC_METHODS_V03.sendMessage, sendParamsToV03(request), SendResultV03Schema, options);
    return eventFromV03(result) as Awaited<ReturnType<A2ATransport['sendMessage']>>;
  };

  sendStreamingMessage: A2ATransport['sendStreamingMessage'] = (request, options) =>
    this.stream(JSON_RPC_METHODS_V03.sendStreamingMessage, sendParamsToV03(request), options);

  getTask: A2ATransport['getTask'] = async (params, options) =>
    taskFromV03(await this.call(JSON_RPC_METHODS_V03.getTask, params, TaskV03Schema, options));

  listTasks: A2ATransport['listTasks'] = () =>
    Promise.reject(new UnsupportedOperationError('A2A 0.3 JSON-RPC has no tasks/list (spec v0.3.0 §7)', { delivery: 'not-sent' }));

  cancelTask: A2ATransport['cancelTask'] = async (params, options) =>
    taskFromV03(await this.call(JSON_RPC_METHODS_V03.cancelTask, params, TaskV03Schema, options));

  subscribeToTask: A2ATransport['subscribeToTask'] = (params, options) =>
    this.stream(JSON_RPC_METHODS_V03.subscribeToTask, params, options);

  createTaskPushNotificationConfig: A2ATransport['createTaskPushNotificationConfig'] = async (config, options) => {
    const params = { taskId: config.taskId, pushNotificationConfig: pushConfigToV03(config) };
    return pushConfigFromV03(await this.call(JSON_RPC_METHODS_V03.setPushConfig, params, TaskPushConfigV03Schema, options));
  };

  getTaskPushNotificationConfig: A2ATransport['getTaskPushNotificationConfig'] = async ({ taskId, id }, options) => {
    const params = { id: taskId, pushNotificationConfigId: id };
    return pushConfigFromV03(await this.call(JSON_RPC_METHODS_V03.getPushConfig, params, TaskPushConfigV03Schema, options));
  };

  /** 0.3 has no paging here: the whole list comes back at once. */
  listTaskPushNotificationConfigs: A2ATransport['listTaskPushNotificationConfigs'] = async ({ taskId }, options) => {
    const configs = await this.call(JSON_RPC_METHODS_V03.listPushConfigs, { id: taskId }, z.array(TaskPushConfigV03Schema), options);
    return { configs: configs.map(pushConfigFromV03) };
  };

  deleteTaskPushNotificationConfig: A2ATransport['deleteTaskPushNotificationConfig'] = async ({ taskId, id }, options) => {
    await this.call(JSON_RPC_METHODS_V03.deletePushConfig, { id: taskId, pushNotificationConfigId: id }, z.unknown(), options);
  };
}
