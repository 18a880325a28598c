/**
 * Property (stallguard30, the kind "the worker proved nothing was sent, yet the row is handed on as maybe-sent"): a
 * send run that stalled after its mark gives the mark back (giveBackMark-1.lua) only while the row is as its mark left
 * it. Whatever the reconciler or another run did first (a search noted, a release and a new mark, a claim, a decision),
 * or a suspect noted (a task a refused push showed holding our message: the reconciler reads it before anything is
 * sent again), the give-back is refused and writes nothing: they own the delegation. When given back, the row is as
 * before the mark (unmarked, sendCount as before, resendCount untouched: no attempt used up) and the run's fresh mark
 * stands alone.
 * retrygive35 widened the kind: versioned writes that move neither the fence nor the mark (a push refused before our
 * task was recorded, a noted send error, a recorded effect) refuse too, whether or not the run's read of the row was at
 * its version (the version the mark wrote is always known now: markSending-2.lua replies it); and a try whose
 * SendMessage never left (noteUnreachable-1.lua, the agent unreachable) clears its mark by the same rule.
 * unreachable35: and a try past the step's unreachable bound writes FAILED AGENT_UNREACHABLE (applyStatus-5.lua with
 * `unsent`: the step may go to another agent) by the same rule; before, on the fence alone.
 * deadline35: and the reconciler's FAILED at the attempt deadline (AGENT_UNREACHABLE or DEADLINE_EXCEEDED, no fence:
 * the version it read and the row's mark, or none, as read) by the same rule; before, on the version alone, over a
 * suspect noted since its read (a suspect moves no version).
 * Real redis-server.
 */
import fc from 'fast-check';
import { beforeEach, describe, expect, it } from 'vitest';
import { Journal, JournalError, type DelegationRecord } from '@durable-a2a/shared';
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

type First =
  | 'none'
  | 'search-noted'
  | 'suspect-noted'
  | 'released-and-marked-again'
  | 'claimed-elsewhere'
  | 'decided'
  // retrygive35: versioned writes that leave the fence, the mark, INTENT and no task as they were.
  | 'push-refused'
  | 'send-error-noted'
  | 'effect-recorded';
/** A fresh workflow whose delegation main.1 is in INTENT (`ref` names it); returns the run counter it used. */
async function newIntent(): Promise<number> {
  const run = ++counter;
  ref = { workflowId: `wf${run}`, delegationId: 'main.1' };
  expect(await journal.createWorkflow(ref.workflowId, { state: 'RUNNING' }, intentRow(ref.workflowId))).toBe(true);
  return run;
}

const FIRSTS: First[] = ['none', 'search-noted', 'suspect-noted', 'released-and-marked-again', 'claimed-elsewhere', 'decided', 'push-refused', 'send-error-noted', 'effect-recorded'];
/** How the run read the row it marks: held at its version, or a copy older than the row (its version moved since). */
type Read = 'held' | 'stale';
/**
 * How the run clears its own unsent mark: a stall's give-back, a try whose SendMessage never left (unreachable), or
 * such a try past the step's unreachable bound (give-up: FAILED AGENT_UNREACHABLE, the step may go to another agent).
 */
type Clear = 'give-back' | 'unreachable' | 'give-up' | 'deadline';
const UNREACHABLE = { code: 'AGENT_UNREACHABLE', message: 'ECONNREFUSED', retryable: true, delivery: 'not-sent' } as const;

/** Clears the run's own mark as `how` does (`held`: the row as the run holds it); false when refused (nothing written: the reconciler decides). */
async function clearMark(how: Clear, fence: number, mark: { sendStartedAt: number; markedVersion: number }, held?: DelegationRecord): Promise<boolean> {
  if (how === 'give-back') return journal.giveBackMark(ref, { fence, ...mark });
  // deadline35: the reconciler's FAILED at the deadline as apply.ts writes it (`unsent: 'as-read'`, guard 'version'):
  // no fence, the version it read (at the mark here) and the mark it read.
  if (how === 'deadline') return failAtDeadline({ expectedVersion: mark.markedVersion, unsent: { sendStartedAt: mark.sendStartedAt } }, held);
  // The give-up as the send run writes it (apply.ts `outcome` with `unsent`): its fence, its mark and the version it wrote.
  const write =
    how === 'give-up'
      ? journal.applyStatus(ref, { fence, expectedVersion: mark.markedVersion, unsent: { sendStartedAt: mark.sendStartedAt }, mode: 'outcome', state: 'FAILED', error: UNREACHABLE, ...(held ? { held } : {}) }).then((result) => result.applied)
      : journal.noteUnreachable(ref, fence, { error: UNREACHABLE, nextTryAt: Date.now() + 60_000, marked: true, mark }).then(() => true);
  return write.then(
    (applied) => applied,
    (error: unknown) => {
      if (error instanceof JournalError && error.code !== 'DELEGATION_MISSING') return false;
      throw error;
    },
  );
}
const INTERFACE = { url: 'http://a', protocolBinding: 'JSONRPC', protocolVersion: '1.0' };

