/**
 * A2A 0.3 over gRPC (spec v0.3.0 §3.2.2, `a2a.v1.A2AService`), normalized to
 * the 1.0 model at this edge. The 0.3 proto differs from 1.0 in resource names
 * (`tasks/{id}`, `tasks/{id}/pushNotificationConfigs/{configId}`), `content`
 * instead of `parts`, `FilePart` / `DataPart` wrappers, `TASK_STATE_CANCELLED`,
 * `blocking` instead of `returnImmediately`, push authentication `schemes[]`,
 * and method names (`TaskSubscription`, `ListTaskPushNotificationConfig`); it
 * has no ListTasks. Fields 0.3 lacks (tenant, referenceTaskIds) are not sent.
 */
import { InvalidParamsError, UnsupportedOperationError } from '../errors.ts';
import { GRPC_SERVICE_NAMES } from './codec.ts';
import type { GrpcWireMapping } from './transport.ts';

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);
const defined = (entries: Json): Json => Object.fromEntries(Object.entries(entries).filter(([, value]) => value !== undefined));

const METHOD_NAMES: Readonly<Record<string, string>> = {
  SubscribeToTask: 'TaskSubscription',
  ListTaskPushNotificationConfigs: 'ListTaskPushNotificationConfig',
};

const taskName = (id: unknown): string => `tasks/${String(id)}`;
const configName = (taskId: unknown, id: unknown): string => `${taskName(taskId)}/pushNotificationConfigs/${String(id)}`;

// 1.0 → 0.3 requests.
function partTo03(part: Json): Json {
  if (part.text !== undefined) return { text: part.text };
  const mimeType = part.mediaType;
  if (part.url !== undefined) return { file: defined({ fileWithUri: part.url, mimeType }) };
  if (part.raw !== undefined) return { file: defined({ fileWithBytes: part.raw, mimeType }) };
  // 0.3 DataPart holds a Struct: what it cannot carry is refused, not reshaped (as on the other 0.3 bindings).
  if (!isObject(part.data)) throw new InvalidParamsError('A2A 0.3 cannot carry a data part that is not a JSON object', { delivery: 'not-sent' });
  return { data: { data: part.data } };
}

function messageTo03(message: Json): Json {
  const { parts, referenceTaskIds: _notIn03, ...rest } = message;
  return { ...rest, content: ((parts as Json[] | undefined) ?? []).map(partTo03) };
}

function pushConfigTo03(config: Json): Json {
  const authentication = isObject(config.authentication)
    ? defined({ schemes: [config.authentication.scheme], credentials: config.authentication.credentials })
    : undefined;
  return defined({ id: config.id, url: config.url, token: config.token, authentication });
}

function sendTo03(params: Json): Json {
  const configuration = isObject(params.configuration) ? params.configuration : undefined;
  const push = configuration && isObject(configuration.taskPushNotificationConfig) ? configuration.taskPushNotificationConfig : undefined;
  return defined({
    request: messageTo03(params.message as Json),
    configuration: configuration && defined({
      acceptedOutputModes: configuration.acceptedOutputModes,
      pushNotification: push && pushConfigTo03(push),
      historyLength: configuration.historyLength,
      blocking: configuration.returnImmediately !== true,
    }),
    metadata: params.metadata,
  });
}

function requestTo03(name: string, params: Json): unknown {
  switch (name) {
    case 'SendMessage':
    case 'SendStreamingMessage':
      return sendTo03(params);
    case 'GetTask':
      return defined({ name: taskName(params.id), historyLength: params.historyLength });
    case 'CancelTask':
    case 'SubscribeToTask':
      return { name: taskName(params.id) };
    case 'CreateTaskPushNotificationConfig':
      return {
        parent: taskName(params.taskId),
        configId: params.id,
        config: { name: configName(params.taskId, params.id), pushNotificationConfig: pushConfigTo03(params) },
      };
    case 'GetTaskPushNotificationConfig':
    case 'DeleteTaskPushNotificationConfig':
      return { name: configName(params.taskId, params.id) };
    case 'ListTaskPushNotificationConfigs':
      return defined({ parent: taskName(params.taskId), pageSize: params.pageSize, pageToken: params.pageToken });
    default:
      throw new UnsupportedOperationError(`${name} does not exist in A2A 0.3 gRPC`, { delivery: 'not-sent' });
  }
}

