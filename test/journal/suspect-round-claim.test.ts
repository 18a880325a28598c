/**
 * The schedule of suspect reads with concurrent askers (workers policy.ts `suspectReadTurn`, claimSuspectRound-1.lua,
 * clearSuspects-1.lua): jobs look at the row, decide their turn, claim the round compare-and-set on what they saw, read
 * (every read fails: the suspect answers 503) and end the round, or die holding the claim, or run again (a job
 * stalled under load, its id the same); any step of one job may come
 * between any two of another's, and time moves between them (a simulated clock, real Redis, real scripts).
 * Properties: a claim is never granted while another round's claim still holds (two jobs never read one round); no
 * job claims before the backoff of the last ended round (`suspectRetryAt`), whatever it saw when
 * it looked; and a dead claimer holds the reads back only until its claim's time: after it the job due then reads.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { DEFAULT_JOB_OPTIONS, Journal, SUSPECT_READS_PER_JOB, suspectReadJob, type DelegationRef, type SuspectRoundFields } from '@durable-a2a/shared';
import { suspectReadTurn, suspectRetryAt, suspectRoundClaimMs } from '../../packages/workers/src/delegation/core/policy.ts';
import { useRedisClient, useRedisServer } from '../harness/redis.ts';
import { intentRow } from '../harness/journal-rows.ts';

const redisServer = useRedisServer();
const redis = useRedisClient(redisServer);
const { attempts, backoff } = DEFAULT_JOB_OPTIONS.reconcile;
/** A claim's time as the workers reckon it, with a short request timeout (and card fetch) so runs cross it. */
const claimMs = suspectRoundClaimMs(2, 1_000, 1_000);
const T0 = 1_700_000_000_000;

let journal: Journal;
let counter = 0;
let ref: DelegationRef;

beforeEach(() => {
  journal = new Journal(redis(), { prefix: `claim${++counter}`, retentionMs: 60_000 });
});

type Step =
  | { kind: 'look'; job: number; scheduled: boolean; again: boolean }
  | { kind: 'claim'; job: number }
  | { kind: 'end'; job: number; dies: boolean }
  | { kind: 'wait'; ms: number };

const JOBS = 3;
const stepArb: fc.Arbitrary<Step> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('look' as const), job: fc.nat(JOBS - 1), scheduled: fc.boolean(), again: fc.nat(3).map((n) => n === 0) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('claim' as const), job: fc.nat(JOBS - 1) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('end' as const), job: fc.nat(JOBS - 1), dies: fc.nat(5).map((n) => n === 0) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('wait' as const), ms: fc.oneof(fc.integer({ min: 0, max: 400 }), fc.integer({ min: 400, max: 3_000 }), fc.constant(claimMs)) }) },
);

interface Job {
  /** What it saw and its id when it looked; `read` when its turn was now. */
  seen?: SuspectRoundFields;
  jobId?: string;
  read?: boolean;
  /** Its claim while it reads: the token, until when it holds, and whether another took it over after that. */
  reading?: { token: string; until: number; overtaken: boolean };
  dead?: boolean;
}

const roundOf = (row: SuspectRoundFields): SuspectRoundFields => ({
  suspectReadRounds: row.suspectReadRounds,
  suspectReadRoundAt: row.suspectReadRoundAt,
  suspectRoundBy: row.suspectRoundBy,
  suspectRoundUntil: row.suspectRoundUntil,
});

async function freshRow(): Promise<void> {
  ref = { workflowId: `wf${++counter}`, delegationId: 'main.1' };
  expect(await journal.createWorkflow(ref.workflowId, { state: 'RUNNING' }, intentRow(ref.workflowId))).toBe(true);
  expect(await journal.noteSuspect(ref, 'T2')).toBe('kept');
}

