/**
 * A workflow canceled on the workers' own account (a question that expired with `onExpiry: 'cancel'`), exactly as
 * a person's cancel (`producer.cancel`): the workflow journaled cancel-requested, CancelTask to each of its unfinished
 * attempts, then the decision (compensation of what was done, as for any cancel). A workflow already canceled, or
 * finished, is left as it is.
 */
import { JournalError, enqueueCancel, enqueueDecide, isFinished } from '@durable-a2a/shared';
import type { WorkerContext } from '../context.ts';

/**
 * Requests the cancellation of `workflowId` (see the module header); `why` goes to the log line.
 * @returns true when this call requested it, false when it was already requested or the workflow finished.
 * @throws what the journal throws (Redis down), never WRONG_STATE (a finished workflow) or VERSION_CONFLICT (read again,
 *   `CANCEL_REQUEST_ROUNDS` times; the expired question's row is checked again by the reconciler after that)
 */
export async function requestWorkflowCancel(ctx: WorkerContext, workflowId: string, why: string): Promise<boolean> {
  const request = await journalCancelRequest(ctx, workflowId);
  if (request === undefined) return false;
  for (const delegationId of await ctx.journal.delegationIds(workflowId)) {
    const attempt = await ctx.journal.getDelegation({ workflowId, delegationId });
    if (attempt && !isFinished(attempt.state)) await enqueueCancel(ctx.queues, { workflowId, delegationId }, { by: 'user', request });
  }
  await enqueueDecide(ctx.queues, workflowId, { by: 'cancel', at: ctx.options.now() });
  ctx.logger.warn({ workflowId, reason: why }, 'workflow canceled by the workers');
  return true;
}

/** Rounds of compare-and-set against other writers of the workflow row (a decision, a release) before giving up to the reconciler. */
const CANCEL_REQUEST_ROUNDS = 5;

/** Journals cancel-requested (compare-and-set on the version read): the request's version, or undefined (already requested, finished, or busy). */
async function journalCancelRequest(ctx: WorkerContext, workflowId: string): Promise<number | undefined> {
  for (let round = 0; round < CANCEL_REQUEST_ROUNDS; round++) {
    const workflow = await ctx.journal.getWorkflow(workflowId);
    if (!workflow || workflow.state !== 'RUNNING' || workflow.cancelRequested) return undefined;
    try {
      return await ctx.journal.updateWorkflow(workflowId, { cancelRequested: true }, workflow.version);
    } catch (error) {
      if (error instanceof JournalError && error.code === 'WRONG_STATE') return undefined;
      if (!(error instanceof JournalError && error.code === 'VERSION_CONFLICT')) throw error;
    }
  }
  return undefined;
}
