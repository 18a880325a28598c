/**
 * streamorder30 (docs/field-cases.md): a stream's events are ordered (they arrive in the order the agent's store wrote
 * them), so a later event of the same stream is journaled whatever the stamps of agent replicas with skewed clocks say
 * (applyStatus-5.lua "Ordered channels"). Input: SubscribeToTask → `{task: T1 WORKING, +60 s}` (a replica whose clock
 * is 60 s fast), then `statusUpdate INPUT_REQUIRED "two rooms or one?", now` (a replica with a correct clock); GetTask
 * → the same question with the same stamp. Before: the question was 'stale' to the clock rule, never shown to a person,
 * and after the no-progress window the workflow went NEEDS_ATTENTION NO_PROGRESS. Expected: INPUT_REQUIRED with one open
 * question; the reads of it since change nothing.
 * A real fleet, real Redis, a raw node:http SSE agent.
 */
import { describe, expect, it } from 'vitest';
import { eventually } from '../harness/fleet.ts';
import { recordOf, useFieldCases } from '../harness/field-cases.ts';
import { askingHandlers } from '../harness/asking-agent.ts';
import { task, taskEvent } from '../harness/scripted-agent.ts';

const h = useFieldCases();

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
});
