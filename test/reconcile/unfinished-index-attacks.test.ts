/**
 * Late writes to the unfinished index: once a delegation is settled (its entry removed, its workflow maybe
 * compacted), a follow lease renewed by a stream still closing, or a sweep that scanned the entry just
 * before, only moves entries still there: it never puts a settled delegation back (which would cost a
 * reconcile and settle it again, observing its end-to-end duration a second time).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { Journal } from '@durable-a2a/shared';
import { useRedisClient, useRedisServer } from '../harness/redis.ts';

const redisServer = useRedisServer();
const redis = useRedisClient<Redis>(redisServer);
let counter = 0;

describe('the unfinished index after a settle', () => {
  it('a lease renewal moves the next check of an indexed delegation and never re-adds a settled one', async () => {
    const journal = new Journal(redis(), { prefix: `ai${++counter}` });
    const live = { workflowId: 'wf-live', delegationId: 'main.1' };
    const settled = { workflowId: 'wf-settled', delegationId: 'main.1' };
    await journal.addToIndex(live, 1_000);
    for (const ref of [live, settled]) expect(await journal.lease(ref, 'acquire', 'holder', 10_000)).toBe(true);
    // Both rows unfinished (a lease of a finished or gone row is not renewed): the index alone differs.
    for (const ref of [live, settled]) await redis().hset(journal.keys.delegation(ref.workflowId, ref.delegationId), 'state', 'WORKING');
    expect((await journal.renewLeases([{ ref: live, token: 'holder' }, { ref: settled, token: 'holder' }], 10_000, () => 5_000)).map(({ lease }) => lease)).toEqual(['renewed', 'renewed']);
    expect(await journal.nextCheckAt(live)).toBe(5_000);
    expect(await journal.nextCheckAt(settled)).toBeUndefined();
  });

  it('a sweep moving the checks it scanned never re-adds an entry removed meanwhile', async () => {
    const journal = new Journal(redis(), { prefix: `ai${++counter}` });
    const kept = { workflowId: 'wf-kept', delegationId: 'main.1' };
    const removed = { workflowId: 'wf-removed', delegationId: 'main.1' };
    await journal.addToIndex(kept, 1_000);
    await journal.addToIndex(removed, 1_000);
    const scanned = await journal.scanUnfinished('0', 100);
    expect(scanned.due).toHaveLength(2);
    await journal.removeFromIndex(removed);
    expect(await journal.claimChecks(scanned.due.map(({ ref, dueAt }) => ({ ref, seenAt: dueAt, atMs: 9_000 })))).toEqual(scanned.due.map(({ ref }) => ref.workflowId === 'wf-kept'));
    expect(await journal.nextCheckAt(kept)).toBe(9_000);
    expect(await journal.nextCheckAt(removed)).toBeUndefined();
  });
});

describe('claimChecks: a sweep claims the entries it read, compare-and-set on their next check', () => {
  it('claims an entry still at the score read, not one moved meanwhile, not one gone (and puts none back)', async () => {
    const journal = new Journal(redis(), { prefix: `ai${++counter}` });
    const [still, moved, gone] = ['wf-still', 'wf-moved', 'wf-gone'].map((workflowId) => ({ workflowId, delegationId: '*' }));
    for (const ref of [still!, moved!, gone!]) await journal.addToIndex(ref, 1_000);
    await journal.scheduleCheck(moved!, 2_000);
    await journal.removeFromIndex(gone!);
    const claims = await journal.claimChecks([still!, moved!, gone!].map((ref) => ({ ref, seenAt: 1_000, atMs: 9_000 })));
    expect(claims).toEqual([true, false, false]);
    expect([await journal.nextCheckAt(still!), await journal.nextCheckAt(moved!), await journal.nextCheckAt(gone!)]).toEqual([9_000, 2_000, undefined]);
  });

  it('property: sweeps that read the same entries claim each at most once, none that its owner moved, every other one once', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 30 }),
        fc.integer({ min: 2, max: 4 }),
        fc.array(fc.nat(), { maxLength: 30 }),
        fc.array(fc.nat(), { minLength: 4, maxLength: 4 }),
        async (entries, sweeps, ownerMoves, order) => {
          const journal = new Journal(redis(), { prefix: `aip${++run}` });
          const refs = Array.from({ length: entries }, (_, index) => ({ workflowId: `wf-${index}`, delegationId: index % 2 === 0 ? '*' : 'main.1' }));
          for (const [index, ref] of refs.entries()) await journal.addToIndex(ref, 1_000 + index);
          // Every sweep reads the entries first, then the owners move some (a follow, a reconcile), then the sweeps claim in any order.
          const read = refs.map((ref, index) => ({ ref, seenAt: 1_000 + index }));
          const movedByOwner = new Set(ownerMoves.map((pick) => pick % entries));
          for (const index of movedByOwner) await journal.scheduleCheck(refs[index]!, 50_000);
          const turns = Array.from({ length: sweeps }, (_, sweep) => sweep).sort((left, right) => (order[left]! % 7) - (order[right]! % 7));
          const claimedBy = new Map<number, number[]>();
          for (const sweep of turns) {
            const claims = await journal.claimChecks(read.map((check) => ({ ...check, atMs: 10_000 + sweep })));
            claims.forEach((claimed, index) => claimed && claimedBy.set(index, [...(claimedBy.get(index) ?? []), sweep]));
          }
          for (const index of refs.keys()) {
            const by = claimedBy.get(index) ?? [];
            expect(by).toHaveLength(movedByOwner.has(index) ? 0 : 1);
            expect(await journal.nextCheckAt(refs[index]!)).toBe(movedByOwner.has(index) ? 50_000 : 10_000 + by[0]!);
          }
        },
      ),
      { numRuns: 40 },
    );
  });
});
