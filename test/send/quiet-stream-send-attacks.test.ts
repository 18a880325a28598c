/**
 * Attacks on the streaming send held like a held SendMessage (send-stream.ts `firstEvent`: from `streamQuietMs` on, a
 * search for our messageId while the agent holds the stream silent; its task adopted when found). The promise: the
 * agent runs our message once (SendStreamingMessage and SendMessage counted together per messageId), and only our
 * task is adopted. Agents here (raw node:http, `scripted-agent.ts`) answer the search with tasks that are not ours
 * (another messageId; our messageId in another context), with a task whose id is null, send their first event right
 * when the search starts, close the stream after our side adopted the task, and see the send duplicated (a second
 * delegate with the same key, sweeps while the stream is silent).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createProducer, type Producer } from '@durable-a2a/producer';
import type { Fleet } from '@durable-a2a/workers';
import { InvalidParamsError, NetworkError, ProtocolError, TaskNotFoundError, type A2ATransport, type Task } from '@durable-a2a/a2a';
import type { DelegationRecord } from '@durable-a2a/shared';
import type { WorkerContext } from '../../packages/workers/src/context.ts';
import { findTaskByMessageId, holdsMessage } from '../../packages/workers/src/delegation/io/search.ts';
import { searchWhileHeld } from '../../packages/workers/src/delegation/io/send-held.ts';
import { useRedisServer } from '../harness/redis.ts';
import { closeAfterEach } from '../harness/lifecycle.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { SU, ev, startScriptedAgent, task, taskEvent, type ScriptedAgentHandle, type ScriptedAnswer } from '../harness/scripted-agent.ts';

const redisServer = useRedisServer();
const QUIET_MS = 300;
const TEXT = 'charge card 4242 once';
let counter = 0;

interface Received {
  messageId: string;
  contextId: string;
}

/** What the agent under test does, given the messages it received so far and whether the test said the work is done. */
interface AgentScript {
  /** The answer to SendStreamingMessage (the message is recorded first). */
  stream(message: Received): ScriptedAnswer;
  /** The tasks ListTasks shows (the search). */
  listed(received: readonly Received[], done: boolean): Record<string, unknown>[];
}

/** Our task: `T-ours`, in the context of the first message received, its history holding that message. */
const ours = (received: readonly Received[], state: 'WORKING' | 'COMPLETED') =>
  received.length === 0
    ? []
    : [task('T-ours', state, { contextId: received[0]!.contextId, history: [{ role: 'ROLE_USER', messageId: received[0]!.messageId, contextId: received[0]!.contextId, parts: [{ text: TEXT }] }], ...(state === 'COMPLETED' ? { artifacts: { a1: 'done' } } : {}) })];

async function startAgent(script: AgentScript) {
  const received: Received[] = [];
  let done = false;
  const record = (params: any) => {
    received.push({ messageId: params.message.messageId, contextId: params.message.contextId ?? 'C1' });
    return received.at(-1)!;
  };
  const agent: ScriptedAgentHandle = await startScriptedAgent({
    SendStreamingMessage: (params) => script.stream(record(params)),
    SendMessage: (params) => (record(params), { hang: true }),
    ListTasks: () => {
      const tasks = script.listed(received, done);
      return { result: { tasks, nextPageToken: '', pageSize: 50, totalSize: tasks.length } };
    },
    GetTask: (params) => {
      const found = script.listed(received, done).find((entry) => entry.id === params.id) ?? ours(received, done ? 'COMPLETED' : 'WORKING').find((entry) => entry.id === params.id);
      return found ? { result: found } : { error: { code: -32001, message: 'Task not found' } };
    },
    SubscribeToTask: (params) => (params.id === 'T-ours' && received.length > 0 ? { sse: [taskEvent(ours(received, done ? 'COMPLETED' : 'WORKING')[0]!)], endAfter: 'close' } : { error: { code: -32001, message: 'Task not found' } }),
  });
  return Object.assign(agent, {
    received,
    finish: () => void (done = true),
    /** Requests that carried our message, by messageId. */
    executions: (messageId: string) => received.filter((entry) => entry.messageId === messageId).length,
  });
}
type Agent = Awaited<ReturnType<typeof startAgent>>;

