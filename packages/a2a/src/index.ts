/** Public surface of the A2A client layer (1.0, plus the 0.3 adapter registered on import). */
export {
  A2AError,
  A2A_ERROR_TABLE,
  A2A_CLIENT_ERROR_CODES,
  type A2AClientErrorCode,
  AuthenticationError,
  ConflictError,
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
  sendEffectOf,
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
  resolveLimits,
} from './limits.ts';

export { roleFromWire, taskStateFromWire } from './spelling.ts';

export {
  type Ownership,
  eventOwnership,
  isTaskOurs,
  taskOwnership,
} from './ownership.ts';
export { errorFromHttp, errorFromJsonRpc } from './error-mapping.ts';
export {
  type CredentialsProvider,
  type RefreshingTokenOptions,
  apiKeyHeader,
  bearerToken,
  refreshingToken,
} from './credentials.ts';
export { DEFAULT_REQUEST_TIMEOUT_MS } from './http.ts';
export {
  type AddressCategory,
  type AddressPolicyOptions,
  BlockedAddressError,
  type ResolvedAddress,
  checkUrl,
  classifyAddress,
  createPolicyDispatcher,
} from './address-policy.ts';
export {
  type SseMessage,
  type SseReaderOptions,
  readServerSentEvents,
} from './sse.ts';
export { drainStream } from './stream.ts';
export {
  type AgentCard,
  AGENT_CARD_PATH,
  AgentCardError,
  agentKeyOf,
  normalizeAgentCardUrl,
  type FetchAgentCardOptions,
  createAgentCardCache,
  fetchAgentCard,
  normalizeAgentCard,
  selectInterface,
} from './card.ts';
export { JsonRpcTransport } from './jsonrpc.ts';
export { RestTransport } from './rest.ts';
export { createTransport, isInterfaceSupported, registerTransport } from './client.ts';
// Imported for its side effect too: registers the 0.3 transports.
export { JsonRpcV03Transport, RestV03Transport } from './v03/index.ts';
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
export { RETRY_INFO_TYPE_URL, retryAfterOfData, retryAfterOfHeader, retryAfterOfRetryInfo } from './retry-after.ts';
