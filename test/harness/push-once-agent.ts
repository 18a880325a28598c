/**
 * A raw JSON-RPC 1.0 agent for field case R17: SendMessage answers a SUBMITTED
 * task and POSTs exactly one push (that SUBMITTED task) to the configured
 * webhook, then never pushes again. SubscribeToTask is refused
 * (UnsupportedOperation), so only GetTask can tell the workers how the task
 * ends; GetTask says WORKING until `complete()` is called, then COMPLETED.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { jsonRpcError, jsonRpcResult, sendJson, startRawAgent, type RawAgentHandle } from './raw-agent.ts';

export interface PushOnceAgentHandle {
  readonly raw: RawAgentHandle;
  readonly cardUrl: string;
  readonly taskId: string;
  readonly contextId: string;
  /** HTTP statuses our webhook answered to the agent's pushes. */
  readonly pushStatuses: readonly number[];
  /** The push config SendMessage carried (url, token, authentication). */
  pushConfig(): { url: string; token?: string; authentication?: { scheme: string; credentials?: string } } | undefined;
  getTaskCount(): number;
  /** From now on GetTask answers COMPLETED with one artifact. */
  complete(text: string): void;
  close(): Promise<void>;
}

export async function startPushOnceAgent(taskId = 'T1', defaultContextId = 'C1'): Promise<PushOnceAgentHandle> {
  // An honest agent: the task lives in the context the client sent (else a new one) and holds its message.
  let contextId = defaultContextId;
  let history: unknown[] = [];
  let config: ReturnType<PushOnceAgentHandle['pushConfig']>;
  let completedWith: string | undefined;
  let getTasks = 0;
  const pushStatuses: number[] = [];
  const submittedAt = new Date().toISOString();
  const completedAt = () => new Date(Date.parse(submittedAt) + 1_000).toISOString();
  const task = () =>
    completedWith === undefined
      ? { id: taskId, contextId, history, status: { state: getTasks > 0 ? 'TASK_STATE_WORKING' : 'TASK_STATE_SUBMITTED', timestamp: submittedAt } }
      : { id: taskId, contextId, history, status: { state: 'TASK_STATE_COMPLETED', timestamp: completedAt() }, artifacts: [{ artifactId: 'result', parts: [{ text: completedWith }] }] };

  const pushOnce = async () => {
    if (!config) return;
    const headers: Record<string, string> = { 'content-type': 'application/a2a+json' };
    if (config.authentication?.credentials) headers.authorization = `${config.authentication.scheme} ${config.authentication.credentials}`;
    const response = await fetch(config.url, {
      method: 'POST',
      headers,
      body: JSON.stringify({ task: { id: taskId, contextId, status: { state: 'TASK_STATE_SUBMITTED', timestamp: submittedAt } } }),
    });
    pushStatuses.push(response.status);
  };

  const raw = await startRawAgent((request: IncomingMessage, response: ServerResponse, body: string) => {
    if (request.method === 'GET' && request.url === '/.well-known/agent-card.json') {
      return sendJson(response, {
        name: 'Push-once agent',
        description: 'Pushes the first event only (R17)',
        version: '1.0.0',
        supportedInterfaces: [{ url: `${raw.url}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
        capabilities: { streaming: true, pushNotifications: true },
        defaultInputModes: ['text/plain'],
        defaultOutputModes: ['text/plain'],
        skills: [],
      });
    }
    const call = JSON.parse(body) as { id: number; method: string; params: { message?: { contextId?: string }; configuration?: { taskPushNotificationConfig?: typeof config } } };
    switch (call.method) {
      case 'SendMessage':
        config = call.params.configuration?.taskPushNotificationConfig;
        if (call.params.message) {
          contextId = call.params.message.contextId ?? contextId;
          history = [call.params.message];
        }
        sendJson(response, jsonRpcResult(call.id, { task: task() }));
        setTimeout(() => void pushOnce().catch(() => pushStatuses.push(0)), 10);
        return;
      case 'GetTask':
        getTasks++;
        return sendJson(response, jsonRpcResult(call.id, task()));
      case 'SubscribeToTask':
        return sendJson(response, jsonRpcError(call.id, -32004, 'streaming is not offered for this task'));
      default:
        return sendJson(response, jsonRpcError(call.id, -32601, `method ${call.method} not found`));
    }
  });

  return {
    raw,
    cardUrl: `${raw.url}/.well-known/agent-card.json`,
    taskId,
    get contextId() {
      return contextId;
    },
    pushStatuses,
    pushConfig: () => config,
    getTaskCount: () => getTasks,
    complete(text) {
      completedWith = text;
    },
    close: () => raw.close(),
  };
}
