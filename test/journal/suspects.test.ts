/**
 * noteSuspect-1.lua and clearSuspects-1.lua: the pending suspects of a delegation (tasks refused pushes showed
 * holding our message, read by the reconciler). Every return code; the cap (the oldest unread kept, the rest
 * counted lost); an id too long counted lost; the take compare-and-set (read-then-remove: a suspect noted while the
 * reader read stays); reads that fail kept for a bounded number of rounds, then counted lost; the fields live and go
 * with the row (operational: never in the compacted record, gone with the row's hash). noteDuplicateTask-1.lua: a
 * holder read after the row finished, noted beside its unchanged finished state.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { Journal, SUSPECTS_PENDING_MAX, SUSPECT_TASK_ID_MAX, applyTask, type DelegationRef } from '@durable-a2a/shared';
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

  it('3 over the cap: the oldest unread are kept, a new id counted lost (suspectsLost) and not kept; room made by a read takes the next', async () => {
    const ids = Array.from({ length: SUSPECTS_PENDING_MAX }, (_, n) => `T-${n}-${'x'.repeat(SUSPECT_TASK_ID_MAX - 10)}`);
    for (const id of ids) expect(await journal.noteSuspect(ref, id)).toBe('kept');
    expect(await journal.noteSuspect(ref, 'T-late')).toBe('over-cap');
    expect(await journal.noteSuspect(ref, 'T-later')).toBe('over-cap');
    expect(await journal.noteSuspect(ref, ids[0]!)).toBe('pending');
    expect(await journal.pendingSuspects(ref)).toEqual(ids);
    expect(await redis().hget(row(), 'suspectsLost')).toBe('2');
    expect((await journal.getDelegation(ref))!.suspectsLost).toBe(2);
    expect(await journal.clearSuspects(ref, { read: [ids[0]!] })).toEqual({ pending: SUSPECTS_PENDING_MAX - 1, lost: 2, rounds: 0 });
    expect(await journal.noteSuspect(ref, 'T-late')).toBe('kept');
    expect(await journal.pendingSuspects(ref)).toEqual([...ids.slice(1), 'T-late']);
  });

  it('3 for an id over SUSPECT_TASK_ID_MAX: not kept (never sent to Redis), counted lost; the longest one is kept', async () => {
    expect(await journal.noteSuspect(ref, 'x'.repeat(SUSPECT_TASK_ID_MAX + 1))).toBe('too-long');
    expect(await journal.noteSuspect(ref, 'x'.repeat(4 * 1024 * 1024))).toBe('too-long');
    expect(await journal.noteSuspect(ref, 'y'.repeat(SUSPECT_TASK_ID_MAX))).toBe('kept');
    expect(await journal.pendingSuspects(ref)).toEqual(['y'.repeat(SUSPECT_TASK_ID_MAX)]);
    expect((await journal.getDelegation(ref))!.suspectsLost).toBe(2);
  });

  it('a finished row keeps them too (its finished-row reconcile reads them); missing for a row that is gone; an empty id is refused before Redis', async () => {
    await redis().hset(row(), 'state', 'COMPLETED');
    expect(await journal.noteSuspect(ref, 'T2')).toBe('kept');
    expect(await journal.noteSuspect(ref, 'x'.repeat(SUSPECT_TASK_ID_MAX + 1))).toBe('too-long');
    expect(await journal.pendingSuspects(ref)).toEqual(['T2']);
    expect((await journal.getDelegation(ref))!.suspectsLost).toBe(1);
    expect(await journal.noteSuspect({ ...ref, delegationId: 'none' }, 'T2')).toBe('missing');
    await expect(journal.noteSuspect(ref, '')).rejects.toThrow(RangeError);
  });
});

describe('clearSuspects (the reconciler reads, then removes what it read)', () => {
  it('removes exactly the ids read: one noted while they were read stays for the next job; the field goes with the last id', async () => {
    await journal.noteSuspect(ref, 'T3');
    await journal.noteSuspect(ref, 'T2');
    const taken = await journal.pendingSuspects(ref);
    // Noted between the read of the pending list and the removal.
    await journal.noteSuspect(ref, 'T4');
    expect(await journal.clearSuspects(ref, { read: taken })).toEqual({ pending: 1, lost: 0, rounds: 0 });
    expect(await journal.pendingSuspects(ref)).toEqual(['T4']);
    expect((await journal.clearSuspects(ref, { read: ['T-never-noted'] })).pending).toBe(1);
    expect((await journal.clearSuspects(ref, { read: ['T4'] })).pending).toBe(0);
    expect(await redis().hexists(row(), 'suspects')).toBe(0);
    expect(await journal.clearSuspects(ref, {})).toEqual({ pending: 0, lost: 0, rounds: 0 });
    expect(await journal.clearSuspects({ ...ref, delegationId: 'none' }, { read: ['T4'], unread: ['T5'], unreadable: ['T6'] })).toEqual({ pending: 0, lost: 0, rounds: 0 });
    expect(await redis().exists(journal.keys.delegation(ref.workflowId, 'none'))).toBe(0);
  });

  it('a read that failed keeps its suspect for another round, `rounds` in a row at most, then counts it lost; a round that reads all ends the count; an unreadable one is lost at once', async () => {
    for (const id of ['T2', 'T3', 'T4']) await journal.noteSuspect(ref, id);
    expect(await journal.clearSuspects(ref, { read: ['T2'], unread: ['T3'] }, 3)).toEqual({ pending: 2, lost: 0, rounds: 1 });
    expect(await journal.clearSuspects(ref, { unread: ['T3'] }, 3)).toEqual({ pending: 2, lost: 0, rounds: 2 });
    // A round that read what it tried ends the run of failed rounds.
    expect(await journal.clearSuspects(ref, { read: ['T-other'] }, 3)).toEqual({ pending: 2, lost: 0, rounds: 0 });
    expect(await redis().hexists(row(), 'suspectReadRounds')).toBe(0);
    for (const rounds of [1, 2]) expect(await journal.clearSuspects(ref, { unread: ['T3', 'T-not-pending'] }, 3)).toEqual({ pending: 2, lost: 0, rounds });
    expect(await journal.clearSuspects(ref, { unread: ['T3'] }, 3)).toEqual({ pending: 1, lost: 1, rounds: 0 });
    expect(await journal.pendingSuspects(ref)).toEqual(['T4']);
    expect(await journal.clearSuspects(ref, { unreadable: ['T4', 'T-not-pending'] }, 3)).toEqual({ pending: 0, lost: 2, rounds: 0 });
    expect((await journal.getDelegation(ref))!.suspectsLost).toBe(2);
  });

  it('a field that is not a list of task ids reads as none and is dropped by the next removal', async () => {
    await redis().hset(row(), 'suspects', '{not json');
    expect(await journal.pendingSuspects(ref)).toEqual([]);
    expect(await journal.noteSuspect(ref, 'T2')).toBe('kept');
    expect(await journal.pendingSuspects(ref)).toEqual(['T2']);
    await redis().hset(row(), 'suspects', '"T2"');
    expect(await journal.pendingSuspects(ref)).toEqual([]);
    expect((await journal.clearSuspects(ref, { read: ['T2'] })).pending).toBe(0);
    expect(await redis().hexists(row(), 'suspects')).toBe(0);
  });
});

describe('expiry: the pending suspects are the row\'s own fields', () => {
  it('they expire and go with the row (no key of their own), and compaction never keeps them (operational)', async () => {
    await journal.noteSuspect(ref, 'T2');
    expect(await redis().hset(row(), 'suspectsLost', '1', 'suspectReadRounds', '1')).toBe(2);
    const keys = await redis().keys(`sus${counter}:*`);
    expect(keys.some((key) => key.includes('suspect'))).toBe(false);
    await redis().pexpire(row(), 1);
    await expect.poll(async () => redis().exists(row()), { timeout: 5_000 }).toBe(0);
    expect(await journal.pendingSuspects(ref)).toEqual([]);
    expect(await journal.noteSuspect(ref, 'T2')).toBe('missing');
  });

  it('a finished workflow\'s compacted record keeps none of them, and its hashes are gone', async () => {
    await journal.noteSuspect(ref, 'T-pending-at-the-end');
    await redis().hset(row(), 'suspectsLost', '3', 'suspectReadRounds', '2');
    // The row finished with a suspect still pending (its job not run yet).
    await redis().hset(row(), 'state', 'FAILED', 'error', JSON.stringify({ code: 'INTERNAL_ERROR', message: 'x', retryable: false }));
    await journal.updateWorkflow(ref.workflowId, { state: 'FAILED' });
    const text = await redis().get(journal.keys.finished(ref.workflowId));
    expect(text).toBeTruthy();
    expect(text).not.toContain('T-pending-at-the-end');
    expect(text).not.toContain('suspects');
    expect(text).not.toContain('suspectRead');
    expect(await redis().exists(row())).toBe(0);
    expect((await journal.getDelegation(ref))!.state).toBe('FAILED');
  });
});

/** The workflow's history entries, parsed (the list beside its row). */
const historyEntries = async () => (await redis().lrange(journal.keys.history(ref.workflowId), 0, -1)).map((text) => JSON.parse(text) as { kind: string });

