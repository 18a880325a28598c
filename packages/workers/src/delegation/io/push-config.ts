/**
 * The agent's side of a delegation's push notification config life cycle (A2A §4.3.3, §9: List, Create and
 * Delete TaskPushNotificationConfig; 0.3 `tasks/pushNotificationConfig/list|set|delete`, mapped by the
 * transports): find our config among the task's, create it, delete it. Each call is made once and its answer
 * returned as a result; nothing here writes the journal (`delegation/push-registration.ts` does) and nothing an
 * agent answers is thrown.
 */
import { createHash } from 'node:crypto';
import { A2AError, isRetryable, sendEffectOf, taskNotFoundProven, type A2ATransport, type TaskPushNotificationConfig } from '@durable-a2a/a2a';
import { JournalError, type DelegationRef } from '@durable-a2a/shared';
import { codeOf } from './read.ts';

/**
 * One page of at most this many configs is asked for (the spec bounds `pageSize` to 1..100; an agent's own
 * default may be smaller or unbounded, so it is always sent). Our config is one of a task's: a task with more
 * configs than this is searched no further, and Create then upserts under our id.
 */
export const PUSH_CONFIG_PAGE_SIZE = 100;

/** The config a delegation wants at the agent: our deterministic id, our webhook URL and the journaled token. */
export interface WantedPushConfig {
  taskId: string;
  id: string;
  url: string;
  token: string;
}

/** What a List of the task's configs showed: ours (under the id the agent keeps it by), none of ours, or no answer we can use. */
export type PushConfigListing = { kind: 'found'; id: string } | { kind: 'absent' } | { kind: 'unknown'; code: string };

/** What a Create answered: the config (under the id the agent assigned, else ours), a refusal that proves nothing was registered, or no proof either way. */
export type PushConfigCreation = { kind: 'created'; id: string } | { kind: 'refused'; code: string } | { kind: 'unknown'; code: string };

/** What a Delete answered: gone (an empty answer, or the config or task not found: both end the life cycle), or failed. */
export type PushConfigDeletion = { kind: 'deleted' } | { kind: 'failed'; code: string };

/**
 * The config a delegation wants, before its task is bound: the webhook URL with its ids, the token journaled with
 * the intent, and our config id. The id is derived from the delegation alone (`da2a-` and 22 base64url characters
 * of a SHA-256 of its workflow and delegation ids): the same on every worker and after any restart, safe in a REST
 * path segment and a gRPC resource name, and one per attempt (a re-delegation is another delegation).
 */
export function wantedPushConfig(webhookUrl: string, ref: DelegationRef, token: string): Omit<WantedPushConfig, 'taskId'> {
  const id = `da2a-${createHash('sha256').update(`${ref.workflowId}\n${ref.delegationId}`).digest('base64url').slice(0, 22)}`;
  return { id, url: `${webhookUrl}/${encodeURIComponent(ref.workflowId)}/${encodeURIComponent(ref.delegationId)}`, token };
}

/** The config the workers register, inline in SendMessage (task id left empty, spec §3.2.2) and by Create. */
export function pushConfigOf(wanted: Omit<WantedPushConfig, 'taskId'>): TaskPushNotificationConfig {
  // The same per-delegation secret as token and as Bearer credentials: agents send one or the other.
  return { id: wanted.id, url: wanted.url, token: wanted.token, authentication: { scheme: 'Bearer', credentials: wanted.token } };
}

/**
 * Whether a listed config is ours: our id, or our URL with our token (as token or as credentials). Agents key
 * configs their own way: a config listed under the task's id (an agent that keys by `id || taskId`) or with
 * `taskId: ""` (the inline config, stored as sent) is still ours. A config naming another task is not.
 */
export function isOurPushConfig(config: TaskPushNotificationConfig, wanted: WantedPushConfig): boolean {
  if (config.taskId && config.taskId !== wanted.taskId) return false;
  if (config.id === wanted.id) return true;
  return config.url === wanted.url && (config.token === wanted.token || config.authentication?.credentials === wanted.token);
}

/** The code of an agent's failure; rethrows what is not the agent's (journal and programming errors), as `read.ts` does. */
function agentFailure(error: unknown): string {
  if (error instanceof JournalError || !(error instanceof A2AError || isRetryable(error))) throw error;
  return codeOf(error);
}

/** Lists the task's configs once (one page of `PUSH_CONFIG_PAGE_SIZE`) and looks for ours. */
export async function findPushConfig(transport: A2ATransport, wanted: WantedPushConfig): Promise<PushConfigListing> {
  try {
    const { configs } = await transport.listTaskPushNotificationConfigs({ taskId: wanted.taskId, pageSize: PUSH_CONFIG_PAGE_SIZE });
    const ours = configs.find((config) => isOurPushConfig(config, wanted));
    return ours ? { kind: 'found', id: ours.id || wanted.id } : { kind: 'absent' };
  } catch (error) {
    return { kind: 'unknown', code: agentFailure(error) };
  }
}

/** Creates our config once (an upsert under our id at an agent that keys configs by id). */
export async function createPushConfig(transport: A2ATransport, wanted: WantedPushConfig): Promise<PushConfigCreation> {
  try {
    const created = await transport.createTaskPushNotificationConfig({ ...pushConfigOf(wanted), taskId: wanted.taskId });
    return { kind: 'created', id: created.id || wanted.id };
  } catch (error) {
    const code = agentFailure(error);
    // A refusal (the A2A error table's `effect: none`, e.g. -32003 push not supported) proves nothing was registered.
    return sendEffectOf(error) === 'none' ? { kind: 'refused', code } : { kind: 'unknown', code };
  }
}

/**
 * Deletes a config once (Delete is idempotent, spec §4.3.3: a config or task not found, said by the agent's binding,
 * `taskNotFoundProven`, is as good as deleted; a bare 404 or NOT_FOUND proves nothing and is a failure, logged).
 */
export async function deletePushConfig(transport: A2ATransport, taskId: string, id: string): Promise<PushConfigDeletion> {
  try {
    await transport.deleteTaskPushNotificationConfig({ taskId, id });
    return { kind: 'deleted' };
  } catch (error) {
    const code = agentFailure(error);
    return taskNotFoundProven(error) ? { kind: 'deleted' } : { kind: 'failed', code };
  }
}
