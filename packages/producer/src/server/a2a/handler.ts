/**
 * The front door's A2A request handler (the SDK's `A2ARequestHandler`): every A2A operation as a call on the
 * producer, so the SDK's transports do the wire format and validation and the journal does the rest.
 *
 * - SendMessage creates a journaled workflow of one step (to a registered agent with the skill, re-delegated
 *   within its attempts; or to one named agent) whose id is derived from the caller's principal and
 *   messageId: the same message sent twice is one workflow and one remote SendMessage. A message naming a
 *   `taskId` answers that task's open question (`producer.reply`), the follow-up's messageId the reply's identity:
 *   sent again, it is the same reply, not the answer to the agent's next question. A blocking send (the default) is answered
 *   when the task ends or waits for the caller, or after `blockingWaitMs` with the task as it is then.
 * - GetTask, ListTasks, CancelTask, SubscribeToTask read and act on the caller's own tasks only; another
 *   caller's task is "not found".
 * - Push notification configs (Create/Get/List/Delete) on the caller's own tasks, journaled and delivered by
 *   `FrontDoorPushNotifier` (push.ts); a config on another caller's task is "task not found".
 */
import { z } from 'zod';
import type {
  AgentCard,
  CancelTaskRequest,
  DeleteTaskPushNotificationConfigRequest,
  GetTaskPushNotificationConfigRequest,
  GetTaskRequest,
  ListTaskPushNotificationConfigsRequest,
  ListTaskPushNotificationConfigsResponse,
  ListTasksRequest,
  ListTasksResponse,
  Message,
  SendMessageRequest,
  StreamResponse,
  SubscribeToTaskRequest,
  Task,
  TaskPushNotificationConfig,
} from '@a2a-js/sdk';
import { TaskState } from '@a2a-js/sdk';
import type { A2ARequestHandler, ServerCallContext } from '@a2a-js/sdk/server';
import {
  ExtendedAgentCardNotConfiguredError,
  RequestMalformedError,
  TaskNotCancelableError,
  TaskNotFoundError,
  UnsupportedOperationError,
} from '@a2a-js/sdk/errors';
import { PartSchema } from '@durable-a2a/a2a';
import { localWorkflowId, scopedWorkflowId, type AgentView, type FrontPushConfig } from '@durable-a2a/shared';
import type { Producer } from '../../producer.ts';
import { AnswerLimitError, ForbiddenError, QuotaExceededError, IdempotencyConflictError, NoOpenQuestionError, NotFoundError, ProducerInputError, WorkflowFinishedError } from '../../errors.ts';
import { AgentAddressRefusedError } from '../../agent-addresses.ts';
import { WaitTimeoutError } from '../../wait.ts';
import { FrontDoorCaller, frontReplyId, frontTaskId, isTaskOf, taskIdPrefix } from './caller.ts';
import { TERMINAL_TASK_STATES, frontTask, messageJson } from './task.ts';
import { STREAM_REFRESH_MS, taskEvents } from './events.ts';
import { availableAgents, frontDoorCard } from './card.ts';
import { PushConfigRefusedError, type FrontDoorPushNotifier } from './push.ts';

/** Where a front door sends: any registered agent with the skill the caller names, or one named agent. */
export type FrontDoorTarget = { kind: 'skill' } | { kind: 'agent'; name: string };

/** Options of a `FrontDoorRequestHandler`. */
export interface FrontDoorHandlerOptions {
  producer: Producer;
  target: FrontDoorTarget;
  /** Longest wait of a blocking SendMessage before it answers with the task as it is (ms). */
  blockingWaitMs: number;
  /**
   * Attempts of a task (the re-delegation budget): by skill across the registered agents with it; to a named
   * agent only that agent again, and only after it forgot the task (LOST), never after a refusal.
   */
  attempts: number;
  /** The push notification configs and their delivery (shared by every handler of the process). */
  push: FrontDoorPushNotifier;
}

/** Message parts a caller sends: at least one, each in the journal's part shape (what the workers send on). */
const CallerPartsSchema = z.array(PartSchema).min(1, 'a message needs at least one part');
/** The key of the request (or message) metadata naming the skill at the front door's root. */
export const SKILL_METADATA_KEY = 'skill';
/** Largest ListTasks page; default 50. */
const MAX_PAGE_SIZE = 100;
/** Search pages read per ListTasks call (bounds one call's work when filters leave tasks out). */
const LISTING_ROUNDS = 20;

