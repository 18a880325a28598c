/**
 * The reconciler's reads of a delegation's suspects: tasks refused pushes showed holding our message, pending in the
 * journal (noteSuspect-1.lua), read by GetTask a few a job before anything else (`reconcileSuspects`, from
 * `reconcile.ts`), each round ended in the journal in one script (clearSuspects-1.lua); the verdicts are pure
 * (`core/policy.ts` `suspectsToRead`, `suspectRound`, `afterSuspectReads`; the task-read and `suspects-unread` rows).
 */
import { randomUUID } from 'node:crypto';
import { DEFAULT_JOB_OPTIONS, SUSPECT_READS_PER_JOB, enqueueReconcile, isFinished, isSuspectReadJob, suspectReadJob, suspectsPending, type DelegationRecord, type SuspectRoundFields, type SuspectsLeft } from '@durable-a2a/shared';
import type { WorkerContext } from '../../context.ts';
import { afterSuspectReads, suspectReadTurn, suspectRound, suspectRoundClaimMs, suspectsToRead, type SuspectAsker, type SuspectRead } from '../core/policy.ts';
import { apply } from '../apply.ts';
import { readTask } from '../io/read.ts';
import { withReconcileSlot } from './reconcile-slot.ts';

/**
 * The suspects of a bound, unfinished row (tasks refused pushes showed holding our message): the pending ones and the
 * one the job names, `SUSPECT_READS_PER_JOB` at a time, oldest first (`readSuspects`), then what is left decides
 * (`afterSuspectReads`): a holder read is AMBIGUOUS (the task-read row); evidence lost (not kept, or never read to a
 * conclusion) is a person (`suspects-unread`); suspects still pending are read by a later job (the next second, or
 * after a backoff when reads failed). Whoever asks, a job reads only on its turn (`suspectReadTurn`): not while
 * another round is in flight (claimed in the row), and after failed rounds only the job the round's ender asked for
 * (`suspectReadJob`'s id); any other asks for the job due then and reads nothing. A job whose turn it is claims the
 * round in the row compare-and-set before its first GetTask (`claimRound`), so a job that looked at the row before the
 * claim, or before the last round's end was written, does not read too; the round's end releases the claim.
 * Returns the run's outcome when it ends here, else undefined (the reconcile goes on: lease, reattach).
 */
