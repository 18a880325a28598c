/**
 * A raw JSON-RPC 1.0 agent with a scripted push notification config store (P31): what it does with the inline
 * config of SendMessage, how it keys configs, how it lists them, which config calls fail. SendMessage answers a
 * SUBMITTED task (or, `completesOnSend`, the finished task); SubscribeToTask is refused (UnsupportedOperation), so
 * GetTask (polling) always ends the delegation, whatever push does (or, `streamsSnapshot`, answers one snapshot). `complete()` makes GetTask answer COMPLETED (now, or once polling is released)
 * and pushes the completion (the whole Task with its artifact, or its status update alone) to every stored config
 * with the `X-A2A-Notification-Token` header alone (what the SDK sends without authentication).
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { jsonRpcError, jsonRpcResult, sendJson, sseEvent, sseHeaders, startRawAgent, type RawAgentHandle } from './raw-agent.ts';

/** A config as the agent stores and lists it. */
export interface StoredPushConfig {
  id: string;
  taskId: string;
  url: string;
  token?: string;
  authentication?: { scheme: string; credentials?: string };
}

export interface PushConfigAgentBehaviour {
  /** Stores the inline config of SendMessage (else drops it, as some agents do). Default true. */
  keepsInline?: boolean;
  /** `id-or-task`: keyed by `id || taskId` (a second config with our id replaces the first); `task`: ids ignored, keyed by the task id. Default `id-or-task`. */
  keysBy?: 'id-or-task' | 'task';
  /** Lists configs with `taskId: ""` (as the inline config was sent). Default false. */
  listsEmptyTaskId?: boolean;
  /** Create assigns an id of its own, ignoring ours. Default false. */
  createAssignsId?: boolean;
  /** Create assigns exactly this id (an over-long or malformed one: edges35), ignoring ours. */
  assignedId?: string;
  /** These config calls answer a JSON-RPC error (-32603). */
  failing?: readonly ('list' | 'create' | 'delete')[];
  /** Create is refused with -32003 (push not supported for this task) instead of -32603 when it fails. */
  refusesCreate?: boolean;
  /** Forgets the task's configs when the task completes (a later Delete finds nothing and answers `{}`). Default false. */
  dropsConfigsOnCompletion?: boolean;
  /**
   * SubscribeToTask answers one Task snapshot (as GetTask would) and ends the stream, instead of being refused: the
   * stream's snapshot is then what the workers read. Default false.
   */
  streamsSnapshot?: boolean;
  /**
   * SendMessage answers the task COMPLETED with one artifact holding `text` (the send's answer settles the
   * delegation); `push` sends the completion to the inline config first (`before-answer`: awaited before the answer
   * leaves; `with-answer`: not awaited), as the whole Task or its status update.
   */
  completesOnSend?: { text: string; push?: { kind: 'task' | 'status'; order: 'before-answer' | 'with-answer' } };
  /**
   * Right after answering SendMessage, pushes the SUBMITTED task once to the inline config, then never again until
   * told (field case R17: a push is a hint, the reconciler's reads are the backstop). Default false.
   */
  pushesSubmittedOnce?: boolean;
}

export interface PushConfigAgentHandle {
  readonly raw: RawAgentHandle;
  readonly cardUrl: string;
  readonly taskId: string;
  /** The task's context: the one SendMessage carried, else `C1`. */
  readonly contextId: string;
  /** The configs the agent holds now. */
  configs(): StoredPushConfig[];
  /** The most configs the agent held at any time. */
  maxConfigs(): number;
  /** Config calls in order: method, params, and whether the task was complete when it came. */
  readonly calls: readonly { method: string; params: Record<string, unknown>; afterCompletion: boolean }[];
  /** HTTP statuses our webhook answered to the agent's pushes. */
  readonly pushStatuses: readonly number[];
  /**
   * The task completes with one artifact (id `result`) holding `text`; the completion is pushed to every stored
   * config (`pushCompletion`): the whole Task with its artifact (`push: 'task'`, default), its status update alone
   * (`'status'`), or not now (`'none'`). GetTask answers COMPLETED from now on, or, with `polling: 'held'`, WORKING
   * until `releasePolling()` (the push is then what settles the delegation, if anything).
   */
  complete(text: string, options?: { push?: 'task' | 'status' | 'none'; polling?: 'now' | 'held' }): Promise<void>;
  /**
   * Pushes the completion (after `complete`) to every stored config: the whole Task, or its status update alone.
   * `late`: also to the configs Delete removed (a push queued before the Delete, delivered after it).
   */
  pushCompletion(kind: 'task' | 'status', options?: { late?: boolean }): Promise<void>;
  /** GetTask answers the completion from now on (after `complete(…, { polling: 'held' })`). */
  releasePolling(): void;
  /** Reads so far: GetTask calls and (with `streamsSnapshot`) subscriptions. */
  readCount(): number;
  close(): Promise<void>;
}