// 0.3 answers → 1.0.
function partFrom03(part: Json): Json {
  if (isObject(part.file)) {
    const { fileWithUri, fileWithBytes, mimeType } = part.file;
    return defined({ url: fileWithUri, raw: fileWithBytes, mediaType: mimeType || undefined });
  }
  if (isObject(part.data)) return { data: part.data.data ?? {} };
  return { text: part.text ?? '' };
}

const partsFrom03 = (parts: unknown): Json[] => (Array.isArray(parts) ? parts.filter(isObject).map(partFrom03) : []);

function messageFrom03(message: Json): Json {
  const { content, ...rest } = message;
  return { ...rest, parts: partsFrom03(content) };
}

function statusFrom03(status: unknown): unknown {
  if (!isObject(status)) return status;
  const state = status.state === 'TASK_STATE_CANCELLED' ? 'TASK_STATE_CANCELED' : status.state;
  return defined({ ...status, state, message: isObject(status.message) ? messageFrom03(status.message) : undefined });
}

const artifactFrom03 = (artifact: Json): Json => ({ ...artifact, parts: partsFrom03(artifact.parts) });

function taskFrom03(task: Json): Json {
  return defined({
    ...task,
    status: statusFrom03(task.status),
    artifacts: Array.isArray(task.artifacts) ? task.artifacts.filter(isObject).map(artifactFrom03) : undefined,
    history: Array.isArray(task.history) ? task.history.filter(isObject).map(messageFrom03) : undefined,
  });
}

function eventFrom03(response: Json): Json {
  if (isObject(response.task)) return { task: taskFrom03(response.task) };
  if (isObject(response.message)) return { message: messageFrom03(response.message) };
  if (isObject(response.statusUpdate)) {
    const { final: _final, ...update } = response.statusUpdate;
    return { statusUpdate: { ...update, status: statusFrom03(update.status) } };
  }
  if (isObject(response.artifactUpdate)) {
    const update = response.artifactUpdate;
    return { artifactUpdate: { ...update, artifact: isObject(update.artifact) ? artifactFrom03(update.artifact) : update.artifact } };
  }
  return response;
}

function pushConfigFrom03(config: Json): Json {
  const inner = isObject(config.pushNotificationConfig) ? config.pushNotificationConfig : {};
  const taskId = /^tasks\/([^/]+)/.exec(String(config.name ?? ''))?.[1];
  const authentication = isObject(inner.authentication)
    ? defined({ scheme: (inner.authentication.schemes as string[] | undefined)?.[0] ?? '', credentials: inner.authentication.credentials })
    : undefined;
  return defined({ taskId, id: inner.id, url: inner.url, token: inner.token, authentication });
}

function responseFrom03(name: string, json: unknown): unknown {
  if (!isObject(json)) return json;
  switch (name) {
    case 'SendMessage':
    case 'SendStreamingMessage':
    case 'SubscribeToTask':
      return eventFrom03(json);
    case 'GetTask':
    case 'CancelTask':
      return taskFrom03(json);
    case 'CreateTaskPushNotificationConfig':
    case 'GetTaskPushNotificationConfig':
      return pushConfigFrom03(json);
    case 'ListTaskPushNotificationConfigs':
      return { ...json, configs: Array.isArray(json.configs) ? json.configs.filter(isObject).map(pushConfigFrom03) : [] };
    default:
      return json;
  }
}

/** The 0.3 mapping for `GrpcTransport`. */
export const GRPC_V03_MAPPING: GrpcWireMapping = {
  protocolVersion: '0.3',
  serviceName: GRPC_SERVICE_NAMES['0.3'],
  methodName: (name) => {
    if (name === 'ListTasks') throw new UnsupportedOperationError('ListTasks does not exist in A2A 0.3', { delivery: 'not-sent' });
    return METHOD_NAMES[name] ?? name;
  },
  toRequest: (name, params) => {
    const { tenant: _notIn03, ...rest } = params;
    return requestTo03(name, rest);
  },
  fromResponse: responseFrom03,
};
