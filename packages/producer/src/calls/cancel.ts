/**
 * A person stopping or deciding: `cancel` (CancelTask to running tasks, compensation of verified
 * effects) and `resolve` (retry or abandon a workflow in NEEDS_ATTENTION). Both journal the request on
 * the workflow row first, then let the workers decide.
 */
import { JournalError, enqueueCancel, enqueueDecide } from '@durable-a2a/shared';
import { WorkflowFinishedError } from '../errors.ts';
import { readView, type ProducerContext } from './context.ts';

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
 * `Producer.resolve`: a person's decision on a workflow in NEEDS_ATTENTION. `retry` approves every
 * AMBIGUOUS attempt for a new attempt; `abandon` stops the workflow, compensating what has an effect.
 * @throws NotFoundError, WorkflowFinishedError (not waiting for a person)
 */
export async function resolveAttention(context: ProducerContext, id: string, action: 'retry' | 'abandon'): Promise<{ state: string }> {
  const { journal } = context;
  const current = await readView(context, id);
  if (current.state !== 'NEEDS_ATTENTION') throw new WorkflowFinishedError(`workflow ${id} is ${current.state}, not waiting for a person`);
  const ambiguous = current.steps.flatMap((step) => step.attempts).filter((attempt) => attempt.state === 'AMBIGUOUS').map((attempt) => attempt.delegationId);
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
