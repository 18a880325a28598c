/**
 * The front task: what a caller sees of a journaled workflow, as an A2A Task (spec §4.1.1). The task id is
 * the workflow id; the state is the workflow's, with the remote agent's question passed through while one
 * is open; artifacts are the last attempt's, keyed by artifactId. Built as A2A 1.0 JSON from the journal
 * view and converted by the SDK (`Task.fromJSON`), so the wire format stays the SDK's.
 */
import { z } from 'zod';
import { Message as SdkMessage, Task, TaskState } from '@a2a-js/sdk';
import type { Message, Part } from '@durable-a2a/a2a';
import type { AttemptSummary, WorkflowView } from '../../view.ts';

/** What the front door journals with a workflow it created (the definition's `metadata.frontDoor`). */
export const FrontDoorMetadataSchema = z.object({
  principal: z.string(),
  /** The caller's messageId of the message that created the task. */
  messageId: z.string(),
  contextId: z.string(),
});
export type FrontDoorMetadata = z.infer<typeof FrontDoorMetadataSchema>;

/** The front door's record of a workflow, or undefined when the front door did not create it. */
export function frontDoorMetadataOf(view: WorkflowView): FrontDoorMetadata | undefined {
  const parsed = FrontDoorMetadataSchema.safeParse(view.definition.metadata?.frontDoor);
  return parsed.success ? parsed.data : undefined;
}

/** Task states after which nothing changes (spec §4.1.3). */
export const TERMINAL_TASK_STATES: ReadonlySet<TaskState> = new Set([TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_CANCELED, TaskState.TASK_STATE_REJECTED]);
/** States where the task waits for the caller: a stream ends there, a blocking send answers there. */
export const INTERRUPTED_TASK_STATES: ReadonlySet<TaskState> = new Set([TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_AUTH_REQUIRED]);

/** The attempt the caller's task stands on: the last one of the (only) step. */
function currentAttempt(view: WorkflowView): AttemptSummary | undefined {
  return view.steps[0]?.attempts.at(-1);
}

const agentMessage = (contextId: string, taskId: string, messageId: string, parts: Part[]) => ({ messageId, contextId, taskId, role: 'ROLE_AGENT', parts });

/** The front state and its status message (1.0 JSON) of a workflow view. */
function statusOf(view: WorkflowView, contextId: string): { state: TaskState; message?: object; timestamp: string } {
  const attempt = currentAttempt(view);
  const updated = view.updatedAt;
  const question = view.openQuestions[0];
  const failureMessage = () => agentMessage(contextId, view.workflowId, `${view.workflowId}-failure`, [{ text: (view.failure ?? []).join('; ') || view.state }]);
  switch (view.state) {
    case 'COMPLETED': {
      const direct = (attempt?.result as { message?: Message } | undefined)?.message;
      const message = direct ?? attempt?.statusMessage;
      return { state: TaskState.TASK_STATE_COMPLETED, ...(message ? { message: agentMessage(contextId, view.workflowId, message.messageId, message.parts) } : {}), timestamp: updated };
    }
    case 'CANCELED':
      return { state: TaskState.TASK_STATE_CANCELED, timestamp: updated };
    case 'COMPENSATED':
      // Undone after a cancel: canceled; undone after a failure: failed.
      return view.cancelRequested ? { state: TaskState.TASK_STATE_CANCELED, timestamp: updated } : { state: TaskState.TASK_STATE_FAILED, message: failureMessage(), timestamp: updated };
    case 'FAILED':
      return { state: attempt?.state === 'REJECTED' ? TaskState.TASK_STATE_REJECTED : TaskState.TASK_STATE_FAILED, message: failureMessage(), timestamp: updated };
    default:
      break;
  }
  if (question && !view.cancelRequested) {
    const state = question.state === 'AUTH_REQUIRED' ? TaskState.TASK_STATE_AUTH_REQUIRED : TaskState.TASK_STATE_INPUT_REQUIRED;
    const parts = question.question?.parts ?? [{ text: question.text }];
    return { state, message: agentMessage(contextId, view.workflowId, question.question?.messageId ?? `${view.workflowId}-question`, parts), timestamp: question.askedAt ?? updated };
  }
  if (view.state === 'NEEDS_ATTENTION') {
    // An operator decides (retry or abandon); to the caller the task is still being worked on, and the status says why.
    const why = view.attention ? `waiting for an operator: ${view.attention.message}` : 'waiting for an operator';
    return { state: TaskState.TASK_STATE_WORKING, message: agentMessage(contextId, view.workflowId, `${view.workflowId}-attention`, [{ text: why }]), timestamp: updated };
  }
  // RUNNING, COMPENSATING: working once an agent has (or had) the task.
  const started = view.steps.some((step) => step.attempts.some((candidate) => candidate.taskId !== undefined || candidate.finished));
  return { state: started || view.cancelRequested ? TaskState.TASK_STATE_WORKING : TaskState.TASK_STATE_SUBMITTED, timestamp: updated };
}

/**
 * The A2A Task of a front-door workflow. `historyLength` (spec §3.2.4): undefined = the whole history,
 * 0 = none, n = the last n messages. The history is the caller's first message, then the agent's open
 * question or final message.
 */
export function frontTask(view: WorkflowView, historyLength?: number): Task {
  const front = frontDoorMetadataOf(view);
  const contextId = front?.contextId ?? view.workflowId;
  const status = statusOf(view, contextId);
  const step = view.definition.steps[0];
  const sent = step?.message;
  const history: object[] = [];
  if (front && sent) {
    const parts = 'text' in sent ? [{ text: sent.text }] : sent.parts;
    history.push({ messageId: front.messageId, contextId, taskId: view.workflowId, role: 'ROLE_USER', parts });
  }
  if (status.message) history.push(status.message);
  const kept = historyLength === undefined ? history : historyLength <= 0 ? [] : history.slice(-historyLength);
  const artifacts = (currentAttempt(view)?.artifacts ?? []).map(({ artifactId, name, description, parts, metadata }) => ({ artifactId, name, description, parts, metadata }));
  return Task.fromJSON({
    id: view.workflowId,
    contextId,
    status: { state: TaskState[status.state], message: status.message, timestamp: status.timestamp },
    artifacts,
    history: kept,
  });
}

/** The caller's message as A2A 1.0 JSON (what the journal's schemas read). */
export function messageJson(message: SdkMessage): unknown {
  // The SDK's own serializer: the inverse of the `fromJSON` its transports applied to the request.
  return SdkMessage.toJSON(message);
}
