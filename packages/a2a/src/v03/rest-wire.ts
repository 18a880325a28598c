/**
 * The A2A 0.3 HTTP+JSON wire model: ProtoJSON of the 0.3 `a2a.v1` proto
 * (spec v0.3.0 §3.2.3), which differs from both 0.3 JSON-RPC and 1.0 REST:
 * parts are `{text}` | `{file:{fileWithUri|fileWithBytes, mimeType}}` |
 * `{data:{data}}`, messages carry `content` (not `parts`), roles and states are
 * proto enum names (with `TASK_STATE_CANCELLED`, two Ls), a status message may
 * be named `update`, and a Message member is `message` or `msg`. Push configs
 * are `{name:"tasks/{id}/pushNotificationConfigs/{configId}", pushNotificationConfig}`.
 * The zod schemas below parse straight into the 1.0 model.
 */
import { z } from 'zod';
import { OptionalWireIdSchema, WireIdSchema } from '../wire-id.ts';
import { JsonObjectSchema } from '../proto-names.ts';
import type { Message, Part, SendMessageRequest, StreamResponse, TaskPushNotificationConfig, TaskState } from '../schema.ts';
import { toWrappedResponse } from '../shape.ts';
import { WireRoleSchema, WireTaskStateSchema } from '../spelling.ts';
import { partToV03, pushConfigToV03 } from './wire.ts';

const MetadataSchema = JsonObjectSchema;

const defined = <T extends object>(value: T): T =>
  Object.fromEntries(Object.entries(value).filter(([, field]) => field !== undefined)) as T;

/** Any spelling of a state (`TASK_STATE_CANCELLED`, `completed`, ...; `spelling.ts`); ProtoJSON omits a zero enum, so absent is UNSPECIFIED. */
const ProtoStateSchema = WireTaskStateSchema.optional().transform((state): TaskState => state ?? 'TASK_STATE_UNSPECIFIED');

const ProtoPartSchema = z
  .object({
    text: z.string().optional(),
    file: z.object({ fileWithUri: z.string().optional(), fileWithBytes: z.string().optional(), mimeType: z.string().optional() }).optional(),
    data: z.object({ data: JsonObjectSchema.optional() }).optional(),
  })
  .transform((part, context): Part => {
    if (part.text !== undefined) return { text: part.text };
    if (part.data !== undefined) return { data: part.data.data ?? {} };
    const file = part.file;
    if (file?.fileWithUri !== undefined) return defined({ url: file.fileWithUri, mediaType: file.mimeType || undefined });
    if (file?.fileWithBytes !== undefined) return defined({ raw: file.fileWithBytes, mediaType: file.mimeType || undefined });
    context.addIssue({ code: 'custom', message: 'a Part carries one of text, file or data' });
    return z.NEVER;
  });

const ProtoMessageSchema = z
  .object({
    messageId: WireIdSchema,
    contextId: OptionalWireIdSchema,
    taskId: OptionalWireIdSchema,
    role: WireRoleSchema.optional().transform((role) => role ?? 'ROLE_UNSPECIFIED'),
    content: z.array(ProtoPartSchema).default([]),
    metadata: MetadataSchema.optional(),
    extensions: z.array(z.string()).optional(),
  })
  .transform(({ content, ...rest }): Message => defined({ ...rest, parts: content }));

const ProtoStatusSchema = z
  .object({ state: ProtoStateSchema, message: ProtoMessageSchema.optional(), update: ProtoMessageSchema.optional(), timestamp: z.string().optional() })
  .transform(({ state, message, update, timestamp }) => defined({ state, message: message ?? update, timestamp }));

const ProtoArtifactSchema = z.object({
  artifactId: WireIdSchema,
  name: z.string().optional(),
  description: z.string().optional(),
  parts: z.array(ProtoPartSchema).default([]),
  metadata: MetadataSchema.optional(),
  extensions: z.array(z.string()).optional(),
});

export const ProtoTaskSchema = z.object({
  id: WireIdSchema,
  contextId: OptionalWireIdSchema,
  status: ProtoStatusSchema,
  artifacts: z.array(ProtoArtifactSchema).optional(),
  history: z.array(ProtoMessageSchema).optional(),
  metadata: MetadataSchema.optional(),
});

const ProtoStatusUpdateSchema = z.object({
  taskId: WireIdSchema,
  contextId: OptionalWireIdSchema,
  status: ProtoStatusSchema,
  final: z.boolean().optional(),
  metadata: MetadataSchema.optional(),
});

const ProtoArtifactUpdateSchema = z.object({
  taskId: WireIdSchema,
  contextId: OptionalWireIdSchema,
  artifact: ProtoArtifactSchema,
  append: z.boolean().optional(),
  lastChunk: z.boolean().optional(),
  metadata: MetadataSchema.optional(),
});

