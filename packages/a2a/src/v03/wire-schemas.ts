/**
 * The A2A 0.3 JSON-RPC wire model (spec v0.3.0 §6: `kind`-tagged parts and events, lower-case
 * states and roles, `final` on status updates), as zod schemas that read every spelling agents send
 * (`spelling.ts`, `shape.ts`). Unknown fields are stripped (spec §5.7). Conversion to and from the
 * 1.0 model is wire.ts.
 */
import { z } from 'zod';
import { OptionalWireIdSchema, WireIdSchema } from '../wire-id.ts';
import { JsonObjectSchema } from '../proto-names.ts';
import type { TaskState } from '../schema.ts';
import { partToV03Shape, readableList, salvageStatusMessage, salvageTimestamp, toKindTagged } from '../shape.ts';
import { WireRoleSchema, WireTaskStateSchema } from '../spelling.ts';

const MetadataSchema = JsonObjectSchema;

/** 0.3 TaskState (spec v0.3.0 §6.3); `unknown` has no 1.0 twin but UNSPECIFIED. */
export const TASK_STATES_V03 = ['submitted', 'working', 'input-required', 'completed', 'canceled', 'failed', 'rejected', 'auth-required', 'unknown'] as const;
export type TaskStateV03 = (typeof TASK_STATES_V03)[number];

const STATE_TO_V1: Readonly<Record<TaskStateV03, TaskState>> = {
  submitted: 'TASK_STATE_SUBMITTED',
  working: 'TASK_STATE_WORKING',
  'input-required': 'TASK_STATE_INPUT_REQUIRED',
  completed: 'TASK_STATE_COMPLETED',
  canceled: 'TASK_STATE_CANCELED',
  failed: 'TASK_STATE_FAILED',
  rejected: 'TASK_STATE_REJECTED',
  'auth-required': 'TASK_STATE_AUTH_REQUIRED',
  unknown: 'TASK_STATE_UNSPECIFIED',
};
const STATE_TO_V03 = Object.fromEntries(Object.entries(STATE_TO_V1).map(([v03, v1]) => [v1, v03])) as Record<TaskState, TaskStateV03>;

export const stateFromV03 = (state: TaskStateV03): TaskState => STATE_TO_V1[state];
export const stateToV03 = (state: TaskState): TaskStateV03 => STATE_TO_V03[state];

/** A 0.3 state in any spelling agents send (1.0 names, kebab, snake, ...; `spelling.ts`, R26) → the 0.3 value. */
const WireStateV03Schema = WireTaskStateSchema.transform(stateToV03);
/** A 0.3 role in any spelling (`user`, `ROLE_AGENT`, ...) → `user` | `agent`; ROLE_UNSPECIFIED reads as `user`. */
const WireRoleV03Schema = WireRoleSchema.transform((role): 'user' | 'agent' => (role === 'ROLE_AGENT' ? 'agent' : 'user'));

const FileV03Schema = z
  .object({ uri: z.string().optional(), bytes: z.string().optional(), mimeType: z.string().optional(), name: z.string().optional() })
  .refine((file) => (file.uri === undefined) !== (file.bytes === undefined), { message: 'a 0.3 file carries exactly one of uri or bytes' });

/** A 0.3 part; an untagged 1.0 part (`{text}`, `{url}`, ...) is read as its 0.3 twin. */
export const PartV03Schema = z.preprocess(partToV03Shape, z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('text'), text: z.string(), metadata: MetadataSchema.optional() }),
  z.object({ kind: z.literal('file'), file: FileV03Schema, metadata: MetadataSchema.optional() }),
  z.object({ kind: z.literal('data'), data: JsonObjectSchema, metadata: MetadataSchema.optional() }),
]));
export type PartV03 = z.infer<typeof PartV03Schema>;

export const MessageV03Schema = z.object({
  kind: z.literal('message').optional(),
  messageId: WireIdSchema,
  role: WireRoleV03Schema,
  parts: z.array(PartV03Schema),
  contextId: OptionalWireIdSchema,
  taskId: OptionalWireIdSchema,
  metadata: MetadataSchema.optional(),
  extensions: z.array(z.string()).optional(),
  referenceTaskIds: z.array(z.string()).optional(),
});
export type MessageV03 = z.infer<typeof MessageV03Schema>;