export async function reconcileSuspects(ctx: WorkerContext, record: DelegationRecord, boundTaskId: string, named: string | undefined, jobId: string | undefined, log: WorkerContext['logger']): Promise<string | undefined> {
  const ref = { workflowId: record.workflowId, delegationId: record.delegationId };
  const retryDelayMs = DEFAULT_JOB_OPTIONS.reconcile.backoff.delay;
  const asker = { jobId, scheduled: (at: number) => suspectReadJob(ref, at).id, lost: record.suspectsLost };
  const turn = suspectReadTurn(record, { ...asker, now: ctx.options.now() }, retryDelayMs);
  if (turn.kind === 'wait') {
    await enqueueReconcile(ctx.queues, ref, { suspect: named, at: turn.at, now: ctx.options.now() });
    return undefined;
  }
  if (!isSuspectReadJob(ref, jobId)) {
    // A check, lease, push or sweep reconcile: the suspects are read by the suspect read job of this second (one a
    // second), never here as well (before: a check read a suspect between two pushes' jobs, then the next job read it
    // again: more than one GetTask of it a second of pushes).
    await enqueueReconcile(ctx.queues, ref, { suspect: named, at: ctx.options.now(), now: ctx.options.now() });
    return undefined;
  }
  const { read: toRead, ours } = suspectsToRead(await ctx.journal.pendingSuspects(ref), named, boundTaskId, SUSPECT_READS_PER_JOB);
  let left = { pending: 0, lost: record.suspectsLost, rounds: 0 };
  let roundAt = ctx.options.now();
  if (toRead.length > 0) {
    const read = await withReconcileSlot(ctx, record, async () => {
      const claim = await claimRound(ctx, record, asker, retryDelayMs);
      if (claim === 'finished' || 'wait' in claim) return claim;
      // The pending ids as the claim found them (a round that ended meanwhile removed some).
      const claimed = suspectsToRead(await ctx.journal.pendingSuspects(ref), named, boundTaskId, SUSPECT_READS_PER_JOB);
      return readSuspects(ctx, record, claimed.read, claimed.ours, claim.token, log);
    });
    if (typeof read === 'object' && 'wait' in read) {
      // Another round is in flight, or ended since this job looked: its turn is later (or the ender's job's).
      await enqueueReconcile(ctx.queues, ref, { suspect: named, at: read.wait, now: ctx.options.now() });
      return undefined;
    }
    if (read === 'agent-share-full') {
      // None read: all still pending, and read by this job's successor.
      await enqueueReconcile(ctx.queues, ref, { suspect: named, at: ctx.options.now() + ctx.options.slotWaitMs, now: ctx.options.now() });
      return read;
    }
    if (read === 'several-holders') return read;
    // Finished meanwhile: whoever finished it routed it.
    if (read === 'finished') return 'settled';
    ({ left, at: roundAt } = read);
  } else if (ours.length > 0 || suspectsPending(record)) {
    left = await ctx.journal.clearSuspects(ref, { read: ours }, 1, roundAt);
  }
  const now = ctx.options.now();
  // From the time the round's script kept (`roundAt`): a tick asking for the next read computes the same time.
  const after = afterSuspectReads(left, roundAt, retryDelayMs);
  if (after.kind === 'person') {
    const current = await ctx.journal.getDelegation(ref);
    if (!current || isFinished(current.state)) return 'settled';
    const pending = await ctx.journal.pendingSuspects(ref);
    await apply(ctx, current, { kind: 'suspects-unread', lost: after.lost, pending }, { log, source: 'reconcile' });
    return 'suspects-unread';
  }
  if (after.kind === 'read-again') await enqueueReconcile(ctx.queues, ref, { suspect: undefined, at: after.at, now });
  return undefined;
}

/**
 * The task a refused push named, showing our message (`ReconcileCheck.suspectTaskId`): read from the agent (GetTask,
 * its own read path: the push body alone proves nothing) and applied as a read of another task (the task-read row,
 * call `push`): our message in its history is the agent holding it twice, a person with both ids (`several-holders`);
 * without it nothing is written (`suspect-not-holding`), as for a TaskNotFound (the agent's own word that no such task
 * holds it). A read that fails is no conclusion: a drop, HTTP 5xx or a timeout is read again later (`suspect-unread`),
 * an answer we cannot accept is evidence lost (`suspect-unreadable`): neither is cleared as "not holding".
 */
async function readSuspect(ctx: WorkerContext, record: DelegationRecord, suspectTaskId: string, log: WorkerContext['logger']): Promise<SuspectRead> {
  const observed = await readTask(ctx, record, { why: `a refused push showed our message in task ${suspectTaskId.slice(0, 128)}`, taskId: suspectTaskId, cycle: false, call: 'push', log });
  if (observed.kind === 'task-not-found') return 'suspect-not-holding';
  if (observed.kind !== 'task-read') {
    const retryable = observed.kind === 'read-failed' && observed.retryable;
    log.info({ suspectTaskId: suspectTaskId.slice(0, 128), observed: observed.kind }, retryable ? 'the task a refused push named could not be read; read again later' : 'the task a refused push named cannot be read; counted as evidence lost');
    return retryable ? 'suspect-unread' : 'suspect-unreadable';
  }
  const applied = await apply(ctx, record, observed, { log, source: 'reconcile' });
  return applied.next === 'nothing' ? 'suspect-not-holding' : 'several-holders';
}

/**
 * Reads `suspects` (`suspectsToRead`) one by one (`readSuspect`) until one shows our message (`several-holders`: the
 * row is AMBIGUOUS, nothing more to read), then ends the round in the journal (`Journal.clearSuspects`, compare-and-set:
 * a suspect pushed meanwhile stays): the ones read and `ours` removed, the unread kept for another round, the
 * unreadable counted lost, and the round's claim (`claim`, its token) released. Returns `several-holders`, `finished`
 * (the row finished meanwhile), or what is left and when the round ended (ms, as the journal keeps it).
 */