/** The caller of a request (set by the front door's user builder); anything else is refused. */
function callerOf(context: ServerCallContext): FrontDoorCaller {
  const user = context.user;
  if (!(user instanceof FrontDoorCaller)) throw new UnsupportedOperationError('the front door needs an authenticated caller');
  return user;
}

/** The producer's typed errors as A2A errors (spec §3.3.2); anything else goes through as it is. */
function asA2AError(error: unknown): unknown {
  if (error instanceof NotFoundError) return new TaskNotFoundError(error.message);
  if (error instanceof WorkflowFinishedError) return new TaskNotCancelableError(error.message);
  // A2A has no refusal for a role, a quota or a full answer index: the operation is not supported for this caller now (the message says why).
  if (error instanceof ForbiddenError || error instanceof QuotaExceededError || error instanceof AnswerLimitError) return new UnsupportedOperationError(error.message);
  if (error instanceof ProducerInputError || error instanceof IdempotencyConflictError || error instanceof AgentAddressRefusedError || error instanceof PushConfigRefusedError) return new RequestMalformedError(error.message);
  return error;
}

/** A journaled push notification config as the SDK's TaskPushNotificationConfig. */
function pushConfigOf(taskId: string, config: FrontPushConfig): TaskPushNotificationConfig {
  return { tenant: '', id: config.id, taskId, url: config.url, token: config.token, authentication: config.authentication };
}

/** Runs `call`, turning the producer's errors into A2A errors. */
async function translated<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    throw asA2AError(error);
  }
}

export class FrontDoorRequestHandler implements A2ARequestHandler {
  constructor(private readonly options: FrontDoorHandlerOptions) {}

  /**
   * The producer as `caller` acts: in its token's tenant (its tasks are that tenant's workflows, `<tenant>~a2a-…`),
   * a service (an operator's token too: the front door shows a caller its own tasks only) or a viewer.
   */
  private producerOf(caller: FrontDoorCaller): Producer {
    return this.options.producer.forScope({ tenant: caller.scope.tenant, role: caller.scope.role === 'viewer' ? 'viewer' : 'service' });
  }

  /** The card the SDK's transports check the requested protocol version against (interfaces only matter there). */
  async getAgentCard(): Promise<AgentCard> {
    return frontDoorCard('', []);
  }

  async getAuthenticatedExtendedAgentCard(): Promise<AgentCard> {
    throw new ExtendedAgentCardNotConfiguredError('the front door has no extended card');
  }

  async sendMessage(params: SendMessageRequest, context: ServerCallContext): Promise<Task> {
    const caller = callerOf(context);
    const taskId = await translated(() => this.accept(params, caller));
    const historyLength = params.configuration?.historyLength;
    if (params.configuration?.returnImmediately) return translated(async () => frontTask(await this.producerOf(caller).get(taskId), historyLength));
    return translated(async () => frontTask(await this.waitForCaller(taskId, caller), historyLength));
  }

  async *sendMessageStream(params: SendMessageRequest, context: ServerCallContext): AsyncGenerator<StreamResponse, void, undefined> {
    const caller = callerOf(context);
    const taskId = await translated(() => this.accept(params, caller));
    yield* this.events(taskId, caller);
  }

  async getTask(params: GetTaskRequest, context: ServerCallContext): Promise<Task> {
    const caller = callerOf(context);
    const taskId = this.ownTask(params.id, caller);
    return translated(async () => frontTask(await this.producerOf(caller).get(taskId), params.historyLength));
  }

  async listTasks(params: ListTasksRequest, context: ServerCallContext): Promise<ListTasksResponse> {
    return translated(() => this.list(params, callerOf(context)));
  }

  async cancelTask(params: CancelTaskRequest, context: ServerCallContext): Promise<Task> {
    const caller = callerOf(context);
    const taskId = this.ownTask(params.id, caller);
    return translated(async () => {
      await this.producerOf(caller).cancel(taskId);
      return frontTask(await this.producerOf(caller).get(taskId));
    });
  }

  async *resubscribe(params: SubscribeToTaskRequest, context: ServerCallContext): AsyncGenerator<StreamResponse, void, undefined> {
    const caller = callerOf(context);
    yield* this.events(this.ownTask(params.id, caller), caller);
  }

  async createTaskPushNotificationConfig(params: TaskPushNotificationConfig, context: ServerCallContext): Promise<TaskPushNotificationConfig> {
    const caller = callerOf(context);
    const taskId = this.ownTask(params.taskId, caller);
    return translated(async () => {
      await this.producerOf(caller).get(taskId);
      const config = await this.options.push.create(taskId, { id: params.id, url: params.url, token: params.token, authentication: params.authentication });
      return pushConfigOf(taskId, config);
    });
  }

