/**
 * After a delegation reaches a finished state: verify it if its step declares
 * a verifier, then let the workflow decide (a compensation advances the
 * compensation chain instead), then drop it from the unfinished index. The
 * index entry is removed last, so a crash anywhere in between is picked up
 * again by the reconciler (crash windows 4 and 6); with journal durability
 * (WAIT) the removal also waits until the replicas hold every write of the
 * settle before it, so a failover cannot keep the removal and lose the
 * decision (a finished step under a workflow left RUNNING with no index
 * entry). The push config's one Delete comes first (`push-registration.ts`). Only `apply.ts` calls this.
 */
import { declaredVerifier, enqueueCompensate, enqueueReconcile, enqueueVerify, isFinished, suspectsPending, type DelegationRecord, type DelegationRef, type OneStepFinish, type WorkflowAtFinish } from '@durable-a2a/shared';
import type { WorkerContext } from '../context.ts';
import { advanceWorkflow, workflowFinished, type CloseHeldIntent } from '../workflow/advance.ts';
import { endPushConfig } from './push-registration.ts';
import { keepsEntryUntilNotified } from '../notify/emit.ts';

/**
 * Settles a finished delegation; does nothing for an unfinished one. `closeHeld`: the executor's port the workflow's
 * decision closes held intents through (apply.ts passes its own); `known`: the row as written; `knownWorkflow`: the
 * workflow as the transition that finished it read it (the decision is compare-and-set on its version).
 */
export async function settle(ctx: WorkerContext, ref: DelegationRef, closeHeld: CloseHeldIntent, known?: DelegationRecord, knownWorkflow?: WorkflowAtFinish): Promise<void> {
  const record = known ?? (await ctx.journal.getDelegation(ref));
  if (!record) {
    await ctx.journal.removeFromIndex(ref);
    return;
  }
  if (!isFinished(record.state)) return;
  // Tasks a refused push showed holding our message wait to be read (the row's `suspects`): the workflow decides only
  // after the reconciler read them (reconcile.ts `reconcileOne`, `readFinishedRowSuspects`), since its decision may
  // compact the row and drop them unread. The index entry stays meanwhile, so a lost job is picked up by the sweep.
  // Pending only (`suspectsPending`): evidence counted lost is never read again, so waiting on it would wait for ever;
  // the finished state stands and the reconciler's round says it for a person (finished-suspects.ts).
  if (suspectsPending(record)) {
    await enqueueReconcile(ctx.queues, ref, { suspect: undefined, at: ctx.options.now(), now: ctx.options.now() });
    return;
  }
  // The one Delete of our push config, before the workflow decides (a finishing decision may compact the row).
  await endPushConfig(ctx, record);
  const mark = ctx.journal.replicationMark();
  ctx.crashPoint('advance.after-outcome', record.step);
  // One read of the workflow row and its delegation ids together: the definition here, the row and the ids
  // for the decision (advanceWorkflow).
  const [workflow, delegationIds] = knownWorkflow
    ? [knownWorkflow.record, knownWorkflow.delegationIds]
    : await Promise.all([ctx.journal.getWorkflow(ref.workflowId), ctx.journal.delegationIds(ref.workflowId)]);
  const step = workflow?.definition.steps.find((candidate) => candidate.name === record.step);
  const verifier = step ? declaredVerifier(step, record.kind) : undefined;
  if (record.kind === 'compensation') {
    if (needsVerification(record, verifier !== undefined)) {
      await enqueueVerify(ctx.queues, ref, verifyOccasion(ctx));
      return;
    }
    await enqueueCompensate(ctx.queues, ref.workflowId, { settled: ref.delegationId, version: record.version });
    await dropFromIndex(ctx, ref, record, mark);
    return;
  }
  if (needsVerification(record, verifier !== undefined)) {
    await enqueueVerify(ctx.queues, ref, verifyOccasion(ctx));
    return;
  }
  // Without replicas to wait for, on one server, a decision that finishes the workflow drops this delegation's
  // entry and the workflow's `*` in its own script (after every write of the settle: still last).
  let droppedWithFinish: boolean | undefined;
  const finishDrops = ctx.journal.removesIndexWithFinish ? { entries: [ref], removed: (any: boolean) => (droppedWithFinish = any) } : undefined;
  const decision = await advanceWorkflow(ctx, ref.workflowId, closeHeld, { record: workflow, delegationIds, settled: [record], callerDropsWorkflowEntry: true, ...(finishDrops ? { finishDrops } : {}) });
  if (droppedWithFinish !== undefined) {
    if (droppedWithFinish) observeSettled(ctx, record);
    return;
  }
  // A decision that finished the workflow left its entry `*` to this ZREM, unless the workflow has a notification
  // receiver: then the decision dropped it once `workflow.finished` was emitted (the outbox, advance.ts).
  const finishedWorkflow = (decision.kind === 'complete' || decision.kind === 'fail') && (!workflow || !keepsEntryUntilNotified(ctx, workflow.definition));
  await dropFromIndex(ctx, ref, record, mark, finishedWorkflow ? [{ workflowId: ref.workflowId, delegationId: '*' }] : []);
}

/**
 * What is left of the settle once the one-step finish (`finish-step.ts`, one script with the terminal status) wrote its
 * finishing change: the delegation's duration (when its index entry was there: observed once), the workflow's count,
 * notification and log line (`workflowFinished`).
 */
export async function afterOneStepFinish(ctx: WorkerContext, record: DelegationRecord, finish: OneStepFinish, removedFromIndex: boolean): Promise<void> {
  if (removedFromIndex) observeSettled(ctx, record);
  await workflowFinished(ctx, record.workflowId, finish.patch, finish.workflow.definition);
}

/** The verify job's occasion: this reconcile interval (a later settle of a row still unverified is a job of its own). */
const verifyOccasion = (ctx: WorkerContext) => ({ bucket: Math.floor(ctx.options.now() / ctx.options.reconcileIntervalMs) });

/**
 * Last step of settling: drops the index entry, once the settle's writes since `mark` are on the replicas
 * (journal durability; nothing to wait for without it). The worker whose removal took it observes the
 * end-to-end duration (journaled intent → settled, seconds) once per delegation.
 */
async function dropFromIndex(ctx: WorkerContext, ref: DelegationRef, record: DelegationRecord, mark: number, others: DelegationRef[] = []): Promise<void> {
  await ctx.journal.awaitReplicas(ref.workflowId, mark);
  // Only this delegation's own entry decides the observation: a late second settle of a step settled before may
  // still find the workflow's `*` there (its decision finished the workflow) and must not observe the step again.
  const [taken] = await Promise.all([ctx.journal.removeFromIndex(ref), others.length > 0 ? ctx.journal.removeFromIndex(others[0]!, ...others.slice(1)) : undefined]);
  if (taken) observeSettled(ctx, record);
}

/** The end-to-end duration (journaled intent → settled, seconds), observed once per delegation: by the removal that took its entry. */
function observeSettled(ctx: WorkerContext, record: DelegationRecord): void {
  ctx.metrics.delegationDuration.observe({ state: record.state, agent: ctx.metrics.agentLabels.of(record.agentCardUrl) }, Math.max(0, ctx.options.now() - record.createdAt) / 1000);
}

/** A finished attempt is verified whatever the agent said, except when nothing was ever sent. */
function needsVerification(record: DelegationRecord, hasVerifier: boolean): boolean {
  if (!hasVerifier || record.effect !== undefined) return false;
  return record.state !== 'AMBIGUOUS';
}

