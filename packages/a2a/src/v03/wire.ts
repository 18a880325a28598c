/**
 * The A2A 0.3 JSON-RPC wire model's conversion to and from the 1.0 model in `schema.ts` (the 0.3
 * schemas are in wire-schemas.ts, re-exported here). Nothing past a 0.3 transport ever sees a 0.3 shape.
 */
import type { z } from 'zod';
import { InvalidParamsError } from '../errors.ts';
import type {
  Artifact,
  Message,
  Part,
  SendMessageRequest,
  StreamResponse,
  Task,
  TaskPushNotificationConfig,
  TaskStatus,
} from '../schema.ts';
import {
  stateFromV03,
  type ArtifactV03Schema,
  type EventV03,
  type MessageV03,
  type PartV03,
  type PushConfigV03,
  type TaskPushConfigV03,
  type TaskStatusV03Schema,
  type TaskV03,
} from './wire-schemas.ts';

export {
  TASK_STATES_V03,
  stateFromV03,
  stateToV03,
  PartV03Schema,
  MessageV03Schema,
  TaskV03Schema,
  StatusUpdateV03Schema,
  ArtifactUpdateV03Schema,
  EventV03Schema,
  SendResultV03Schema,
  PushConfigV03Schema,
  TaskPushConfigV03Schema,
  type TaskStateV03,
  type PartV03,
  type MessageV03,
  type TaskV03,
  type EventV03,
  type PushConfigV03,
  type TaskPushConfigV03,
} from './wire-schemas.ts';

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
