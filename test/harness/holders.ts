/**
 * Helpers for the cases where the agent holds our message in more than one task (test/send/several-holders.test.ts,
 * test/send/foreign-holder.test.ts): tasks that hold the message our SendMessage carried, a ListTasks page, and the
 * attempt read from the journal once it finished.
 */
import { expect } from 'vitest';
import type { Producer } from '@durable-a2a/producer';
import { eventually } from './fleet.ts';
import { agentMessage, startScriptedAgent, task, taskEvent, type ScriptedAgentHandle } from './scripted-agent.ts';

/** The message our SendMessage carried, as the agent recorded it. */
export interface Received {
  messageId: string;
  contextId: string;
}

/** The message of a SendMessage request, as `Received` (the agent's own context when we sent none). */
export const receivedOf = (params: any): Received => ({ messageId: params.message.messageId, contextId: params.message.contextId ?? 'C-agent' });

/**
 * A task holding our message (ROLE_USER) in its history, with an artifact when COMPLETED; `withHistory` false: no
 * history at all; `status`: the status message (a question); `extra`: more of our messages in its history (a reply).
 */
export const holder = (id: string, state: 'WORKING' | 'COMPLETED' | 'INPUT_REQUIRED' | 'CANCELED', received: Received, withHistory = true, options: { status?: unknown; extra?: unknown[] } = {}) =>
  task(id, state, {
    contextId: received.contextId,
    ...(options.status ? { message: options.status } : {}),
    ...(withHistory ? { history: [{ role: 'ROLE_USER', messageId: received.messageId, contextId: received.contextId, parts: [{ text: 'book it' }] }, agentMessage(`${id} on it`), ...(options.extra ?? [])] } : {}),
    ...(state === 'COMPLETED' ? { artifacts: { [`a-${id}`]: `${id}'s booking` } } : {}),
  });

/** A ListTasks result listing `tasks` on one page. */
export const listing = (tasks: unknown[]) => ({ result: { tasks, nextPageToken: '', pageSize: 50, totalSize: tasks.length } });

/** The attempt `main.1` of workflow `id` once finished (any finished journal state), read from the journal. */
export async function finishedAttempt(producer: Producer, id: string, timeoutMs = 60_000) {
  const finished = ['COMPLETED', 'FAILED', 'CANCELED', 'REJECTED', 'AMBIGUOUS', 'LOST'];
  return eventually(async () => {
    const row = await producer.journal.getDelegation({ workflowId: id, delegationId: 'main.1' });
    return row && finished.includes(row.state) ? row : undefined;
  }, `${id}: the attempt finished`, timeoutMs);
}

/** The attempt once finished: AMBIGUOUS, its message naming every one of `taskIds`. */
export async function personNaming(producer: Producer, id: string, taskIds: readonly string[], timeoutMs = 60_000) {
  const row = await finishedAttempt(producer, id, timeoutMs);
  expect(row.state).toBe('AMBIGUOUS');
  for (const taskId of taskIds) expect(row.error?.message).toContain(taskId);
  return row;
}

/**
 * A scripted agent answering GetTask for `suspects` (tasks a refused push named): those in `holding` hold our message
 * `messageId` in their history, the others another client's; any other id is TaskNotFound.
 */
export function startSuspectsAgent(suspects: readonly string[], holding: ReadonlySet<string>, messageId: string): Promise<ScriptedAgentHandle> {
  return startScriptedAgent({
    GetTask: (params) => {
      const id = String((params as { id?: unknown }).id);
      if (!suspects.includes(id)) return { error: { code: -32001, message: 'Task not found' } };
      const history = [{ messageId: holding.has(id) ? messageId : `m-someone-else-${id}`, role: 'ROLE_USER', parts: [{ text: 'book a flight' }] }];
      return { result: task(id, 'WORKING', { contextId: `ctx-${id}`, history }) };
    },
  });
}

/**
 * A scripted agent whose SendMessage answers task `taskId` in `state`, holding the message it was sent (so it is
 * proven ours); GetTask answers it the same way (any other id: TaskNotFound), SubscribeToTask streams it and hangs.
 */
export function startHoldingAgent(taskId: string, state: 'WORKING' | 'COMPLETED'): Promise<ScriptedAgentHandle> {
  let received: Received | undefined;
  return startScriptedAgent({
    SendMessage: async (params) => {
      received ??= receivedOf(params);
      return { result: { task: holder(taskId, state, received) } };
    },
    SubscribeToTask: () => ({ sse: [taskEvent(holder(taskId, state, received!))], endAfter: 'hang' }),
    GetTask: async (params) => (String((params as { id?: unknown }).id) === taskId ? { result: holder(taskId, state, received!) } : { error: { code: -32001, message: 'Task not found' } }),
  });
}
