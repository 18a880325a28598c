/**
 * `@durable-a2a/a2a/pure`: the A2A data model without I/O: the zod schemas and types of the 1.0 model, task-state
 * predicates, Agent Card URL spelling, input limits and the error table. It loads no HTTP client, transport or
 * node built-in, so pure code (a decision function, a browser view) can import it. The main entry exports the same
 * objects.
 */
export {
  A2AError,
  A2A_CLIENT_ERROR_CODES,
  type A2AClientErrorCode,
  type Delivery,
  LimitExceededError,
  type LimitName,
  deliveryOf,
  isRetryable,
} from './errors.ts';
export { type A2ALimits, A2ALimitsSchema, DEFAULT_A2A_LIMITS, STATUS_MESSAGE_BYTES_MIN, ARTIFACT_ENTRY_BYTES, artifactByteSize, artifactEntryBytes, resolveLimits, storedArtifact } from './limits.ts';
export { AGENT_CARD_PATH, agentKeyOf, cardUrlOf, isHttpUrl } from './card-url.ts';
export { JsonObjectSchema } from './proto-names.ts';
export { historyHolds, taskShownOurs, type ShownOursOptions } from './ownership.ts';
export {
  ArtifactSchema,
  type Artifact,
  MessageSchema,
  type Message,
  PartSchema,
  type Part,
  type Role,
  type StreamResponse,
  TASK_STATES,
  type Task,
  type TaskArtifactUpdateEvent,
  TaskStateSchema,
  type TaskState,
  type TaskStatus,
  type TaskStatusUpdateEvent,
  isInterruptedTaskState,
  isTerminalTaskState,
} from './schema.ts';
