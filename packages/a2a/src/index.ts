/**
 * `@durable-a2a/a2a`: a resilient A2A (Agent2Agent) client. Fetch an Agent Card, choose an interface, build a
 * transport from the factories you pass (`defaultTransports`: JSON-RPC and HTTP+JSON, A2A 1.0 and 0.3; gRPC from
 * `@durable-a2a/a2a/grpc`), then send, follow and read tasks. Every failure is a typed `A2AError` that says whether
 * it is retryable and whether the request reached the agent (`deliveryOf`). Nothing registers itself on import.
 *
 * ```ts
 * import { createTransport, defaultTransports, fetchAgentCard, selectInterface } from '@durable-a2a/a2a';
 * const card = await fetchAgentCard('https://agent.example.com');
 * const agentInterface = selectInterface(card, { transports: defaultTransports });
 * const transport = createTransport(agentInterface!, { transports: defaultTransports });
 * const answer = await transport.sendMessage({ message: { messageId: crypto.randomUUID(), role: 'ROLE_USER', parts: [{ text: 'hi' }] } });
 * ```
 *
 * Names are listed one by one; `@durable-a2a/a2a/pure` holds the model without I/O.
 */
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
  taskNotFoundProven,
  operationUnsupportedProven,
  type SentRequest,
  LimitExceededError,
  type LimitName,
  ResponseIdMismatchError,
  RequestTooLargeError,
  UnknownWireValueError,
} from './errors.ts';
export {
  type A2ALimits,
  A2ALimitsSchema,
  DEFAULT_A2A_LIMITS,
  STATUS_MESSAGE_BYTES_MIN,
  ARTIFACT_ENTRY_BYTES,
  artifactByteSize,
  artifactEntryBytes,
  checkJsonDepth,
  checkResponseParts,
  resolveLimits,
  storedArtifact,
} from './limits.ts';
export { answerFault, isRuntimeFault, readingAnswer } from './answer-fault.ts';

export { roleFromWire, taskStateFromWire } from './spelling.ts';
export { CONTENT_CODINGS, MAX_CONTENT_CODINGS, contentCodingsOf, decodeContentCoding } from './content-coding.ts';
export { MAX_TIMER_DELAY_MS, setLongTimeout, type LongTimeout } from './long-timer.ts';

export {
  type Ownership,
  eventOwnership,
  historyHolds,
  isTaskOurs,
  type ShownOursOptions,
  taskOwnership,
  taskShownOurs,
} from './ownership.ts';
export { errorFromHttp, errorFromJsonRpc } from './error-mapping.ts';
export {
  type CredentialsProvider,
  type RefreshingTokenOptions,
  apiKeyHeader,
  bearerToken,
  refreshingToken,
} from './credentials.ts';
export { DEFAULT_REQUEST_TIMEOUT_MS, readLimitedText } from './http.ts';
export {
  ADDRESS_POLICY_VARIABLES,
  type AddressPolicyEnvironment,
  addressPolicyFrom,
  ALLOWING_OPTION,
  type AddressCategory,
  type AddressPolicyOptions,
  BlockedAddressError,
  type BlockedCategory,
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
  type AgentCardCache,
  type AgentCardRejection,
  type CachedAgentCard,
  AGENT_CARD_CACHE_BYTES,
  AGENT_CARD_PATH,
  AgentCardError,
  blockedCause,
  agentKeyOf,
  normalizeAgentCardUrl,
  type FetchAgentCardOptions,
  createAgentCardCache,
  fetchAgentCard,
  normalizeAgentCard,
  type InterfaceSelection,
  selectInterface,
} from './card.ts';
export { cardUrlOf, isHttpUrl } from './card-url.ts';
export { JsonObjectSchema } from './proto-names.ts';
export { JsonRpcTransport } from './jsonrpc.ts';
export { RestTransport } from './rest.ts';
export {
  type CreateTransportOptions,
  type TransportFactory,
  createTransport,
  defaultTransports,
  isInterfaceSupported,
  transportFactoryFor,
} from './client.ts';
export { JsonRpcV03Transport, RestV03Transport } from './v03/index.ts';
export { traceContextHeaders } from './trace-context.ts';
export { normalizePushBody, pushBodyHoldsMessage, pushBodyNamesOverLongId, pushedTaskIdOf } from './push.ts';
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
export { WIRE_ID_BYTES_MAX } from './wire-id.ts';
export { RETRY_INFO_TYPE_URL, retryAfterOfData, retryAfterOfHeader, retryAfterOfRetryInfo } from './retry-after.ts';
