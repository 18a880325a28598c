/**
 * Cancel (spec §3.1.5): CancelTask on a running task; a terminal task's outcome
 * is read instead; a delegation never sent is closed locally as CANCELED.
 */
import { A2AError, applyTask, isFinished, isRetryable, type DelegationRecord } from '@durable-a2a/shared';
import type { WorkerContext } from '../context.ts';
import { routeDelegation } from './route.ts';
import { isForeignAnswer } from './read.ts';
import { askReconciler } from './send.ts';

/**
 * The user canceled the workflow: CancelTask on a running task (spec §3.1.5).
 * A terminal task answers TaskNotCancelableError: its outcome is read instead.
 * A delegation never sent is closed locally as CANCELED.
 */
export async function cancelTask(ctx: WorkerContext, record: DelegationRecord): Promise<string> {
  const ref = { workflowId: record.workflowId, delegationId: record.delegationId };
  if (isFinished(record.state)) {
    await routeDelegation(ctx, ref, { known: record });
    return 'already-finished';
  }
  if (!record.taskId) {
    if (record.sendStartedAt !== undefined) {
      // It may have been sent: find it first, then cancel (the reconciler re-enqueues us via advance).
      await askReconciler(ctx, record);
      return 'cancel-after-reconcile';
    }
    await ctx.journal.applyStatus(ref, { expectedVersion: record.version, mode: 'outcome', state: 'CANCELED', error: { code: 'CANCELED_BEFORE_SEND', message: 'canceled before it was sent' } });
    await routeDelegation(ctx, ref);
    return 'canceled-locally';
  }
  const transport = await ctx.agents.transportFor(record);
  let task;
  try {
    task = await transport.cancelTask({ id: record.taskId });
  } catch (error) {
    if (!(error instanceof A2AError) || isRetryable(error)) throw error;
    task = await transport.getTask({ id: record.taskId });
  }
  if (await isForeignAnswer(ctx, record, task, 'CancelTask')) {
    await routeDelegation(ctx, ref, { cancelIfRequested: false });
    return 'cancel-answered-foreign';
  }
  await applyTask(ctx.journal, ref, task, { snapshot: true });
  // Keep following until the agent reports the cancellation (it may finish first); no second CancelTask.
  await routeDelegation(ctx, ref, { cancelIfRequested: false });
  return 'cancel-sent';
}
