/**
 * Workflow-level events: `attention.needed` (the workflow entered NEEDS_ATTENTION; occasion: the workflow version
 * the decision was made from, so each entry into NEEDS_ATTENTION is its own event) and `workflow.finished` (a
 * finished state; occasion: that state, reached once). Emitted by whoever wrote the state, after the write.
 */
import type { Attention, NotifyTarget, WorkflowState } from '@durable-a2a/shared';
import { emitNotification, type NotifyContext } from './emit.ts';

/** Emits `attention.needed` for a workflow that entered NEEDS_ATTENTION from `fromVersion`. Never rejects. */
export async function notifyAttentionNeeded(ctx: NotifyContext, workflowId: string, fromVersion: number, attention: Attention, known?: { notify?: NotifyTarget }): Promise<void> {
  const data = { code: attention.code, message: attention.message, ...(attention.delegationId ? { delegationId: attention.delegationId } : {}) };
  await emitNotification(ctx, { kind: 'attention.needed', workflowId, occasion: fromVersion, data }, known);
}

/**
 * Emits `workflow.finished` for a workflow that reached `state` (`failure`: the journaled reasons). Resolves true when
 * the event was enqueued, false without a receiver or when the enqueue failed (`emitNotification`). Never rejects.
 */
export async function notifyWorkflowFinished(ctx: NotifyContext, workflowId: string, state: WorkflowState, failure?: readonly string[], known?: { notify?: NotifyTarget }): Promise<boolean> {
  return emitNotification(ctx, { kind: 'workflow.finished', workflowId, occasion: state, data: { state, ...(failure?.length ? { failure: [...failure] } : {}) } }, known);
}