/** The reconciler's FAILED at the attempt deadline (`deadline-passed`, guard 'version', `unsent: 'as-read'`); false when refused. */
async function failAtDeadline(guard: { expectedVersion: number; unsent: { sendStartedAt?: number } }, held?: DelegationRecord): Promise<boolean> {
  const error = { code: 'DEADLINE_EXCEEDED', message: 'the attempt passed its deadline', retryable: false } as const;
  return journal.applyStatus(ref, { ...guard, mode: 'outcome', state: 'FAILED', error, ...(held ? { held } : {}) }).then(
    (result) => result.applied,
    (thrown: unknown) => {
      if (thrown instanceof JournalError && thrown.code === 'VERSION_CONFLICT') return false;
      throw thrown;
    },
  );
}

/** A fresh row the run marked, then a suspect noted on it (a refused push showed a task holding our message: an earlier SendMessage of ours a search missed, or the agent doing the step); the row as it is then. */
async function markedWithSuspect(): Promise<{ marked: Awaited<ReturnType<Journal['markSending']>>; beforeNote: DelegationRecord }> {
  const run = await newIntent();
  const read = (await journal.getDelegation(ref))!;
  const marked = await journal.markSending(read, read.fence, INTERFACE, { token: 'run', durationMs: 60_000, claim: true });
  expect(await journal.noteSuspect(ref, `X${run}`)).toBe('kept');
  return { marked, beforeNote: (await journal.getDelegation(ref))! };
}

