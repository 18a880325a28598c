/**
 * One delegation with the bare @a2a-js/sdk client, in two halves a durable runner can journal apart:
 * `sendTask` (SendMessage with returnImmediately) and `followTask` (resubscribe to a terminal status, GetTask
 * when refused or ended early). Shared by the bare side, the naive BullMQ worker and the Restate service.
 */
import { randomUUID } from 'node:crypto';
import { SendMessageRequest, TaskState, type StreamResponse } from '@a2a-js/sdk';
import { ClientFactory, type Client } from '@a2a-js/sdk/client';

export const TERMINAL = new Set<TaskState>([TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_CANCELED, TaskState.TASK_STATE_REJECTED]);

/** What SendMessage answered: the task's id and state, or no task (a direct Message reply counts as completed). */
export interface SentTask {
  taskId?: string;
  state?: TaskState;
}

/** One client per agent base URL, made once (the Agent Card is fetched on first use). */
export function clientCache(): (baseUrl: string) => Promise<Client> {
  const clients = new Map<string, Promise<Client>>();
  return (baseUrl) => {
    let client = clients.get(baseUrl);
    if (!client) clients.set(baseUrl, (client = new ClientFactory().createFromUrl(baseUrl)));
    return client;
  };
}

/** SendMessage(returnImmediately) with `text`; `messageId` defaults to a fresh UUID. */
export async function sendTask(client: Client, text: string, messageId: string = randomUUID()): Promise<SentTask> {
  const request = SendMessageRequest.fromJSON({
    message: { messageId, role: 'ROLE_USER', parts: [{ text }] },
    configuration: { acceptedOutputModes: ['text/plain'], returnImmediately: true },
  });
  const sent = await client.sendMessage(request);
  if (!('id' in sent) || !('status' in sent)) return { state: TaskState.TASK_STATE_COMPLETED };
  return { taskId: sent.id, ...(sent.status?.state === undefined ? {} : { state: sent.status.state }) };
}

/** Follows `sent` to a terminal state: resubscribe, then GetTask if refused (already terminal) or dropped. */
export async function followTask(client: Client, sent: SentTask): Promise<TaskState | undefined> {
  let state = sent.state;
  if (sent.taskId === undefined || (state !== undefined && TERMINAL.has(state))) return state;
  try {
    for await (const event of client.resubscribeTask({ id: sent.taskId, tenant: '' })) {
      state = stateOf(event) ?? state;
      if (state !== undefined && TERMINAL.has(state)) return state;
    }
  } catch {
    // Refused (already terminal) or dropped: read it once, as our follow job does.
  }
  return (await client.getTask({ id: sent.taskId, tenant: '', historyLength: 0 })).status?.state;
}

/** One delegation with the bare client, send then follow; returns the final task state. */
export async function bareDelegation(client: Client, text = 'do the thing', messageId?: string): Promise<TaskState | undefined> {
  return followTask(client, await sendTask(client, text, messageId));
}

function stateOf(event: StreamResponse): TaskState | undefined {
  const payload = event.payload;
  if (payload?.$case === 'statusUpdate') return payload.value.status?.state;
  if (payload?.$case === 'task') return payload.value.status?.state;
  return undefined;
}
