/**
 * The client-side contract every A2A binding implements (JSON-RPC, HTTP+JSON,
 * and the 0.3 adapter). Everything crossing this interface is the 1.0 model
 * from `schema.ts`; a binding normalizes at its own edge.
 */
import type { Dispatcher } from 'undici';
import type { A2ALimits } from './limits.ts';
import type {
  ListTasksRequest,
  ListTasksResponse,
  SendMessageRequest,
  SendMessageResponse,
  StreamResponse,
  Task,
  TaskPushNotificationConfig,
  TaskState,
} from './schema.ts';

/** Wire bindings we speak (spec §8.3 AgentInterface.protocolBinding). */
export type ProtocolBinding = 'JSONRPC' | 'HTTP+JSON' | 'GRPC';
/** Protocol versions we speak (`Major.Minor`, spec §3.6). */
export type ProtocolVersion = '1.0' | '0.3';

/** Per-call options. */
export interface CallOptions {
  /** Aborts the request (and, for streams, the connection). */
  signal?: AbortSignal;
  /**
   * This call's own deadline in ms, instead of `requestTimeoutMs` (for a stream: how long its headers
   * may take). 0 = none but `signal`: for an agent that holds a send until the work is done (V2), the
   * attempt's deadline.
   */
  timeoutMs?: number;
  /**
   * Streams: this stream's own idle timeout in ms (no bytes for that long ends it), instead of the
   * transport's `idleTimeoutMs`: an agent holding a streaming send may stay silent while it works (V2).
   */
  idleTimeoutMs?: number;
  /** Streams over HTTP: a connection of its own, closed with the stream (`HttpRequest.ownConnection`); ignored by gRPC. */
  ownConnection?: boolean;
}

/** One parsed SSE event. `eventId` is the last SSE `id:` seen on the connection, if any. */
export interface StreamEvent {
  response: StreamResponse;
  eventId?: string;
}

/**
 * How a stream ended, which the follow worker acts on (spec §3.1.6, §11.7):
 * - `terminal`: the last state seen was terminal (COMPLETED, FAILED, CANCELED, REJECTED);
 * - `interrupted`: the last state seen was INPUT_REQUIRED or AUTH_REQUIRED;
 * - `incomplete`: the stream closed before either (including an empty stream, and an
 *   unterminated last event, which is discarded per the SSE standard: field case R04).
 * A stream that carried only a direct `message` reply (no task) counts as `terminal`
 * (spec §3.1.2: one message event, then close).
 */
export interface StreamEnd {
  kind: 'terminal' | 'interrupted' | 'incomplete';
  /** The last task state seen on this stream, if any. */
  lastState?: TaskState;
  /** Number of events delivered. */
  eventCount: number;
  /** Last SSE `id:` seen. */
  lastEventId?: string;
}

/**
 * An open SSE stream. Iterate it for events; the generator's return value is
 * the `StreamEnd`. Errors (typed `A2AError`s, including `StreamIdleError`) are
 * thrown from the iteration. Use `drainStream` to get both events and the end.
 */
export type EventStream = AsyncGenerator<StreamEvent, StreamEnd, void>;

/** Client side of one agent interface. All methods throw typed `A2AError`s. */
export interface A2ATransport {
  readonly binding: ProtocolBinding;
  readonly protocolVersion: ProtocolVersion;
  /** The interface URL this transport talks to. */
  readonly url: string;
  sendMessage(request: SendMessageRequest, options?: CallOptions): Promise<SendMessageResponse>;
  sendStreamingMessage(request: SendMessageRequest, options?: CallOptions): EventStream;
  getTask(params: { id: string; historyLength?: number }, options?: CallOptions): Promise<Task>;
  listTasks(request: ListTasksRequest, options?: CallOptions): Promise<ListTasksResponse>;
  cancelTask(params: { id: string; metadata?: Record<string, unknown> }, options?: CallOptions): Promise<Task>;
  subscribeToTask(params: { id: string }, options?: CallOptions): EventStream;
  createTaskPushNotificationConfig(
    config: TaskPushNotificationConfig & { taskId: string },
    options?: CallOptions,
  ): Promise<TaskPushNotificationConfig>;
  getTaskPushNotificationConfig(params: { taskId: string; id: string }, options?: CallOptions): Promise<TaskPushNotificationConfig>;
  listTaskPushNotificationConfigs(
    params: { taskId: string; pageSize?: number; pageToken?: string },
    options?: CallOptions,
  ): Promise<{ configs: TaskPushNotificationConfig[]; nextPageToken?: string }>;
  deleteTaskPushNotificationConfig(params: { taskId: string; id: string }, options?: CallOptions): Promise<void>;
}

/**
 * One entry of an agent card's `supportedInterfaces` after normalization
 * (spec §8.3 AgentInterface). `protocolBinding` and `protocolVersion` stay
 * strings because cards list bindings and versions we may not speak.
 */
export interface AgentInterface {
  /** Absolute http(s) URL of the endpoint. */
  url: string;
  /** `JSONRPC`, `HTTP+JSON`, `GRPC` or a URI. */
  protocolBinding: string;
  /** `Major.Minor`, e.g. `'1.0'` or `'0.3'`. */
  protocolVersion: string;
  /** When set, every request carries it (spec §8.3.2); empty strings are normalized away. */
  tenant?: string;
}

/** Options shared by every transport (one transport per agent interface). */
export interface TransportOptions {
  /** The agent's credential headers, fetched per request (see `credentials.ts`). */
  credentials?: () => Promise<Record<string, string>>;
  /** undici dispatcher; default one process-wide `Agent`. */
  dispatcher?: Dispatcher;
  /** Deadline of a non-stream call, and of a stream's response headers. Default 30_000. */
  requestTimeoutMs?: number;
  /** Stream idle watchdog: longest wait for any byte. Default 60_000. */
  idleTimeoutMs?: number;
  /** Largest SSE event in characters. Default 8 Mi. */
  maxEventSizeChars?: number;
  /** Input limits (`limits.ts`): body, SSE event, parts, JSON depth. Default `DEFAULT_A2A_LIMITS`. */
  limits?: Partial<A2ALimits>;
}
