// Public surface of @durable-a2a/shared. Names are listed one by one.
export {
  TASK_STATES,
  TERMINAL_TASK_STATES,
  INTERRUPTED_TASK_STATES,
  isTerminalTaskState,
  isInterruptedTaskState,
  TaskStateSchema,
  RoleSchema,
  PartSchema,
  MessageSchema,
  TaskStatusSchema,
  ArtifactSchema,
  TaskSchema,
  TaskStatusUpdateEventSchema,
  TaskArtifactUpdateEventSchema,
  StreamResponseSchema,
  SendMessageResponseSchema,
  TaskPushNotificationConfigSchema,
  ListTasksResponseSchema,
} from './a2a/schema.ts';
export type {
  TaskState,
  Role,
  Part,
  Message,
  TaskStatus,
  Artifact,
  Task,
  TaskStatusUpdateEvent,
  TaskArtifactUpdateEvent,
  StreamResponse,
  SendMessageResponse,
  TaskPushNotificationConfig,
  SendMessageConfiguration,
  SendMessageRequest,
  ListTasksRequest,
  ListTasksResponse,
} from './a2a/schema.ts';
export type { A2ATransport, CallOptions, EventStream, StreamEnd, StreamEvent, ProtocolBinding, ProtocolVersion } from './a2a/transport.ts';

export { Journal } from './journal/journal.ts';
export type { DelegationRef, StatusChange, StatusChangeResult, JournalOptions } from './journal/journal.ts';
export { JournalError, JOURNAL_ERROR_CODES } from './journal/errors.ts';
export type { JournalErrorCode } from './journal/errors.ts';
export { journalKeys, indexMember, parseIndexMember, ID_PATTERN, DEFAULT_PREFIX } from './journal/keys.ts';
export type { JournalKeys } from './journal/keys.ts';
export { JOURNAL_STATES, FINISHED_STATES, PARKED_STATES, isFinished, isParked, journalStateOf, taskStateOf } from './journal/states.ts';
export type { JournalState } from './journal/states.ts';
export {
  DelegationRecordSchema,
  AgentInterfaceRefSchema,
  OutgoingMessageSchema,
  RecordedErrorSchema,
  parseArtifacts,
} from './journal/record.ts';
export type { DelegationRecord, DelegationView, AgentInterfaceRef, OutgoingMessage, RecordedError } from './journal/record.ts';
