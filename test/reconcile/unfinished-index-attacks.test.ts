/**
 * Late writes to the unfinished index: once a delegation is settled (its entry removed, its workflow maybe
 * compacted), a follow lease renewed by a stream still closing, or a sweep that scanned the entry just
 * before, only moves entries still there: it never puts a settled delegation back (which would cost a
 * reconcile and settle it again, observing its end-to-end duration a second time).
 */
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
    expect(await journal.renewLeases([{ ref: live, token: 'holder' }, { ref: settled, token: 'holder' }], 10_000, () => 5_000)).toEqual(['renewed', 'renewed']);
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
    await journal.scheduleChecks(scanned.due.map(({ ref }) => ({ ref, atMs: 9_000 })));
    expect(await journal.nextCheckAt(kept)).toBe(9_000);
    expect(await journal.nextCheckAt(removed)).toBeUndefined();
  });
});
