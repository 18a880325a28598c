/** Public surface of the A2A client layer (1.0, plus the 0.3 adapter registered on import). */
export {
  A2AError,
  type A2AErrorDetails,
  A2A_ERROR_TABLE,
  type ErrorTableRow,
  AuthenticationError,
  ContentTypeNotSupportedError,
  ExtendedAgentCardNotConfiguredError,
  ExtensionSupportRequiredError,
  InternalAgentError,
  InvalidAgentResponseError,
  InvalidParamsError,
  InvalidRequestError,
  JsonRpcParseError,
  MethodNotFoundError,
  NetworkError,
  ProtocolError,
  PushNotificationNotSupportedError,
  StreamIdleError,
  TaskNotCancelableError,
  TaskNotFoundError,
  UnsupportedOperationError,
  UpstreamError,
  VersionNotSupportedError,
  isRetryable,
  type Delivery,
  deliveryOf,
  withDelivery,
  LimitExceededError,
  type LimitName,
  ResponseIdMismatchError,
  UnknownWireValueError,
} from './errors.ts';
export {
  type A2ALimits,
  A2ALimitsSchema,
  DEFAULT_A2A_LIMITS,
  artifactByteSize,
  checkJsonDepth,
  checkResponseParts,
  checkTaskParts,
  resolveLimits,
} from './limits.ts';
export { withPartLimit } from './bounded-transport.ts';
export { WireRoleSchema, WireTaskStateSchema, roleFromWire, taskStateFromWire } from './spelling.ts';
export { type EventKind, eventKindOf, toBareTask, toKindTagged, toWrappedResponse } from './shape.ts';
export {
  type Ownership,
  type OwnershipExpectation,
  type TaskSource,
  eventContextId,
  eventNamesTask,
  eventOwnership,
  eventTaskId,
  historyHolds,
  isTaskOurs,
  taskOwnership,
} from './ownership.ts';
export { errorFromHttp, errorFromJsonRpc } from './error-mapping.ts';
export {
  type CredentialsProvider,
  type IssuedToken,
  type RefreshingTokenOptions,
  apiKeyHeader,
  bearerToken,
  refreshingToken,
} from './credentials.ts';
export { DEFAULT_REQUEST_TIMEOUT_MS, readLimitedText } from './http.ts';
export {
  type AddressCategory,
  type AddressPolicyOptions,
  BlockedAddressError,
  type BlockedCategory,
  type ResolvedAddress,
  type ValidatedAddress,
  checkUrl,
  classifyAddress,
  createPolicyDispatcher,
} from './address-policy.ts';
export {
  DEFAULT_IDLE_TIMEOUT_MS,
  DEFAULT_MAX_EVENT_SIZE_CHARS,
  type SseMessage,
  type SseReaderOptions,
  readServerSentEvents,
} from './sse.ts';
export { drainStream } from './stream.ts';
export {
  AGENT_CARD_PATH,
  type AgentCard,
  type AgentCardCache,
  AgentCardError,
  type AgentCardRejection,
  type CachedAgentCard,
  type FetchAgentCardOptions,
  type InterfaceSelection,
  createAgentCardCache,
  fetchAgentCard,
  normalizeAgentCard,
  selectInterface,
} from './card.ts';
export { JsonRpcTransport, type JsonRpcId, checkResponseId } from './jsonrpc.ts';
export { RestTransport } from './rest.ts';
export { type TransportFactory, createTransport, isInterfaceSupported, registerTransport } from './client.ts';
// Imported for its side effect too: registers the 0.3 transports.
export { A2A_VERSION_V03, JSON_RPC_METHODS_V03, JsonRpcV03Transport, REST_V03_PREFIX, RestV03Transport } from './v03/index.ts';
// Imported for its side effect too: registers the gRPC transport.
export { GrpcTransport, type GrpcTransportOptions } from './grpc/index.ts';
export { normalizePushBody } from './push.ts';
export type {
  A2ATransport,
  AgentInterface,
  CallOptions,
  EventStream,
  ProtocolBinding,
  ProtocolVersion,
  StreamEnd,
  StreamEvent,
  TransportOptions,
} from './transport.ts';
export {
  ArtifactSchema,
  type Artifact,
  AuthenticationInfoSchema,
  INTERRUPTED_TASK_STATES,
  ListTaskPushNotificationConfigsResponseSchema,
  ListTasksResponseSchema,
  type ListTasksRequest,
  type ListTasksResponse,
  MessageSchema,
  type Message,
  PartSchema,
  type Part,
  RoleSchema,
  type Role,
  SendMessageResponseSchema,
  type SendMessageConfiguration,
  type SendMessageRequest,
  type SendMessageResponse,
  StreamResponseSchema,
  type StreamResponse,
  TASK_STATES,
  TERMINAL_TASK_STATES,
  TaskArtifactUpdateEventSchema,
  type TaskArtifactUpdateEvent,
  TaskPushNotificationConfigSchema,
  type TaskPushNotificationConfig,
  TaskSchema,
  TaskResultSchema,
  type Task,
  TaskStateSchema,
  type TaskState,
  TaskStatusSchema,
  type TaskStatus,
  TaskStatusUpdateEventSchema,
  type TaskStatusUpdateEvent,
  isInterruptedTaskState,
  isTerminalTaskState,
} from './schema.ts';
