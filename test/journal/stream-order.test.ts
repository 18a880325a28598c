/**
 * A stream is an ordered channel (applyStatus-5.lua "Ordered channels"; docs/delegation-core.md "Ordered and
 * unordered observations"): its events arrive in the order the agent's store wrote them, so an event later on the
 * stream that wrote the row's status is journaled whatever the stamps of agent replicas with skewed clocks say, while
 * an unordered observation (a GetTask that raced the stream, a late push, another stream's snapshot) showing a status
 * the journal already moved past never moves the row back to it. Before (streamorder30), a snapshot WORKING stamped
 * 60 s ahead and then INPUT_REQUIRED stamped now on the same stream: the question was 'stale', never shown.
 * Real redis-server, the journal's scripts through the functions the workers and the push route apply with.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { StreamResponse, Task } from '@durable-a2a/a2a';
import { applyStreamResponse, applyTask, type DelegationRef } from '@durable-a2a/shared';
import { runningIntent, useConnectedProducer } from '../harness/journal-rows.ts';
import { useRedisServer } from '../harness/redis.ts';

const CARD = 'http://agent.example/.well-known/agent-card.json';
const BASE = Date.UTC(2026, 0, 1);
const connected = useConnectedProducer(useRedisServer(), 'stream-order');
let counter = 0;

/** One status the agent's store wrote: its state, its question (INPUT_REQUIRED) and the stamp its replica put on it. */
interface Written {
  state: 'WORKING' | 'INPUT_REQUIRED' | 'COMPLETED';
  question?: string;
  stamp: string;
}

const statusOf = (written: Written) => ({
  state: `TASK_STATE_${written.state}`,
  timestamp: written.stamp,
  ...(written.question ? { message: { messageId: written.question, role: 'ROLE_AGENT', parts: [{ text: `question ${written.question}?` }] } } : {}),
});
const taskOf = (taskId: string, written: Written): Task => ({ id: taskId, contextId: 'C1', status: statusOf(written) }) as Task;
const updateOf = (taskId: string, written: Written): StreamResponse => ({ statusUpdate: { taskId, contextId: 'C1', status: statusOf(written) } }) as StreamResponse;

/** How an observation reaches the journal. */
type Channel = 'stream' | 'get-task' | 'push' | 'other-stream';

/**
 * Applies `written` as observed on `channel`: on the stream `stream` (its first event is its Task snapshot), or
 * unordered (`other-stream`: a stream of its own whose snapshot is all it says before it ends).
 */
async function observe(ref: DelegationRef, channel: Channel, written: Written, first: boolean, stream = `S-${ref.workflowId}`): Promise<void> {
  const journal = connected.journal();
  const taskId = `T-${ref.workflowId}`;
  const record = (await journal.getDelegation(ref))!;
  if (channel === 'stream') {
    const response = first ? ({ task: taskOf(taskId, written) } as StreamResponse) : updateOf(taskId, written);
    await applyStreamResponse(journal, record, response, { stream, snapshot: first, ...(record.taskId ? {} : { agentCardUrl: CARD }) });
  } else if (channel === 'get-task') await applyTask(journal, ref, taskOf(taskId, written), { snapshot: true });
  else if (channel === 'push') await applyStreamResponse(journal, record, updateOf(taskId, written));
  // A resubscription: a stream of its own, whose first event (its snapshot) is all it says here.
  else await applyStreamResponse(journal, record, { task: taskOf(taskId, written) } as StreamResponse, { stream: `R-${ref.workflowId}-${++counter}`, snapshot: true });
}

/** The row's state and question as the journal and the producer show them. */
async function shown(ref: DelegationRef): Promise<{ state: string; question: string | undefined; open: number }> {
  const record = (await connected.journal().getDelegation(ref))!;
  return { state: record.state, question: record.questionKey, open: (await connected.producer().questions(ref.workflowId)).length };
}

const expectShows = (view: Awaited<ReturnType<typeof shown>>, written: Written) => {
  expect(view.state).toBe(written.state);
  if (written.state === 'INPUT_REQUIRED') {
    expect(view.question).toBe(written.question);
    expect(view.open).toBe(1);
  } else expect(view.open).toBe(0);
};