/** 0.3 StreamResponse / SendMessageResponse: one of `task`, `message` (or `msg`), `statusUpdate`, `artifactUpdate`. */
export const ProtoStreamResponseSchema = z.preprocess(toWrappedResponse, z
  .object({
    task: ProtoTaskSchema.optional(),
    message: ProtoMessageSchema.optional(),
    msg: ProtoMessageSchema.optional(),
    statusUpdate: ProtoStatusUpdateSchema.optional(),
    artifactUpdate: ProtoArtifactUpdateSchema.optional(),
  })
  .transform((value, context): { response: StreamResponse; final: boolean } => {
    if (value.task) return { response: { task: defined(value.task) }, final: false };
    const message = value.message ?? value.msg;
    if (message) return { response: { message }, final: false };
    if (value.statusUpdate) {
      const { final, ...statusUpdate } = value.statusUpdate;
      return { response: { statusUpdate: defined(statusUpdate) }, final: final === true };
    }
    if (value.artifactUpdate) return { response: { artifactUpdate: defined(value.artifactUpdate) }, final: false };
    context.addIssue({ code: 'custom', message: 'expected one of task, message, statusUpdate, artifactUpdate' });
    return z.NEVER;
  }));

export const ProtoSendResponseSchema = ProtoStreamResponseSchema.refine(
  ({ response }) => 'task' in response || 'message' in response,
  { message: 'SendMessageResponse carries a task or a message' },
).transform(({ response }) => response as { task: z.output<typeof ProtoTaskSchema> } | { message: Message });

const PUSH_CONFIG_NAME = /^tasks\/([^/]+)\/pushNotificationConfigs\/([^/]*)$/;

/** `{name, pushNotificationConfig}` → 1.0 TaskPushNotificationConfig; the task and config ids come from `name`. */
export const ProtoTaskPushConfigSchema = z
  .object({
    name: z.string().default(''),
    pushNotificationConfig: z.object({
      id: OptionalWireIdSchema,
      url: z.string(),
      token: z.string().optional(),
      authentication: z.object({ schemes: z.array(z.string()).default([]), credentials: z.string().optional() }).optional(),
    }),
  })
  .transform(({ name, pushNotificationConfig: config }): TaskPushNotificationConfig => {
    const match = PUSH_CONFIG_NAME.exec(name);
    const scheme = config.authentication?.schemes[0];
    return defined({
      taskId: match ? decodeURIComponent(match[1]!) : undefined,
      id: config.id || (match?.[2] ? decodeURIComponent(match[2]) : undefined),
      url: config.url,
      token: config.token || undefined,
      authentication: scheme === undefined ? undefined : defined({ scheme, credentials: config.authentication?.credentials || undefined }),
    });
  });

export const ProtoListPushConfigsSchema = z.object({
  configs: z.array(ProtoTaskPushConfigSchema).default([]),
  nextPageToken: z.string().optional(),
});

// ---- 1.0 → 0.3 ProtoJSON ----------------------------------------------------

function protoPart(part: Part): Record<string, unknown> {
  const v03 = partToV03(part);
  if (v03.kind === 'text') return { text: v03.text };
  if (v03.kind === 'data') return { data: { data: v03.data } };
  // The 0.3 proto FilePart has no file name.
  const { uri, bytes, mimeType } = v03.file;
  return { file: defined({ fileWithUri: uri, fileWithBytes: bytes, mimeType }) };
}

function protoMessage(message: Message): Record<string, unknown> {
  const { parts, role, referenceTaskIds: _references, ...rest } = message;
  return defined({ ...rest, role: role === 'ROLE_AGENT' ? 'ROLE_AGENT' : 'ROLE_USER', content: parts.map(protoPart) });
}

export function protoPushConfig(config: TaskPushNotificationConfig): Record<string, unknown> {
  return pushConfigToV03(config);
}

/** 0.3 SendMessageRequest ProtoJSON; `blocking` = !returnImmediately. */
export function protoSendRequest(request: SendMessageRequest): Record<string, unknown> {
  const configuration = request.configuration ?? {};
  return defined({
    message: protoMessage(request.message),
    configuration: defined({
      acceptedOutputModes: configuration.acceptedOutputModes,
      blocking: !(configuration.returnImmediately ?? false),
      historyLength: configuration.historyLength,
      pushNotification: configuration.taskPushNotificationConfig && protoPushConfig(configuration.taskPushNotificationConfig),
    }),
    metadata: request.metadata,
  });
}

/** The resource name of a push config (0.3 proto `TaskPushNotificationConfig.name`). */
export const pushConfigName = (taskId: string, configId = ''): string =>
  `tasks/${encodeURIComponent(taskId)}/pushNotificationConfigs/${encodeURIComponent(configId)}`;