/** noteDuplicateTask-1.lua: a suspect read after the row finished holds our message: every return code. */
describe('noteDuplicateTask', () => {
  it('1 noted on a finished row: protocolError DUPLICATE_TASK naming both tasks, the state and result unchanged, the version bumped', async () => {
    await applyTask(journal, ref, { id: 'T1', contextId: 'C1', status: { state: 'TASK_STATE_COMPLETED' }, artifacts: [{ artifactId: 'a1', parts: [{ text: 'booked' }] }] }, { snapshot: true, agentCardUrl: 'http://agent.test/card' });
    const before = (await journal.getDelegation(ref))!;
    expect(before.state).toBe('COMPLETED');
    expect(await journal.noteDuplicateTask(ref, ['T1', 'T2'])).toBe('noted');
    const after = (await journal.getDelegation(ref))!;
    expect(after).toMatchObject({ state: 'COMPLETED', taskId: 'T1', protocolErrorCount: before.protocolErrorCount + 1, version: before.version + 1 });
    expect(after.protocolError).toMatchObject({ code: 'DUPLICATE_TASK', retryable: false });
    expect(after.protocolError!.message).toMatch(/task T2 .*task T1/);
    expect(after.result).toEqual(before.result);
  });

  it('1 writes the history entry naming both tasks; 2 the same note again (a retried read): nothing written', async () => {
    await applyTask(journal, ref, { id: 'T1', contextId: 'C1', status: { state: 'TASK_STATE_COMPLETED' } }, { snapshot: true, agentCardUrl: 'http://agent.test/card' });
    expect(await journal.noteDuplicateTask({ ...ref, step: 'main', state: 'COMPLETED' }, ['T1', 'T2'])).toBe('noted');
    const entries = (await historyEntries()).filter((entry) => entry.kind === 'duplicate-task');
    expect(entries).toEqual([expect.objectContaining({ kind: 'duplicate-task', delegationId: ref.delegationId, step: 'main', state: 'COMPLETED', taskId: 'T1', otherTaskId: 'T2' })]);
    const before = await redis().hgetall(journal.keys.delegation(ref.workflowId, ref.delegationId));
    expect(await journal.noteDuplicateTask(ref, ['T1', 'T2'])).toBe('already noted');
    expect(await redis().hgetall(journal.keys.delegation(ref.workflowId, ref.delegationId))).toEqual(before);
    expect((await historyEntries()).filter((entry) => entry.kind === 'duplicate-task')).toHaveLength(1);
  });

  it('0 on an unfinished row: nothing written (the task-read row decides there)', async () => {
    await applyTask(journal, ref, { id: 'T1', contextId: 'C1', status: { state: 'TASK_STATE_WORKING' } }, { snapshot: true, agentCardUrl: 'http://agent.test/card' });
    const before = await redis().hgetall(journal.keys.delegation(ref.workflowId, ref.delegationId));
    expect(await journal.noteDuplicateTask(ref, ['T1', 'T2'])).toBeUndefined();
    expect(await redis().hgetall(journal.keys.delegation(ref.workflowId, ref.delegationId))).toEqual(before);
  });

  it('DELEGATION_MISSING: a row that is gone is false, nothing created', async () => {
    const gone = { workflowId: ref.workflowId, delegationId: 'nope.1' };
    expect(await journal.noteDuplicateTask(gone, ['T1', 'T2'])).toBeUndefined();
    expect(await redis().exists(journal.keys.delegation(gone.workflowId, gone.delegationId))).toBe(0);
  });
});
