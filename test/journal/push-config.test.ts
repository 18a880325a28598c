/**
 * notePushConfig-1.lua, every return code: the push notification config life cycle journaled compare-and-set
 * (written, state not as expected, missing), `deleted` final, the config id kept or replaced, the version untouched.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { Journal, JournalError } from '@durable-a2a/shared';
import { useRedisClient, useRedisServer } from '../harness/redis.ts';
import { intentRow } from '../harness/journal-rows.ts';

const redisServer = useRedisServer();
const redis = useRedisClient(redisServer);
let journal: Journal;
let counter = 0;
let ref: { workflowId: string; delegationId: string };

beforeEach(async () => {
  journal = new Journal(redis(), { prefix: `pc${++counter}`, retentionMs: 60_000 });
  ref = { workflowId: `wf${counter}`, delegationId: 'main.1' };
  expect(await journal.createWorkflow(ref.workflowId, { state: 'RUNNING' }, intentRow(ref.workflowId))).toBe(true);
});

describe('notePushConfig', () => {
  it('1: written compare-and-set from "not checked yet"; 0: a second writer from the same state writes nothing', async () => {
    const version = (await journal.getDelegation(ref))!.version;
    expect(await journal.notePushConfig(ref, undefined, 'creating', 'da2a-ours')).toBe(true);
    expect(await journal.notePushConfig(ref, undefined, 'creating', 'da2a-other')).toBe(false);
    expect(await journal.getDelegation(ref)).toMatchObject({ pushConfigState: 'creating', pushConfigId: 'da2a-ours', version });
    // The id the agent assigned replaces ours; an omitted id keeps the journaled one.
    expect(await journal.notePushConfig(ref, 'creating', 'registered', 'T1')).toBe(true);
    expect(await journal.notePushConfig(ref, 'creating', 'unconfirmed')).toBe(false);
    expect(await journal.getDelegation(ref)).toMatchObject({ pushConfigState: 'registered', pushConfigId: 'T1', version });
  });

  it('"any" claims the end once; deleted is final', async () => {
    expect(await journal.notePushConfig(ref, 'any', 'deleted')).toBe(true);
    expect(await journal.notePushConfig(ref, 'any', 'deleted')).toBe(false);
    expect(await journal.notePushConfig(ref, 'deleted', 'creating', 'da2a-ours')).toBe(false);
    expect(await journal.notePushConfig(ref, 'any', 'registered', 'da2a-ours')).toBe(false);
    const record = (await journal.getDelegation(ref))!;
    expect(record.pushConfigState).toBe('deleted');
    expect(record.pushConfigId).toBeUndefined();
  });

  it('-1: a missing row is refused (DELEGATION_MISSING)', async () => {
    const error = await journal.notePushConfig({ ...ref, delegationId: 'none' }, undefined, 'creating', 'x').catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(JournalError);
    expect((error as JournalError).code).toBe('DELEGATION_MISSING');
  });
});
