/**
 * streamorder30 (docs/field-cases.md): a stream's events are ordered (they arrive in the order the agent's store wrote
 * them), so a later event of the same stream is journaled whatever the stamps of agent replicas with skewed clocks say
 * (applyStatus-5.lua "Ordered channels"). Input: SubscribeToTask → `{task: T1 WORKING, +60 s}` (a replica whose clock
 * is 60 s fast), then `statusUpdate INPUT_REQUIRED "two rooms or one?", now` (a replica with a correct clock); GetTask
 * → the same question with the same stamp. Before: the question was 'stale' to the clock rule, never shown to a person,
 * and after the no-progress window the workflow went NEEDS_ATTENTION NO_PROGRESS. Expected: INPUT_REQUIRED with one open
 * question; the reads of it since change nothing.
 * streamorder31: the stream's order holds from its first event: a resubscription whose snapshot is refused as stamped
 * before the row's status (the same WORKING, a replica whose clock is behind) and a streaming send's first event (the
 * send's answer) both order the events after them on their stream.
 * A real fleet, real Redis, a raw node:http SSE agent.
 */
import { describe, expect, it } from 'vitest';
import type { Producer } from '@durable-a2a/producer';
import { eventually } from '../harness/fleet.ts';
import { recordOf, useFieldCases } from '../harness/field-cases.ts';
import { askingHandlers } from '../harness/asking-agent.ts';
import { SU, agentMessage, ev, task, taskEvent } from '../harness/scripted-agent.ts';

const h = useFieldCases();
/** The agent's question, as its status message. */
const question = (contextId?: string) => agentMessage('two rooms or one?', { messageId: 'q1', taskId: 'T1', contextId });

/** Waits (bounded) until delegation `id` is journaled INPUT_REQUIRED; then its one open question is the agent's. */
async function questionOpen(p: Producer, id: string): Promise<void> {
  await eventually(async () => (await recordOf(p, id))?.state === 'INPUT_REQUIRED', 'the question journaled', 20_000);
  const questions = await p.questions(id);
  expect(questions).toHaveLength(1);
  expect(JSON.stringify(questions[0])).toContain('two rooms or one?');
}

describe('streamorder30: a status later on the same stream is journaled whatever its stamp', () => {
  it('snapshot WORKING stamped 60 s ahead, then INPUT_REQUIRED stamped now: the question is open to a person (was: stale, never shown, NO_PROGRESS after 30 min)', async () => {
    const { producer: p, agent } = await h.setUp((seen) =>
      askingHandlers(seen, { workingAt: h.at(60), askedAt: h.at(1), endAfter: 'hang', later: (asked) => ({ sse: [taskEvent(task('T1', 'INPUT_REQUIRED', asked))], endAfter: 'hang' }) }),
    );
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'rooms', idempotencyKey: 'streamorder30' });
    await eventually(async () => (await recordOf(p, id))?.state === 'INPUT_REQUIRED', 'the question journaled', 15_000);
    const questions = await p.questions(id);
    expect(questions).toHaveLength(1);
    expect(JSON.stringify(questions[0])).toContain('two rooms or one?');
    // A read of the parked task (the reconciler's) shows the same question and stamp: nothing changes.
    const reads = agent.count('GetTask');
    await eventually(async () => agent.count('GetTask') > reads, 'the parked task read again', 20_000);
    expect((await recordOf(p, id))!.state).toBe('INPUT_REQUIRED');
    expect(await p.questions(id)).toHaveLength(1);
    expect(agent.count('SendMessage')).toBe(1);
  });
  it('streamorder31: a resubscription whose snapshot (WORKING stamped now) is refused against WORKING stamped +60 s by the stream before orders its own events: its INPUT_REQUIRED stamped now + 1 s is open to a person (was: stale, never shown)', async () => {
    // The second subscription opened: from then on the task asks its question.
    let resubscribed = false;
    const { producer: p, agent } = await h.setUp((seen) => ({
      SubscribeToTask: (_params, call) => {
        if (call.count === 1) return { sse: [taskEvent(task('T1', 'WORKING', { contextId: seen.contextId, timestamp: h.at(60) }))], endAfter: 'close' };
        const asking = resubscribed;
        resubscribed = true;
        return {
          sse: [
            taskEvent(task('T1', asking ? 'INPUT_REQUIRED' : 'WORKING', { contextId: seen.contextId, timestamp: h.at(asking ? 2 : 1), ...(asking ? { message: question(seen.contextId) } : {}) })),
            ...(asking ? [] : [ev(SU('INPUT_REQUIRED', { contextId: seen.contextId, timestamp: h.at(2), message: question(seen.contextId) }))]),
          ],
          endAfter: 'hang',
        };
      },
      GetTask: () =>
        resubscribed
          ? { result: task('T1', 'INPUT_REQUIRED', { contextId: seen.contextId, timestamp: h.at(2), message: question(seen.contextId) }) }
          : { result: task('T1', 'WORKING', { contextId: seen.contextId, timestamp: h.at(1) }) },
    }));
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'rooms', idempotencyKey: 'streamorder31-resubscribed' });
    await questionOpen(p, id);
    expect(agent.count('SubscribeToTask')).toBeGreaterThanOrEqual(2);
    expect(agent.count('SendMessage')).toBe(1);
  });

  it('streamorder31: a streaming send whose first event is WORKING stamped +60 s, then INPUT_REQUIRED stamped now on the same stream: the question is open to a person (was: the answer ordered by its stamp alone, the question stale)', async () => {
    const { producer: p, agent } = await h.setUp((seen) => ({
      SendStreamingMessage: (params) => {
        seen.contextId ??= params.message.contextId;
        return {
          sse: [
            taskEvent(task('T1', 'WORKING', { contextId: params.message.contextId, history: [params.message], timestamp: h.at(60) })),
            ev(SU('INPUT_REQUIRED', { contextId: params.message.contextId, timestamp: h.at(1), message: question(params.message.contextId) })),
          ],
          endAfter: 'hang',
        };
      },
      SubscribeToTask: () => ({ sse: [taskEvent(task('T1', 'INPUT_REQUIRED', { contextId: seen.contextId, timestamp: h.at(1), message: question(seen.contextId) }))], endAfter: 'hang' }),
      GetTask: () => ({ result: task('T1', 'INPUT_REQUIRED', { contextId: seen.contextId, timestamp: h.at(1), message: question(seen.contextId) }) }),
    }), { streamingSends: true });
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'rooms', idempotencyKey: 'streamorder31-send-stream' });
    await questionOpen(p, id);
    expect(agent.count('SendStreamingMessage')).toBe(1);
    expect(agent.count('SendMessage')).toBe(0);
  });
});
