/**
 * Property (the kind "an index entry dropped inside a transition", one round trip instead of two): `finishWorkflow` drops the given
 * unfinished-index entries exactly when its update is applied and sets a finished state, in the same script
 * (one server, no durability); a refused update (missing, version conflict, already finished) or an unfinished
 * state drops nothing, and other workflows' entries are never touched. It reports whether a delegation's entry
 * was there, the workflow's '*' not counted (the settle that removed it observes the delegation's duration once). Real Redis, the real scripts.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { Journal, type WorkflowPatch } from '@durable-a2a/shared';
import { useRedisServer, testsOnCluster, useRedisClient } from '../harness/redis.ts';
import { intentRow } from '../harness/journal-rows.ts';

const redisServer = useRedisServer();
const redis = useRedisClient(redisServer);

const scenario = fc.record({
  /** The workflow before: none, running, or already finished. */
  before: fc.constantFrom<'none' | 'RUNNING' | 'COMPLETED'>('none', 'RUNNING', 'RUNNING', 'RUNNING', 'COMPLETED'),
  patchState: fc.constantFrom<NonNullable<WorkflowPatch['state']>>('COMPLETED', 'FAILED', 'CANCELED', 'COMPENSATING', 'NEEDS_ATTENTION'),
  wrongVersion: fc.constantFrom(false, false, true),
  /** Which of the two entries (the delegation's, the workflow's `*`) are in the index before. */
  delegationEntry: fc.boolean(),
  workflowEntry: fc.boolean(),
});

let counter = 0;

describe.skipIf(testsOnCluster())('finishWorkflow drops index entries in its script (property, real Redis)', () => {
  it('drops exactly its entries, exactly when a finished state is applied, and says whether any was there', async () => {
    let dropped = 0;
    await fc.assert(
      fc.asyncProperty(scenario, async (s) => {
        const journal = new Journal(redis(), { prefix: `finish-drops-${++counter}`, retentionMs: 60_000, now: () => 5_000 });
        expect(journal.removesIndexWithFinish).toBe(true);
        const workflowId = `wf-${counter}`;
        const bystander = { workflowId: `other-${counter}`, delegationId: 'main.1' };
        const entries = [
          { workflowId, delegationId: 'main.1' },
          { workflowId, delegationId: '*' },
        ];
        if (s.before !== 'none') {
          await journal.createWorkflow(workflowId, { state: 'RUNNING' }, intentRow(workflowId));
          if (s.before === 'COMPLETED') await journal.updateWorkflow(workflowId, { state: 'COMPLETED' });
        }
        // The index as the test wants it (createWorkflow added the delegation's entry), and a bystander's entry.
        await journal.removeFromIndex(entries[0]!, entries[1]!);
        if (s.delegationEntry) await journal.addToIndex(entries[0]!, 9_000);
        if (s.workflowEntry) await journal.addToIndex(entries[1]!, 9_000);
        await journal.addToIndex(bystander, 9_000);
        const workflowKey = journal.keys.workflow(workflowId);
        const version = s.before === 'none' ? undefined : Number(await redis().hget(workflowKey, 'version')) + (s.wrongVersion ? 5 : 0);
        const outcome = await journal.finishWorkflow(workflowId, { state: s.patchState }, version, entries).then(
          (result) => ({ result }),
          (error: unknown) => ({ error: (error as { code?: string }).code ?? String(error) }),
        );
        const applied = s.before === 'RUNNING' && !s.wrongVersion;
        const finishing = ['COMPLETED', 'FAILED', 'CANCELED'].includes(s.patchState);
        const inIndex = async (ref: { workflowId: string; delegationId: string }) => (await journal.dueDelegations(Infinity, 1_000)).some((due) => due.workflowId === ref.workflowId && due.delegationId === ref.delegationId);
        const context = JSON.stringify({ s, outcome });
        expect('result' in outcome, context).toBe(applied);
        if (applied && finishing) {
          dropped++;
          expect(await inIndex(entries[0]!), context).toBe(false);
          expect(await inIndex(entries[1]!), context).toBe(false);
          // Only a delegation's entry counts (its settle observes its duration once), never the workflow's '*'.
          expect('result' in outcome && outcome.result.removedFromIndex, context).toBe(s.delegationEntry);
          // Its delegation is not final: the workflow is not compacted, its row says the state.
          expect(await redis().hget(workflowKey, 'state'), context).toBe(s.patchState);
        } else {
          expect(await inIndex(entries[0]!), context).toBe(s.delegationEntry);
          expect(await inIndex(entries[1]!), context).toBe(s.workflowEntry);
          if ('result' in outcome) expect(outcome.result.removedFromIndex, context).toBe(false);
        }
        expect(await inIndex(bystander), context).toBe(true);
      }),
      { numRuns: 150 },
    );
    // The dropping branch was reached (a property that never reaches it proves nothing about it).
    expect(dropped).toBeGreaterThan(10);
  });
});
