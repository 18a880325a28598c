/**
 * The A2A 0.3 JSON-RPC wire model (spec v0.3.0 §6: `kind`-tagged parts and
 * events, lower-case states and roles, `final` on status updates) and its
 * conversion to and from the 1.0 model in `schema.ts`. Nothing past a 0.3
 * transport ever sees a 0.3 shape. Unknown fields are stripped (spec §5.7).
 */
import { z } from 'zod';
import { InvalidParamsError } from '../errors.ts';
import type {
  Artifact,
  Message,
  Part,
  SendMessageRequest,
  StreamResponse,
  Task,
  TaskPushNotificationConfig,
  TaskState,
  TaskStatus,
} from '../schema.ts';
import { partToV03Shape, toKindTagged } from '../shape.ts';
import { WireRoleSchema, WireTaskStateSchema } from '../spelling.ts';

const MetadataSchema = z.record(z.string(), z.unknown());

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
  z.object({ kind: z.literal('data'), data: z.record(z.string(), z.unknown()), metadata: MetadataSchema.optional() }),
]));
export type PartV03 = z.infer<typeof PartV03Schema>;

export const MessageV03Schema = z.object({
  kind: z.literal('message').optional(),
  messageId: z.string().min(1),
  role: WireRoleV03Schema,
  parts: z.array(PartV03Schema),
  contextId: z.string().optional(),
  taskId: z.string().optional(),
  metadata: MetadataSchema.optional(),
  extensions: z.array(z.string()).optional(),
  referenceTaskIds: z.array(z.string()).optional(),
});
export type MessageV03 = z.infer<typeof MessageV03Schema>;

const TaskStatusV03Schema = z.object({
  state: WireStateV03Schema,
  message: MessageV03Schema.optional(),
  timestamp: z.string().optional(),
});

const ArtifactV03Schema = z.object({
  artifactId: z.string().min(1),
  name: z.string().optional(),
  description: z.string().optional(),
  parts: z.array(PartV03Schema),
  metadata: MetadataSchema.optional(),
  extensions: z.array(z.string()).optional(),
});

/** `kind` is optional here so a lenient agent's GetTask answer still parses; events require it. */
export const TaskV03Schema = z.object({
  kind: z.literal('task').optional(),
  id: z.string().min(1),
  contextId: z.string().optional(),
  status: TaskStatusV03Schema,
  artifacts: z.array(ArtifactV03Schema).optional(),
  history: z.array(MessageV03Schema).optional(),
  metadata: MetadataSchema.optional(),
});
export type TaskV03 = z.infer<typeof TaskV03Schema>;

export const StatusUpdateV03Schema = z.object({
  kind: z.literal('status-update'),
  taskId: z.string().min(1),
  contextId: z.string().optional(),
  status: TaskStatusV03Schema,
  /** 0.3 only: the last event of this stream (removed in 1.0, A2A#1308). */
  final: z.boolean().optional(),
  metadata: MetadataSchema.optional(),
});

export const ArtifactUpdateV03Schema = z.object({
  kind: z.literal('artifact-update'),
  taskId: z.string().min(1),
  contextId: z.string().optional(),
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
  id: z.string().optional(),
  url: z.string(),
  token: z.string().optional(),
  authentication: z.object({ schemes: z.array(z.string()), credentials: z.string().optional() }).optional(),
});
export type PushConfigV03 = z.infer<typeof PushConfigV03Schema>;

export const TaskPushConfigV03Schema = z.object({ taskId: z.string(), pushNotificationConfig: PushConfigV03Schema });
export type TaskPushConfigV03 = z.infer<typeof TaskPushConfigV03Schema>;

const defined = <T extends object>(value: T): T =>
  Object.fromEntries(Object.entries(value).filter(([, field]) => field !== undefined)) as T;

// ---- 0.3 → 1.0 -------------------------------------------------------------

export function partFromV03(part: PartV03): Part {
  const metadata = part.metadata;
  if (part.kind === 'text') return defined({ text: part.text, metadata });
  if (part.kind === 'data') return defined({ data: part.data, metadata });
  const { uri, bytes, mimeType, name } = part.file;
  return defined({ ...(uri !== undefined ? { url: uri } : { raw: bytes }), mediaType: mimeType, filename: name, metadata });
}

export function messageFromV03(message: MessageV03): Message {
  const { kind: _kind, role, parts, ...rest } = message;
  return defined({ ...rest, role: role === 'agent' ? 'ROLE_AGENT' : 'ROLE_USER', parts: parts.map(partFromV03) } as Message);
}

