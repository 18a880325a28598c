/**
 * Emitting a notification (docs/people.md "Notifications"): one job add on the notify queue after the transition that
 * caused it, then the journal's `enqueued` mark. It never blocks or fails delegation work: the receiver is only
 * reached by the notify queue's own jobs (`deliver.ts`), and a failure to enqueue (Redis down) is logged and counted,
 * never thrown into the caller. The event's id is derived from its occasion (`notificationEventId`), so emitting the
 * same occasion again (a retried job, another worker) adds nothing new: the job id is the event id, and a delivered
 * event is journaled as such.
 */
import { enqueueNotification, notificationEventId, notificationEventOf, type NotificationInput, type NotifyTarget } from '@durable-a2a/shared';
import type { WorkerContext } from '../context.ts';

/** What emitting needs of the worker context. */
export type NotifyContext = Pick<WorkerContext, 'journal' | 'queues' | 'options' | 'logger' | 'metrics'>;

/**
 * The receiver of a workflow's events: its own `notify.url`, else the fleet-wide one; none without a signing secret.
 * `known`: the workflow's definition when the caller holds it (else one read).
 */
async function receiverOf(ctx: NotifyContext, workflowId: string, known?: { notify?: NotifyTarget }): Promise<string | undefined> {
  if (!ctx.options.notify.secret) return undefined;
  const definition = known ?? (await ctx.journal.getWorkflowDefinition(workflowId));
  return definition ? receiverOfDefinition(ctx, definition) : ctx.options.notify.url;
}

/**
 * The receiver of the events of a workflow whose definition is `definition`: its own `notify.url`, else the
 * fleet-wide one; undefined without a signing secret or a URL. No I/O.
 */
export function receiverOfDefinition(ctx: Pick<NotifyContext, 'options'>, definition: { notify?: NotifyTarget }): string | undefined {
  if (!ctx.options.notify.secret) return undefined;
  return definition.notify?.url ?? ctx.options.notify.url;
}

/**
 * True when a workflow of `definition` has a receiver, so its index entry `*` stays until `workflow.finished` is
 * enqueued (the outbox: a crash or a lost reply between the finishing write and the emit leaves the entry, and the
 * reconciler emits the event, `emitFinishedIfMissing`). The finishing paths (advance.ts, compensation.ts, settle.ts)
 * and the one-step finish (finish-step.ts, not taken then) all ask this.
 */
export function keepsEntryUntilNotified(ctx: Pick<NotifyContext, 'options'>, definition: { notify?: NotifyTarget }): boolean {
  return receiverOfDefinition(ctx, definition) !== undefined;
}

/**
 * Emits one notification event (see the module header). Call it after the transition it reports was written.
 * `known`: the workflow's definition if the caller has it. Resolves true when the event was enqueued (or was
 * already), false when the workflow has no receiver or the enqueue failed. Never rejects.
 */
export async function emitNotification(ctx: NotifyContext, input: NotificationInput, known?: { notify?: NotifyTarget }): Promise<boolean> {
  try {
    const url = await receiverOf(ctx, input.workflowId, known);
    if (!url) return false;
    const event = notificationEventOf(input, ctx.options.now());
    await enqueueNotification(ctx.queues, { event, url }, ctx.options.notify.retry);
    await ctx.journal.recordNotification(event.workflowId, event.id, 'enqueued', { kind: event.type });
    return true;
  } catch (error) {
    ctx.metrics.notifications.inc({ kind: input.kind, outcome: 'not-enqueued' });
    ctx.logger.warn({ err: error, workflowId: input.workflowId, delegationId: input.delegationId, kind: input.kind }, 'notification not enqueued');
    return false;
  }
}

/**
 * True when the event of `input` was never journaled (not enqueued yet, or it expired): a re-read of a row that
 * should have emitted it (a crash between the transition and the emit) emits it then. False without a receiver.
 * `known`: the workflow's definition if the caller has it (else one read).
 */
export async function notificationMissing(
  ctx: NotifyContext,
  input: Pick<NotificationInput, 'kind' | 'workflowId' | 'delegationId' | 'occasion'>,
  known?: { notify?: NotifyTarget },
): Promise<boolean> {
  if (!(await receiverOf(ctx, input.workflowId, known))) return false;
  return (await ctx.journal.notification(input.workflowId, notificationEventId(input))) === undefined;
}
