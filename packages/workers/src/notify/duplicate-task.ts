/**
 * `duplicate.task` (docs/people.md "Notifications"): another task of the agent holds our message, read after the
 * attempt finished (noteDuplicateTask-1.lua), so the agent may have done the work twice. The attempt's state and the
 * workflow's outcome stand; this event, the workflow history's `duplicate-task` entry (written by the same script)
 * and `durable_a2a_duplicate_tasks_total` are how a person hears of it. Occasion: the other task's id, so a
 * retried read emits the same event id.
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