function statusFromV03(status: z.infer<typeof TaskStatusV03Schema>): TaskStatus {
  return defined({ state: stateFromV03(status.state), message: status.message && messageFromV03(status.message), timestamp: status.timestamp });
}

function artifactFromV03(artifact: z.infer<typeof ArtifactV03Schema>): Artifact {
  return defined({ ...artifact, parts: artifact.parts.map(partFromV03) });
}

export function taskFromV03(task: TaskV03): Task {
  const { kind: _kind, status, artifacts, history, ...rest } = task;
  return defined({
    ...rest,
    status: statusFromV03(status),
    artifacts: artifacts?.map(artifactFromV03),
    history: history?.map(messageFromV03),
  });
}

/** One 0.3 event → the 1.0 StreamResponse with the one matching member; `final` is dropped (see `isFinalEvent`). */
export function eventFromV03(event: EventV03): StreamResponse {
  switch (event.kind) {
    case 'task':
      return { task: taskFromV03(event) };
    case 'message':
      return { message: messageFromV03(event) };
    case 'status-update': {
      const { kind: _kind, final: _final, status, ...rest } = event;
      return { statusUpdate: defined({ ...rest, status: statusFromV03(status) }) };
    }
    case 'artifact-update': {
      const { kind: _kind, artifact, ...rest } = event;
      return { artifactUpdate: defined({ ...rest, artifact: artifactFromV03(artifact) }) };
    }
  }
}

/** `true` for a status update with `final:true`: the 0.3 end-of-stream marker. */
export const isFinalEvent = (event: EventV03): boolean => event.kind === 'status-update' && event.final === true;

export function pushConfigFromV03(config: TaskPushConfigV03): TaskPushNotificationConfig {
  const { id, url, token, authentication } = config.pushNotificationConfig;
  const scheme = authentication?.schemes[0];
  return defined({
    taskId: config.taskId,
    id,
    url,
    token,
    authentication: scheme === undefined ? undefined : defined({ scheme, credentials: authentication?.credentials }),
  });
}

// ---- 1.0 → 0.3 -------------------------------------------------------------

/** 1.0 part → 0.3. Throws `InvalidParamsError` for what 0.3 cannot carry (a non-object `data`). */
export function partToV03(part: Part): PartV03 {
  const metadata = part.metadata;
  if (part.text !== undefined) return defined({ kind: 'text' as const, text: part.text, metadata });
  if (part.data !== undefined) {
    if (typeof part.data !== 'object' || part.data === null || Array.isArray(part.data)) {
      throw new InvalidParamsError('a 0.3 data part must be a JSON object (spec v0.3.0 §6.5.3)', { delivery: 'not-sent' });
    }
    return defined({ kind: 'data' as const, data: part.data as Record<string, unknown>, metadata });
  }
  const file = defined({ uri: part.url, bytes: part.url === undefined ? part.raw : undefined, mimeType: part.mediaType, name: part.filename });
  return defined({ kind: 'file' as const, file, metadata });
}

/** 1.0 message → 0.3, with `kind:'message'`. ROLE_UNSPECIFIED is sent as `user` (we only send user messages). */
export function messageToV03(message: Message): MessageV03 & { kind: 'message' } {
  const { role, parts, ...rest } = message;
  return defined({ kind: 'message' as const, ...rest, role: role === 'ROLE_AGENT' ? ('agent' as const) : ('user' as const), parts: parts.map(partToV03) });
}

export function pushConfigToV03(config: TaskPushNotificationConfig): PushConfigV03 {
  const { id, url, token, authentication } = config;
  return defined({
    id,
    url,
    token,
    authentication: authentication && defined({ schemes: [authentication.scheme], credentials: authentication.credentials }),
  });
}

/** 0.3 MessageSendParams (spec v0.3.0 §7.1.1); `blocking` is always explicit (= !returnImmediately); `tenant` has no 0.3 field. */
export function sendParamsToV03(request: SendMessageRequest): Record<string, unknown> {
  const configuration = request.configuration ?? {};
  return defined({
    message: messageToV03(request.message),
    configuration: defined({
      acceptedOutputModes: configuration.acceptedOutputModes,
      blocking: !(configuration.returnImmediately ?? false),
      historyLength: configuration.historyLength,
      pushNotificationConfig: configuration.taskPushNotificationConfig && pushConfigToV03(configuration.taskPushNotificationConfig),
    }),
    metadata: request.metadata,
  });
}
