/**
 * A2A 1.0 over gRPC (spec §10): the `lf.a2a.v1.A2AService` methods, requests
 * and answers in their ProtoJSON form, which is the 1.0 model of `schema.ts`;
 * every answer is validated with the same zod schemas as JSON-RPC. Credentials
 * and `A2A-Version` travel as call metadata (spec §10.2); non-stream calls carry
 * a deadline of `requestTimeoutMs`; streams follow `stream.ts` in this folder.
 */
import { type DescMethod, type DescService } from '@bufbuild/protobuf';
import { Metadata, type Client, type ServiceError } from '@grpc/grpc-js';
import { z } from 'zod';
import { type AddressPolicyOptions, addressPolicyOf } from '../address-policy.ts';
import { DEFAULT_MAX_EVENT_SIZE_CHARS } from '../sse.ts';
import { validateWith } from '../response.ts';
import { readingAnswer } from '../answer-fault.ts';
import { checkJsonDepth, resolveLimits } from '../limits.ts';
import {
  ListTaskPushNotificationConfigsResponseSchema,
  ListTasksResponseSchema,
  SendMessageResponseSchema,
  StreamResponseSchema,
  TaskPushNotificationConfigSchema,
  TaskSchema,
  type StreamResponse,
} from '../schema.ts';
import type { A2ATransport, AgentInterface, CallOptions, EventStream, TransportOptions } from '../transport.ts';
import { GrpcChannelPool } from './channel.ts';
import { decodeToJson, encodeFromJson, GRPC_SERVICE_NAMES, methodOf, methodPath, serviceType } from './codec.ts';
import { followGrpcStream } from './stream.ts';
import { errorFromGrpc, isServiceError } from './status-table.ts';

/** `TransportOptions`, plus the address policy (else the one of a `createPolicyDispatcher` dispatcher, else none). */
export interface GrpcTransportOptions extends TransportOptions {
  addressPolicy?: AddressPolicyOptions;
}

const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;
const passBytes = (value: Buffer): Buffer => value;

/**
 * Maps how a call failed: the caller's abort → its reason; a gRPC status → its typed error (`receiveCapBytes`: our
 * cap; `requestBytes`: our request message's length, `errorFromGrpc`).
 */
function callError(error: unknown, url: string, signal: AbortSignal | undefined, receiveCapBytes: number, requestBytes: number): unknown {
  if (signal?.aborted) return signal.reason;
  return isServiceError(error) ? errorFromGrpc(error, url, receiveCapBytes, requestBytes) : error;
}

/**
 * The protocol-version-specific part of a gRPC transport: which service, and
 * how requests and answers map to and from the 1.0 model (identity for 1.0).
 */
export interface GrpcWireMapping {
  protocolVersion: '1.0' | '0.3';
  serviceName: string;
  /** Method name of the service for a 1.0 method name (0.3 named some differently). */
  methodName(name: string): string;
  /** 1.0 request params → the service's request in ProtoJSON form. */
  toRequest(name: string, params: Record<string, unknown>): unknown;
  /** The service's answer in ProtoJSON form → the 1.0 form. */
  fromResponse(name: string, json: unknown): unknown;
}

const IDENTITY_V1: GrpcWireMapping = {
  protocolVersion: '1.0',
  serviceName: GRPC_SERVICE_NAMES['1.0'],
  methodName: (name) => name,
  toRequest: (_name, params) => params,
  fromResponse: (name, json) => (name === 'ListTasks' ? { tasks: [], ...(json as object) } : json),
};

/** `A2ATransport` over gRPC; 1.0 by default, 0.3 with the mapping of `v03.ts`. Call `close()` to release connections. */
export class GrpcTransport implements A2ATransport {
  readonly binding = 'GRPC' as const;
  readonly protocolVersion: '1.0' | '0.3';
  readonly url: string;
  private readonly tenant: string | undefined;
  private readonly pool: GrpcChannelPool;
  private readonly service: DescService;
  private readonly requestTimeoutMs: number;
  private readonly idleTimeoutMs: number | undefined;
  /** Our receive cap in bytes (`grpc.max_receive_message_length`). */
  private readonly maxMessageBytes: number;

  constructor(
    agentInterface: AgentInterface,
    private readonly options: GrpcTransportOptions = {},
    private readonly mapping: GrpcWireMapping = IDENTITY_V1,
  ) {
    this.url = agentInterface.url;
    this.protocolVersion = mapping.protocolVersion;
    this.tenant = agentInterface.tenant || undefined;
    this.service = serviceType(mapping.serviceName);
    this.requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.idleTimeoutMs = options.idleTimeoutMs;
    // One protobuf message is one event: the SSE cap in characters bounds its bytes too.
    this.maxMessageBytes = options.maxEventSizeChars ?? DEFAULT_MAX_EVENT_SIZE_CHARS;
    this.pool = new GrpcChannelPool(this.url, {
      maxMessageBytes: this.maxMessageBytes,
      addressPolicy: options.addressPolicy ?? addressPolicyOf(options.dispatcher),
    });
  }

  /** Closes the connections. */
  close(): void {
    this.pool.close();
  }

