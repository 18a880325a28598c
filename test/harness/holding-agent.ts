/**
 * The handlers of an agent that holds each SendMessage (V2: it answers when the work is done) and shows its task only
 * once it answered: a search while it holds the send finds nothing. Each SendMessage is held until a second one
 * arrives (the duplicate the attack tests look for) or `holdMs` passed, then answered with a COMPLETED task `T<n>`.
 */
import { task, type ScriptedHandlers } from './scripted-agent.ts';

/** See the module header. `holdMs`: the longest the agent holds a SendMessage (ms). */
export function holdingSendHandlers(holdMs: number): ScriptedHandlers {
  const tasks: Record<string, unknown>[] = [];
  let second: () => void = () => undefined;
  const secondArrived = new Promise<void>((resolve) => (second = resolve));
  let sends = 0;
  return {
    SendMessage: async (params: any) => {
      if (++sends > 1) second();
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([secondArrived, new Promise((resolve) => (timer = setTimeout(resolve, holdMs)))]);
      clearTimeout(timer);
      const made = task(`T${sends}`, 'COMPLETED', { contextId: params.message.contextId, history: [params.message], artifacts: { a1: 'booked' } });
      tasks.push(made);
      return { result: { task: made } };
    },
    ...listedTaskHandlers(tasks),
  };
}

/** ListTasks and GetTask over the tasks an agent made so far (`tasks`, as it grows): one page, -32001 for an unknown id. */
export function listedTaskHandlers(tasks: readonly Record<string, unknown>[]): ScriptedHandlers {
  return {
    ListTasks: () => ({ result: { tasks, pageSize: 50, totalSize: tasks.length } }),
    GetTask: (params: { id: string }) => {
      const found = tasks.find((one) => one.id === params.id);
      return found ? { result: found } : { error: { code: -32001, message: 'Task not found' } };
    },
  };
}

/**
 * A NON-deduplicating agent: every SendMessage books anew (task `T<n>`, COMPLETED at once, our message in its history),
 * so a second SendMessage of one messageId is a double booking. `sends`: SendMessage calls by messageId; `tasks`: every
 * task made, listed by ListTasks and read by GetTask.
 */
export function bookingSendHandlers(): { sends: Map<string, number>; tasks: Record<string, unknown>[]; handlers: ScriptedHandlers } {
  const tasks: Record<string, unknown>[] = [];
  const sends = new Map<string, number>();
  return {
    sends,
    tasks,
    handlers: {
      SendMessage: (params: any) => {
        sends.set(params.message.messageId, (sends.get(params.message.messageId) ?? 0) + 1);
        const made = task(`T${tasks.length + 1}`, 'COMPLETED', { contextId: params.message.contextId, history: [params.message], timestamp: new Date().toISOString(), artifacts: { a1: 'booked' } });
        tasks.push(made);
        return { result: { task: made } };
      },
      ...listedTaskHandlers(tasks),
    },
  };
}
