/**
 * The kind "a stream of appended chunks is a partial view": A2A stream events carry no sequence number, so an agent
 * (or a proxy) that repeats, drops or reorders an appended chunk (`artifactUpdate` with `append: true`) leaves the
 * streamed artifact unlike the task's. The finished status after such chunks is journaled from one full read
 * (GetTask), whose artifacts replace the streamed ones; a failed read keeps the streamed result (with a warning).
 * Raw node:http agent (scripted SSE bytes), real fleet, private redis-server.
 * - Cases: a chunk repeated, dropped, swapped: the journaled artifact is the agent's full read, one GetTask.
 * - Property: any duplicate / drop / swap of the chunks: the journaled artifact is the full read, one GetTask.
 * - A resubscription after a stream that dropped mid-chunks: the finished status from the full read.
 * - A plain stream (one artifact update, not appended): journaled as streamed, no GetTask.
 * - GetTask fails, or carries no artifacts: COMPLETED with the streamed chunks kept, one SendMessage.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProducer, type Producer, type WorkflowView } from '@durable-a2a/producer';
import type { Fleet } from '@durable-a2a/workers';
import { testsOnCluster, useRedisServer } from '../harness/redis.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { AU, SU, ev, startScriptedAgent, task, taskEvent, type ScriptedAgentHandle, type ScriptedAnswer } from '../harness/scripted-agent.ts';

const redisServer = useRedisServer();

/** The agent's result, streamed in three chunks: the first opens the artifact, the other two are appended. */
const CHUNKS = ['hello ', 'brave ', 'world'] as const;
const FULL_TEXT = CHUNKS.join('');

type ChunkOp = { op: 'duplicate'; index: number } | { op: 'drop'; index: number } | { op: 'swap'; index: number; with: number };

/** What each delegation's agent does, by its message text. */
interface Story {
  /** The SSE events after the WORKING snapshot (each a JSON-RPC envelope string) of the task's `subscription`th stream (1-based). */
  events: (taskId: string, subscription: number) => string[];
  /** How the `subscription`th stream ends (default: it stays open). */
  endAfter?: (subscription: number) => 'destroy' | 'hang';
  /** The GetTask answer (default: COMPLETED with the full text). */
  getTask?: (taskId: string) => ScriptedAnswer;
}

/** The chunk events with `ops` applied in order (indexes wrap around the current length), then COMPLETED. */
function chunkEvents(ops: readonly ChunkOp[]): (taskId: string) => string[] {
  return (taskId) => {
    const events = CHUNKS.map((text, index) => AU('a1', index > 0, index === CHUNKS.length - 1, text, { taskId }));
    for (const op of ops) {
      if (events.length === 0) break;
      const index = op.index % events.length;
      if (op.op === 'duplicate') events.splice(index, 0, events[index]!);
      else if (op.op === 'drop') events.splice(index, 1);
      else {
        const other = op.with % events.length;
        [events[index], events[other]] = [events[other]!, events[index]!];
      }
    }
    return [...events, SU('COMPLETED', { taskId })];
  };
}

const fullRead = (taskId: string): ScriptedAnswer => ({ result: task(taskId, 'COMPLETED', { artifacts: { a1: FULL_TEXT } }) });