  async getTaskPushNotificationConfig(params: GetTaskPushNotificationConfigRequest, context: ServerCallContext): Promise<TaskPushNotificationConfig> {
    const taskId = this.ownTask(params.taskId, callerOf(context));
    const config = (await translated(() => this.options.push.list(taskId))).find((candidate) => candidate.id === params.id);
    if (!config) throw new TaskNotFoundError(`push notification config ${params.id} of task ${taskId} not found`);
    return pushConfigOf(taskId, config);
  }

  async listTaskPushNotificationConfigs(params: ListTaskPushNotificationConfigsRequest, context: ServerCallContext): Promise<ListTaskPushNotificationConfigsResponse> {
    const taskId = this.ownTask(params.taskId, callerOf(context));
    // At most MAX_PUSH_CONFIGS_PER_TASK configs: one page holds them all.
    const configs = await translated(() => this.options.push.list(taskId));
    return { configs: configs.map((config) => pushConfigOf(taskId, config)), nextPageToken: '' };
  }

  async deleteTaskPushNotificationConfig(params: DeleteTaskPushNotificationConfigRequest, context: ServerCallContext): Promise<void> {
    const taskId = this.ownTask(params.taskId, callerOf(context));
    if (!(await translated(() => this.options.push.delete(taskId, params.id)))) throw new TaskNotFoundError(`push notification config ${params.id} of task ${taskId} not found`);
  }

  /**
   * The stored workflow id of `taskId` when it is one of the caller's tasks (in its tenant, `<tenant>~` optional);
   * TaskNotFoundError otherwise (whoever else's it is).
   */
  private ownTask(taskId: string, caller: FrontDoorCaller): string {
    const stored = scopedWorkflowId(caller.scope.tenant, taskId);
    if (stored === undefined || !isTaskOf(caller.principal, localWorkflowId(stored))) throw new TaskNotFoundError(`task ${taskId} not found`);
    return stored;
  }

  /** Journals the message: a new task, or the answer to the open question of the task it names. Returns the task id. */
  private async accept(params: SendMessageRequest, caller: FrontDoorCaller): Promise<string> {
    const message = params.message;
    if (!message) throw new RequestMalformedError('SendMessage needs a message');
    const parsed = CallerPartsSchema.safeParse((messageJson(message) as { parts?: unknown }).parts);
    if (!parsed.success) throw new RequestMalformedError(`message.parts: ${parsed.error.issues.map((issue) => issue.message).join('; ')}`);
    if (message.taskId) return this.answer(this.ownTask(message.taskId, caller), message.messageId, parsed.data, caller);
    const localId = frontTaskId(caller.principal, message.messageId);
    const taskId = scopedWorkflowId(caller.scope.tenant, localId)!;
    const target = await this.targetOf(params, message, caller);
    await this.producerOf(caller).startWorkflow({
      workflowId: localId,
      steps: [{ name: 'main', ...target, message: { parts: parsed.data, ...(message.metadata ? { metadata: message.metadata } : {}) } }],
      maxAttemptsPerStep: this.options.attempts,
      metadata: { frontDoor: { principal: caller.principal, messageId: message.messageId, contextId: message.contextId || taskId } },
    });
    return taskId;
  }

  /**
   * The caller's follow-up on a task: the reply to its open question, whose identity is the follow-up's messageId
   * (`frontReplyId`): the same follow-up sent again is that reply, never the answer to a later question.
   */
  private async answer(taskId: string, messageId: string, parts: z.infer<typeof CallerPartsSchema>, caller: FrontDoorCaller): Promise<string> {
    try {
      await this.producerOf(caller).reply(taskId, { parts }, undefined, { messageId: frontReplyId(taskId, messageId) });
    } catch (error) {
      if (!(error instanceof NoOpenQuestionError)) throw error;
      const state = frontTask(await this.producerOf(caller).get(taskId)).status?.state;
      const why = state !== undefined && TERMINAL_TASK_STATES.has(state) ? 'it is finished' : 'it is not waiting for input';
      throw new UnsupportedOperationError(`task ${taskId} takes no follow-up message: ${why}`);
    }
    return taskId;
  }