async function readSuspects(ctx: WorkerContext, record: DelegationRecord, suspects: readonly string[], ours: readonly string[], claim: string, log: WorkerContext['logger']): Promise<'several-holders' | 'finished' | { left: SuspectsLeft; at: number }> {
  let row: DelegationRecord = record;
  const reads = new Map<string, SuspectRead>();
  let outcome: 'several-holders' | 'finished' | undefined;
  let left: SuspectsLeft;
  let at = 0;
  try {
    const done = await readUntilDecided(
      suspects,
      async (suspect, index) => {
        if (index > 0) {
          // The row as it is now for the next read (a stream may have moved it meanwhile); finished: nothing to decide.
          const now = await ctx.journal.getDelegation(record);
          if (!now || isFinished(now.state)) {
            outcome = 'finished';
            return 'stop';
          }
          row = now;
        }
        return readSuspect(ctx, row, suspect, log);
      },
      reads,
    );
    if (done.decided) outcome = 'several-holders';
  } finally {
    // Also when a read threw (the journal, a bug): what was read to a conclusion is not read again.
    at = ctx.options.now();
    left = await ctx.journal.clearSuspects(record, suspectRound(reads, ours), DEFAULT_JOB_OPTIONS.reconcile.attempts, at, claim);
  }
  return outcome ?? { left, at };
}

/** How many times `claimRound` claims again after the row's round moved and the job's turn is still now. */
const CLAIM_TRIES = 3;

/**
 * Claims the round of suspect reads `record`'s fields showed to be this job's turn (`Journal.claimSuspectRound`,
 * compare-and-set on those fields), before its first GetTask. When the row's round moved since (another job claimed
 * it, or a round ended), the job's turn is decided again from the row as it is now (`suspectReadTurn`): claimed again
 * when still now (at most `CLAIM_TRIES` claims), else `wait` until when it is (a row still moving after them: the
 * next second). `finished` (default false): `record` is a finished row (finished-suspects.ts), claimed as it is.
 * Returns the claim's token, `wait` (ms), or `finished` (the row went, or finished meanwhile while read unfinished).
 */
export async function claimRound(ctx: WorkerContext, record: DelegationRecord, asker: Omit<SuspectAsker, 'now'>, retryDelayMs: number, finished = false): Promise<{ token: string } | { wait: number } | 'finished'> {
  const ref = { workflowId: record.workflowId, delegationId: record.delegationId };
  const durationMs = suspectRoundClaimMs(SUSPECT_READS_PER_JOB, ctx.options.requestTimeoutMs, ctx.agents.cardFetchTimeoutMs);
  let seen: SuspectRoundFields = record;
  for (let tries = 0; tries < CLAIM_TRIES; tries++) {
    const token = randomUUID();
    const now = ctx.options.now();
    const claim = await ctx.journal.claimSuspectRound(ref, { token, now, durationMs, seen, finished });
    if (claim.kind === 'claimed') return { token };
    if (claim.kind === 'finished') return 'finished';
    seen = claim.row;
    const turn = suspectReadTurn(seen, { ...asker, now }, retryDelayMs);
    if (turn.kind === 'wait') return { wait: turn.at };
  }
  return { wait: ctx.options.now() + 1_000 };
}

/**
 * Reads `suspects` in order with `readOne` (GetTask and the task-read row) until one decides the row (`several-holders`)
 * or `readOne` answers `stop` (the row finished meanwhile). Returns whether it decided and what each id read concluded
 * (to clear, keep or count lost in the pending suspects), also filled into `reads` as it goes (a caller whose read
 * throws still knows what was read): at most `suspects.length` calls.
 */
export async function readUntilDecided(
  suspects: readonly string[],
  readOne: (taskId: string, index: number) => Promise<SuspectRead | 'stop'>,
  reads = new Map<string, SuspectRead>(),
): Promise<{ decided: boolean; reads: Map<string, SuspectRead> }> {
  for (const [index, suspect] of suspects.entries()) {
    const answer = await readOne(suspect, index);
    if (answer === 'stop') break;
    reads.set(suspect, answer);
    if (answer === 'several-holders') return { decided: true, reads };
  }
  return { decided: false, reads };
}