describe('suspect read rounds with concurrent claimers', () => {
  it('property: one live claim at a time; no claim before the backoff of the last round; a dead claim holds reads back only until its time', async () => {
    const seen = { claimed: 0, moved: 0, takenOver: 0, heldBack: 0 };
    await fc.assert(
      fc.asyncProperty(fc.array(stepArb, { minLength: 20, maxLength: 60 }), async (steps) => {
        await freshRow();
        let now = T0;
        let tokens = 0;
        const jobs: Job[] = Array.from({ length: JOBS }, () => ({}));
        const scheduled = (at: number) => suspectReadJob(ref, at).id;
        for (const step of steps) {
          if (step.kind === 'wait') {
            now += step.ms;
            continue;
          }
          const job = jobs[step.job]!;
          if (job.dead) continue;
          if (step.kind === 'look') {
            if (job.reading) continue;
            const row = (await journal.getDelegation(ref))!;
            const retryAt = suspectRetryAt(row, backoff.delay);
            // The job the ender asked for (the queue runs it no sooner than it is due), or another (a renewal tick's,
            // a follow run's, a lease or sweep reconcile, one that waited for a claim).
            const due = retryAt === undefined ? undefined : suspectReadJob(ref, retryAt);
            // `again`: the same job run again (stalled under load: BullMQ gives it to another worker), its id as before.
            const jobId = step.again && job.jobId !== undefined ? job.jobId : step.scheduled && due !== undefined && now >= due.dueAt ? due.id : `other-${now}`;
            const turn = suspectReadTurn(row, { jobId, scheduled, lost: row.suspectsLost, now }, backoff.delay);
            Object.assign(job, { seen: roundOf(row), jobId, read: turn.kind === 'read' });
            if (turn.kind === 'wait') seen.heldBack++;
          } else if (step.kind === 'claim') {
            if (!job.read || job.reading || !job.seen) continue;
            const before = (await journal.getDelegation(ref))!;
            const token = `t${++tokens}`;
            const claim = await journal.claimSuspectRound(ref, { token, now, durationMs: claimMs, seen: job.seen });
            if (claim.kind === 'moved') {
              seen.moved++;
              // As claimRound does: decide again from the row as the script found it.
              job.seen = claim.row;
              job.read = suspectReadTurn(claim.row, { jobId: job.jobId, scheduled, lost: before.suspectsLost, now }, backoff.delay).kind === 'read';
              continue;
            }
            expect(claim.kind).toBe('claimed');
            seen.claimed++;
            if (job.seen.suspectRoundBy !== undefined) seen.takenOver++;
            // Never while another round's claim holds.
            for (const other of jobs) if (other !== job && other.reading && !other.reading.overtaken) expect(other.reading.until, 'another claim still held').toBeLessThanOrEqual(now);
            // Never before the backoff of the last ended round (with suspects lost a person decides at once: not held).
            const retryAt = suspectRetryAt(before, backoff.delay);
            if (before.suspectsLost === 0 && retryAt !== undefined) expect(now, 'read before the backoff').toBeGreaterThanOrEqual(retryAt);
            // Expired claims taken over: their jobs, if alive, still end their rounds later (a late end).
            for (const other of jobs) if (other.reading) other.reading.overtaken = true;
            job.reading = { token, until: now + claimMs, overtaken: false };
            job.read = false;
          } else if (job.reading) {
            if (step.dies) {
              job.dead = true;
              continue;
            }
            await journal.clearSuspects(ref, { unread: ['T2'] }, attempts, now, job.reading.token);
            job.reading = undefined;
            job.read = false;
            // A suspect counted lost after its rounds: noted again, so the rounds go on.
            if ((await journal.pendingSuspects(ref)).length === 0) await journal.noteSuspect(ref, 'T2');
          }
        }
        // Liveness: whatever died holding a claim, once its time and any backoff passed, the job due then reads.
        now += claimMs + backoff.delay * 2 ** attempts;
        const row = (await journal.getDelegation(ref))!;
        const retryAt = suspectRetryAt(row, backoff.delay);
        const jobId = retryAt === undefined ? 'any' : scheduled(retryAt);
        expect(suspectReadTurn(row, { jobId, scheduled, lost: row.suspectsLost, now }, backoff.delay)).toEqual({ kind: 'read' });
        expect(await journal.claimSuspectRound(ref, { token: 'last', now, durationMs: claimMs, seen: roundOf(row) })).toEqual({ kind: 'claimed' });
      }),
      { numRuns: 150 },
    );
    // The runs crossed every path: claims granted, refused as moved, expired ones taken over, jobs held back.
    expect(Object.values(seen).every((count) => count > 0), JSON.stringify(seen)).toBe(true);
  }, 120_000);

  it('case: a job that looked before a round was claimed, and one that looked before it ended, both find it moved and do not read', async () => {
    await freshRow();
    const scheduled = (at: number) => suspectReadJob(ref, at).id;
    const stale = roundOf((await journal.getDelegation(ref))!);
    expect(await journal.claimSuspectRound(ref, { token: 'a', now: T0, durationMs: claimMs, seen: stale })).toEqual({ kind: 'claimed' });
    const inFlight = await journal.claimSuspectRound(ref, { token: 'b', now: T0 + 10, durationMs: claimMs, seen: stale });
    expect(inFlight).toEqual({ kind: 'moved', row: { suspectReadRounds: 0, suspectRoundBy: 'a', suspectRoundUntil: T0 + claimMs } });
    expect(suspectReadTurn((inFlight as { row: SuspectRoundFields }).row, { jobId: 'tick', scheduled, lost: 0, now: T0 + 10 }, backoff.delay)).toEqual({ kind: 'wait', at: T0 + claimMs });
    // The round ends (503): claim released, the round counted and timed; the stale view is refused again.
    expect(await journal.clearSuspects(ref, { unread: ['T2'] }, attempts, T0 + 50, 'a')).toEqual({ pending: 1, lost: 0, rounds: 1 });
    const ended = await journal.claimSuspectRound(ref, { token: 'c', now: T0 + 60, durationMs: claimMs, seen: stale });
    expect(ended).toEqual({ kind: 'moved', row: { suspectReadRounds: 1, suspectReadRoundAt: T0 + 50 } });
    expect(suspectReadTurn((ended as { row: SuspectRoundFields }).row, { jobId: 'tick', scheduled, lost: 0, now: T0 + 60 }, backoff.delay)).toEqual({ kind: 'wait', at: T0 + 50 + backoff.delay });
    // A release by a token that is not the claim's leaves the claim.
    const row = roundOf((await journal.getDelegation(ref))!);
    expect(await journal.claimSuspectRound(ref, { token: 'd', now: T0 + 50 + backoff.delay, durationMs: claimMs, seen: row })).toEqual({ kind: 'claimed' });
    await journal.clearSuspects(ref, { unread: ['T2'] }, attempts, T0 + 2_000, 'not-d');
    expect((await journal.getDelegation(ref))!).toMatchObject({ suspectRoundBy: 'd', suspectReadRounds: 2 });
  });

  it('a finished row: claimed only by a claimer that read it finished (finished-suspects.ts); a row gone: by none', async () => {
    await freshRow();
    await journal.applyStatus(ref, { mode: 'outcome', state: 'FAILED', error: { code: 'DEADLINE_EXCEEDED', message: 'ended' } });
    const seen = roundOf((await journal.getDelegation(ref))!);
    expect(await journal.claimSuspectRound(ref, { token: 'unfinished-reader', now: T0, durationMs: claimMs, seen })).toEqual({ kind: 'finished' });
    expect(await journal.claimSuspectRound(ref, { token: 'finished-reader', now: T0, durationMs: claimMs, seen, finished: true })).toEqual({ kind: 'claimed' });
    // The same compare-and-set: a second claimer while it holds finds it moved.
    expect(await journal.claimSuspectRound(ref, { token: 'another', now: T0 + 1, durationMs: claimMs, seen, finished: true })).toMatchObject({ kind: 'moved' });
    const gone = { workflowId: ref.workflowId, delegationId: 'gone.1' };
    expect(await journal.claimSuspectRound(gone, { token: 'x', now: T0, durationMs: claimMs, seen, finished: true })).toEqual({ kind: 'finished' });
  });

  /**
   * A round as long as it may last: an Agent Card fetch (a row without a journaled interface) and then every GetTask,
   * each up to the request timeout, then its journal calls. A second job that looks at the row while it is still in its
   * journal calls, the claim's time passed, would take the claim over and read the same round again (its end counted
   * twice: the suspect lost a round early). Before, the claim's time counted the GetTasks and the journal but no card.
   */
  const roundHeld = async (reads: number, requestTimeoutMs: number, card: number, getTasks: readonly number[], journalMs: number) => {
    await freshRow();
    const scheduled = (at: number) => suspectReadJob(ref, at).id;
    const durationMs = suspectRoundClaimMs(reads, requestTimeoutMs, requestTimeoutMs);
    expect(await journal.claimSuspectRound(ref, { token: 'first', now: T0, durationMs, seen: roundOf((await journal.getDelegation(ref))!) })).toEqual({ kind: 'claimed' });
    // The last instant of the round before its end is written.
    const now = T0 + card + getTasks.reduce((sum, ms) => sum + ms, 0) + journalMs;
    const row = roundOf((await journal.getDelegation(ref))!);
    const turn = suspectReadTurn(row, { jobId: 'tick', scheduled, lost: 0, now }, backoff.delay);
    const second = await journal.claimSuspectRound(ref, { token: 'second', now, durationMs, seen: row });
    return { turn, second };
  };

  it('case: a round whose card fetch and every GetTask took their whole timeout is still held in its journal calls (before: taken over by a second job)', async () => {
    const requestTimeoutMs = 30_000;
    const { turn, second } = await roundHeld(SUSPECT_READS_PER_JOB, requestTimeoutMs, requestTimeoutMs, Array.from({ length: SUSPECT_READS_PER_JOB }, () => requestTimeoutMs), 0);
    expect(turn.kind).toBe('wait');
    expect(second.kind).toBe('moved');
  });

  it('property: any round within its bounds (a card fetch or none, each GetTask up to the timeout, its journal calls under one more) is never claimed by a second job before its end', async () => {
    const rounds = fc.integer({ min: 1, max: SUSPECT_READS_PER_JOB }).chain((reads) =>
      fc.record({
        reads: fc.constant(reads),
        requestTimeoutMs: fc.integer({ min: 50, max: 60_000 }),
        card: fc.double({ min: 0, max: 1, noNaN: true }),
        getTasks: fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { minLength: reads, maxLength: reads }),
        journal: fc.double({ min: 0, max: 0.999, noNaN: true }),
      }),
    );
    await fc.assert(
      fc.asyncProperty(rounds, async ({ reads, requestTimeoutMs, card, getTasks, journal: journalShare }) => {
        const ms = (share: number) => Math.floor(share * requestTimeoutMs);
        const { turn, second } = await roundHeld(reads, requestTimeoutMs, ms(card), getTasks.map(ms), ms(journalShare));
        expect(turn.kind).toBe('wait');
        expect(second.kind).toBe('moved');
      }),
      { numRuns: 100, examples: [[{ reads: SUSPECT_READS_PER_JOB, requestTimeoutMs: 1_000, card: 1, getTasks: Array.from({ length: SUSPECT_READS_PER_JOB }, () => 1), journal: 0 }]] },
    );
  }, 120_000);
});
