/**
 * reconcile queue: parses the job, then runs the sweep (`delegation/sweep.ts`,
 * no ids), the sweep of dead workers' leases (`delegation/runs/liveness.ts`),
 * reconciles a batch of index entries (`delegation/reconcile-batch.ts`),
 * or one delegation or workflow (`delegation/recover.ts`).
 */
import type { Job } from 'bullmq';
import { ReconcileJobSchema } from '@durable-a2a/shared';
import type { WorkerContext } from '../context.ts';
import { reconcileDelegation } from '../delegation/runs/reconcile.ts';
import { reconcileBatch } from '../delegation/runs/reconcile-batch.ts';
import { sweepDeadWorkers } from '../delegation/runs/liveness.ts';
import { sweep, SWEEP_SCHEDULER_ID } from '../delegation/runs/sweep.ts';

export const RECONCILE_QUEUE = 'reconcile';
export { ReconcileJobSchema, SWEEP_SCHEDULER_ID };

/** Processes a sweep (no ids), a dead-worker sweep (`deadWorkers`), a batch (`refs`) or one delegation. */
export async function processReconcile(job: Job, ctx: WorkerContext): Promise<string> {
  const data = ReconcileJobSchema.parse(job.data);
  if (data.deadWorkers) return sweepDeadWorkers(ctx, data.deadWorkers);
  if (data.refs) return reconcileBatch(ctx, data.refs, job.id, { afterLease: data.afterLease === true, holderDied: data.holderDied === true });
  if (!data.workflowId || !data.delegationId) return sweep(ctx, data.all === true);
  return reconcileDelegation(ctx, { workflowId: data.workflowId, delegationId: data.delegationId }, job.id, { afterLease: data.afterLease === true, ...(data.suspectTaskId !== undefined ? { suspectTaskId: data.suspectTaskId } : {}) });
}
