/**
 * `duplicate.task` (docs/people.md "Notifications"): another task of the agent holds our message, read after the
 * attempt finished (noteDuplicateTask-1.lua), so the agent may have done the work twice. `duplicate.unchecked`: tasks
 * that may hold it could not be read after the attempt finished (noteSuspectsUnchecked-1.lua), so it may have and it
 * could not be checked. The attempt's state and the workflow's outcome stand; these events, the workflow history's
 * `duplicate-task` / `duplicate-unchecked` entries (written by the same scripts) and `durable_a2a_duplicate_tasks_total`
 * are how a person hears of it. Occasions: the other task's id, the lost count, so a retried job emits the same event id.
 */
import type { DelegationRecord } from '@durable-a2a/shared';
import { emitNotification, type NotifyContext } from './emit.ts';

/**
 * What a read after the attempt finished found: another task holding our message (`duplicate.task`; `ours`: our task,
 * undefined when the attempt finished without one), or `lost` suspects that could not be read (`duplicate.unchecked`,
 * the row's `suspectsLost`; our task is the row's `taskId`).
 */
export type DuplicateFinding = { kind: 'duplicate.task'; ours: string | undefined; otherTaskId: string } | { kind: 'duplicate.unchecked'; lost: number };

/**
 * Emits the event of `finding` on the finished `record`. Call it after the note was journaled (noted now or already).
 * Resolves true when the event was enqueued, false without a receiver or when the enqueue failed. Never rejects.
 */
export async function notifyDuplicate(ctx: NotifyContext, record: Pick<DelegationRecord, 'workflowId' | 'delegationId' | 'step' | 'state' | 'taskId'>, finding: DuplicateFinding): Promise<boolean> {
  const task = finding.kind === 'duplicate.task' ? finding.ours : record.taskId;
  // The occasion (what makes it one event): the other task's id, or the lost count.
  const [occasion, fact] = finding.kind === 'duplicate.task' ? [finding.otherTaskId.slice(0, 128), { otherTaskId: finding.otherTaskId.slice(0, 128) }] : [finding.lost, { lost: finding.lost }];
  const data = { step: record.step, state: record.state, ...(task !== undefined ? { taskId: task.slice(0, 128) } : {}), ...fact };
  return emitNotification(ctx, { kind: finding.kind, workflowId: record.workflowId, delegationId: record.delegationId, occasion, data });
}
