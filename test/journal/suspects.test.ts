/**
 * noteSuspect-1.lua and clearSuspects-1.lua: the pending suspects of a delegation (tasks refused pushes showed
 * holding our message, read by the reconciler). Every return code; the cap (the oldest unread kept, the rest
 * counted); the take compare-and-set (read-then-remove: a suspect noted while the reader read stays); the fields live
 * and go with the row (operational: never in the compacted record, gone with the row's hash).
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { Journal, SUSPECTS_PENDING_MAX, SUSPECT_TASK_ID_MAX, type DelegationRef } from '@durable-a2a/shared';
import { useRedisClient, useRedisServer } from '../harness/redis.ts';
import { intentRow } from '../harness/journal-rows.ts';

const redisServer = useRedisServer();
const redis = useRedisClient(redisServer);
let journal: Journal;
let counter = 0;
let ref: DelegationRef;

beforeEach(async () => {
  journal = new Journal(redis(), { prefix: `sus${++counter}`, retentionMs: 60_000 });
  ref = { workflowId: `wf${counter}`, delegationId: 'main.1' };
  expect(await journal.createWorkflow(ref.workflowId, { state: 'RUNNING' }, intentRow(ref.workflowId))).toBe(true);
});

const row = () => journal.keys.delegation(ref.workflowId, ref.delegationId);

describe('noteSuspect', () => {
  it('1 kept, in arrival order; 2 already pending (kept once); the version untouched', async () => {
    const version = (await journal.getDelegation(ref))!.version;
    expect(await journal.noteSuspect(ref, 'T3')).toBe('kept');
    expect(await journal.noteSuspect(ref, 'T2')).toBe('kept');
    expect(await journal.noteSuspect(ref, 'T3')).toBe('pending');
    expect(await journal.pendingSuspects(ref)).toEqual(['T3', 'T2']);
    expect((await journal.getDelegation(ref))!.version).toBe(version);
  });

  it('3 over the cap: the oldest unread are kept, a new id counted in suspectsOverCap and not kept; room made by a read takes the next', async () => {
    const ids = Array.from({ length: SUSPECTS_PENDING_MAX }, (_, n) => `T-${n}-${'x'.repeat(SUSPECT_TASK_ID_MAX - 10)}`);
    for (const id of ids) expect(await journal.noteSuspect(ref, id)).toBe('kept');
    expect(await journal.noteSuspect(ref, 'T-late')).toBe('over-cap');
    expect(await journal.noteSuspect(ref, 'T-later')).toBe('over-cap');
    expect(await journal.noteSuspect(ref, ids[0]!)).toBe('pending');
    expect(await journal.pendingSuspects(ref)).toEqual(ids);
    expect(await redis().hget(row(), 'suspectsOverCap')).toBe('2');
    expect(await journal.clearSuspects(ref, [ids[0]!])).toBe(SUSPECTS_PENDING_MAX - 1);
    expect(await journal.noteSuspect(ref, 'T-late')).toBe('kept');
    expect(await journal.pendingSuspects(ref)).toEqual([...ids.slice(1), 'T-late']);
  });

  it('0 on a finished row (nothing kept); missing for a row that is gone; a task id out of bounds is refused before Redis', async () => {
    await redis().hset(row(), 'state', 'COMPLETED');
    expect(await journal.noteSuspect(ref, 'T2')).toBe('finished');
    expect(await redis().hexists(row(), 'suspects')).toBe(0);
    expect(await journal.noteSuspect({ ...ref, delegationId: 'none' }, 'T2')).toBe('missing');
    await expect(journal.noteSuspect(ref, '')).rejects.toThrow(RangeError);
    await expect(journal.noteSuspect(ref, 'x'.repeat(SUSPECT_TASK_ID_MAX + 1))).rejects.toThrow(RangeError);
  });
});

describe('clearSuspects (the reconciler reads, then removes what it read)', () => {
  it('removes exactly the ids read: one noted while they were read stays for the next job; the field goes with the last id', async () => {
    await journal.noteSuspect(ref, 'T3');
    await journal.noteSuspect(ref, 'T2');
    const taken = await journal.pendingSuspects(ref);
    // Noted between the read of the pending list and the removal.
    await journal.noteSuspect(ref, 'T4');
    expect(await journal.clearSuspects(ref, taken)).toBe(1);
    expect(await journal.pendingSuspects(ref)).toEqual(['T4']);
    expect(await journal.clearSuspects(ref, ['T-never-noted'])).toBe(1);
    expect(await journal.clearSuspects(ref, ['T4'])).toBe(0);
    expect(await redis().hexists(row(), 'suspects')).toBe(0);
    expect(await journal.clearSuspects(ref, [])).toBe(0);
    expect(await journal.clearSuspects({ ...ref, delegationId: 'none' }, ['T4'])).toBe(0);
  });

  it('a field that is not a list of task ids reads as none and is dropped by the next removal', async () => {
    await redis().hset(row(), 'suspects', '{not json');
    expect(await journal.pendingSuspects(ref)).toEqual([]);
    expect(await journal.noteSuspect(ref, 'T2')).toBe('kept');
    expect(await journal.pendingSuspects(ref)).toEqual(['T2']);
    await redis().hset(row(), 'suspects', '"T2"');
    expect(await journal.pendingSuspects(ref)).toEqual([]);
    expect(await journal.clearSuspects(ref, ['T2'])).toBe(0);
    expect(await redis().hexists(row(), 'suspects')).toBe(0);
  });
});

describe('expiry: the pending suspects are the row\'s own fields', () => {
  it('they expire and go with the row (no key of their own), and compaction never keeps them (operational)', async () => {
    await journal.noteSuspect(ref, 'T2');
    expect(await redis().hset(row(), 'suspectsOverCap', '1')).toBe(1);
    const keys = await redis().keys(`sus${counter}:*`);
    expect(keys.some((key) => key.includes('suspect'))).toBe(false);
    await redis().pexpire(row(), 1);
    await expect.poll(async () => redis().exists(row()), { timeout: 5_000 }).toBe(0);
    expect(await journal.pendingSuspects(ref)).toEqual([]);
    expect(await journal.noteSuspect(ref, 'T2')).toBe('missing');
  });

  it('a finished workflow\'s compacted record keeps none of them, and its hashes are gone', async () => {
    await journal.noteSuspect(ref, 'T-pending-at-the-end');
    await redis().hset(row(), 'suspectsOverCap', '3');
    // The row finished with a suspect still pending (its job not run yet).
    await redis().hset(row(), 'state', 'FAILED', 'error', JSON.stringify({ code: 'INTERNAL_ERROR', message: 'x', retryable: false }));
    await journal.updateWorkflow(ref.workflowId, { state: 'FAILED' });
    const text = await redis().get(journal.keys.finished(ref.workflowId));
    expect(text).toBeTruthy();
    expect(text).not.toContain('T-pending-at-the-end');
    expect(text).not.toContain('suspects');
    expect(await redis().exists(row())).toBe(0);
    expect((await journal.getDelegation(ref))!.state).toBe('FAILED');
  });
});