/** 0.3 TaskStatus (spec v0.3.0 §6.2): state in any spelling, optional message and timestamp. */
export const TaskStatusV03Schema = z.object({
  state: WireStateV03Schema,
  // Informational: a bare string is salvaged, an unreadable message dropped; never the whole answer (A37).
  message: z.preprocess((value) => salvageStatusMessage(value, '0.3'), MessageV03Schema.optional().catch(undefined)),
  timestamp: z.preprocess(salvageTimestamp, z.string().optional()),
});

/** 0.3 Artifact (spec v0.3.0 §6.7). */
export const ArtifactV03Schema = z.object({
  artifactId: WireIdSchema,
  name: z.string().optional(),
  description: z.string().optional(),
  parts: z.array(PartV03Schema),
  metadata: MetadataSchema.optional(),
  extensions: z.array(z.string()).optional(),
});

/** `kind` is optional here so a lenient agent's GetTask answer still parses; events require it. */
export const TaskV03Schema = z.object({
  kind: z.literal('task').optional(),
  id: WireIdSchema,
  contextId: OptionalWireIdSchema,
  status: TaskStatusV03Schema,
  artifacts: z.array(ArtifactV03Schema).optional(),
  // Informational: an entry that does not parse is dropped, never the whole answer.
  history: readableList(MessageV03Schema),
  metadata: MetadataSchema.optional(),
});
export type TaskV03 = z.infer<typeof TaskV03Schema>;

export const StatusUpdateV03Schema = z.object({
  kind: z.literal('status-update'),
  taskId: WireIdSchema,
  contextId: OptionalWireIdSchema,
  status: TaskStatusV03Schema,
  /** 0.3 only: the last event of this stream (removed in 1.0, A2A#1308). */
  final: z.boolean().optional(),
  metadata: MetadataSchema.optional(),
});

export const ArtifactUpdateV03Schema = z.object({
  kind: z.literal('artifact-update'),
  taskId: WireIdSchema,
  contextId: OptionalWireIdSchema,
  artifact: ArtifactV03Schema,
  append: z.boolean().optional(),
  lastChunk: z.boolean().optional(),
  metadata: MetadataSchema.optional(),
});

/**
 * A stream event, a push body, or a `message/send` result: the object itself, told apart by `kind`.
 * An untagged object whose members leave no doubt, or a 1.0 wrapper, is read too (`shape.ts`, V1/V4).
 */
export const EventV03Schema = z.preprocess(toKindTagged, z.discriminatedUnion('kind', [
  TaskV03Schema.extend({ kind: z.literal('task') }),
  MessageV03Schema.extend({ kind: z.literal('message') }),
  StatusUpdateV03Schema,
  ArtifactUpdateV03Schema,
]));
export type EventV03 = z.infer<typeof EventV03Schema>;

/** `message/send` result: Task or Message (spec v0.3.0 §7.1); without `kind` read by its members (V1). */
export const SendResultV03Schema = z.preprocess(toKindTagged, z.discriminatedUnion('kind', [
  TaskV03Schema.extend({ kind: z.literal('task') }),
  MessageV03Schema.extend({ kind: z.literal('message') }),
]));

/** 0.3 PushNotificationConfig (spec v0.3.0 §6.8); `authentication.schemes` is a list. */
export const PushConfigV03Schema = z.object({
  id: OptionalWireIdSchema,
  url: z.string(),
  token: z.string().optional(),
  authentication: z.object({ schemes: z.array(z.string()), credentials: z.string().optional() }).optional(),
});
export type PushConfigV03 = z.infer<typeof PushConfigV03Schema>;

export const TaskPushConfigV03Schema = z.object({ taskId: z.string(), pushNotificationConfig: PushConfigV03Schema });
export type TaskPushConfigV03 = z.infer<typeof TaskPushConfigV03Schema>;
