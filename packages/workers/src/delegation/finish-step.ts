/**
 * The one-step finish: a stream's terminal status for the only delegation of a one-step workflow (the producer's
 * `delegate`) and the settle that finishes the workflow, in one journal call (`Journal.finishStep`) instead of the
 * status change and then `settle` → `advanceWorkflow` → `finishWorkflow`. Decided before the call, from what this
 * process holds: the row the stream holds and the workflow row the send read (`AttemptSteps.rememberWorkflow`).
 * Only where the settle would do nothing but finish: a step (no compensation), no verifier, no push config, no
 * notification receiver (its `workflow.finished` is emitted before the workflow's index entry goes), one
 * server without replicas to wait for (`removesIndexWithFinish`), and a decision of 'complete' or 'fail' on the
 * attempt as the change leaves it. The journal refuses when a row moved since (another writer, a version bump):
 * then nothing was written and the status change ran alone, and `apply.ts` settles as before; else what is left of
 * the settle is `settle.ts` `afterOneStepFinish`.
 * Crash window 6 (between the outcome and the decision) does not exist on this path: both are one script. A crash
 * before it leaves the row unfinished in the index (the reconciler records it and settles, crash window 4); after
 * it, nothing is left to do.
 */
import { declaredVerifier, isFinished, type DelegationRecord, type JournalState, type OneStepFinish, type RecordedError } from '@durable-a2a/shared';
import type { WorkerContext } from '../context.ts';
import { decideWithoutRegistry, finishingPatch } from '../workflow/advance.ts';
import { keepsEntryUntilNotified } from '../notify/emit.ts';

/**
 * The finish to ask for with the terminal status `state` (recording `error`, `statusErrorOf`) of `record` (the row
 * the stream holds), or undefined (the two calls run). `artifactsShown`: artifacts the same call journals (a Task's
 * list, an artifact update before the status; 0 by default), counted into the decision as the row's `artifactCount`
 * will count them (an unsuccessful task carrying artifacts is effect unknown: never a plain FAILED finish, attack33a).
 * Takes the workflow row remembered for the attempt: a later settle of it reads the journal.
 */
export function oneStepFinish(ctx: WorkerContext, record: DelegationRecord, state: JournalState, error: RecordedError | undefined, artifactsShown = 0): OneStepFinish | undefined {
  if (!ctx.journal.removesIndexWithFinish || record.kind !== 'step' || record.push || !isFinished(state) || isFinished(record.state)) return undefined;
  const workflow = ctx.attemptSteps.takeWorkflow(record.messageId);
  if (!workflow || workflow.state !== 'RUNNING' || workflow.definition.steps.length !== 1) return undefined;
  const [step] = workflow.definition.steps;
  if (!step || step.name !== record.step || step.skill !== undefined || declaredVerifier(step, 'step') !== undefined) return undefined;
  // A workflow with a notification receiver keeps its `*` in the index until `workflow.finished` is emitted (the
  // outbox of `advance.ts`): the two calls run.
  if (keepsEntryUntilNotified(ctx, workflow.definition)) return undefined;
  const decision = decideWithoutRegistry(workflow, [{ ...record, state, artifactCount: record.artifactCount + artifactsShown, ...(error ? { error } : {}) }]);
  if (decision.kind !== 'complete' && decision.kind !== 'fail') return undefined;
  return { workflow, patch: finishingPatch(decision) };
}