const CONFIG_METHODS = new Set(['CreateTaskPushNotificationConfig', 'GetTaskPushNotificationConfig', 'ListTaskPushNotificationConfigs', 'DeleteTaskPushNotificationConfig']);

export async function startPushConfigAgent(behaviour: PushConfigAgentBehaviour = {}, taskId = 'T1'): Promise<PushConfigAgentHandle> {
  const { keepsInline = true, keysBy = 'id-or-task', listsEmptyTaskId = false, createAssignsId = false, assignedId, failing = [], refusesCreate = false, dropsConfigsOnCompletion = false, streamsSnapshot = false, completesOnSend, pushesSubmittedOnce = false } = behaviour;
  const store = new Map<string, StoredPushConfig>();
  const deleted: StoredPushConfig[] = [];
  const calls: { method: string; params: Record<string, unknown>; afterCompletion: boolean }[] = [];
  const pushStatuses: number[] = [];
  let maxConfigs = 0;
  let contextId = 'C1';
  let history: unknown[] = [];
  let completedWith: string | undefined;
  let pollingHeld = false;
  let getTasks = 0;
  let subscribes = 0;
  const submittedAt = new Date().toISOString();

  const keep = (config: Omit<StoredPushConfig, 'id'> & { id?: string }) => {
    const id = keysBy === 'task' ? taskId : config.id || taskId;
    const stored = { ...config, id };
    store.set(id, stored);
    maxConfigs = Math.max(maxConfigs, store.size);
    return stored;
  };
  const listed = (config: StoredPushConfig) => ({ ...config, taskId: listsEmptyTaskId ? '' : config.taskId });
  const task = (asPolled = false) =>
    completedWith === undefined || (asPolled && pollingHeld)
      ? { id: taskId, contextId, history, status: { state: 'TASK_STATE_WORKING', timestamp: submittedAt } }
      : { id: taskId, contextId, history, status: { state: 'TASK_STATE_COMPLETED', timestamp: new Date(Date.parse(submittedAt) + 1_000).toISOString() }, artifacts: [{ artifactId: 'result', parts: [{ text: completedWith }] }] };

  /** POSTs `body` to `config` with the `X-A2A-Notification-Token` header alone; the webhook's status is kept (0: unreachable). */
  const push = async (config: StoredPushConfig, body: unknown) => {
    const response = await fetch(config.url, {
      method: 'POST',
      headers: { 'content-type': 'application/a2a+json', ...(config.token ? { 'x-a2a-notification-token': config.token } : {}) },
      body: JSON.stringify(body),
    }).catch(() => undefined);
    pushStatuses.push(response?.status ?? 0);
  };

  const configCall = (method: string, params: Record<string, unknown>): { result: unknown } | { error: [number, string] } => {
    const fails = (call: 'list' | 'create' | 'delete') => failing.includes(call);
    switch (method) {
      case 'ListTaskPushNotificationConfigs':
        if (fails('list')) return { error: [-32603, 'listing configs failed'] };
        return { result: { configs: [...store.values()].map(listed) } };
      case 'CreateTaskPushNotificationConfig': {
        if (fails('create')) return { error: refusesCreate ? [-32003, 'push notifications are not supported for this task'] : [-32603, 'creating the config failed'] };
        const config = params as unknown as StoredPushConfig;
        return { result: listed(keep({ ...config, id: assignedId ?? (createAssignsId ? randomUUID() : config.id) })) };
      }
      case 'GetTaskPushNotificationConfig': {
        const found = store.get(String(params.id));
        return found ? { result: listed(found) } : { error: [-32001, 'config not found'] };
      }
      default:
        if (fails('delete')) return { error: [-32603, 'deleting the config failed'] };
        if (store.has(String(params.id))) deleted.push(store.get(String(params.id))!);
        store.delete(String(params.id));
        return { result: {} };
    }
  };

  const raw = await startRawAgent(async (request: IncomingMessage, response: ServerResponse, body: string) => {
    if (request.method === 'GET' && request.url === '/.well-known/agent-card.json') {
      return sendJson(response, {
        name: 'Push config agent',
        description: 'A scripted push notification config store (P31)',
        version: '1.0.0',
        supportedInterfaces: [{ url: `${raw.url}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
        capabilities: { streaming: true, pushNotifications: true },
        defaultInputModes: ['text/plain'],
        defaultOutputModes: ['text/plain'],
        skills: [],
      });
    }
    const call = JSON.parse(body) as { id: number; method: string; params: Record<string, unknown> & { message?: { contextId?: string }; configuration?: { taskPushNotificationConfig?: StoredPushConfig } } };
    if (CONFIG_METHODS.has(call.method)) {
      calls.push({ method: call.method, params: call.params, afterCompletion: completedWith !== undefined });
      const answer = configCall(call.method, call.params);
      return sendJson(response, 'result' in answer ? jsonRpcResult(call.id, answer.result) : jsonRpcError(call.id, ...answer.error));
    }
    switch (call.method) {
      case 'SendMessage': {
        if (call.params.message) {
          contextId = call.params.message.contextId ?? contextId;
          history = [call.params.message];
        }
        const inline = call.params.configuration?.taskPushNotificationConfig;
        if (inline && keepsInline) keep({ ...inline, taskId: '' });
        if (completesOnSend) {
          completedWith = completesOnSend.text;
          const { push } = completesOnSend;
          if (push?.order === 'before-answer') await handle.pushCompletion(push.kind);
          if (push?.order === 'with-answer') void handle.pushCompletion(push.kind);
          return sendJson(response, jsonRpcResult(call.id, { task: task() }));
        }
        const submitted = { ...task(), status: { state: 'TASK_STATE_SUBMITTED', timestamp: submittedAt } };
        sendJson(response, jsonRpcResult(call.id, { task: submitted }));
        if (inline && pushesSubmittedOnce) setTimeout(() => void push({ ...inline, taskId }, { task: { id: taskId, contextId, status: submitted.status } }), 10);
        return;
      }
      case 'GetTask':
        getTasks++;
        return sendJson(response, jsonRpcResult(call.id, task(true)));
      case 'SubscribeToTask':
        if (!streamsSnapshot) return sendJson(response, jsonRpcError(call.id, -32004, 'streaming is not offered for this task'));
        subscribes++;
        sseHeaders(response);
        return void response.end(sseEvent(jsonRpcResult(call.id, { task: task(true) })));
      default:
        return sendJson(response, jsonRpcError(call.id, -32601, `method ${call.method} not found`));
    }
  });

  const handle: PushConfigAgentHandle = {
    raw,
    cardUrl: `${raw.url}/.well-known/agent-card.json`,
    taskId,
    get contextId() {
      return contextId;
    },
    configs: () => [...store.values()],
    maxConfigs: () => maxConfigs,
    calls,
    pushStatuses,
    async complete(text, { push = 'task', polling = 'now' } = {}) {
      completedWith = text;
      pollingHeld = polling === 'held';
      if (push !== 'none') await handle.pushCompletion(push);
    },
    async pushCompletion(kind, { late = false } = {}) {
      const finished = task();
      const completed = kind === 'task' ? { task: finished } : { statusUpdate: { taskId, contextId, status: finished.status } };
      const targets = [...store.values(), ...(late ? deleted : [])];
      if (dropsConfigsOnCompletion) store.clear();
      for (const config of targets) await push(config, completed);
    },
    releasePolling: () => {
      pollingHeld = false;
    },
    readCount: () => getTasks + subscribes,
    close: () => raw.close(),
  };
  return handle;
}
