/**
 * A stream is an ordered channel (applyStatus-5.lua "Ordered channels"; docs/delegation-core.md "Ordered and
 * unordered observations"): its events arrive in the order the agent's store wrote them, so an event later on the
 * stream that wrote the row's status is journaled whatever the stamps of agent replicas with skewed clocks say, while
 * an unordered observation (a GetTask that raced the stream, a late push, another stream's snapshot) showing a status
 * the journal already moved past never moves the row back to it. Before (streamorder30), a snapshot WORKING stamped
 * 60 s ahead and then INPUT_REQUIRED stamped now on the same stream: the question was 'stale', never shown.
 * streamorder31: a stream's order holds from its first event (a resubscription whose snapshot shows the row's status
 * stamped earlier has caught up with the row), and where clocks were shown to disagree an unordered observation never
 * takes the row off a question our answer has not reached.
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

/** Our answer to the row's question, delivered (journaled, taken, sent). */
async function answered(ref: DelegationRef, answerId: string): Promise<void> {
  const journal = connected.journal();
  expect((await journal.recordReply(ref, answerId, { parts: [{ text: 'two' }] })).created).toBe(true);
  expect(await journal.markReply(ref, 1, answerId, 'sending', '', { token: `tok-${answerId}`, leaseMs: 60_000 })).toBe(true);
  expect(await journal.markReply(ref, 1, answerId, 'sent', '', { token: `tok-${answerId}` })).toBe(true);
}

const at = (ms: number): string => new Date(BASE + ms).toISOString();