  private async metadata(): Promise<Metadata> {
    const metadata = new Metadata();
    for (const [name, value] of Object.entries((await this.options.credentials?.()) ?? {})) metadata.set(name.toLowerCase(), value);
    metadata.set('a2a-version', this.protocolVersion);
    return metadata;
  }

  private prepare(name: string, params: object): { method: DescMethod; bytes: Buffer } {
    const method = methodOf(this.service, this.mapping.methodName(name));
    const withTenant = this.tenant === undefined ? params : { ...params, tenant: this.tenant };
    return { method, bytes: encodeFromJson(method.input, this.mapping.toRequest(name, withTenant as Record<string, unknown>)) };
  }

  /**
   * One answer or stream message, arrived: decoded, held to `jsonDepth` (a Struct nests as JSON does; checked on the
   * text it is validated as) and validated; whatever that throws is the answer's fault (delivery `received`).
   */
  private decode<Schema extends z.ZodType>(name: string, method: DescMethod, bytes: Buffer, schema: Schema): z.output<Schema> {
    const maxDepth = resolveLimits(this.options.limits).jsonDepth;
    return readingAnswer(`gRPC ${name} answer`, () => {
      const json = this.mapping.fromResponse(name, decodeToJson(method.output, bytes));
      const text = JSON.stringify(json);
      checkJsonDepth(text, maxDepth);
      return validateWith(schema, json, text, `gRPC ${name} answer`);
    }, maxDepth);
  }

  private async unary<Schema extends z.ZodType>(name: string, params: object, schema: Schema, options?: CallOptions): Promise<z.output<Schema>> {
    const { method, bytes } = this.prepare(name, params);
    const signal = options?.signal;
    let answer: Buffer;
    try {
      signal?.throwIfAborted();
      const [client, metadata] = await Promise.all([this.pool.client(), this.metadata()]);
      answer = await this.callUnary(client, method, bytes, metadata, signal);
    } catch (error) {
      throw callError(error, this.url, signal, this.maxMessageBytes, bytes.length);
    }
    return this.decode(name, method, answer, schema);
  }

  private callUnary(client: Client, method: DescMethod, bytes: Buffer, metadata: Metadata, signal?: AbortSignal): Promise<Buffer> {
    return new Promise<Buffer>((resolve, reject) => {
      const onAbort = (): void => call.cancel();
      const call = client.makeUnaryRequest(methodPath(method), passBytes, passBytes, bytes, metadata, { deadline: Date.now() + this.requestTimeoutMs },
        (error: ServiceError | null, value?: Buffer) => {
          signal?.removeEventListener('abort', onAbort);
          if (error) reject(error);
          else resolve(value ?? Buffer.alloc(0));
        });
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  private async *stream(name: string, params: object, options?: CallOptions): EventStream {
    const { method, bytes } = this.prepare(name, params);
    const signal = options?.signal;
    let call;
    try {
      signal?.throwIfAborted();
      const [client, metadata] = await Promise.all([this.pool.client(), this.metadata()]);
      call = client.makeServerStreamRequest(methodPath(method), passBytes, passBytes, bytes, metadata, {});
    } catch (error) {
      throw callError(error, this.url, signal, this.maxMessageBytes, bytes.length);
    }
    const decodeEvent = (event: Buffer): StreamResponse => this.decode(name, method, event, StreamResponseSchema);
    return yield* followGrpcStream(call, decodeEvent, { idleTimeoutMs: this.idleTimeoutMs, signal, source: this.url, receiveCapBytes: this.maxMessageBytes, requestBytes: bytes.length });
  }

  sendMessage: A2ATransport['sendMessage'] = (request, options) => this.unary('SendMessage', request, SendMessageResponseSchema, options);

  sendStreamingMessage: A2ATransport['sendStreamingMessage'] = (request, options) => this.stream('SendStreamingMessage', request, options);

  getTask: A2ATransport['getTask'] = (params, options) => this.unary('GetTask', params, TaskSchema, options);

  listTasks: A2ATransport['listTasks'] = (request, options) => this.unary('ListTasks', request, ListTasksResponseSchema, options);

  cancelTask: A2ATransport['cancelTask'] = (params, options) => this.unary('CancelTask', params, TaskSchema, options);

  subscribeToTask: A2ATransport['subscribeToTask'] = (params, options) => this.stream('SubscribeToTask', params, options);

  createTaskPushNotificationConfig: A2ATransport['createTaskPushNotificationConfig'] = (config, options) =>
    this.unary('CreateTaskPushNotificationConfig', config, TaskPushNotificationConfigSchema, options);

  getTaskPushNotificationConfig: A2ATransport['getTaskPushNotificationConfig'] = (params, options) =>
    this.unary('GetTaskPushNotificationConfig', params, TaskPushNotificationConfigSchema, options);

  listTaskPushNotificationConfigs: A2ATransport['listTaskPushNotificationConfigs'] = async (params, options) => {
    const result = await this.unary('ListTaskPushNotificationConfigs', params, ListTaskPushNotificationConfigsResponseSchema, options);
    return { configs: result.configs ?? [], ...(result.nextPageToken ? { nextPageToken: result.nextPageToken } : {}) };
  };

  deleteTaskPushNotificationConfig: A2ATransport['deleteTaskPushNotificationConfig'] = async (params, options) => {
    await this.unary('DeleteTaskPushNotificationConfig', params, z.unknown(), options);
  };
}