describe('a silent streaming send under attack', () => {
  let agent: Agent | undefined;
  let producer: Producer | undefined;
  let fleet: Fleet | undefined;
  closeAfterEach(
    () => ({ fleet, agent, producer }),
    () => void (fleet = agent = producer = undefined),
  );

  /** One delegation to `script`'s agent; `meanwhile` runs once the agent has our message; then the work finishes. */
  async function scene(script: AgentScript, options: { searches?: number; meanwhile?: (id: string) => Promise<void>; finishAt?: 'searched' | 'start' } = {}) {
    const prefix = `quiet-attack${++counter}`;
    agent = await startAgent(script);
    producer = createProducer({ redis: redisServer().url, addressPolicy: { allowLoopback: true }, prefix });
    fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, streamingSends: true, streamQuietMs: QUIET_MS, requestTimeoutMs: 500, slowPollMs: 1_000 });
    if (options.finishAt === 'start') agent.finish();
    const { id, messageId } = await producer.delegate({ agent: agent.cardUrl, text: TEXT, idempotencyKey: 'quiet' });
    await eventually(async () => agent!.received.length > 0, 'the agent has our message', 30_000);
    await options.meanwhile?.(id);
    await eventually(async () => agent!.count('ListTasks') >= (options.searches ?? 2) || agent!.received.length > 1, 'searched while the agent was silent', 60_000);
    agent.finish();
    await eventually(async () => ['COMPLETED', 'NEEDS_ATTENTION', 'FAILED'].includes((await producer!.get(id)).state), 'the delegation settled', 60_000);
    const record = (await producer.journal.getDelegation({ workflowId: id, delegationId: 'main.1' }))!;
    return { id, messageId, state: (await producer.get(id)).state, taskId: record.taskId, executions: agent.executions(messageId), sends: agent.received.length };
  }

  const onceAndOurs = (result: Awaited<ReturnType<typeof scene>>) => {
    expect({ executions: result.executions, sends: result.sends, state: result.state, taskId: result.taskId }).toEqual({ executions: 1, sends: 1, state: 'COMPLETED', taskId: 'T-ours' });
  };

  const silent = (): ScriptedAnswer => ({ sse: [], endAfter: 'hang' });

  it('the search lists a task that is not ours (another messageId, in our context): it is never adopted; ours is when it shows; sent once', async () => {
    onceAndOurs(
      await scene(
        {
          stream: silent,
          listed: (received, done) => {
            if (received.length === 0) return [];
            const { contextId } = received[0]!;
            const foreign = task('T-other-message', 'COMPLETED', { contextId, history: [{ role: 'ROLE_USER', messageId: 'someone-elses', contextId, parts: [{ text: TEXT }] }], artifacts: { a1: 'not ours' } });
            return done ? [foreign, ...ours(received, 'COMPLETED')] : [foreign];
          },
        },
        { searches: 3 },
      ),
    );
  }, 120_000);

  it('an agent that puts our message in a context of its own: the task holding our messageId is adopted as the reconciler would adopt it, not held to the deadline; sent once', async () => {
    onceAndOurs(
      await scene(
        {
          stream: silent,
          listed: (received, done) => ours(received, done ? 'COMPLETED' : 'WORKING').map((entry) => ({ ...entry, contextId: 'agent-chosen' })),
        },
        { searches: 1 },
      ),
    );
  }, 120_000);

  it('the search lists a task whose id is null (our messageId in its history): not adopted, no error taken for a miss that resends; ours is adopted when it shows', async () => {
    onceAndOurs(
      await scene({
        stream: silent,
        listed: (received, done) => {
          if (received.length === 0) return [];
          const broken = { ...ours(received, 'WORKING')[0]!, id: null };
          return done ? ours(received, 'COMPLETED') : [broken];
        },
      }, { searches: 3 }),
    );
  }, 120_000);

  it('property: the first event (our task working, our task finished, or a finished status) arrives around streamQuietMs, while the search that finds the same task runs: one send, our task, COMPLETED', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: -60, max: 60 }), fc.constantFrom('working', 'finished-task', 'finished-status'), async (offsetMs, first) => {
        const finished = first !== 'working';
        const firstEvent = (): string => {
          const [task0] = ours(agent!.received, finished ? 'COMPLETED' : 'WORKING');
          if (first === 'finished-status') return ev(SU('COMPLETED', { taskId: 'T-ours', contextId: String(task0!.contextId) }));
          return taskEvent(task0!);
        };
        try {
          onceAndOurs(
            await scene(
              {
                // Our task from the first moment: the search finds it as soon as it runs.
                stream: () => ({ sse: [{ waitMs: Math.max(0, QUIET_MS + offsetMs) }, firstEvent()], endAfter: finished ? 'close' : 'hang' }),
                listed: (received, done) => ours(received, done ? 'COMPLETED' : 'WORKING'),
              },
              { searches: 0, ...(finished ? { finishAt: 'start' as const } : {}) },
            ),
          );
        } finally {
          await fleet?.close();
          await agent?.close();
          await producer?.close();
          fleet = agent = producer = undefined;
        }
      }),
      { numRuns: Number(process.env.QUIET_ATTACK_RUNS ?? 6), seed: 7_331, endOnFailure: true },
    );
  }, 600_000);

  it('the agent closes the stream (no event) after our side adopted its task: one send, COMPLETED', async () => {
    onceAndOurs(
      await scene({
        // Silent past the search (which finds the task WORKING at once), then a clean end without an event.
        stream: () => ({ sse: [{ waitMs: QUIET_MS + 700 }], endAfter: 'close' }),
        listed: (received, done) => ours(received, done ? 'COMPLETED' : 'WORKING'),
      }, { searches: 1 }),
    );
  }, 120_000);

  it('the send duplicated while the stream is silent (the same key delegated again, sweeps of the reconciler): the agent runs our message once', async () => {
    onceAndOurs(
      await scene(
        { stream: silent, listed: (received, done) => (done ? ours(received, 'COMPLETED') : []) },
        {
          searches: 3,
          meanwhile: async (id) => {
            for (let round = 0; round < 3; round++) {
              const again = await producer!.delegate({ agent: agent!.cardUrl, text: TEXT, idempotencyKey: 'quiet' });
              expect(again.id).toBe(id);
              await fleet!.sweepAll();
            }
          },
        },
      ),
    );
  }, 120_000);
});

