/**
 * A raw node:http agent (`scripted-agent.ts`) whose SendMessage the test drives step by step, for the attacks on a
 * dead sender's send lease (test/topology/dead-sender-attacks.test.ts): the task a SendMessage creates appears when
 * the test says (`createTasks`, or at once with `createOnReceive`), its answer leaves when the test says
 * (`releaseAnswers`: the task as it was when created, a late answer), and the task finishes when the test says
 * (`completeTasks`). SendStreamingMessage is held the same way (its headers too). GetTask, ListTasks and SubscribeToTask tell the truth about the tasks created so far; a stream
 * sends the task's snapshot and stays open (the follower's idle timeout ends it). ListTasks can be made unsupported.
 */
import { startScriptedAgent, task, taskEvent, type ScriptedAgentHandle } from './scripted-agent.ts';

export interface GatedAgentOptions {
  /** Create the task as soon as a SendMessage arrives (else at `createTasks()` or when its answer is released). Default false. */
  createOnReceive?: boolean;
  /** ListTasks answers -32601 (method not found). Default false. */
  listUnsupported?: boolean;
}

export interface GatedAgentHandle extends ScriptedAgentHandle {
  /** Creates the tasks of every SendMessage received so far that has none yet. */
  createTasks(): void;
  /** Answers every SendMessage held so far (and those that arrive later) with its task as created. */
  releaseAnswers(): void;
  /** Marks every task created so far COMPLETED with one artifact `a1`. */
  completeTasks(): void;
  /** Tasks created so far. */
  created(): number;
  /** SendMessage requests whose answer was written. */
  answered(): number;
}

interface GatedTask {
  id: string;
  message: { messageId: string; contextId?: string };
  completed: boolean;
}

/** Starts the agent (see the module header). */
export async function startGatedAgent(options: GatedAgentOptions = {}): Promise<GatedAgentHandle> {
  const tasks: GatedTask[] = [];
  const pending: { message: GatedTask['message']; task?: GatedTask }[] = [];
  let released = false;
  let answered = 0;
  let wake: () => void = () => undefined;
  let waiting = new Promise<void>((resolve) => (wake = resolve));
  const create = (entry: (typeof pending)[number]) => {
    if (!entry.task) tasks.push((entry.task = { id: `T-${tasks.length + 1}`, message: entry.message, completed: false }));
    return entry.task;
  };
  const view = (entry: GatedTask, asCreated = false) => {
    const contextId = entry.message.contextId ?? `ctx-${entry.id}`;
    const done = entry.completed && !asCreated;
    return task(entry.id, done ? 'COMPLETED' : asCreated ? 'SUBMITTED' : 'WORKING', { contextId, history: [entry.message], ...(done ? { artifacts: { a1: `done ${entry.id}` } } : {}) });
  };
  const byId = (id: unknown) => tasks.find((entry) => entry.id === id);
  /** A send (either method): the task, once the answer is released. */
  const receive = async (params: { message: GatedTask['message'] }) => {
    const entry = { message: params.message };
    pending.push(entry);
    if (options.createOnReceive) create(entry);
    // Bounded: the agent's close() ends the test's sockets; released answers leave at once.
    for (let round = 0; round < 10_000 && !released; round++) await waiting;
    answered++;
    return create(entry);
  };
  const agent = await startScriptedAgent({
    SendMessage: async (params) => ({ result: { task: view(await receive(params), true) } }),
    // The headers wait with the answer; then the task's snapshot, and the stream stays open.
    SendStreamingMessage: async (params) => ({ sse: [taskEvent(view(await receive(params), true))], endAfter: 'hang' }),
    GetTask: (params) => {
      const found = byId(params.id);
      return found ? { result: view(found) } : { error: { code: -32001, message: 'Task not found' } };
    },
    ListTasks: (params) => {
      if (options.listUnsupported) return { error: { code: -32601, message: 'Method not found' } };
      const found = tasks.filter((entry) => !params.contextId || entry.message.contextId === params.contextId).map((entry) => view(entry));
      return { result: { tasks: found, nextPageToken: '', pageSize: 50, totalSize: found.length } };
    },
    SubscribeToTask: (params) => {
      const found = byId(params.id);
      if (!found) return { error: { code: -32001, message: 'Task not found' } };
      if (found.completed) return { error: { code: -32004, message: 'Task is in a terminal state' } };
      return { sse: [taskEvent(view(found))], endAfter: 'hang' };
    },
  });
  const rouse = () => {
    const woken = wake;
    waiting = new Promise<void>((resolve) => (wake = resolve));
    woken();
  };
  return Object.assign(agent, {
    createTasks: () => {
      for (const entry of pending) create(entry);
    },
    releaseAnswers: () => {
      released = true;
      rouse();
    },
    completeTasks: () => {
      for (const entry of tasks) entry.completed = true;
    },
    created: () => tasks.length,
    answered: () => answered,
  });
}

