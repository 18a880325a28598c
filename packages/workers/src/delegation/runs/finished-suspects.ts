/**
 * The suspects of a FINISHED row (tasks refused pushes showed holding our message, noted while the row was unfinished,
 * noteSuspect-1.lua): still read, before its workflow decides (settle.ts waits while any is pending), since evidence
 * that the agent holds our message twice is never dropped unread. A finished state never regresses, so a suspect
 * shown holding our message is not the task-read row's AMBIGUOUS: it is noted on the row beside its result
 * (`Journal.noteDuplicateTask`: `protocolError` DUPLICATE_TASK naming both tasks, an earlier protocol error kept, and a
 * `duplicate-task` entry in the workflow's history, shown in every view); a person hears of it by the `duplicate.task`
 * notification and `durable_a2a_duplicate_tasks_total` (`notify/duplicate-task.ts`). Suspects noted after the row
 * finished (a push naming another task, noteSuspect-1.lua) are read the same way. Suspects lost (not kept, or never
 * read to a conclusion) are told too: `duplicate.unchecked` and a `duplicate-unchecked` history entry. The reads keep
 * an unfinished row's schedule (`suspectReadTurn`, claimSuspectRound-1.lua): a round claimed in the row before its
 * first GetTask, and after a round that could not read some, nothing reads before its backoff, whoever reconciles
 * the row meanwhile (a push naming it, a sweep, the settle's own job).
 */
import { DEFAULT_JOB_OPTIONS, SUSPECT_READS_PER_JOB, enqueueReconcile, suspectReadJob, type DelegationRecord, type SuspectsLeft } from '@durable-a2a/shared';
import type { WorkerContext } from '../../context.ts';
import { afterSuspectReads, suspectReadTurn, suspectRound, suspectsToRead, type SuspectAsker, type SuspectRead } from '../core/policy.ts';
import { foreignHolder, messageOfOursIn } from '../core/search-row.ts';
import { readTask } from '../io/read.ts';
import { withReconcileSlot } from './reconcile-slot.ts';
import { claimRound } from './suspect-reads.ts';
import { notifyDuplicate } from '../../notify/duplicate-task.ts';
import { notificationMissing } from '../../notify/emit.ts';

/**
 * Reads the pending suspects of the finished `record` bound to `boundTaskId` (undefined: it finished without a task of
 * ours, e.g. at its deadline or closed while held, so every suspect is read), `SUSPECT_READS_PER_JOB` a job (GetTask,
 * as for an unfinished row), notes each one holding our message (`noteDuplicateTask`), and ends the round in the
 * journal (`clearSuspects`: read ones removed, unread kept for another round, unreadable counted lost). Only on the
 * job's turn (`suspectReadTurn`; `jobId`: the asking job's id): not while another round's claim holds, and after a
 * round that could not read some only the job its ender asked for, at the backoff's end; any other job asks for that
 * one and reads nothing. Lost suspects do not end the backoff here (a finished row's are told, not decided on: the
 * pending ones are still read on the schedule). Lost suspects not yet told are noted (`noteSuspectsUnchecked`); their
 * event is the caller's (`emitUncheckedIfMissing`). Returns the run's outcome when suspects are still pending (a later
 * job reads them: the settle waits) or the row went, else undefined (none left: the caller settles the row).
 */
export async function readFinishedRowSuspects(ctx: WorkerContext, record: DelegationRecord, boundTaskId: string | undefined, jobId: string | undefined, log: WorkerContext['logger']): Promise<string | undefined> {
  const ref = { workflowId: record.workflowId, delegationId: record.delegationId };
  const retryDelayMs = DEFAULT_JOB_OPTIONS.reconcile.backoff.delay;
  const asker: Omit<SuspectAsker, 'now'> = { jobId, scheduled: (at: number) => suspectReadJob(ref, at).id, lost: 0 };
  const later = async (at: number, outcome: string) => (await enqueueReconcile(ctx.queues, ref, { suspect: undefined, at, now: ctx.options.now() }), outcome);
  const { read: toRead, ours } = suspectsToRead(await ctx.journal.pendingSuspects(ref), undefined, boundTaskId, SUSPECT_READS_PER_JOB);
  let left: SuspectsLeft;
  let roundAt = ctx.options.now();
  if (toRead.length === 0) {
    // Nothing to read (only suspects lost, or our own task's id): no claim, no slot taken from the agent's share.
    left = await ctx.journal.clearSuspects(ref, { read: ours }, DEFAULT_JOB_OPTIONS.reconcile.attempts, roundAt);
  } else {
    const turn = suspectReadTurn(record, { ...asker, now: roundAt }, retryDelayMs);
    if (turn.kind === 'wait') return later(turn.at, 'suspects-pending');
    const read = await withReconcileSlot(ctx, record, async () => {
      const claim = await claimRound(ctx, record, asker, retryDelayMs, true);
      if (claim === 'finished' || 'wait' in claim) return claim;
      return readClaimedRound(ctx, record, boundTaskId, claim.token, log);
    });
    if (read === 'agent-share-full') return later(ctx.options.now() + ctx.options.slotWaitMs, read);
    if (read === 'finished') return 'expired';
    if ('wait' in read) return later(read.wait, 'suspects-pending');
    ({ left, at: roundAt } = read);
  }
  // From the time the round's script kept (`roundAt`): the job asked for is the one the row's schedule names.
  const after = afterSuspectReads(left, roundAt, retryDelayMs);
  if (after.kind === 'read-again') return later(after.at, 'suspects-pending');
  if (after.kind === 'person') await noteUnchecked(ctx, record, after.lost, log);
  return undefined;
}

