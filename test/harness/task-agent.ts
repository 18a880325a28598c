/**
 * A scripted raw node:http agent (`scripted-agent.ts`) that does real work: one task per SendMessage, COMPLETED with
 * one artifact `taskMs` after it was created; GetTask, SubscribeToTask and ListTasks tell the truth. Its SendMessage
 * can be delayed (`sendMs`: the agent counts how many it handles at once, `maxConcurrentSends`) or answered by a
 * hook first (`before`: e.g. HTTP 429 with Retry-After). For flow-control tests.
 */
import { AU, SU, ev, startScriptedAgent, task, taskEvent, type ScriptedAgentHandle, type ScriptedAnswer } from './scripted-agent.ts';

export interface TaskAgentOptions {
  /** How long a task works before it is COMPLETED (ms). Default 200. */
  taskMs?: number;
  /** How long SendMessage takes to answer (ms). Default 0. */
  sendMs?: number;
  /** Answers a SendMessage instead of creating a task when it returns an answer (its 1-based count given). */
  before?: (count: number) => ScriptedAnswer | undefined;
}

export interface TaskAgentHandle extends ScriptedAgentHandle {
  /** SendMessage calls the agent was handling at once, at most, so far. */
  maxConcurrentSends(): number;
  /** Tasks created so far. */
  created(): number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Starts the agent (see the module header). */
export async function startTaskAgent(options: TaskAgentOptions = {}): Promise<TaskAgentHandle> {
  const taskMs = options.taskMs ?? 200;
  const tasks = new Map<string, { message: any; at: number }>();
  let inFlight = 0;
  let maxInFlight = 0;
  const done = (id: string) => Date.now() - tasks.get(id)!.at >= taskMs;
  const current = (id: string) => {
    const entry = tasks.get(id)!;
    const contextId = entry.message.contextId ?? `ctx-${id}`;
    return task(id, done(id) ? 'COMPLETED' : 'WORKING', { contextId, history: [entry.message], ...(done(id) ? { artifacts: { a1: `done ${id}` } } : {}) });
  };
  const agent = await startScriptedAgent({
    SendMessage: async (params, call) => {
      const early = options.before?.(call.count);
      if (early) return early;
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      try {
        if (options.sendMs) await sleep(options.sendMs);
        const id = `T-${tasks.size + 1}`;
        tasks.set(id, { message: params.message, at: Date.now() });
        return { result: { task: current(id) } };
      } finally {
        inFlight--;
      }
    },
    GetTask: (params) => (tasks.has(params.id) ? { result: current(params.id) } : { error: { code: -32001, message: 'Task not found' } }),
    ListTasks: (params) => {
      const found = [...tasks.keys()].filter((id) => !params.contextId || tasks.get(id)!.message.contextId === params.contextId).map(current);
      return { result: { tasks: found, nextPageToken: '', pageSize: 50, totalSize: found.length } };
    },
    SubscribeToTask: (params) => {
      const id = String(params.id);
      if (!tasks.has(id)) return { error: { code: -32001, message: 'Task not found' } };
      if (done(id)) return { error: { code: -32004, message: 'Task is in a terminal state' } };
      const ids = { taskId: id, contextId: (current(id) as { contextId: string }).contextId };
      return { sse: [taskEvent(current(id)), { waitMs: Math.max(0, tasks.get(id)!.at + taskMs - Date.now()) }, ev(AU('a1', false, true, `done ${id}`, ids)), ev(SU('COMPLETED', ids))] };
    },
  });
  return Object.assign(agent, { maxConcurrentSends: () => maxInFlight, created: () => tasks.size });
}