describe('giveBackMark: only the run\'s own unsent mark, only while nobody acted since', () => {
  it('retrygive35: a run whose read was older than the row at its mark gives nothing back over a push noted since (was: given back, blind to the version)', async () => {
    const run = await newIntent();
    const read = (await journal.getDelegation(ref))!;
    // Between the run's read and its mark the row's version moved (fence and mark untouched): the mark's `record` is
    // undefined, so before, the run knew no version of its own mark.
    await journal.noteProtocolError(ref, { code: 'PUSH_NOT_OURS', message: 'an unrelated note', retryable: false });
    const marked = await journal.markSending(read, read.fence, INTERFACE, { token: 'run', durationMs: 60_000, claim: true });
    expect(marked.record).toBeUndefined();
    // Between the mark and the give-back: a push for a task before ours was recorded (our push config rides only on
    // a SendMessage of ours: the agent holds one). Versioned evidence the reconciler must see before anything is sent.
    expect(await journal.noteProtocolError(ref, { code: 'PUSH_NOT_OURS', message: `a push for task X${run} before the task was recorded`, retryable: false })).toBe(true);
    const beforeGiveBack = (await journal.getDelegation(ref))!;
    // The give-back as the send run makes it (send.ts giveBackUnsentMark): the version `markSending` told it.
    const given = await journal.giveBackMark(ref, { fence: marked.fence, sendStartedAt: marked.sendStartedAt, markedVersion: marked.markedVersion });
    expect(given).toBe(false);
    expect(await journal.getDelegation(ref)).toEqual(beforeGiveBack);
    expect(beforeGiveBack.sendStartedAt).toBe(marked.sendStartedAt);
  });

  it('retrygive35: a marked try noted unreachable clears nothing over a suspect noted since its mark (was: cleared on the fence alone, the next try sent again)', async () => {
    const { marked, beforeNote } = await markedWithSuspect();
    expect(await clearMark('unreachable', marked.fence, marked)).toBe(false);
    expect(await journal.getDelegation(ref)).toEqual(beforeNote);
    expect(beforeNote.sendStartedAt).toBe(marked.sendStartedAt);
  });

  it('unreachable35: a try out of its unreachable bound writes no FAILED AGENT_UNREACHABLE over a suspect noted since (was: written on the fence alone, the step re-delegated)', async () => {
    const { marked, beforeNote } = await markedWithSuspect();
    expect(await clearMark('give-up', marked.fence, marked, beforeNote)).toBe(false);
    expect(await journal.getDelegation(ref)).toEqual(beforeNote);
    expect(beforeNote.state).toBe('INTENT');
    // A try that ended before its mark (the Agent Card could not be fetched) on an unmarked row: the same.
    const run = await newIntent();
    const fence = await journal.claim(ref, 'run');
    expect(await journal.noteSuspect(ref, `Y${run}`)).toBe('kept');
    const unmarked = (await journal.getDelegation(ref))!;
    const giveUp = journal.applyStatus(ref, { fence, unsent: {}, mode: 'outcome', state: 'FAILED', error: UNREACHABLE });
    await expect(giveUp).rejects.toMatchObject({ code: 'VERSION_CONFLICT' });
    expect(await journal.getDelegation(ref)).toEqual(unmarked);
    // Without the suspect, the same give-up is written.
    await newIntent();
    const clean = await journal.claim(ref, 'run');
    expect((await journal.applyStatus(ref, { fence: clean, unsent: {}, mode: 'outcome', state: 'FAILED', error: UNREACHABLE })).applied).toBe(true);
  });

  it('deadline35: the reconciler\'s FAILED at the deadline, read before a suspect was noted, is refused (was: written on the version alone, the step re-delegated)', async () => {
    // An unmarked row waiting for its agent, read by the reconciler; a suspect noted after the read moves no version.
    const run = await newIntent();
    const read = (await journal.getDelegation(ref))!;
    expect(await journal.noteSuspect(ref, `Z${run}`)).toBe('kept');
    const noted = (await journal.getDelegation(ref))!;
    expect(noted.version).toBe(read.version);
    expect(await failAtDeadline({ expectedVersion: read.version, unsent: {} }, read)).toBe(false);
    expect(await journal.getDelegation(ref)).toEqual(noted);
    // Without the suspect, the same write stands.
    await newIntent();
    const clean = (await journal.getDelegation(ref))!;
    expect(await failAtDeadline({ expectedVersion: clean.version, unsent: {} }, clean)).toBe(true);
  });

  it('holds for whatever acted first, whether the run\'s read of the row was at its version or older, by a give-back, an unreachable note, a give-up or the reconciler\'s deadline', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom<First>(...FIRSTS),
        fc.constantFrom<Read>('held', 'stale'),
        fc.integer({ min: 0, max: 2 }),
        fc.constantFrom<Clear>('give-back', 'unreachable', 'give-up', 'deadline'),
        async (first, read, earlierResends, how) => {
          const run = await newIntent();
          // Earlier resends (a reconciler proved absence before): they stay counted, never one more for a give-back.
          for (let index = 0; index < earlierResends; index++) {
            const fence = await journal.claim(ref, 'earlier');
            await journal.markSending(ref, fence, INTERFACE);
            await journal.releaseForResend(ref, (await journal.getDelegation(ref))!.version);
          }
          const before = (await journal.getDelegation(ref))!;
          // A stale read: the row's version moved after the run read it (a noted protocol error), fence and mark untouched.
          if (read === 'stale') await journal.noteProtocolError(ref, { code: 'PUSH_NOT_OURS', message: 'a push before the task was recorded', retryable: false });
          const marked = await journal.markSending(before, before.fence, INTERFACE, { token: 'run', durationMs: 60_000, claim: true });
          const afterMark = (await journal.getDelegation(ref))!;
          expect(marked.markedVersion).toBe(afterMark.version);
          if (read === 'stale') expect(marked.record).toBeUndefined();
          if (first === 'search-noted') await journal.noteNotFound(ref);
          // A push for a task before ours was recorded (noteProtocolError-1.lua, unversioned, moves the version): the agent
          // holds a SendMessage of ours that carried our push config, maybe an earlier one a search missed.
          if (first === 'push-refused') expect(await journal.noteProtocolError(ref, { code: 'PUSH_NOT_OURS', message: `a push for task X${run} before the task was recorded`, retryable: false })).toBe(true);
          if (first === 'send-error-noted') {
            const current = (await journal.getDelegation(ref))!;
            await journal.applyStatus(ref, { expectedVersion: current.version, mode: 'outcome', state: 'INTENT', held: current, error: { code: 'INVALID_AGENT_RESPONSE', message: 'an answer arrived', retryable: true, delivery: 'received' } });
          }
          if (first === 'effect-recorded') expect(await journal.recordEffect(ref, 'present', { found: true })).toBe(true);
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

          const given = await clearMark(how, marked.fence, marked, read === 'held' ? beforeGiveBack : undefined);
          const after = (await journal.getDelegation(ref))!;

          // A noted "not found" (noteNotFound-1.lua) leaves the row's version and the mark as they were: still ours.
          // The reconciler's deadline holds no fence: a claim elsewhere (no version moved, nothing sent) does not stop it.
          expect(given).toBe(first === 'none' || first === 'search-noted' || (how === 'deadline' && first === 'claimed-elsewhere'));
          if (!given) {
            expect(after).toEqual(beforeGiveBack);
            return;
          }
          if (how === 'give-up' || how === 'deadline') {
            // unreachable35: the step ends FAILED AGENT_UNREACHABLE (nothing sent: it may go to another agent), once.
            expect(after.state).toBe('FAILED');
            expect(after.error).toMatchObject(how === 'deadline' ? { code: 'DEADLINE_EXCEEDED' } : { code: 'AGENT_UNREACHABLE', delivery: 'not-sent' });
            expect(await clearMark(how, marked.fence, marked)).toBe(false);
            return;
          }
          expect(after.sendStartedAt).toBeUndefined();
          expect(after.state).toBe('INTENT');
          // A give-back takes its try back; an unreachable try stays counted (it was tried, and never left).
          expect(after.sendCount).toBe(how === 'give-back' ? before.sendCount : before.sendCount + 1);
          expect(after.resendCount).toBe(earlierResends);
          expect(after.fence).toBe(marked.fence);
          // The run marks again (its fence), and that mark stands alone: nobody can mark beside it.
          const again = await journal.markSending(after, after.fence, undefined, { token: 'run', durationMs: 60_000, claim: true });
          await expect(journal.markSending(ref, again.fence)).rejects.toMatchObject({ code: 'MAY_HAVE_SENT' });
          // The old mark cannot be given back twice.
          expect(await journal.giveBackMark(ref, { fence: marked.fence, sendStartedAt: marked.sendStartedAt, markedVersion: marked.markedVersion })).toBe(false);
        },
      ),
      {
        numRuns: 100,
        examples: [
          ['none', 'held', 0, 'give-back'],
          ['search-noted', 'held', 1, 'give-back'],
          ['suspect-noted', 'held', 1, 'give-back'],
          ['decided', 'stale', 0, 'give-back'],
          ['push-refused', 'stale', 0, 'give-back'],
          ['send-error-noted', 'stale', 1, 'give-back'],
          ['none', 'stale', 0, 'give-back'],
          ['suspect-noted', 'held', 0, 'unreachable'],
          ['push-refused', 'held', 0, 'unreachable'],
          ['none', 'stale', 0, 'unreachable'],
          ['suspect-noted', 'held', 0, 'give-up'],
          ['push-refused', 'stale', 0, 'give-up'],
          ['released-and-marked-again', 'held', 0, 'give-up'],
          ['search-noted', 'held', 1, 'give-up'],
          ['suspect-noted', 'held', 0, 'deadline'],
          ['suspect-noted', 'stale', 1, 'deadline'],
          ['none', 'held', 0, 'deadline'],
        ],
      },
    );
  });

  it('every return code: given back (1); a version the mark did not write, the row unchanged (VERSION_CONFLICT); no row (DELEGATION_MISSING, thrown)', async () => {
    const run = await newIntent();
    const before = (await journal.getDelegation(ref))!;
    const marked = await journal.markSending(before, before.fence, INTERFACE, { token: 'run', durationMs: 60_000, claim: true });
    const afterMark = (await journal.getDelegation(ref))!;
    // The fence and the mark's sendStartedAt are the row's, the version is not the one the mark wrote.
    expect(await journal.giveBackMark(ref, { fence: marked.fence, sendStartedAt: marked.sendStartedAt, markedVersion: afterMark.version + 1 })).toBe(false);
    expect(await journal.getDelegation(ref)).toEqual(afterMark);
    expect(await journal.giveBackMark(ref, { fence: marked.fence, sendStartedAt: marked.sendStartedAt, markedVersion: afterMark.version })).toBe(true);
    await expect(journal.giveBackMark({ workflowId: `wf${run}-none`, delegationId: 'main.1' }, { fence: 1, sendStartedAt: marked.sendStartedAt, markedVersion: 1 })).rejects.toMatchObject({ code: 'DELEGATION_MISSING' });
  });
});