/**
 * One claimed round (`claim`: its token) of a finished row's suspects: the pending ids as the claim found them (a
 * round that ended meanwhile removed some), each read (`readFinishedRowSuspect`), then the round ended in the journal
 * with the claim released, also when a read threw. Returns what is left and when the round ended (ms).
 */
async function readClaimedRound(ctx: WorkerContext, record: DelegationRecord, boundTaskId: string | undefined, claim: string, log: WorkerContext['logger']): Promise<{ left: SuspectsLeft; at: number }> {
  const ref = { workflowId: record.workflowId, delegationId: record.delegationId };
  const { read: toRead, ours } = suspectsToRead(await ctx.journal.pendingSuspects(ref), undefined, boundTaskId, SUSPECT_READS_PER_JOB);
  const reads = new Map<string, SuspectRead>();
  let at = 0;
  let left: SuspectsLeft;
  try {
    for (const suspect of toRead) reads.set(suspect, await readFinishedRowSuspect(ctx, record, suspect, log));
  } finally {
    at = ctx.options.now();
    left = await ctx.journal.clearSuspects(ref, suspectRound(reads, ours), DEFAULT_JOB_OPTIONS.reconcile.attempts, at, claim);
  }
  return { left, at };
}

/**
 * Evidence lost on a finished row (`lost` suspects not kept or never read to a conclusion): its state stands; a person
 * is told the agent may have done the work twice and it could not be checked (`Journal.noteSuspectsUnchecked`: a
 * `duplicate-unchecked` history entry, `suspectsLostTold`; `durable_a2a_duplicate_tasks_total{finding="unchecked"}`),
 * once per lost count: a retried job writes and counts nothing again. The `duplicate.unchecked` event is emitted by
 * `emitUncheckedIfMissing`, from the row as noted.
 */
async function noteUnchecked(ctx: WorkerContext, record: DelegationRecord, lost: number, log: WorkerContext['logger']): Promise<void> {
  // An AMBIGUOUS attempt is a person's already (attention.needed; suspects lost while it ran made it so: suspects-unread).
  if (record.state === 'AMBIGUOUS') return;
  const noted = await ctx.journal.noteSuspectsUnchecked(record, lost);
  if (noted === 'noted') {
    ctx.metrics.duplicateTasks.inc({ agent: ctx.metrics.agentLabels.of(record.agentCardUrl), finding: 'unchecked' });
    log.warn({ lost, state: record.state }, 'tasks that may hold our message too could not be read after this attempt finished: a person is told (the agent may have done the work twice)');
  }
}

/**
 * Emits `duplicate.unchecked` for the lost suspects a person was told of on the finished `record` (`suspectsLostTold`,
 * the event's occasion) when that event was never journaled: whoever noted them may have died, or failed to enqueue,
 * between the note and the emit, and the note is written once (a person told of this count is not noted again). The
 * event's id comes from its occasion, so an emit again adds the same job and receivers dedupe by id. Resolves true when
 * nothing is left to emit (none told, no receiver, journaled already, or enqueued now), false when the enqueue failed
 * (the caller comes back later). Rejects only when the journal cannot be read.
 */
export async function emitUncheckedIfMissing(ctx: WorkerContext, record: DelegationRecord): Promise<boolean> {
  const lost = record.suspectsLostTold;
  if (lost <= 0) return true;
  if (!(await notificationMissing(ctx, { kind: 'duplicate.unchecked', workflowId: record.workflowId, delegationId: record.delegationId, occasion: lost }))) return true;
  return notifyDuplicate(ctx, record, { kind: 'duplicate.unchecked', lost });
}

/**
 * One suspect of a finished row read by GetTask: holding our message (its history or status message, `foreignHolder`)
 * is noted on the row (`several-holders`), else as for an unfinished row: TaskNotFound or another message is
 * `suspect-not-holding`, a failed read `suspect-unread` (retryable) or `suspect-unreadable`.
 */
async function readFinishedRowSuspect(ctx: WorkerContext, record: DelegationRecord, suspectTaskId: string, log: WorkerContext['logger']): Promise<SuspectRead> {
  const observed = await readTask(ctx, record, { why: `a refused push showed our message in task ${suspectTaskId.slice(0, 128)} (read after this attempt finished)`, taskId: suspectTaskId, cycle: false, call: 'push', log });
  if (observed.kind === 'task-not-found') return 'suspect-not-holding';
  if (observed.kind !== 'task-read') return observed.kind === 'read-failed' && observed.retryable ? 'suspect-unread' : 'suspect-unreadable';
  // A row that finished without a task of ours: a task holding our message is the agent's only one for it (delivered:
  // the work may have happened although the row says otherwise), noted the same way.
  const taskIds = record.taskId === undefined ? (messageOfOursIn(record, observed.task) !== undefined ? ([undefined, observed.task.id] as const) : undefined) : foreignHolder(record, observed.task)?.taskIds;
  if (!taskIds) return 'suspect-not-holding';
  const noted = await ctx.journal.noteDuplicateTask(record, taskIds);
  if (noted === 'noted') {
    ctx.metrics.duplicateTasks.inc({ agent: ctx.metrics.agentLabels.of(record.agentCardUrl), finding: 'duplicate' });
    log.warn({ taskIds, state: record.state }, 'a task holds our message, read after this attempt finished: noted on the attempt (the agent may have done the work, twice if another task of ours holds it)');
  }
  // Also when noted before (a retried read after a crash between the note and this emit): the same event id.
  if (noted !== undefined) await notifyDuplicate(ctx, record, { kind: 'duplicate.task', ours: taskIds[0], otherTaskId: taskIds[1] });
  return 'several-holders';
}
