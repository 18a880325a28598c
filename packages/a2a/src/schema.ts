/**
 * Zod schemas for the A2A 1.0 wire model (ProtoJSON: camelCase names, enums as
 * strings), spec §5.5 / `lf.a2a.v1` in a2a.proto. Every field the spec marks
 * optional is optional here, because the @a2a-js/sdk omits empty and default
 * fields. Unknown fields are stripped (spec §5.7: SHOULD ignore unknown fields).
 */
import { z } from 'zod';
import { OptionalWireIdSchema, WireIdSchema } from './wire-id.ts';
import { ROLES, TASK_STATES } from './enums.ts';
import { partToV1Shape, readableList, salvageStatusMessage, salvageTimestamp, toBareTask, toWrappedResponse } from './shape.ts';
import { WireRoleSchema, WireTaskStateSchema } from './spelling.ts';
import { JsonObjectSchema, protoJsonObject } from './proto-names.ts';

/** Task states, in proto order (spec §5.5 TaskState). Kept in `enums.ts` so `spelling.ts` can read them without a cycle. */
export { TASK_STATES };
/** A task state in the 1.0 spelling (`TASK_STATE_…`); agents' other spellings are read by the wire schemas. */
export const TaskStateSchema = z.enum(TASK_STATES);
/** One of `TASK_STATES`. */
export type TaskState = z.infer<typeof TaskStateSchema>;

/** States after which a task never changes again (spec §3.1.1, "Task Immutability"). */
export const TERMINAL_TASK_STATES: ReadonlySet<TaskState> = new Set([
  'TASK_STATE_COMPLETED',
  'TASK_STATE_FAILED',
  'TASK_STATE_CANCELED',
  'TASK_STATE_REJECTED',
]);
/** States where the agent waits for the client (spec §3.4, §7.6). */
export const INTERRUPTED_TASK_STATES: ReadonlySet<TaskState> = new Set([
  'TASK_STATE_INPUT_REQUIRED',
  'TASK_STATE_AUTH_REQUIRED',
]);
/** `true` for COMPLETED, FAILED, CANCELED and REJECTED: the task never changes again. */
export const isTerminalTaskState = (state: TaskState): boolean => TERMINAL_TASK_STATES.has(state);
/** `true` for INPUT_REQUIRED and AUTH_REQUIRED: the agent waits for the client. */
export const isInterruptedTaskState = (state: TaskState): boolean => INTERRUPTED_TASK_STATES.has(state);

/** Who wrote a message: `ROLE_USER` (the client) or `ROLE_AGENT` (spec §5.5 Role). */
export const RoleSchema = z.enum(ROLES);
/** One of `RoleSchema`'s values. */
export type Role = z.infer<typeof RoleSchema>;

/** A `metadata` object, kept as given (`JsonObjectSchema`). */
const MetadataSchema = JsonObjectSchema;

/** A Part is a oneof: exactly one of `text`, `raw` (base64), `url`, `data` (spec §5.5 Part). A 0.3 `{kind:'file'}` part is read too. */
export const PartSchema = z.preprocess(partToV1Shape, protoJsonObject(z
  .object({
    text: z.string().optional(),
    raw: z.string().optional(),
    url: z.string().optional(),
    data: z.unknown().optional(),
    mediaType: z.string().optional(),
    filename: z.string().optional(),
    metadata: MetadataSchema.optional(),
  }))
  .refine(
    (part) => [part.text, part.raw, part.url, part.data].filter((value) => value !== undefined).length === 1,
    { message: 'a Part carries exactly one of text, raw, url or data' },
  ));
/** One part of a message or artifact: text, file or data (spec §5.5 Part). */
export type Part = z.infer<typeof PartSchema>;

/** Message (spec §5.5). `contextId` and `taskId` are optional on client messages. `role` in any spelling (`spelling.ts`). */
export const MessageSchema = protoJsonObject(z.object({
  messageId: WireIdSchema,
  contextId: OptionalWireIdSchema,
  taskId: OptionalWireIdSchema,
  role: WireRoleSchema,
  parts: z.array(PartSchema),
  metadata: MetadataSchema.optional(),
  extensions: z.array(z.string()).optional(),
  referenceTaskIds: z.array(z.string()).optional(),
}));
/** One message (spec §5.5 Message); `messageId` identifies it for deduplication. */
export type Message = z.infer<typeof MessageSchema>;

/** TaskStatus; `timestamp` is ISO 8601 UTC (spec §5.6.1). `state` in any spelling agents send (`spelling.ts`, R26). */
export const TaskStatusSchema = z.object({
  state: WireTaskStateSchema,
  // Informational: a bare string is salvaged, an unreadable message dropped; never the whole answer (A37).
  message: z.preprocess((value) => salvageStatusMessage(value, '1.0'), MessageSchema.optional().catch(undefined)),
  timestamp: z.preprocess(salvageTimestamp, z.string().optional()),
});
/** A task's state, its optional status message and when it was set. */
export type TaskStatus = z.infer<typeof TaskStatusSchema>;

/** An artifact (spec §5.5 Artifact): an output of a task, keyed by `artifactId`. */
export const ArtifactSchema = protoJsonObject(z.object({
  artifactId: WireIdSchema,
  name: z.string().optional(),
  description: z.string().optional(),
  parts: z.array(PartSchema),
  metadata: MetadataSchema.optional(),
  extensions: z.array(z.string()).optional(),
}));
/** See `ArtifactSchema`. */
export type Artifact = z.infer<typeof ArtifactSchema>;

