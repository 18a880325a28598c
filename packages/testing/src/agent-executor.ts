/**
 * The demo agent's AgentExecutor: plays a behaviour's steps onto the SDK's
 * event bus. SDK contract (protocol digest §11): every execution publishes a
 * `task` (or `message`) first, and `cancelTask` must lead to a CANCELED status
 * on the bus or the CancelTask call hangs.
 */
import { randomUUID } from 'node:crypto';
import { Role, TaskState, type Message, type Part } from '@a2a-js/sdk';
import { AgentEvent, type AgentExecutor, type ExecutionEventBus, type RequestContext } from '@a2a-js/sdk/server';
import type { AgentRequest, Behaviour, ScriptedTaskState, Step } from './agent-behaviours.ts';

/** A received user message, as the executor saw it (wire-ish: plain strings, no SDK objects). */
export interface ReceivedMessage {
  messageId: string;
  taskId: string;
  contextId: string;
  text: string;
  metadata?: Record<string, unknown>;
  referenceTaskIds?: string[];
  isFollowUp: boolean;
}

const STATES: Record<ScriptedTaskState, TaskState> = {
  WORKING: TaskState.TASK_STATE_WORKING,
  COMPLETED: TaskState.TASK_STATE_COMPLETED,
  FAILED: TaskState.TASK_STATE_FAILED,
  REJECTED: TaskState.TASK_STATE_REJECTED,
  CANCELED: TaskState.TASK_STATE_CANCELED,
  INPUT_REQUIRED: TaskState.TASK_STATE_INPUT_REQUIRED,
  AUTH_REQUIRED: TaskState.TASK_STATE_AUTH_REQUIRED,
};
const TERMINAL: ReadonlySet<ScriptedTaskState> = new Set(['COMPLETED', 'FAILED', 'REJECTED', 'CANCELED']);

/**
 * One execution in flight. `abort` ends its current wait and stops it at the
 * next step: 'cancel' then publishes CANCELED, 'crash' publishes nothing more.
 */
class Run {
  aborted: 'cancel' | 'crash' | undefined;
  private wake: (() => void) | undefined;

  abort(reason: 'cancel' | 'crash'): void {
    this.aborted ??= reason;
    this.wake?.();
  }

  async sleep(ms: number): Promise<void> {
    if (this.aborted) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    this.wake = undefined;
  }
}

export class ScriptedExecutor implements AgentExecutor {
  readonly received: ReceivedMessage[] = [];
  private readonly invocations = new Map<string, number>();
  private readonly runs = new Map<string, Run>();

  constructor(public behaviour: Behaviour) {}

  /** Executions per messageId (all of them when no id is given). */
  invocationCount(messageId?: string): number {
    if (messageId === undefined) return this.received.length;
    return this.invocations.get(messageId) ?? 0;
  }

  /** Stops every execution in flight without publishing anything more, as a process crash would. */
  crashAll(): void {
    for (const run of this.runs.values()) run.abort('crash');
    this.runs.clear();
  }

  execute = async (context: RequestContext, bus: ExecutionEventBus): Promise<void> => {
    const message = context.userMessage;
    const request: AgentRequest = {
      text: textOf(message.parts),
      messageId: message.messageId,
      taskId: context.taskId,
      contextId: context.contextId,
      isFollowUp: context.task !== undefined,
      ...(message.metadata ? { metadata: message.metadata } : {}),
      ...(message.referenceTaskIds.length > 0 ? { referenceTaskIds: [...message.referenceTaskIds] } : {}),
    };
    this.received.push({ ...request });
    this.invocations.set(request.messageId, (this.invocations.get(request.messageId) ?? 0) + 1);

    const steps = this.behaviour(request);
    const run = new Run();
    this.runs.set(request.taskId, run);
    try {
      await this.play(steps, request, context, bus, run);
    } finally {
      if (this.runs.get(request.taskId) === run) this.runs.delete(request.taskId);
    }
  };

  cancelTask = async (taskId: string, bus: ExecutionEventBus): Promise<void> => {
    const run = this.runs.get(taskId);
    if (run) {
      run.abort('cancel');
      return;
    }
    // No execution in flight (e.g. parked at INPUT_REQUIRED): answer on the bus directly.
    const known = this.received.findLast((received) => received.taskId === taskId);
    bus.publish(statusEvent(taskId, known?.contextId ?? '', 'CANCELED', 'canceled by request'));
  };

  private async play(steps: Step[], request: AgentRequest, context: RequestContext, bus: ExecutionEventBus, run: Run): Promise<void> {
    const { taskId, contextId } = request;
    const firstReply = steps.find((step) => !('delayMs' in step) && !('sideEffect' in step));
    let taskPublished = false;
    const publishTask = (): void => {
      if (taskPublished) return;
      taskPublished = true;
      const existing = context.task;
      bus.publish(
        AgentEvent.task({
          id: taskId,
          contextId,
          status: {
            state: existing ? TaskState.TASK_STATE_WORKING : TaskState.TASK_STATE_SUBMITTED,
            message: undefined,
            timestamp: new Date().toISOString(),
          },
          artifacts: existing?.artifacts ?? [],
          history: existing?.history ?? [context.userMessage],
          metadata: existing?.metadata,
        }),
      );
    };
    if (!(firstReply && 'directMessage' in firstReply)) publishTask();

    for (const step of steps) {
      if (run.aborted) break;
      if ('delayMs' in step) {
        await run.sleep(step.delayMs);
      } else if ('sideEffect' in step) {
        await step.sideEffect();
      } else if ('directMessage' in step) {
        if (taskPublished) throw new Error('demo agent: a directMessage step must come before any state or artifact step');
        bus.publish(AgentEvent.message(agentMessage(step.directMessage, step.withTaskId ? taskId : '', contextId)));
        return;
      } else if ('artifact' in step) {
        publishTask();
        const { artifactId, text, append, lastChunk, name } = step.artifact;
        bus.publish(
          AgentEvent.artifactUpdate({
            taskId,
            contextId,
            artifact: { artifactId, name: name ?? '', description: '', parts: [textPart(text)], metadata: undefined, extensions: [] },
            append: append ?? false,
            lastChunk: lastChunk ?? false,
            metadata: undefined,
          }),
        );
      } else {
        publishTask();
        bus.publish(statusEvent(taskId, contextId, step.state, step.text));
        if (TERMINAL.has(step.state)) return;
      }
    }
    if (run.aborted === 'cancel') {
      publishTask();
      bus.publish(statusEvent(taskId, contextId, 'CANCELED', 'canceled by request'));
    }
  }
}

function statusEvent(taskId: string, contextId: string, state: ScriptedTaskState, text?: string) {
  return AgentEvent.statusUpdate({
    taskId,
    contextId,
    status: {
      state: STATES[state],
      message: text === undefined ? undefined : agentMessage(text, taskId, contextId),
      timestamp: new Date().toISOString(),
    },
    metadata: undefined,
  });
}

function agentMessage(text: string, taskId: string, contextId: string): Message {
  return {
    messageId: randomUUID(),
    contextId,
    taskId,
    role: Role.ROLE_AGENT,
    parts: [textPart(text)],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

function textPart(text: string): Part {
  return { content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' };
}

function textOf(parts: Part[]): string {
  return parts.map((part) => (part.content?.$case === 'text' ? part.content.value : '')).join('');
}
