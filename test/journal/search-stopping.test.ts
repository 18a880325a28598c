/**
 * Attack13: the workflow search (GET /v1/workflows?state=INPUT_REQUIRED, `waiting`, /ui, bulk actions: `searchWorkflows`,
 * `workflowSummaries`) reads the same open questions as GET /v1/questions: a step's question whose workflow is stopping
 * (canceled, or another step failed for good) is closed (the journal refuses its answer, stepStopped.lua), so it is
 * neither counted nor matched; a compensation's question stays. Before, a canceled workflow's step question was still
 * listed as waiting for an answer (`openQuestions: 1`, `waitingFor: INPUT_REQUIRED`) that the journal would refuse.
 * Real redis-server.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Journal, listOpenQuestions, searchWorkflows, workflowSummaries } from '@durable-a2a/shared';
import { useRedisClient, useRedisServer } from '../harness/redis.ts';
import { intentRow } from '../harness/journal-rows.ts';

const redisServer = useRedisServer();
const redis = useRedisClient(redisServer);
let counter = 0;

type Stop = 'none' | 'cancel' | 'step-failed';

/** A RUNNING workflow whose one delegation (`kind`) is parked on a question, then stopped as `stop` says. */
async function parkedThenStopped(kind: 'step' | 'compensation', stop: Stop) {
  const journal = new Journal(redis(), { prefix: `sst${++counter}`, retentionMs: 60_000 });
  const ref = { workflowId: `wf${counter}`, delegationId: 'main.1' };
  await journal.createWorkflow(ref.workflowId, { state: 'RUNNING' }, { ...intentRow(ref.workflowId), kind });
  await journal.applyStatus(ref, { mode: 'event', state: 'INPUT_REQUIRED', taskId: 'T1', statusTimestamp: '2026-01-01T10:00:01Z' });
  if (stop === 'cancel') await journal.updateWorkflow(ref.workflowId, { cancelRequested: true });
  if (stop === 'step-failed') await journal.updateWorkflow(ref.workflowId, { stopping: ['step car failed for good'] });
  return { journal, ref };
}

describe('attack13: the workflow search does not show a stopping workflow\'s step questions', () => {
  it('a canceled workflow whose step asks: not matched by state INPUT_REQUIRED nor waiting, openQuestions 0, no waitingFor (as GET /v1/questions)', async () => {
    const { journal, ref } = await parkedThenStopped('step', 'cancel');
    expect((await listOpenQuestions(journal, { limit: 50 })).items).toEqual([]);
    expect((await searchWorkflows(journal, { state: 'INPUT_REQUIRED' }, { limit: 50 })).items).toEqual([]);
    expect((await searchWorkflows(journal, { waiting: true }, { limit: 50 })).items).toEqual([]);
    const [summary] = (await workflowSummaries(journal, [ref.workflowId])).summaries;
    expect(summary).toMatchObject({ workflowId: ref.workflowId, state: 'RUNNING', openQuestions: 0 });
    expect(summary!.waitingFor).toBeUndefined();
  });

  it('property: over kind × stop, the search matches and counts the question exactly when GET /v1/questions lists it', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('step' as const, 'compensation' as const), fc.constantFrom<Stop>('none', 'cancel', 'step-failed'), async (kind, stop) => {
        const { journal, ref } = await parkedThenStopped(kind, stop);
        const open = kind === 'compensation' || stop === 'none';
        const what = JSON.stringify({ kind, stop });
        expect((await listOpenQuestions(journal, { limit: 50 })).items.map((question) => question.workflowId), what).toEqual(open ? [ref.workflowId] : []);
        expect((await searchWorkflows(journal, { state: 'INPUT_REQUIRED' }, { limit: 50 })).items.map((item) => item.workflowId), what).toEqual(open ? [ref.workflowId] : []);
        expect((await searchWorkflows(journal, { waiting: true }, { limit: 50 })).items.map((item) => item.workflowId), what).toEqual(open ? [ref.workflowId] : []);
        const [summary] = (await workflowSummaries(journal, [ref.workflowId])).summaries;
        expect(summary, what).toMatchObject({ openQuestions: open ? 1 : 0 });
        expect(summary!.waitingFor, what).toBe(open ? 'INPUT_REQUIRED' : undefined);
      }),
      // Every kind × stop, whatever the seed: the examples run first.
      { numRuns: 6, examples: (['step', 'compensation'] as const).flatMap((kind) => (['none', 'cancel', 'step-failed'] as const).map((stop) => [kind, stop] as ['step' | 'compensation', Stop])) },
    );
  });
});