  /** The step's target: the named agent, or the skill the caller names (the only one registered when it names none). */
  private async targetOf(params: SendMessageRequest, message: Message, caller: FrontDoorCaller): Promise<{ agent: string } | { skill: string }> {
    const agents = availableAgents(await this.producerOf(caller).listAgents());
    const target = this.options.target;
    if (target.kind === 'agent') {
      const agent = agents.find((candidate) => candidate.card.name === target.name);
      if (!agent) throw new TaskNotFoundError(`no registered agent named ${target.name}`);
      return { agent: agent.cardUrl };
    }
    const skills = [...new Set(agents.flatMap((agent: AgentView) => agent.card.skills.map((skill) => skill.id)))];
    const named = params.metadata?.[SKILL_METADATA_KEY] ?? message.metadata?.[SKILL_METADATA_KEY];
    if (named === undefined && skills.length === 1) return { skill: skills[0]! };
    if (typeof named !== 'string' || !skills.includes(named)) {
      throw new RequestMalformedError(`name a registered skill in metadata.${SKILL_METADATA_KEY} (one of: ${skills.join(', ') || 'none registered'})`);
    }
    return { skill: named };
  }

  /** The task once it ends or waits for the caller, or as it is after `blockingWaitMs` (or when the caller leaves). */
  private async waitForCaller(taskId: string, caller: FrontDoorCaller) {
    const disconnected = caller.disconnected;
    try {
      return await this.producerOf(caller).waitFor(taskId, { untilQuestion: true, timeoutMs: this.options.blockingWaitMs, signal: disconnected });
    } catch (error) {
      if (error instanceof WaitTimeoutError) return error.view;
      if (disconnected.aborted) return this.producerOf(caller).get(taskId);
      throw error;
    }
  }

  private async *events(taskId: string, caller: FrontDoorCaller): AsyncGenerator<StreamResponse, void, undefined> {
    try {
      yield* taskEvents(this.producerOf(caller), taskId, caller.disconnected, STREAM_REFRESH_MS, caller.drained);
    } catch (error) {
      throw asA2AError(error);
    }
  }

  /**
   * One page of the caller's tasks (spec §3.1.4): found through the search index by the caller's task id prefix
   * (`taskIdPrefix`: no scan of other callers' workflows), filtered by contextId, status and statusTimestampAfter,
   * newest update first within the page. The page token is the search's cursor; `totalSize` counts this page.
   */
  private async list(params: ListTasksRequest, caller: FrontDoorCaller): Promise<ListTasksResponse> {
    const pageSize = Math.min(Math.max(params.pageSize ?? 50, 1), MAX_PAGE_SIZE);
    const after = params.statusTimestampAfter ? Date.parse(params.statusTimestampAfter) : undefined;
    const tasks: Task[] = [];
    let cursor = params.pageToken || undefined;
    for (let round = 0; round < LISTING_ROUNDS && tasks.length < pageSize; round++) {
      const page = await this.producerOf(caller).search({ idPrefix: taskIdPrefix(caller.principal) }, { ...(cursor ? { cursor } : {}), limit: pageSize - tasks.length });
      for (const summary of page.items) {
        if (!isTaskOf(caller.principal, localWorkflowId(summary.workflowId))) continue;
        const task = await this.listed(summary.workflowId, params, after, caller);
        if (task) tasks.push(task);
      }
      cursor = page.cursor;
      if (!cursor) break;
    }
    tasks.sort((a, b) => (b.status?.timestamp ?? '').localeCompare(a.status?.timestamp ?? ''));
    return { tasks, nextPageToken: cursor ?? '', pageSize, totalSize: tasks.length };
  }

  /** The task of `taskId` as ListTasks returns it, or undefined when a filter leaves it out (or it expired meanwhile). */
  private async listed(taskId: string, params: ListTasksRequest, afterMs: number | undefined, caller: FrontDoorCaller): Promise<Task | undefined> {
    let task: Task;
    try {
      task = frontTask(await this.producerOf(caller).get(taskId), params.historyLength ?? 0);
    } catch (error) {
      if (error instanceof NotFoundError) return undefined;
      throw error;
    }
    if (params.contextId && task.contextId !== params.contextId) return undefined;
    if (params.status !== undefined && params.status !== TaskState.TASK_STATE_UNSPECIFIED && task.status?.state !== params.status) return undefined;
    if (afterMs !== undefined && !(Date.parse(task.status?.timestamp ?? '') > afterMs)) return undefined;
    return params.includeArtifacts ? task : { ...task, artifacts: [] };
  }
}
