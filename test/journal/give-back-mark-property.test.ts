/**
 * Property (stallguard30, the kind "the worker proved nothing was sent, yet the row is handed on as maybe-sent"): a
 * send run that stalled after its mark gives the mark back (giveBackMark-1.lua) only while the row is as its mark left
 * it. Whatever the reconciler or another run did first (a search noted, a release and a new mark, a claim, a decision),
 * or a suspect noted (a task a refused push showed holding our message: the reconciler reads it before anything is
 * sent again), the give-back is refused and writes nothing: they own the delegation. When given back, the row is as
 * before the mark (unmarked, sendCount as before, resendCount untouched: no attempt used up) and the run's fresh mark
 * stands alone.
 * Real redis-server.
 */
import fc from 'fast-check';
import { beforeEach, describe, expect, it } from 'vitest';
import { Journal } from '@durable-a2a/shared';
import { useRedisClient, useRedisServer } from '../harness/redis.ts';
import { intentRow } from '../harness/journal-rows.ts';

const redisServer = useRedisServer();
const redis = useRedisClient(redisServer);
let counter = 0;
let journal: Journal;
let ref: { workflowId: string; delegationId: string };

beforeEach(() => {
  journal = new Journal(redis(), { prefix: `gb${++counter}`, retentionMs: 60_000 });
});

type First = 'none' | 'search-noted' | 'suspect-noted' | 'released-and-marked-again' | 'claimed-elsewhere' | 'decided';
const INTERFACE = { url: 'http://a', protocolBinding: 'JSONRPC', protocolVersion: '1.0' };

describe('giveBackMark: only the run\'s own unsent mark, only while nobody acted since', () => {
  it('holds for whatever acted first, with or without the mark\'s version known', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom<First>('none', 'search-noted', 'suspect-noted', 'released-and-marked-again', 'claimed-elsewhere', 'decided'),
        fc.boolean(),
        fc.integer({ min: 0, max: 2 }),
        async (first, versionKnown, earlierResends) => {
          const run = ++counter;
          ref = { workflowId: `wf${run}`, delegationId: 'main.1' };
          expect(await journal.createWorkflow(ref.workflowId, { state: 'RUNNING' }, intentRow(ref.workflowId))).toBe(true);
          // Earlier resends (a reconciler proved absence before): they stay counted, never one more for a give-back.
          for (let index = 0; index < earlierResends; index++) {
            const fence = await journal.claim(ref, 'earlier');
            await journal.markSending(ref, fence, INTERFACE);
            await journal.releaseForResend(ref, (await journal.getDelegation(ref))!.version);
          }
          const before = (await journal.getDelegation(ref))!;
          const marked = await journal.markSending(before, before.fence, INTERFACE, { token: 'run', durationMs: 60_000, claim: true });
          const afterMark = (await journal.getDelegation(ref))!;
          if (first === 'search-noted') await journal.noteNotFound(ref);
          // A refused push showed a task holding our message (an earlier send's, which the search that released it missed).
          if (first === 'suspect-noted') expect(await journal.noteSuspect(ref, `X${run}`)).toBe('kept');
          if (first === 'released-and-marked-again') {
            await journal.releaseForResend(ref, afterMark.version);
            const other = await journal.claim(ref, 'other');
            await journal.markSending(ref, other);
          }
          if (first === 'claimed-elsewhere') await journal.claim(ref, 'other');
          if (first === 'decided') await journal.applyStatus(ref, { fence: marked.fence, mode: 'snapshot', state: 'COMPLETED', taskId: `T${run}` });
          const beforeGiveBack = (await journal.getDelegation(ref))!;

          const given = await journal.giveBackMark(ref, { fence: marked.fence, sendStartedAt: marked.sendStartedAt, ...(versionKnown ? { markedVersion: marked.record?.version ?? afterMark.version } : {}) });
          const after = (await journal.getDelegation(ref))!;

          // A noted "not found" (noteNotFound-1.lua) leaves the row's version and the mark as they were: still ours.
          expect(given).toBe(first === 'none' || first === 'search-noted');
          if (!given) {
            expect(after).toEqual(beforeGiveBack);
            return;
          }
          expect(after.sendStartedAt).toBeUndefined();
          expect(after.state).toBe('INTENT');
          expect(after.sendCount).toBe(before.sendCount);
          expect(after.resendCount).toBe(earlierResends);
          expect(after.fence).toBe(marked.fence);
          // The run marks again (its fence), and that mark stands alone: nobody can mark beside it.
          const again = await journal.markSending(after, after.fence, undefined, { token: 'run', durationMs: 60_000, claim: true });
          await expect(journal.markSending(ref, again.fence)).rejects.toMatchObject({ code: 'MAY_HAVE_SENT' });
          // The old mark cannot be given back twice.
          expect(await journal.giveBackMark(ref, { fence: marked.fence, sendStartedAt: marked.sendStartedAt })).toBe(false);
        },
      ),
      { numRuns: 60, examples: [['none', true, 0], ['search-noted', true, 1], ['suspect-noted', true, 1], ['decided', false, 0]] },
    );
  });

  it('every return code: given back (1); a version the mark did not write, the row unchanged (VERSION_CONFLICT); no row (DELEGATION_MISSING, thrown)', async () => {
    const run = ++counter;
    ref = { workflowId: `wf${run}`, delegationId: 'main.1' };
    expect(await journal.createWorkflow(ref.workflowId, { state: 'RUNNING' }, intentRow(ref.workflowId))).toBe(true);
    const before = (await journal.getDelegation(ref))!;
    const marked = await journal.markSending(before, before.fence, INTERFACE, { token: 'run', durationMs: 60_000, claim: true });
    const afterMark = (await journal.getDelegation(ref))!;
    // The fence and the mark's sendStartedAt are the row's, the version is not the one the mark wrote.
    expect(await journal.giveBackMark(ref, { fence: marked.fence, sendStartedAt: marked.sendStartedAt, markedVersion: afterMark.version + 1 })).toBe(false);
    expect(await journal.getDelegation(ref)).toEqual(afterMark);
    expect(await journal.giveBackMark(ref, { fence: marked.fence, sendStartedAt: marked.sendStartedAt, markedVersion: afterMark.version })).toBe(true);
    await expect(journal.giveBackMark({ workflowId: `wf${run}-none`, delegationId: 'main.1' }, { fence: 1, sendStartedAt: marked.sendStartedAt })).rejects.toMatchObject({ code: 'DELEGATION_MISSING' });
  });
});
