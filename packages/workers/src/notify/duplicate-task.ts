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
 * Emits `duplicate.task` for the finished `record` whose message task `otherTaskId` holds too (`ours`: our task,
 * undefined when the attempt finished without one). Call it after the note was journaled (noted now or already).
 * Resolves true when the event was enqueued, false without a receiver or when the enqueue failed. Never rejects.
 */
export async function notifyDuplicateTask(ctx: NotifyContext, record: Pick<DelegationRecord, 'workflowId' | 'delegationId' | 'step' | 'state'>, ours: string | undefined, otherTaskId: string): Promise<boolean> {
  const data = { step: record.step, state: record.state, ...(ours !== undefined ? { taskId: ours.slice(0, 128) } : {}), otherTaskId: otherTaskId.slice(0, 128) };
  return emitNotification(ctx, { kind: 'duplicate.task', workflowId: record.workflowId, delegationId: record.delegationId, occasion: otherTaskId.slice(0, 128), data });
}

/**
 * Emits `duplicate.unchecked` for the finished `record` of which `lost` suspects could not be read (the row's
 * `suspectsLost`). Call it after the note was journaled (noted now or already). Resolves true when the event was
 * enqueued, false without a receiver or when the enqueue failed. Never rejects.
 */
export async function notifyDuplicateUnchecked(ctx: NotifyContext, record: Pick<DelegationRecord, 'workflowId' | 'delegationId' | 'step' | 'state' | 'taskId'>, lost: number): Promise<boolean> {
  const data = { step: record.step, state: record.state, ...(record.taskId !== undefined ? { taskId: record.taskId.slice(0, 128) } : {}), lost };
  return emitNotification(ctx, { kind: 'duplicate.unchecked', workflowId: record.workflowId, delegationId: record.delegationId, occasion: lost, data });
}
