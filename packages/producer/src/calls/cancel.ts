/**
 * A person stopping or deciding: `cancel` (CancelTask to running tasks, compensation of verified
 * effects) and `resolve` (retry or abandon a workflow in NEEDS_ATTENTION). Both journal the request on
 * the workflow row first, then let the workers decide.
 */
import { JournalError, enqueueCancel, enqueueDecide, type AttentionCode } from '@durable-a2a/shared';
import { ResolutionNotAllowedError, WorkflowFinishedError, type ResolveAction } from '../errors.ts';
import { readView, type ProducerContext } from './context.ts';
import type { WorkflowView } from '../view.ts';

/**
 * `Producer.cancel`: marks the workflow cancel-requested, sends CancelTask to every unfinished attempt.
 * @throws NotFoundError, WorkflowFinishedError (already finished)
 */
export async function cancelWorkflow(context: ProducerContext, id: string): Promise<void> {
  const current = await readView(context, id);
  try {
    await context.journal.updateWorkflow(id, { cancelRequested: true });
  } catch (error) {
    if (error instanceof JournalError && error.code === 'WRONG_STATE') throw new WorkflowFinishedError(`workflow ${id} already finished (${current.state})`);
    throw error;
  }
  for (const step of current.steps) {
    for (const attempt of step.attempts) {
      if (!attempt.finished) {
        await enqueueCancel(context.queues, { workflowId: id, delegationId: attempt.delegationId }, { by: 'user' });
      }
    }
  }
  await enqueueDecide(context.queues, id, { by: 'cancel', at: Date.now() });
}

/**
 * What `resolve` can do per attention code. `retry` sends the AMBIGUOUS attempts again (new
 * messageId), so it means something only where the attention is about such an attempt; a cancel that
 * came too late, an effect nobody can verify or undo, or a failed compensation has nothing to send
 * again: only `abandon` (stop, undoing what can be undone) applies.
 */
export const RESOLVE_ACTIONS: Readonly<Record<AttentionCode, readonly ResolveAction[]>> = {
  AMBIGUOUS_SEND: ['retry', 'abandon'],
  NO_PROGRESS: ['retry', 'abandon'],
  PROTOCOL_ERROR: ['retry', 'abandon'],
  UNSPECIFIED: ['retry', 'abandon'],
  EFFECT_UNKNOWN: ['abandon'],
  EFFECT_WITHOUT_COMPENSATION: ['abandon'],
  COMPENSATION_FAILED: ['abandon'],
  CANCEL_LOST_RACE: ['abandon'],
};

/** The actions `resolve` accepts for `view` now: its attention code's, and `retry` only while an AMBIGUOUS attempt is there to send again. */
export function allowedResolveActions(view: WorkflowView): ResolveAction[] {
  const hasAmbiguous = view.steps.some((step) => step.attempts.some((attempt) => attempt.state === 'AMBIGUOUS'));
  return RESOLVE_ACTIONS[view.attention?.code ?? 'UNSPECIFIED'].filter((action) => action !== 'retry' || hasAmbiguous);
}

/**
 * `Producer.resolve`: a person's decision on a workflow in NEEDS_ATTENTION. `retry` approves every
 * AMBIGUOUS attempt for a new attempt; `abandon` stops the workflow, compensating what has an effect.
 * @throws NotFoundError, WorkflowFinishedError (not waiting for a person), ResolutionNotAllowedError
 *   (the action is not in RESOLVE_ACTIONS for the attention code, or `retry` with no AMBIGUOUS attempt:
 *   nothing is written, the answer never claims a change that did not happen)
 */
export async function resolveAttention(context: ProducerContext, id: string, action: ResolveAction): Promise<{ state: string }> {
  const { journal } = context;
  const current = await readView(context, id);
  if (current.state !== 'NEEDS_ATTENTION') throw new WorkflowFinishedError(`workflow ${id} is ${current.state}, not waiting for a person`);
  const ambiguous = current.steps.flatMap((step) => step.attempts).filter((attempt) => attempt.state === 'AMBIGUOUS').map((attempt) => attempt.delegationId);
  const attentionCode = current.attention?.code ?? 'UNSPECIFIED';
  const allowed = allowedResolveActions(current);
  if (!allowed.includes(action)) {
    const why = action === 'retry' && RESOLVE_ACTIONS[attentionCode].includes('retry') ? 'no AMBIGUOUS attempt to send again' : `nothing to send again for ${attentionCode}`;
    throw new ResolutionNotAllowedError(`workflow ${id} needs attention (${attentionCode}): ${action} is not possible (${why}); allowed: ${allowed.join(', ')}`, attentionCode, allowed);
  }
  const record = await journal.getWorkflow(id);
  const approved = [...new Set([...(record?.retryApproved ?? []), ...ambiguous])];
  // Abandoning stops the workflow as a person's decision: what can be undone is, the rest ends FAILED with
  // the reason (never CANCELED: the attempt the person looked at may have had an effect).
  const abandoned = [`abandoned by a person (${current.attention?.code ?? 'UNSPECIFIED'}): ${current.attention?.message ?? 'no reason recorded'}`];
  await journal.updateWorkflow(
    id,
    action === 'retry' ? { state: 'RUNNING', attention: null, retryApproved: approved } : { state: 'RUNNING', attention: null, cancelRequested: true, stopping: abandoned },
  );
  await journal.scheduleCheck({ workflowId: id, delegationId: '*' }, Date.now());
  await enqueueDecide(context.queues, id, { by: 'resolve', at: Date.now() });
  return { state: 'RUNNING' };
}