/** A task (spec §5.5 Task): id, context, status, artifacts and history. */
export const TaskSchema = protoJsonObject(z.object({
  id: WireIdSchema,
  contextId: OptionalWireIdSchema,
  status: TaskStatusSchema,
  artifacts: z.array(ArtifactSchema).optional(),
  // Informational: an entry that does not parse is dropped, never the whole answer.
  history: readableList(MessageSchema),
  metadata: MetadataSchema.optional(),
}));
/** See `TaskSchema`. */
export type Task = z.infer<typeof TaskSchema>;

/** The result of GetTask / CancelTask: a bare Task (spec §3.1.3), or one wrapped as `{task}` by a lenient agent. */
export const TaskResultSchema = z.preprocess(toBareTask, TaskSchema);

/** 1.0 status update: no `final` flag; the stream closing ends it (spec §5.5, A2A#1308). */
export const TaskStatusUpdateEventSchema = protoJsonObject(z.object({
  taskId: WireIdSchema,
  // Required by the spec, but agents send "" or omit it (field case R16): events are keyed by taskId.
  contextId: OptionalWireIdSchema,
  status: TaskStatusSchema,
  metadata: MetadataSchema.optional(),
}));
/** See `TaskStatusUpdateEventSchema`. */
export type TaskStatusUpdateEvent = z.infer<typeof TaskStatusUpdateEventSchema>;

/** `append:true` adds parts to the artifact with the same id; `lastChunk:true` seals it. */
export const TaskArtifactUpdateEventSchema = protoJsonObject(z.object({
  taskId: WireIdSchema,
  contextId: OptionalWireIdSchema,
  artifact: ArtifactSchema,
  append: z.boolean().optional(),
  lastChunk: z.boolean().optional(),
  metadata: MetadataSchema.optional(),
}));
/** See `TaskArtifactUpdateEventSchema`. */
export type TaskArtifactUpdateEvent = z.infer<typeof TaskArtifactUpdateEventSchema>;

/**
 * StreamResponse: exactly one member (spec §5.5). Used by streams and push bodies. A bare or
 * `kind`-tagged Task, Message or update is read as its member (`shape.ts`, V1/V4).
 */
export const StreamResponseSchema = z.preprocess(toWrappedResponse, z.union([
  z.object({ task: TaskSchema }),
  z.object({ message: MessageSchema }),
  z.object({ statusUpdate: TaskStatusUpdateEventSchema }),
  z.object({ artifactUpdate: TaskArtifactUpdateEventSchema }),
]));
/** One stream event: `{ task }`, `{ message }`, `{ statusUpdate }` or `{ artifactUpdate }`. */
export type StreamResponse = z.infer<typeof StreamResponseSchema>;

/** SendMessageResponse: `{task}` or `{message}` (spec §3.1.1); a bare Task or Message is read as its member (V1). */
export const SendMessageResponseSchema = z.preprocess(toWrappedResponse, z.union([
  z.object({ task: TaskSchema }),
  z.object({ message: MessageSchema }),
]));
/** The answer to SendMessage: `{ task }` or, for a direct reply, `{ message }`. */
export type SendMessageResponse = z.infer<typeof SendMessageResponseSchema>;

/** How the agent authenticates its push notifications to us (spec §5.5 AuthenticationInfo). */
export const AuthenticationInfoSchema = z.object({
  scheme: z.string(),
  credentials: z.string().optional(),
});

/** TaskPushNotificationConfig (spec §4.3.3). `taskId` is left empty inside SendMessageConfiguration. */
export const TaskPushNotificationConfigSchema = protoJsonObject(z.object({
  tenant: z.string().optional(),
  // The agent's id for the config: journaled and sent back by Delete, so held to the wire's id rule.
  id: OptionalWireIdSchema,
  taskId: OptionalWireIdSchema,
  url: z.string(),
  token: z.string().optional(),
  authentication: AuthenticationInfoSchema.optional(),
}));
/** See `TaskPushNotificationConfigSchema`. */
export type TaskPushNotificationConfig = z.infer<typeof TaskPushNotificationConfigSchema>;

/** The answer to ListTaskPushNotificationConfigs: one page of configs. */
export const ListTaskPushNotificationConfigsResponseSchema = protoJsonObject(z.object({
  configs: z.array(TaskPushNotificationConfigSchema).optional(),
  nextPageToken: z.string().optional(),
}));

/** SendMessageConfiguration (spec §3.2.2); `returnImmediately` defaults to false (blocking). */
export interface SendMessageConfiguration {
  acceptedOutputModes?: string[];
  taskPushNotificationConfig?: TaskPushNotificationConfig;
  historyLength?: number;
  returnImmediately?: boolean;
}

/** SendMessageRequest (spec §3.2.1). */
export interface SendMessageRequest {
  tenant?: string;
  message: Message;
  configuration?: SendMessageConfiguration;
  metadata?: Record<string, unknown>;
}

/** ListTasksRequest (spec §3.1.4). `statusTimestampAfter` is ISO 8601; pageSize 1..100. */
export interface ListTasksRequest {
  contextId?: string;
  status?: TaskState;
  pageSize?: number;
  pageToken?: string;
  historyLength?: number;
  statusTimestampAfter?: string;
  includeArtifacts?: boolean;
}

/** ListTasksResponse. `nextPageToken` is required by the spec but missing in some agents (R15): absent = last page. */
export const ListTasksResponseSchema = protoJsonObject(z.object({
  tasks: z.array(TaskSchema),
  nextPageToken: z.string().optional(),
  pageSize: z.number().optional(),
  totalSize: z.number().optional(),
}));
/** See `ListTasksResponseSchema`. */
export type ListTasksResponse = z.infer<typeof ListTasksResponseSchema>;