/**
 * Second property (attack33b, the kind "a request leaves without its send lease"): a claiming mark (markSending-2.lua with a
 * holder token and a claim) holds the delegation's lease afterwards, whoever held it on the unmarked row before (a
 * gone send run that gave its unsent mark back or noted its agent unreachable, a follower, the run itself) and
 * however long that lease had left. The earlier holder is fenced out by the same claim: its release and renewal no
 * longer touch the lease. A mark without a claim still reports a lease held elsewhere.
 * Before, a claiming mark reported "lease elsewhere" and the send left unheld: once the old lease ran out the
 * reconciler could search and resend while the agent held our request.
 */
type Before = 'free' | 'gone-sender-gave-back' | 'gone-sender-unreachable' | 'follower' | 'same-run';

describe('markSending: a claiming mark holds the send lease', () => {
  it('whoever held the lease on the unmarked row, for however long', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom<Before>('free', 'gone-sender-gave-back', 'gone-sender-unreachable', 'follower', 'same-run'),
        fc.integer({ min: 10_000, max: 120_000 }),
        fc.boolean(),
        async (before, leftMs, claim) => {
          ref = { workflowId: `wf${++counter}`, delegationId: 'main.1' };
          expect(await journal.createWorkflow(ref.workflowId, { state: 'RUNNING' }, intentRow(ref.workflowId))).toBe(true);
          const earlier = before === 'follower' ? 'w0/f/1' : before === 'same-run' ? 'w1/send/9' : 'w0/send/1';
          if (before === 'gone-sender-gave-back' || before === 'gone-sender-unreachable') {
            // The gone run marked (taking the lease), then unmarked the row, and never released its lease.
            const row = (await journal.getDelegation(ref))!;
            const marked = await journal.markSending(row, row.fence, INTERFACE, { token: earlier, durationMs: leftMs, claim: true });
            if (before === 'gone-sender-gave-back') expect(await journal.giveBackMark(ref, { fence: marked.fence, sendStartedAt: marked.sendStartedAt, markedVersion: marked.markedVersion })).toBe(true);
            else await journal.noteUnreachable(ref, marked.fence, { error: { code: 'AGENT_UNREACHABLE', message: 'refused', retryable: true }, nextTryAt: Date.now(), marked: true, mark: marked });
          } else if (before !== 'free') {
            expect(await journal.lease(ref, 'acquire', earlier, leftMs)).toBe(true);
          }
          const row = (await journal.getDelegation(ref))!;
          expect(row.sendStartedAt).toBeUndefined();
          const token = 'w1/send/9';
          const mark = await journal.markSending(row, row.fence, claim ? INTERFACE : undefined, { token, durationMs: 60_000, claim });
          const holder = await journal.leaseHolder(ref);
          if (claim || before === 'free' || before === 'same-run') {
            expect(mark.leaseHeld).toBe(true);
            expect(holder).toBe(token);
            expect(await journal.followLeaseRemainingMs(ref)).toBeGreaterThan(50_000);
          } else {
            expect(mark.leaseHeld).toBe(false);
            expect(holder).toBe(earlier);
          }
          if (claim && earlier !== token) {
            // The earlier holder, fenced out by the claim, can neither give the lease back nor renew it.
            expect(await journal.lease(ref, 'release', earlier)).toBe(false);
            expect(await journal.lease(ref, 'renew', earlier, 1_000)).toBe(false);
            expect(await journal.leaseHolder(ref)).toBe(token);
          }
        },
      ),
      { numRuns: 60, examples: [['gone-sender-gave-back', 30_000, true], ['follower', 5_000, true], ['follower', 5_000, false]] },
    );
  });
});