/** A delegation whose stream S1 said WORKING (stamped 0), then question q1 stamped `askedAt` (ms), our answer delivered. */
async function answeredOnStream(askedAt: number): Promise<DelegationRef> {
  const ref = await runningIntent(connected.journal(), `so-${++counter}`, CARD);
  await observe(ref, 'stream', { state: 'WORKING', stamp: at(0) }, true, 'S1');
  await observe(ref, 'stream', { state: 'INPUT_REQUIRED', question: 'q1', stamp: at(askedAt) }, false, 'S1');
  await answered(ref, 'r1');
  return ref;
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

  it('case: a resubscription whose snapshot (WORKING stamped now) is refused as stale against WORKING stamped +60 s by the stream before: its INPUT_REQUIRED stamped now + 1 s is shown; late reads and pushes of the WORKINGs change nothing; its COMPLETED ends it (was: the question stale, lost)', async () => {
    const ref = await runningIntent(connected.journal(), `so-${++counter}`, CARD);
    const ahead: Written = { state: 'WORKING', stamp: at(60_000) };
    const now: Written = { state: 'WORKING', stamp: at(0) };
    const asked: Written = { state: 'INPUT_REQUIRED', question: 'q1', stamp: at(1_000) };
    await observe(ref, 'stream', ahead, true, 'S1');
    // S1 dropped; the follow subscribes again (R1): its snapshot is the task as it is, stamped by a replica whose clock
    // is right: refused as stale (the row keeps WORKING +60 s), but R1 caught up with the row's status.
    await observe(ref, 'stream', now, true, 'R1');
    expectShows(await shown(ref), ahead);
    await observe(ref, 'stream', asked, false, 'R1');
    expectShows(await shown(ref), asked);
    // Late unordered observations of the WORKINGs before the question: a GetTask that raced, a push, another
    // resubscription's snapshot. None takes the row off the question.
    for (const [channel, seen] of [['get-task', ahead], ['push', ahead], ['push', now], ['get-task', now], ['other-stream', ahead]] as const) {
      await observe(ref, channel, seen, false);
      expectShows(await shown(ref), asked);
    }
    await observe(ref, 'stream', { state: 'COMPLETED', stamp: at(2_000) }, false, 'R1');
    expect((await shown(ref)).state).toBe('COMPLETED');
    await observe(ref, 'push', ahead, false);
    await observe(ref, 'get-task', asked, false);
    expect((await shown(ref)).state).toBe('COMPLETED');
  });

  it('case: a resubscription whose snapshot shows a status the row moved past (WORKING before the question, a replica behind) takes no order until it shows the row\'s status: a WORKING before it stays stale, the WORKING after it is shown', async () => {
    const ref = await runningIntent(connected.journal(), `so-${++counter}`, CARD);
    const asked: Written = { state: 'INPUT_REQUIRED', question: 'q1', stamp: at(60_000) };
    await observe(ref, 'stream', { state: 'WORKING', stamp: at(0) }, true, 'S1');
    await observe(ref, 'stream', asked, false, 'S1');
    // R1 opens on a replica behind: its snapshot and the event after it are from before the question.
    await observe(ref, 'stream', { state: 'WORKING', stamp: at(500) }, true, 'R1');
    await observe(ref, 'stream', { state: 'WORKING', stamp: at(700) }, false, 'R1');
    expectShows(await shown(ref), asked);
    // R1 shows the row's status: from here its events are later than it.
    await observe(ref, 'stream', asked, false, 'R1');
    await answered(ref, 'r1');
    const working: Written = { state: 'WORKING', stamp: at(2_000) };
    await observe(ref, 'stream', working, false, 'R1');
    expectShows(await shown(ref), working);
  });

  it('case: a stream that caught up with the row by a status stamped otherwise does not ask again, on its order alone, a question answered before (a replica behind replaying it); its new question is shown', async () => {
    const ref = await answeredOnStream(1_000);
    const after: Written = { state: 'WORKING', stamp: at(60_000) };
    await observe(ref, 'stream', after, false, 'S1');
    // R1 on a replica behind: a WORKING from before q1 (the same status as the row's up to its stamp), then q1 again.
    await observe(ref, 'stream', { state: 'WORKING', stamp: at(500) }, true, 'R1');
    await observe(ref, 'stream', { state: 'INPUT_REQUIRED', question: 'q1', stamp: at(1_000) }, false, 'R1');
    expectShows(await shown(ref), after);
    const next: Written = { state: 'INPUT_REQUIRED', question: 'q2', stamp: at(3_000) };
    await observe(ref, 'stream', next, false, 'R1');
    expectShows(await shown(ref), next);
  });

  it('case: on the stream that wrote the row, its answered question asked again stamped earlier (another replica) is a new asking under a key of its own, open to a person (was: parked under the answered key, open to nobody)', async () => {
    const ref = await answeredOnStream(60_000);
    await observe(ref, 'stream', { state: 'WORKING', stamp: at(1_000) }, false, 'S1');
    await observe(ref, 'stream', { state: 'INPUT_REQUIRED', question: 'q1', stamp: at(2_000) }, false, 'S1');
    const view = await shown(ref);
    expect(view.state).toBe('INPUT_REQUIRED');
    expect(view.question).toMatch(/^q1#re\d+$/);
    expect(view.open).toBe(1);
  });

  it('case: a WORKING the journal never saw (written before the question by the replica with the fast clock, missed between two streams), pushed late stamped after every stamp seen, does not take the row off the question our answer has not reached (was: the question dropped)', async () => {
    const ref = await runningIntent(connected.journal(), `so-${++counter}`, CARD);
    await observe(ref, 'stream', { state: 'WORKING', stamp: at(60_000) }, true, 'S1');
    // Missed while no stream was open: WORKING stamped +61 s (the fast replica), then the resubscription.
    const missed: Written = { state: 'WORKING', stamp: at(61_000) };
    await observe(ref, 'stream', { state: 'WORKING', stamp: at(0) }, true, 'R1');
    const asked: Written = { state: 'INPUT_REQUIRED', question: 'q1', stamp: at(1_000) };
    await observe(ref, 'stream', asked, false, 'R1');
    await observe(ref, 'push', missed, false);
    await observe(ref, 'get-task', missed, false);
    expectShows(await shown(ref), asked);
    // Our answer delivered, the agent works on: its stream says so (and a later read would too).
    await answered(ref, 'r1');
    const working: Written = { state: 'WORKING', stamp: at(2_000) };
    await observe(ref, 'stream', working, false, 'R1');
    expectShows(await shown(ref), working);
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
  it('property: streams that drop and resubscribe (the WORKINGs written meanwhile missed, each new stream\'s snapshot the task as it is, stamped by any replica): from its snapshot on, each stream\'s statuses are shown as delivered, whatever the skew; unordered observations of earlier statuses never move the row back; a finished state never changes', async () => {
    const skew = fc.constantFrom(0, 60_000, -60_000, 3_600_000, -3_600_000, 4_000_000_000_000 - BASE);
    const step = fc.record({ question: fc.boolean(), skew });
    // A stream: the WORKINGs written while none was open (the last is its snapshot), then what it delivers.
    const segment = fc.record({ missed: fc.array(skew, { minLength: 1, maxLength: 3 }), steps: fc.array(step, { maxLength: 4 }) });
    const unordered = fc.array(fc.record({ after: fc.nat(), channel: fc.constantFrom<Channel>('get-task', 'push', 'other-stream'), back: fc.nat() }), { maxLength: 8 });
    await fc.assert(
      fc.asyncProperty(fc.array(segment, { minLength: 1, maxLength: 4 }), fc.boolean(), skew, unordered, async (segments, completes, completedSkew, extras) => {
        const ref = await runningIntent(connected.journal(), `so-${++counter}`, CARD);
        let time = 0;
        const stampOf = (by: number) => new Date(BASE + time++ * 1_000 + by).toISOString();
        // What the journal was shown, in the agent's order (earlier ones are what late observations may show).
        const seen: Written[] = [];
        let observed = 0;
        const lateObservations = async (stream: string): Promise<string> => {
          const current = seen.at(-1)!;
          for (const extra of extras.filter(({ after }) => after % 16 === observed % 16)) {
            await observe(ref, extra.channel, seen[seen.length - 1 - (extra.back % seen.length)]!, false);
            expectShows(await shown(ref), current);
            if (extra.channel !== 'other-stream' || current.state === 'COMPLETED') continue;
            // That stream ended: the follow subscribes again; its snapshot is the task as it is now.
            stream = `${stream}-again${observed}`;
            await observe(ref, 'stream', current, true, stream);
            expectShows(await shown(ref), current);
          }
          observed++;
          return stream;
        };
        for (const [index, { missed, steps }] of segments.entries()) {
          const written: Written[] = missed.map((by) => ({ state: 'WORKING', stamp: stampOf(by) }));
          for (const [at, { question, skew: by }] of steps.entries()) written.push({ state: question ? 'INPUT_REQUIRED' : 'WORKING', ...(question ? { question: `q${index}-${at}` } : {}), stamp: stampOf(by) });
          const last = index === segments.length - 1;
          // A stream drops after a WORKING (a question waits for a person: its stream is not where this goes on).
          if (!last) written.push({ state: 'WORKING', stamp: stampOf(steps.at(-1)?.skew ?? 0) });
          if (last && completes) written.push({ state: 'COMPLETED', stamp: stampOf(completedSkew) });
          let stream = `S${index}`;
          const snapshot = written[missed.length - 1]!;
          await observe(ref, 'stream', snapshot, true, stream);
          // The snapshot is WORKING over WORKING: shown as such whether its stamp wins or not.
          expect((await shown(ref)).state).toBe('WORKING');
          seen.push(snapshot);
          stream = await lateObservations(stream);
          for (const status of written.slice(missed.length)) {
            await observe(ref, 'stream', status, false, stream);
            expectShows(await shown(ref), status);
            seen.push(status);
            stream = await lateObservations(stream);
          }
        }
      }),
      { numRuns: 60, seed: Number(process.env.FAST_CHECK_SEED ?? 31) },
    );
  });
});
