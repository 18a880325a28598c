/**
 * The suspects of a FINISHED row (tasks refused pushes showed holding our message, noted while the row was unfinished,
 * noteSuspect-1.lua): still read, before its workflow decides (settle.ts waits while any is pending), since evidence
 * that the agent holds our message twice is never dropped unread. A finished state never regresses, so a suspect
 * shown holding our message is not the task-read row's AMBIGUOUS: it is noted on the row beside its result
 * (`Journal.noteDuplicateTask`: `protocolError` DUPLICATE_TASK naming both tasks, an earlier protocol error kept, and a
 * `duplicate-task` entry in the workflow's history, shown in every view); a person hears of it by the `duplicate.task`
 * notification and `durable_a2a_duplicate_tasks_total` (`notify/duplicate-task.ts`). Suspects noted after the row
 * finished (a push naming another task, noteSuspect-1.lua) are read the same way. Suspects lost (not kept, or never
 * read to a conclusion) are told too: `duplicate.unchecked` and a `duplicate-unchecked` history entry.
 */
import { DEFAULT_JOB_OPTIONS, SUSPECT_READS_PER_JOB, enqueueReconcile, type DelegationRecord } from '@durable-a2a/shared';
import type { WorkerContext } from '../../context.ts';
import { afterSuspectReads, suspectRound, suspectsToRead, type SuspectRead } from '../core/policy.ts';
import { foreignHolder, messageOfOursIn } from '../core/search-row.ts';
import { readTask } from '../io/read.ts';
import { withReconcileSlot } from './reconcile-slot.ts';
import { notifyDuplicate } from '../../notify/duplicate-task.ts';

/**
 * Reads the pending suspects of the finished `record` bound to `boundTaskId` (undefined: it finished without a task of
 * ours, e.g. at its deadline or closed while held, so every suspect is read), `SUSPECT_READS_PER_JOB` a job (GetTask,
 * as for an unfinished row), notes each one holding our message (`noteDuplicateTask`), and ends the round in the
 * journal (`clearSuspects`: read ones removed, unread kept for another round, unreadable counted lost). Returns the
 * run's outcome when suspects are still pending (a later job reads them: the settle waits), else undefined (none left:
 * the caller settles the row).
 */
export async function readFinishedRowSuspects(ctx: WorkerContext, record: DelegationRecord, boundTaskId: string | undefined, log: WorkerContext['logger']): Promise<string | undefined> {
  const ref = { workflowId: record.workflowId, delegationId: record.delegationId };
  const { read: toRead, ours } = suspectsToRead(await ctx.journal.pendingSuspects(ref), undefined, boundTaskId, SUSPECT_READS_PER_JOB);
  const reads = new Map<string, SuspectRead>();
  // Nothing to read (only suspects lost): no slot taken from the agent's share.
  const read = toRead.length === 0 ? ('read' as const) : await withReconcileSlot(ctx, record, async () => {
    for (const suspect of toRead) reads.set(suspect, await readFinishedRowSuspect(ctx, record, suspect, log));
    return 'read' as const;
  });
  if (read === 'agent-share-full') {
    await enqueueReconcile(ctx.queues, ref, { suspect: undefined, at: ctx.options.now() + ctx.options.slotWaitMs, now: ctx.options.now() });
    return read;
  }
  const left = await ctx.journal.clearSuspects(ref, suspectRound(reads, ours), DEFAULT_JOB_OPTIONS.reconcile.attempts);
  const now = ctx.options.now();
  const after = afterSuspectReads(left, now, DEFAULT_JOB_OPTIONS.reconcile.backoff.delay);
  if (after.kind === 'read-again') {
    await enqueueReconcile(ctx.queues, ref, { suspect: undefined, at: after.at, now });
    return 'suspects-pending';
  }
  if (after.kind === 'person') await tellUnchecked(ctx, record, after.lost, log);
  return undefined;
}

/**
 * Evidence lost on a finished row (`lost` suspects not kept or never read to a conclusion): its state stands; a person
 * is told the agent may have done the work twice and it could not be checked (`Journal.noteSuspectsUnchecked`: a
 * `duplicate-unchecked` history entry; `duplicate.unchecked`; `durable_a2a_duplicate_tasks_total{finding="unchecked"}`),
 * once per lost count: a retried job writes and counts nothing again and emits the same event id.
 */
async function tellUnchecked(ctx: WorkerContext, record: DelegationRecord, lost: number, log: WorkerContext['logger']): Promise<void> {
  // An AMBIGUOUS attempt is a person's already (attention.needed; suspects lost while it ran made it so: suspects-unread).
  if (record.state === 'AMBIGUOUS') return;
  const noted = await ctx.journal.noteSuspectsUnchecked(record, lost);
  if (noted === 'noted') {
    ctx.metrics.duplicateTasks.inc({ agent: ctx.metrics.agentLabels.of(record.agentCardUrl), finding: 'unchecked' });
    log.warn({ lost, state: record.state }, 'tasks that may hold our message too could not be read after this attempt finished: a person is told (the agent may have done the work twice)');
  }
  // Also when noted before (a retried job after a crash between the note and this emit): the same event id.
  if (noted !== undefined) await notifyDuplicate(ctx, record, { kind: 'duplicate.unchecked', lost });
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
