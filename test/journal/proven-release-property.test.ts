/**
 * Property (release37, the kind "a proven absence read as a send that may have left"), over the real scripts: after any
 * history of tries on one INTENT row, written as the send runs and the reconciler write them (markSending-2.lua,
 * noteUnreachable-1.lua unmarked and marked, giveBackMark-1.lua, releaseForResend-1.lua with and without proof),
 * policy.ts `earlierSendsMayHaveLeft` of the row read back is more than 0 exactly when a send that left is not covered
 * by a later proven release (a proof covers every send before it), and never below 0. The pure property
 * (packages/workers/test/proven-release-property.test.ts) holds the transitions to that count. Real redis-server.
 */
import fc from 'fast-check';
import { beforeEach, describe, expect, it } from 'vitest';
import { Journal } from '@durable-a2a/shared';
import { earlierSendsMayHaveLeft } from '../../packages/workers/src/delegation/core/policy.ts';
import { useRedisClient, useRedisServer } from '../harness/redis.ts';
import { intentRow } from '../harness/journal-rows.ts';

const redisServer = useRedisServer();
const redis = useRedisClient(redisServer);
let counter = 0;
let journal: Journal;

beforeEach(() => {
  journal = new Journal(redis(), { prefix: `pr${++counter}`, retentionMs: 60_000 });
});

/** One try of the history (see the header); `left-*`: a SendMessage that left, then released with or without proof. */
type Try = 'card-refused' | 'send-refused' | 'given-back' | 'left-unproven' | 'left-proven';
const UNREACHABLE = { code: 'AGENT_UNREACHABLE', message: 'ECONNREFUSED', retryable: true, delivery: 'not-sent' } as const;

describe('release37 property: a proven release covers every send before it (real scripts)', () => {
  it('tries × this try marked: earlierSendsMayHaveLeft of the row read back > 0 iff a send not covered by a proof may have left', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.constantFrom<Try>('card-refused', 'send-refused', 'given-back', 'left-unproven', 'left-proven'), { maxLength: 8 }), fc.boolean(), async (tries, marked) => {
        const ref = { workflowId: `wf${++counter}`, delegationId: 'main.1' };
        expect(await journal.createWorkflow(ref.workflowId, { state: 'RUNNING' }, intentRow(ref.workflowId))).toBe(true);
        const fence = await journal.claim(ref, 'w');
        const sends: { left: boolean; covered: boolean }[] = [];
        for (const each of tries) {
          if (each === 'card-refused') {
            await journal.noteUnreachable(ref, fence, { error: UNREACHABLE, nextTryAt: Date.now() + 60_000, marked: false });
            continue;
          }
          const mark = await journal.markSending(ref, fence);
          if (each === 'given-back') expect(await journal.giveBackMark(ref, mark)).toBe(true);
          if (each === 'send-refused') {
            await journal.noteUnreachable(ref, fence, { error: UNREACHABLE, nextTryAt: Date.now() + 60_000, marked: true, mark });
            sends.push({ left: false, covered: false });
          }
          if (each === 'left-unproven' || each === 'left-proven') {
            sends.push({ left: true, covered: false });
            await journal.releaseForResend(ref, (await journal.getDelegation(ref))!.version, { provenAbsent: each === 'left-proven' });
            if (each === 'left-proven') for (const send of sends) send.covered = true;
          }
        }
        if (marked) await journal.markSending(ref, fence);
        const row = (await journal.getDelegation(ref))!;
        expect(row.sendStartedAt !== undefined).toBe(marked);
        expect(earlierSendsMayHaveLeft(row) > 0).toBe(sends.some((send) => send.left && !send.covered));
        expect(earlierSendsMayHaveLeft(row)).toBeGreaterThanOrEqual(0);
      }),
      { numRuns: 150 },
    );
  });
});