describe('a stream is an ordered channel', () => {
  it('case: snapshot WORKING stamped 60 s ahead, then INPUT_REQUIRED stamped now on the same stream: the question is shown; a GetTask of it agrees; the racing GetTask and a late push of the WORKING change nothing (was: the question stale)', async () => {
    const ref = await runningIntent(connected.journal(), `so-${++counter}`, CARD);
    const working: Written = { state: 'WORKING', stamp: new Date(BASE + 60_000).toISOString() };
    const asked: Written = { state: 'INPUT_REQUIRED', question: 'q1', stamp: new Date(BASE + 1_000).toISOString() };
    await observe(ref, 'stream', working, true);
    await observe(ref, 'stream', asked, false);
    expectShows(await shown(ref), asked);
    await observe(ref, 'get-task', asked, false);
    expectShows(await shown(ref), asked);
    await observe(ref, 'get-task', working, false);
    await observe(ref, 'push', working, false);
    await observe(ref, 'other-stream', working, false);
    expectShows(await shown(ref), asked);
    // The stream goes on: its later statuses still apply whatever their stamps.
    const completed: Written = { state: 'COMPLETED', stamp: new Date(BASE + 2_000).toISOString() };
    await observe(ref, 'stream', completed, false);
    expect((await shown(ref)).state).toBe('COMPLETED');
  });

  it('property: whatever the replicas\' skew, the journal shows the last status the stream delivered, and an unordered observation of a status it moved past never moves it back', async () => {
    // Stamps: the agent's true time (1 s per status) plus its replica's skew; distinct for distinct statuses.
    const skew = fc.constantFrom(0, 60_000, -60_000, 3_600_000, -3_600_000, 4_000_000_000_000 - BASE);
    const step = fc.record({ question: fc.boolean(), skew });
    const history = fc.tuple(fc.array(step, { minLength: 1, maxLength: 7 }), fc.boolean(), skew);
    // Where unordered observations come (after which stream event), which channel and which earlier status they show.
    const unordered = fc.array(fc.record({ after: fc.nat(), channel: fc.constantFrom<Channel>('get-task', 'push', 'other-stream'), back: fc.nat() }), { maxLength: 8 });
    await fc.assert(
      fc.asyncProperty(history, unordered, fc.nat({ max: 3 }), async ([steps, completes, completedSkew], extras, opensAt) => {
        const ref = await runningIntent(connected.journal(), `so-${++counter}`, CARD);
        const written: Written[] = steps.map(({ question, skew: by }, index) => ({
          state: question ? 'INPUT_REQUIRED' : 'WORKING',
          ...(question ? { question: `q${index}` } : {}),
          stamp: new Date(BASE + index * 1_000 + by).toISOString(),
        }));
        if (completes) written.push({ state: 'COMPLETED', stamp: new Date(BASE + written.length * 1_000 + completedSkew).toISOString() });
        // The stream opens at some status (its snapshot) and delivers every later one in order.
        const first = Math.min(opensAt, written.length - 1);
        let stream = 'S0';
        for (let index = first; index < written.length; index++) {
          await observe(ref, 'stream', written[index]!, index === first, stream);
          expectShows(await shown(ref), written[index]!);
          // Unordered observations of statuses the stream already delivered (the last one, or one it moved past).
          for (const extra of extras.filter(({ after }) => after % written.length === index)) {
            const seen = written[index - (extra.back % (index - first + 1))]!;
            await observe(ref, extra.channel, seen, false);
            expectShows(await shown(ref), written[index]!);
            if (extra.channel !== 'other-stream' || written[index]!.state === 'COMPLETED') continue;
            // That stream ended: the follow subscribes again, and the new stream (its snapshot the task as it is now)
            // delivers the rest.
            stream = `S${index}-${extra.back}`;
            await observe(ref, 'stream', written[index]!, true, stream);
            expectShows(await shown(ref), written[index]!);
          }
        }
      }),
      { numRuns: 80, seed: Number(process.env.FAST_CHECK_SEED ?? 30) },
    );
  });
});
