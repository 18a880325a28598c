/**
 * A scripted agent whose task T1 asks a question while it is followed (the parked-task field cases: R28,
 * streamorder30): its first SubscribeToTask streams the task WORKING, then a status update INPUT_REQUIRED carrying
 * the question; GetTask reads T1 INPUT_REQUIRED with the same question. What later subscriptions answer is the case's.
 */
import type { Setup } from './field-cases.ts';
import { SU, agentMessage, ev, task, taskEvent, type ScriptedAnswer, type ScriptedHandlers } from './scripted-agent.ts';

/** The question T1 asks: an agent message "two rooms or one?" (messageId `q1`) in `contextId`. */
export const roomsQuestion = (contextId?: string) => agentMessage('two rooms or one?', { messageId: 'q1', taskId: 'T1', contextId });

/** How the asking agent stamps and ends its first stream, and what its later subscriptions answer. */
export interface AskingOptions {
  /** The WORKING snapshot's status timestamp (ISO 8601). Default none. */
  workingAt?: string;
  /** The question's status timestamp (ISO 8601), on the stream and on GetTask. Default none. */
  askedAt?: string;
  /** How the first stream ends (`ScriptedAnswer` sse `endAfter`). Default 'close'. */
  endAfter?: 'close' | 'hang';
  /** What SubscribeToTask answers from its second call on; it gets the question's status (`contextId`, `timestamp`, `message`). */
  later: (asked: { contextId?: string; timestamp?: string; message: ReturnType<typeof roomsQuestion> }) => ScriptedAnswer;
}

/** SubscribeToTask and GetTask of the asking agent (see the module header), for `setUp`'s handlers (`seen`: our contextId). */
export function askingHandlers(seen: Setup['seen'], options: AskingOptions): ScriptedHandlers {
  const asked = () => ({ contextId: seen.contextId, ...(options.askedAt ? { timestamp: options.askedAt } : {}), message: roomsQuestion(seen.contextId) });
  return {
    SubscribeToTask: (_params, call) =>
      call.count === 1
        ? { sse: [taskEvent(task('T1', 'WORKING', { contextId: seen.contextId, ...(options.workingAt ? { timestamp: options.workingAt } : {}) })), ev(SU('INPUT_REQUIRED', asked()))], ...(options.endAfter ? { endAfter: options.endAfter } : {}) }
        : options.later(asked()),
    GetTask: () => ({ result: task('T1', 'INPUT_REQUIRED', asked()) }),
  };
}
