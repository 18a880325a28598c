/**
 * Attack13: a SubscribeToTask whose first event is no Task snapshot (spec §3.1.6 says it is; some agents start with
 * the next update). The artifacts the journal holds from before the stream (the send's answer, an earlier read of a
 * task still working) may lack what the agent added since, and this stream never showed the task whole: a finished
 * status on it is read in full before it is journaled (the read's artifacts replace the held ones). Before: the
 * COMPLETED status update settled the row with the artifact as the WORKING answer held it ("boo", not "booked").
 * Real redis-server, real fleet, scripted raw JSON-RPC agent.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { artifactText, finished, useFieldCases, viewOf } from '../harness/field-cases.ts';
import { AU, SU, ev, task } from '../harness/scripted-agent.ts';

const h = useFieldCases();

/** What the subscription starts with instead of a Task snapshot. */
const FIRSTS = ['completed', 'working-then-completed', 'other-artifact-then-completed'] as const;
type First = (typeof FIRSTS)[number];

async function run(first: First) {
  const { producer, agent, id } = await h.setUpAndDelegate(() => ({
    SendMessage: (params) => ({ result: { task: task('T1', 'WORKING', { contextId: params.message.contextId, history: [params.message], artifacts: { a1: 'boo' } }) } }),
    SubscribeToTask: () => ({
      sse: [
        ...(first === 'working-then-completed' ? [ev(SU('WORKING'))] : []),
        ...(first === 'other-artifact-then-completed' ? [ev(AU('a2', false, true, 'receipt'))] : []),
        ev(SU('COMPLETED')),
      ],
      endAfter: 'close',
    }),
    GetTask: () => ({ result: task('T1', 'COMPLETED', { artifacts: first === 'other-artifact-then-completed' ? { a1: 'booked', a2: 'receipt' } : { a1: 'booked' } }) }),
  }));
  const record = await finished(producer, id, 30_000);
  return { record, view: await viewOf(producer, id), agent };
}

/** Runs `first` and checks the record holds what the agent's GetTask holds, after one SendMessage. */
async function expectAgentsResult(first: First): Promise<void> {
  const { record, view, agent } = await run(first);
  expect(record.state, first).toBe('COMPLETED');
  expect(artifactText(view, 'a1'), first).toBe('booked');
  if (first === 'other-artifact-then-completed') expect(artifactText(view, 'a2'), first).toBe('receipt');
  expect(agent.count('SendMessage'), first).toBe(1);
}

describe('attack13: a subscription without its first snapshot, after artifacts held from a task still working', () => {
  it('SendMessage answers WORKING holding a1 "boo"; the subscription sends only COMPLETED: the record holds a1 "booked" (read in full)', () => expectAgentsResult('completed'), 45_000);

  it('property: whatever the subscription starts with instead of a snapshot, the record holds what the agent holds; one SendMessage', async () => {
    await fc.assert(fc.asyncProperty(fc.constantFrom(...FIRSTS), expectAgentsResult), { numRuns: 6, examples: FIRSTS.map((first) => [first] as [First]) });
  }, 300_000);
});