describe("the search while a send is held, against the reconciler's search (in-process agent)", () => {
  const NOW = Date.UTC(2026, 0, 1, 12);
  const record = { messageId: 'M-ours', requestedContextId: 'C-ours', contextRefused: false, createdAt: NOW - 1_000, workflowId: 'w', delegationId: 'main.1' } as DelegationRecord;
  const ctx = { options: { requestTimeoutMs: 1, slowPollMs: 2, searchMarginMs: 5_000, maxListTasksCalls: 10, now: () => NOW } } as unknown as WorkerContext;

  const listed = fc.array(fc.record({ id: fc.constantFrom('T1', 'T2', 'T3'), contextId: fc.constantFrom('C-ours', 'C-agent', ''), holdsOurs: fc.boolean() }), { maxLength: 3 });
  type Listed = { id: string; contextId: string; holdsOurs: boolean }[];
  const failure = fc.constantFrom('malformed', 'network', 'invalid-params');

  const toTask = (entry: Listed[number]): Task => ({
    id: entry.id,
    contextId: entry.contextId,
    status: { state: 'TASK_STATE_WORKING', timestamp: new Date(NOW).toISOString() },
    history: [{ messageId: entry.holdsOurs ? record.messageId : `other-${entry.id}`, role: 'ROLE_USER', parts: [{ text: 'x' }] }],
  });

  /** An agent listing `tasks` (the first entry of an id wins), its first ListTasks calls failing as `failures` say. */
  function agentOf(tasks: Listed, failures: readonly string[] = []) {
    let calls = 0;
    return {
      async listTasks() {
        const failing = failures[calls++];
        if (failing === 'malformed') throw new ProtocolError('ListTasks: tasks[0].id: expected string, received null', { delivery: 'not-sent' });
        if (failing === 'network') throw new NetworkError('connection reset', { delivery: 'not-sent' });
        if (failing === 'invalid-params') throw new InvalidParamsError('pageSize');
        return { tasks: tasks.map(toTask), nextPageToken: '', pageSize: 50, totalSize: tasks.length };
      },
      async getTask({ id }: { id: string }) {
        const found = tasks.find((entry) => entry.id === id);
        if (!found) throw new TaskNotFoundError(`no task ${id}`);
        return toTask(found);
      },
    } as unknown as A2ATransport;
  }

  /** What the reconciler's search concludes: the task it proves ours (found, holding our messageId), every holder when several, or undefined. */
  async function reconcilerVerdict(tasks: Listed): Promise<{ found: string } | { several: string[] } | undefined> {
    const result = await findTaskByMessageId(agentOf(tasks), record, { marginMs: 5_000, maxListTasksCalls: 10, now: () => NOW });
    if (result.kind === 'several') return { several: [...result.taskIds].sort() };
    return result.kind === 'found' && holdsMessage(result.task, record.messageId) ? { found: result.task.id } : undefined;
  }

  it("property: a list of tasks in any context, holding our message or not, after failed searches (a malformed list, a drop, a refusal): the held search adopts exactly the task the reconciler's search proves ours, and ends on `several` where it does", async () => {
    await fc.assert(
      fc.asyncProperty(listed, fc.array(failure, { maxLength: 5 }), async (tasks, failures) => {
        const expected = await reconcilerVerdict(tasks);
        const hit = await searchWhileHeld(ctx, record, agentOf(tasks, failures), new AbortController().signal);
        const verdict = hit === undefined ? undefined : hit.kind === 'several' ? { several: [...hit.taskIds].sort() } : { found: hit.task.id };
        expect(verdict).toEqual(expected);
        if (hit?.kind === 'found') expect(holdsMessage(hit.task, record.messageId)).toBe(true);
      }),
      { numRuns: 150 },
    );
  });
});
