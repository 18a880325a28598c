/**
 * The reconciler's reads of a delegation's suspects: tasks refused pushes showed holding our message, pending in the
 * journal (noteSuspect-1.lua), read by GetTask a few a job before anything else (`reconcileSuspects`, from
 * `reconcile.ts`), each round ended in the journal in one script (clearSuspects-1.lua); the verdicts are pure
 * (`core/policy.ts` `suspectsToRead`, `suspectRound`, `afterSuspectReads`; the task-read and `suspects-unread` rows).
 */
import { DEFAULT_JOB_OPTIONS, SUSPECT_READS_PER_JOB, enqueueReconcile, isFinished, suspectReadJob, suspectsPending, type DelegationRecord, type SuspectsLeft } from '@durable-a2a/shared';
import type { WorkerContext } from '../../context.ts';
import { afterSuspectReads, suspectRetryAt, suspectRound, suspectsToRead, type SuspectRead } from '../core/policy.ts';
import { apply } from '../apply.ts';
import { readTask } from '../io/read.ts';
import { withReconcileSlot } from './reconcile-slot.ts';

/**
 * The suspects of a bound, unfinished row (tasks refused pushes showed holding our message): the pending ones and the
 * one the job names, `SUSPECT_READS_PER_JOB` at a time, oldest first (`readSuspects`), then what is left decides
 * (`afterSuspectReads`): a holder read is AMBIGUOUS (the task-read row); evidence lost (not kept, or never read to a
 * conclusion) is a person (`suspects-unread`); suspects still pending are read by a later job (the next second, or
 * after a backoff when reads failed). After such a round only the job the schedule names reads (`suspectRetryAt`:
 * the job the round's ender asked for, `suspectReadJob`'s id, run once at a time by BullMQ); any other job naming no
 * new suspect (a renewal tick's or a follow run's from an older round, a lease or sweep reconcile) asks for that job
 * (enqueued again if it ran and went) and reads nothing, so the agent is read on the schedule whoever asks.
 * Returns the run's outcome when it ends here, else undefined (the reconcile goes on: lease, reattach).
 */
export async function reconcileSuspects(ctx: WorkerContext, record: DelegationRecord, boundTaskId: string, named: string | undefined, jobId: string | undefined, log: WorkerContext['logger']): Promise<string | undefined> {
  const ref = { workflowId: record.workflowId, delegationId: record.delegationId };
  const retryDelayMs = DEFAULT_JOB_OPTIONS.reconcile.backoff.delay;
  const retryAt = named === undefined && record.suspectsLost === 0 ? suspectRetryAt(record, retryDelayMs) : undefined;
  if (retryAt !== undefined && jobId !== suspectReadJob(ref, retryAt).id) {
    await enqueueReconcile(ctx.queues, ref, { suspect: undefined, at: retryAt, now: ctx.options.now() });
    return undefined;
  }
  const { read: toRead, ours } = suspectsToRead(await ctx.journal.pendingSuspects(ref), named, boundTaskId, SUSPECT_READS_PER_JOB);
  let left = { pending: 0, lost: record.suspectsLost, rounds: 0 };
  let roundAt = ctx.options.now();
  if (toRead.length > 0) {
    const read = await withReconcileSlot(ctx, record, () => readSuspects(ctx, record, toRead, ours, log));
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
 * unreadable counted lost. Returns `several-holders`, `finished` (the row finished meanwhile), or what is left and
 * when the round ended (ms, as the journal keeps it).
 */
async function readSuspects(ctx: WorkerContext, record: DelegationRecord, suspects: readonly string[], ours: readonly string[], log: WorkerContext['logger']): Promise<'several-holders' | 'finished' | { left: SuspectsLeft; at: number }> {
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
    left = await ctx.journal.clearSuspects(record, suspectRound(reads, ours), DEFAULT_JOB_OPTIONS.reconcile.attempts, at);
  }
  return outcome ?? { left, at };
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
