/**
 * A person stopping or deciding: `cancel` (CancelTask to running tasks, compensation of verified
 * effects) and `resolve` (retry or abandon a workflow in NEEDS_ATTENTION; the rules in shared's
 * `decide-resolution.ts`). Both journal the request on the workflow row first, then let the workers decide.
 */
import {
  ActorSchema,
  JournalError,
  RESOLVE_ACTIONS,
  allowedResolveActions as allowedFor,
  enqueueCancel,
  enqueueDecide,
  resolutionPatch,
  type ResolutionAttempt,
  type ResolutionWorkflow,
} from '@durable-a2a/shared';
import { ResolutionNotAllowedError, WorkflowFinishedError, type ResolveAction } from '../errors.ts';
import { parseInput, readView, type ProducerContext } from './context.ts';
import type { ActorOptions } from './reply.ts';
import type { WorkflowView } from '../view.ts';

/**
 * `Producer.cancel`: marks the workflow cancel-requested, sends CancelTask to every unfinished attempt. Every
 * call is a request of its own: a second cancel sends CancelTask again (the A2A spec makes a repeated
 * CancelTask harmless), even when the first one's job used all its attempts and failed. Each request is kept in the
 * workflow's history with `by` (who asked).
 * @throws NotFoundError, WorkflowFinishedError (already finished), ProducerInputError (`by` too long)
 */
export async function cancelWorkflow(context: ProducerContext, id: string, options: ActorOptions = {}): Promise<void> {
  const by = parseInput(ActorSchema.optional(), options.by);
  const current = await readView(context, id);
  // The version this request writes names it: each request's CancelTask jobs are its own (enqueueCancel).
  let request: number;
  try {
    request = await context.journal.updateWorkflow(id, { cancelRequested: true }, undefined, { kind: 'cancel', at: 0, ...(by ? { by } : {}) });
  } catch (error) {
    if (error instanceof JournalError && error.code === 'WRONG_STATE') throw new WorkflowFinishedError(`workflow ${id} already finished (${current.state})`);
    throw error;
  }
  for (const step of current.steps) {
    for (const attempt of step.attempts) {
      if (!attempt.finished) {
        await enqueueCancel(context.queues, { workflowId: id, delegationId: attempt.delegationId }, { by: 'user', request });
      }
    }
  }
  await enqueueDecide(context.queues, id, { by: 'cancel', at: Date.now() });
}

export { RESOLVE_ACTIONS };

/** The attempts of a view, steps' and compensations', as a resolution reads them. */
const attemptsOf = (view: WorkflowView): ResolutionAttempt[] =>
  view.steps.flatMap((step) => [...step.attempts, ...step.compensations]).map(({ delegationId, kind, state, effect }) => ({ delegationId, kind, state, effect }));

/**
 * The actions `resolve` accepts for `view` now (`allowedResolveActions` in shared): its attention code's, and
 * `retry` only while there is something to send again. `lists`: the workflow row's approved and abandoned
 * lists, when the caller read them.
 */
export function allowedResolveActions(view: WorkflowView, lists: Partial<Pick<ResolutionWorkflow, 'retryApproved' | 'abandonedCompensations'>> = {}): ResolveAction[] {
  return allowedFor({ attention: view.attention, ...lists }, attemptsOf(view));
}

/**
 * `Producer.resolve`: a person's decision on a workflow in NEEDS_ATTENTION, written compare-and-set
 * (`resolutionPatch`): it always ends or moves the workflow, never back to the same attention. `retry`
 * sends again (the AMBIGUOUS attempts, or the failed compensation) with a new messageId; `abandon` stops
 * the workflow: undo what can be undone (a failed compensation is given up, its effect left in place),
 * then FAILED with the reasons, never CANCELED.
 * @throws NotFoundError, WorkflowFinishedError (not waiting for a person, e.g. a second abandon),
 *   ResolutionNotAllowedError (the action is not in RESOLVE_ACTIONS for the attention code, or `retry`
 *   with nothing to send again: nothing is written, the answer never claims a change that did not happen)
 *   The decision is kept in the workflow's history with its attention code and `by`.
 */
export async function resolveAttention(context: ProducerContext, id: string, action: ResolveAction, options: ActorOptions = {}): Promise<{ state: string }> {
  const { journal } = context;
  const by = parseInput(ActorSchema.optional(), options.by);
  const ROUNDS = 4;
  for (let round = 1; round <= ROUNDS; round++) {
    const current = await readView(context, id);
    const record = await journal.getWorkflow(id);
    if (current.state !== 'NEEDS_ATTENTION' || record?.state !== 'NEEDS_ATTENTION') {
      throw new WorkflowFinishedError(`workflow ${id} is ${record?.state ?? current.state}, not waiting for a person`);
    }
    const workflow: ResolutionWorkflow = { ...record, attention: record.attention ?? current.attention };
    const attempts = attemptsOf(current);
    const attentionCode = workflow.attention?.code ?? 'UNSPECIFIED';
    const allowed = allowedFor(workflow, attempts);
    if (!allowed.includes(action)) {
      const why = RESOLVE_ACTIONS[attentionCode].includes(action)
        ? attentionCode === 'COMPENSATION_FAILED' ? 'no failed compensation named to send again' : 'no AMBIGUOUS attempt to send again'
        : `nothing to send again for ${attentionCode}`;
      throw new ResolutionNotAllowedError(`workflow ${id} needs attention (${attentionCode}): ${action} is not possible (${why}); allowed: ${allowed.join(', ')}`, attentionCode, allowed);
    }
    try {
      const history = { kind: 'resolution' as const, at: 0, action, code: attentionCode, ...(by ? { by } : {}) };
      await journal.updateWorkflow(id, resolutionPatch(workflow, attempts, action), record.version, history);
    } catch (error) {
      // Changed between the read and the write (a worker, or another person's decision): read again.
      if (error instanceof JournalError && error.code === 'VERSION_CONFLICT' && round < ROUNDS) continue;
      throw error;
    }
    await journal.addToIndex({ workflowId: id, delegationId: '*' }, Date.now());
    await enqueueDecide(context.queues, id, { by: 'resolve', at: Date.now() });
    return { state: 'RUNNING' };
  }
  throw new Error('unreachable: the last round rethrows');
}
