/**
 * Workflow-level events: `attention.needed` (the workflow entered NEEDS_ATTENTION; occasion: the workflow version
 * the decision was made from, so each entry into NEEDS_ATTENTION is its own event) and `workflow.finished` (a
 * finished state; occasion: that state, reached once). Emitted by whoever wrote the state, after the write.
 */
import { boundedNotificationTexts, type Attention, type NotificationInput, type NotifyTarget, type WorkflowState } from '@durable-a2a/shared';
import { emitNotification, keepsEntryUntilNotified, notificationMissing, type NotifyContext } from './emit.ts';

/**
 * Emits `attention.needed` for a workflow that entered NEEDS_ATTENTION from `fromVersion`. Resolves true when the
 * event was enqueued, false without a receiver or when the enqueue failed. Never rejects.
 */
export async function notifyAttentionNeeded(ctx: NotifyContext, workflowId: string, fromVersion: number, attention: Attention, known?: { notify?: NotifyTarget }): Promise<boolean> {
  const [message] = boundedNotificationTexts([attention.message]);
  const data = { code: attention.code, message, ...(attention.delegationId ? { delegationId: attention.delegationId } : {}) };
  return emitNotification(ctx, { kind: 'attention.needed', workflowId, occasion: fromVersion, data }, known);
}

/**
 * Emits `attention.needed` for a workflow waiting in NEEDS_ATTENTION whose event was never journaled (the deciding
 * worker died, or its enqueue failed, after the write): read again by the reconciler. A row without the version its
 * attention was decided from (`fromVersion`, written before it existed) is left as it is. Resolves false only when
 * the event is still to be emitted (the read or the enqueue failed); never rejects.
 */
export async function emitAttentionIfMissing(ctx: NotifyContext, workflowId: string, workflow: { attention?: Attention; definition: { notify?: NotifyTarget } }): Promise<boolean> {
  const attention = workflow.attention;
  if (attention?.fromVersion === undefined) return true;
  const fromVersion = attention.fromVersion;
  return emitIfMissing(ctx, { kind: 'attention.needed', workflowId, occasion: fromVersion }, workflow.definition, () => notifyAttentionNeeded(ctx, workflowId, fromVersion, attention, workflow.definition));
}

/**
 * Emits `workflow.finished` for a finished workflow (`state`, `failure` as journaled) whose event was never journaled
 * (the finisher crashed, or lost the finishing write's reply, before its emit): read again by the reconciler, which
 * found its `*` kept (`keepsEntryUntilNotified`). Resolves false only when the event is still to be emitted; never
 * rejects.
 */
export async function emitFinishedIfMissing(ctx: NotifyContext, workflowId: string, workflow: { state: WorkflowState; failure?: readonly string[]; definition: { notify?: NotifyTarget } }): Promise<boolean> {
  if (!keepsEntryUntilNotified(ctx, workflow.definition)) return true;
  return emitIfMissing(ctx, { kind: 'workflow.finished', workflowId, occasion: workflow.state }, workflow.definition, () =>
    notifyWorkflowFinished(ctx, workflowId, workflow.state, workflow.failure, workflow.definition),
  );
}

/** `emit()` when the event of `input` was never journaled; true when nothing is left to emit, false when the read or the emit failed. */
async function emitIfMissing(ctx: NotifyContext, input: Pick<NotificationInput, 'kind' | 'workflowId' | 'occasion'>, known: { notify?: NotifyTarget }, emit: () => Promise<boolean>): Promise<boolean> {
  const missing = await notificationMissing(ctx, input, known).catch(() => undefined);
  if (missing === undefined) return false;
  return missing ? emit() : true;
}

/**
 * Emits `workflow.finished` for a workflow that reached `state` (`failure`: the journaled reasons). Resolves true when
 * the event was enqueued, false without a receiver or when the enqueue failed (`emitNotification`). Never rejects.
 */
export async function notifyWorkflowFinished(ctx: NotifyContext, workflowId: string, state: WorkflowState, failure?: readonly string[], known?: { notify?: NotifyTarget }): Promise<boolean> {
  return emitNotification(ctx, { kind: 'workflow.finished', workflowId, occasion: state, data: { state, ...(failure?.length ? { failure: boundedNotificationTexts(failure) } : {}) } }, known);
}
