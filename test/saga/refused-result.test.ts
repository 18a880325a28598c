/**
 * Field case A32 across follow cycles (attack 30): a part of the result refused over a limit is a durable fact of the
 * attempt (`refusedResult`), not only of the one read right after it. Stream 1: WORKING, an artifact over
 * partsPerMessage (1,001 parts), then the stream ends (cut or closed); the GetTask after it shows WORKING; stream 2:
 * WORKING, COMPLETED. Before: the refusal was forgotten once that read showed WORKING, and the delegation ended
 * COMPLETED with 0 artifacts and no error. Now: the streamed COMPLETED is held for one full read, which decides:
 * without artifacts of its own AMBIGUOUS LIMIT_EXCEEDED (a person); with the result, COMPLETED with it.
 * The property over sequences is packages/workers/test/refused-result-property.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { finished, useFieldCases, viewOf } from '../harness/field-cases.ts';
import { SU, ev, task, taskEvent } from '../harness/scripted-agent.ts';

const h = useFieldCases();
const fast = { reconcileIntervalMs: 300, followBackoff: { baseMs: 200, capMs: 1_000 } };
const overParts = (contextId?: string) =>
  ev(JSON.stringify({ jsonrpc: '2.0', id: 1, result: { artifactUpdate: { taskId: 'T1', contextId, artifact: { artifactId: 'a1', parts: Array.from({ length: 1_001 }, (_, index) => ({ text: `p${index}` })) }, lastChunk: true } } }));

/**
 * Delegates to an agent whose stream 1 is WORKING then an artifact over partsPerMessage (closed), stream 2 WORKING then
 * COMPLETED; its GetTask shows WORKING until stream 2 was asked for, then COMPLETED with `artifacts` (by id: text).
 */
async function refusedThenRead(artifacts: Record<string, string>) {
  const { producer, agent, id } = await h.setUpAndDelegate((seen) => ({
    SubscribeToTask: (_params, call) =>
      call.count === 1
        ? { sse: [taskEvent(task('T1', 'WORKING', { contextId: seen.contextId })), overParts(seen.contextId)], endAfter: 'close' }
        : { sse: [taskEvent(task('T1', 'WORKING', { contextId: seen.contextId })), ev(SU('COMPLETED', { contextId: seen.contextId }))] },
    GetTask: () => ({ result: agent.count('SubscribeToTask') >= 2 ? task('T1', 'COMPLETED', { contextId: seen.contextId, artifacts }) : task('T1', 'WORKING', { contextId: seen.contextId }) }),
  }), fast);
  return { producer, id };
}

describe('A32 across follow cycles: a refused part of the result is not forgotten', () => {
  for (const cut of [true, false]) {
    it(`stream 1: WORKING, an artifact over partsPerMessage${cut ? ', cut' : ', closed'}; GetTask WORKING; stream 2: WORKING, COMPLETED; GetTask COMPLETED without artifacts: AMBIGUOUS LIMIT_EXCEEDED`, async () => {
      const { producer, agent, id } = await h.setUpAndDelegate((seen) => ({
        SubscribeToTask: (_params, call) =>
          call.count === 1
            ? { sse: [taskEvent(task('T1', 'WORKING', { contextId: seen.contextId })), overParts(seen.contextId)], endAfter: cut ? 'destroy' : 'close' }
            : { sse: [taskEvent(task('T1', 'WORKING', { contextId: seen.contextId })), ev(SU('COMPLETED', { contextId: seen.contextId }))] },
        GetTask: () => ({ result: task('T1', agent.count('SubscribeToTask') >= 2 ? 'COMPLETED' : 'WORKING', { contextId: seen.contextId }) }),
      }), fast);
      const record = await finished(producer, id, 40_000);
      const view = await viewOf(producer, id);
      expect(record).toMatchObject({ state: 'AMBIGUOUS', error: { code: 'LIMIT_EXCEEDED', limit: 'partsPerMessage', delivery: 'received' } });
      expect(view.artifacts).toHaveLength(0);
    }, 60_000);
  }

  it('the same, but the full read after stream 2 shows the result within limits: COMPLETED with it', async () => {
    const { producer, id } = await refusedThenRead({ a1: 'the booking' });
    const record = await finished(producer, id, 40_000);
    const view = await viewOf(producer, id);
    expect(record.state).toBe('COMPLETED');
    expect(view.artifacts.map((artifact) => artifact.artifactId)).toEqual(['a1']);
  }, 60_000);

  // Judged by the refused artifact's id: before, any artifact in the full read counted as "the result is here", so a
  // read showing only another artifact (a2: a note, a summary) completed the row with the refused a1 silently missing.
  it('the full read after stream 2 shows another artifact (a2) but not the refused a1: AMBIGUOUS LIMIT_EXCEEDED, a1 named', async () => {
    const { producer, id } = await refusedThenRead({ a2: 'a note' });
    const record = await finished(producer, id, 40_000);
    expect(record).toMatchObject({ state: 'AMBIGUOUS', error: { code: 'LIMIT_EXCEEDED', limit: 'partsPerMessage' }, refusedResult: { artifactIds: ['a1'] } });
    expect(record.error?.message).toContain('a1');
  }, 60_000);
});