describe.skipIf(testsOnCluster())('a stream that repeats, drops or reorders appended chunks (end to end)', () => {
  let agent: ScriptedAgentHandle;
  let producer: Producer;
  let fleet: Fleet;
  const stories = new Map<string, Story>();
  /** SubscribeToTask calls so far, by task id. */
  const subscriptions = new Map<string, number>();
  let counter = 0;

  beforeAll(async () => {
    const prefix = `appended-chunks-${Date.now()}`;
    const storyOf = (taskId: string) => stories.get(taskId.slice('T-'.length))!;
    agent = await startScriptedAgent({
      SendMessage: (params) => {
        const text = params.message.parts[0].text as string;
        return { result: { task: task(`T-${text}`, 'SUBMITTED', { contextId: params.message.contextId, history: [params.message] }) } };
      },
      SubscribeToTask: (params) => {
        const taskId = String(params.id);
        const subscription = (subscriptions.get(taskId) ?? 0) + 1;
        subscriptions.set(taskId, subscription);
        const story = storyOf(taskId);
        // Everything in one write: the repeated, dropped or swapped chunks arrive as a proxy would pass them on.
        return { sse: [taskEvent(task(taskId, 'WORKING')), { waitMs: 30 }, story.events(taskId, subscription).map(ev).join(''), { waitMs: 30 }], endAfter: story.endAfter?.(subscription) ?? 'hang' };
      },
      GetTask: (params) => (storyOf(String(params.id)).getTask ?? fullRead)(String(params.id)),
    });
    producer = createProducer({ addressPolicy: { allowLoopback: true }, redis: redisServer().url, prefix });
    fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, reconcileIntervalMs: 60_000 });
  });

  afterAll(async () => {
    await fleet?.close();
    await producer?.close();
    await agent?.close();
  });

  /** Runs one delegation with `story`; its finished view, and the SendMessage and GetTask calls the agent saw for it. */
  async function run(story: Story) {
    const key = `story-${++counter}`;
    stories.set(key, story);
    const { id } = await producer.delegate({ agent: agent.cardUrl, text: key, idempotencyKey: key });
    let view: WorkflowView | undefined;
    await eventually(async () => {
      view = await producer.get(id);
      return view.state !== 'RUNNING';
    }, `${key}: ${id} finished`);
    const taskId = `T-${key}`;
    return {
      view: view!,
      attempt: view!.steps[0]!.attempts[0]!,
      sendMessages: agent.calls('SendMessage').filter((request) => request.params.message.parts[0].text === key).length,
      getTasks: agent.calls('GetTask').filter((request) => String(request.params.id) === taskId).length,
    };
  }

  it.each([
    { name: 'a chunk repeated', ops: [{ op: 'duplicate', index: 1 }] },
    { name: 'the fuzz case (two chunks repeated)', ops: [{ op: 'duplicate', index: 2 }, { op: 'duplicate', index: 1 }] },
    { name: 'a chunk dropped', ops: [{ op: 'drop', index: 1 }] },
    { name: 'two chunks swapped', ops: [{ op: 'swap', index: 1, with: 2 }] },
  ] satisfies { name: string; ops: ChunkOp[] }[])('$name: the journaled artifact is the agent\'s full read (one GetTask)', async ({ ops }) => {
    const { view, attempt, sendMessages, getTasks } = await run({ events: chunkEvents(ops) });
    expect(view.state).toBe('COMPLETED');
    expect(attempt.resultText).toBe(FULL_TEXT);
    expect(getTasks).toBe(1);
    expect(sendMessages).toBe(1);
  });

  it('property: any duplicate, drop or swap of appended chunks: the journaled artifact is the agent\'s full read', async () => {
    const op: fc.Arbitrary<ChunkOp> = fc.oneof(
      fc.record({ op: fc.constant('duplicate' as const), index: fc.nat(5) }),
      fc.record({ op: fc.constant('drop' as const), index: fc.nat(5) }),
      fc.record({ op: fc.constant('swap' as const), index: fc.nat(5), with: fc.nat(5) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 4 }), async (ops) => {
        const { view, attempt, getTasks } = await run({ events: chunkEvents(ops) });
        expect(view.state).toBe('COMPLETED');
        expect(attempt.resultText).toBe(FULL_TEXT);
        expect(getTasks).toBe(1);
      }),
      { numRuns: 12 },
    );
  }, 120_000);

  it('a resubscription after a stream that dropped mid-chunks: its finished status is journaled from the full read, not the chunks the first stream left', async () => {
    const { view, attempt, getTasks } = await run({
      // The first stream: two chunks, one repeated, then the connection drops; the second: COMPLETED alone.
      events: (taskId, subscription) => (subscription === 1 ? chunkEvents([{ op: 'duplicate', index: 1 }])(taskId).slice(0, 3) : [SU('COMPLETED', { taskId })]),
      endAfter: (subscription) => (subscription === 1 ? 'destroy' : 'hang'),
      // GetTask after the drop shows the task still working (no artifacts yet); after the end, the full read.
      getTask: (taskId) => ({ result: subscriptions.get(taskId) === 1 ? task(taskId, 'WORKING') : task(taskId, 'COMPLETED', { artifacts: { a1: FULL_TEXT } }) }),
    });
    expect(view.state).toBe('COMPLETED');
    expect(attempt.resultText).toBe(FULL_TEXT);
    expect(getTasks).toBe(2);
  });

  it('a plain stream (one artifact update, not appended): journaled as streamed, no GetTask', async () => {
    const { view, attempt, getTasks } = await run({ events: (taskId) => [AU('a1', false, true, 'the result', { taskId }), SU('COMPLETED', { taskId })] });
    expect(view.state).toBe('COMPLETED');
    expect(attempt.resultText).toBe('the result');
    expect(getTasks).toBe(0);
  });

  it('GetTask fails after appended chunks: COMPLETED with the streamed chunks kept (the result is not lost)', async () => {
    const { view, attempt, sendMessages } = await run({ events: chunkEvents([]), getTask: () => ({ error: { code: -32603, message: 'internal error' } }) });
    expect(view.state).toBe('COMPLETED');
    expect(attempt.resultText).toBe(FULL_TEXT);
    expect(sendMessages).toBe(1);
  });

  it('GetTask carries no artifacts after appended chunks: its status journaled, the streamed chunks kept', async () => {
    const { view, attempt, getTasks } = await run({ events: chunkEvents([{ op: 'duplicate', index: 1 }]), getTask: (taskId) => ({ result: task(taskId, 'COMPLETED') }) });
    expect(view.state).toBe('COMPLETED');
    // What was streamed, repeated chunk and all: nothing better is known, and the result is not lost.
    expect(attempt.resultText).toBe('hello brave brave world');
    expect(getTasks).toBe(1);
  });
});
