/**
 * The post-transition router of the delegation state machine: after anything
 * changed a delegation (a send answer, a stream's end, a GetTask snapshot, a
 * search result, a push, a reply, a verifier finding, a local outcome), this
 * one function decides what happens next from the journal alone:
 *   finished          → settle (verify if declared, then the workflow decides)
 *   cancel requested  → CancelTask (at most once per reconcile interval)
 *   asking a question → park (no stream)
 *   otherwise         → follow (subscribe, after `delayMs`, backoff exponent `resubscription`;
 *                       at once in this process when it has a free local follow slot)
 * Nothing else decides whether a delegation is "finished enough".
 */
import { enqueueCancel, enqueueFollow, isFinished, type DelegationRecord, type DelegationRef, type FollowLease, type WorkflowAtFinish, type WorkflowFlags } from '@durable-a2a/shared';
import type { WorkerContext } from '../context.ts';
import { park, shouldPark } from './park.ts';
import { settle } from './settle.ts';

/** How `routeDelegation` re-follows a delegation that is still running. */
export interface RoutePlan {
  /** Consecutive resubscriptions without progress (backoff exponent). Default 0. */
  resubscription?: number;
  /** Delay before subscribing, in ms. Default 0. */
  delayMs?: number;
  /** False for the first subscription of new work (not rate-limited). Default true. */
  again?: boolean;
  /** False when the caller just sent CancelTask itself (no second cancel). Default true. */
  cancelIfRequested?: boolean;
  /** The record the caller just read (saves a read); default: read it now. */
  known?: DelegationRecord;
  /** The workflow's flags the caller's transition returned (saves the cancel check's read); default: read them. */
  workflow?: WorkflowFlags;
  /** The workflow as the transition that finished `known` read it (saves the settle's read); default: read it. */
  finishedWorkflow?: WorkflowAtFinish;
  /**
   * The follow lease the caller's transition took for a local follow (`StatusChange.endsLease` `handover`): passed
   * to that follow, or given back before anything else is done (a follow job, a cancel, a park would find it held).
   */
  followLease?: FollowLease;
}

/** What the router did. */
export type Route = 'missing' | 'finished' | 'canceling' | 'parked' | 'following' | 'resubscribing';

/** Routes a delegation after a transition (see the module header). */
export async function routeDelegation(ctx: WorkerContext, ref: DelegationRef, plan: RoutePlan = {}): Promise<Route> {
  const lease = plan.followLease;
  if (!lease) return routeOnce(ctx, ref, plan);
  let passedOn = false;
  try {
    return await routeOnce(ctx, ref, plan, () => (passedOn = true));
  } finally {
    if (!passedOn) await giveBack(ctx, ref, lease);
  }
}

/** Gives back a follow lease nobody will use (a failed release only lets it run out: `lockDurationMs`). */
async function giveBack(ctx: WorkerContext, ref: DelegationRef, lease: FollowLease | undefined): Promise<void> {
  if (lease) await ctx.journal.lease(ref, 'release', lease.token).catch(() => undefined);
}

/** `routeDelegation`'s decision; `leasePassedOn` is called when a local follow took `plan.followLease`. */
async function routeOnce(ctx: WorkerContext, ref: DelegationRef, plan: RoutePlan, leasePassedOn?: () => void): Promise<Route> {
  const { resubscription = 0, delayMs = 0, again = true, cancelIfRequested = true } = plan;
  // Every way but a local follow gives the handed-over lease back first (a settle, a cancel, a park, a follow job).
  const release = async () => {
    await giveBack(ctx, ref, plan.followLease);
    leasePassedOn?.();
  };
  const record = plan.known ?? (await ctx.journal.getDelegation(ref));
  if (!record) {
    await release();
    await ctx.journal.removeFromIndex(ref);
    return 'missing';
  }
  if (isFinished(record.state)) {
    await release();
    await settle(ctx, ref, record, plan.known ? plan.finishedWorkflow : undefined);
    return 'finished';
  }
  if (cancelIfRequested && record.kind === 'step' && record.taskId && (await cancelWanted(ctx, ref, plan.workflow))) {
    // Canceled while this task was being found or sent: CancelTask it now (at most once per interval).
    await release();
    await enqueueCancel(ctx.queues, ref, { by: 'late', at: ctx.options.now() });
    return 'canceling';
  }
  if (shouldPark(record)) {
    await release();
    await park(ctx, record);
    return 'parked';
  }
  const lease = plan.followLease;
  if (lease && delayMs === 0 && ctx.followHere?.({ workflowId: ref.workflowId, delegationId: ref.delegationId }, { resubscription, again, known: record, lease })) {
    leasePassedOn?.();
    return resubscription > 0 ? 'resubscribing' : 'following';
  }
  await release();
  await followLater(ctx, ref, resubscription, delayMs, again, record);
  return resubscription > 0 ? 'resubscribing' : 'following';
}

/**
 * Subscribes after `delayMs`; `again` for any but the first (rate-limited fleet-wide). Without delay the follow
 * runs in this process when it has a free local follow slot (`follow-local.ts`; `known`, the record just written or
 * read, saves its read), else (and after a delay) a follow job.
 */
export async function followLater(ctx: WorkerContext, ref: DelegationRef, resubscription: number, delayMs = 0, again = true, known?: DelegationRecord): Promise<void> {
  if (delayMs === 0 && ctx.followHere?.({ workflowId: ref.workflowId, delegationId: ref.delegationId }, { resubscription, again, ...(known ? { known } : {}) })) return;
  await enqueueFollow(ctx.queues, ref, { resubscription, again, delayMs, at: ctx.options.now() });
}

/**
 * True when the user canceled the (still running) workflow, or it is stopping after a step failed for
 * good, and no CancelTask went out for this delegation within the last reconcile interval.
 * Compensations are never canceled.
 */
async function cancelWanted(ctx: WorkerContext, ref: DelegationRef, known?: WorkflowFlags): Promise<boolean> {
  const workflow = known ?? (await ctx.journal.getWorkflow(ref.workflowId));
  if (!workflow || (!workflow.cancelRequested && !workflow.stopping) || workflow.state !== 'RUNNING') return false;
  return ctx.journal.markOnce(ref, 'cancel-sent', ctx.workerId, ctx.options.reconcileIntervalMs);
}
