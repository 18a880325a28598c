/**
 * noteRefusedResult-1.lua, every return code (`Journal.noteRefusedResult`): the first refusal's error kept, the
 * refused artifacts' ids gathered each once, past `REFUSED_ARTIFACT_IDS_MAX` ids or an id over
 * `REFUSED_ARTIFACT_ID_BYTES_MAX` bytes `artifactIdsLost`; a change bumps the version, a repeat changes nothing; a
 * finished row is left alone; a missing row is DELEGATION_MISSING. Real redis-server.
 */
import { describe, expect, it } from 'vitest';
import { JournalError, REFUSED_ARTIFACT_IDS_MAX, REFUSED_ARTIFACT_ID_BYTES_MAX, applyTask } from '@durable-a2a/shared';
import { useRedisClient, useRedisServer } from '../harness/redis.ts';
import { journalWithIntent } from '../harness/journal-rows.ts';

const redis = useRedisClient(useRedisServer());
let counter = 0;

/** A journal on its own prefix holding a delegation bound to task T1, WORKING; `row()` reads it back. */
async function working() {
  const { journal, ref } = await journalWithIntent(redis(), { prefix: `nrr${++counter}`, workflowId: `wf${counter}`, now: Date.now });
  await applyTask(journal, ref, { id: 'T1', contextId: 'C1', status: { state: 'TASK_STATE_WORKING' } }, { snapshot: true });
  return { journal, ref, row: async () => (await journal.getDelegation(ref))! };
}

describe('noteRefusedResult-1.lua', () => {
  it('first refusal: written, version bumped; the same id again: unchanged; another id: gathered, the first error kept', async () => {
    const { journal, ref, row } = await working();
    const before = await row();
    expect(await journal.noteRefusedResult(ref, { message: 'artifact a1 has 1001 parts', limit: 'partsPerMessage', artifactId: 'a1' })).toEqual({ version: before.version + 1, changed: true });
    expect((await row()).refusedResult).toEqual({ code: 'LIMIT_EXCEEDED', message: 'artifact a1 has 1001 parts', retryable: false, delivery: 'received', limit: 'partsPerMessage', artifactIds: ['a1'] });
    expect(await journal.noteRefusedResult(ref, { message: 'again', limit: 'partsPerMessage', artifactId: 'a1' })).toEqual({ version: before.version + 1, changed: false });
    expect(await journal.noteRefusedResult(ref, { message: 'a whole event', limit: 'sseEventBytes' })).toEqual({ version: before.version + 1, changed: false });
    expect(await journal.noteRefusedResult(ref, { message: 'artifact a2', limit: 'partsPerMessage', artifactId: 'a2' })).toEqual({ version: before.version + 2, changed: true });
    expect((await row()).refusedResult).toMatchObject({ message: 'artifact a1 has 1001 parts', artifactIds: ['a1', 'a2'] });
  });

  it('a whole refusal first (no id), then an artifact id: the id is gathered into it', async () => {
    const { journal, ref, row } = await working();
    await journal.noteRefusedResult(ref, { message: 'SSE event over 8 MiB', limit: 'sseEventBytes' });
    expect((await row()).refusedResult?.artifactIds).toBeUndefined();
    await journal.noteRefusedResult(ref, { message: 'artifact a1', limit: 'partsPerMessage', artifactId: 'a1' });
    expect((await row()).refusedResult).toMatchObject({ message: 'SSE event over 8 MiB', limit: 'sseEventBytes', artifactIds: ['a1'] });
  });

  it('past the bounds: more ids than REFUSED_ARTIFACT_IDS_MAX: artifactIdsLost, the kept ids stay', async () => {
    const { journal, ref, row } = await working();
    for (let index = 0; index < REFUSED_ARTIFACT_IDS_MAX; index++) await journal.noteRefusedResult(ref, { message: 'm', limit: 'partsPerMessage', artifactId: `a${index}` });
    expect((await row()).refusedResult?.artifactIds).toHaveLength(REFUSED_ARTIFACT_IDS_MAX);
    expect((await row()).refusedResult?.artifactIdsLost).toBeUndefined();
    const version = (await row()).version;
    expect(await journal.noteRefusedResult(ref, { message: 'm', limit: 'partsPerMessage', artifactId: 'one-more' })).toEqual({ version: version + 1, changed: true });
    expect((await row()).refusedResult).toMatchObject({ artifactIdsLost: true });
    expect((await row()).refusedResult?.artifactIds).toHaveLength(REFUSED_ARTIFACT_IDS_MAX);
    expect(await journal.noteRefusedResult(ref, { message: 'm', limit: 'partsPerMessage', artifactId: 'yet-another' })).toEqual({ version: version + 1, changed: false });
  });

  it('an id over REFUSED_ARTIFACT_ID_BYTES_MAX bytes is not kept: artifactIdsLost', async () => {
    const { journal, ref, row } = await working();
    await journal.noteRefusedResult(ref, { message: 'm', limit: 'partsPerMessage', artifactId: 'é'.repeat(REFUSED_ARTIFACT_ID_BYTES_MAX / 2 + 1) });
    const fact = (await row()).refusedResult;
    expect(fact).toMatchObject({ artifactIdsLost: true });
    expect(fact?.artifactIds).toBeUndefined();
  });

  it('a finished row is left alone (undefined); a missing row is DELEGATION_MISSING', async () => {
    const { journal, ref, row } = await working();
    await applyTask(journal, ref, { id: 'T1', contextId: 'C1', status: { state: 'TASK_STATE_FAILED' } }, { snapshot: true });
    const version = (await row()).version;
    expect(await journal.noteRefusedResult(ref, { message: 'm', limit: 'partsPerMessage', artifactId: 'a1' })).toBeUndefined();
    expect(await row()).toMatchObject({ version });
    expect((await row()).refusedResult).toBeUndefined();
    const missing = journal.noteRefusedResult({ workflowId: ref.workflowId, delegationId: 'nope.1' }, { message: 'm' });
    await expect(missing).rejects.toBeInstanceOf(JournalError);
    await expect(missing).rejects.toMatchObject({ code: 'DELEGATION_MISSING' });
  });
});
