/**
 * reconcile queue: parses the job, then runs the sweep (`delegation/sweep.ts`,
 * no ids), the sweep of dead workers' leases (`delegation/runs/liveness.ts`),
 * reconciles a batch of index entries (`delegation/reconcile-batch.ts`; a batch of workflow entries
 * only is moved to delayed while this process opens reattached streams, `batchWaitMs`),
 * or one delegation or workflow (`delegation/recover.ts`).
 */
import { DelayedError, type Job } from 'bullmq';
import { ReconcileJobSchema } from '@durable-a2a/shared';
import type { WorkerContext } from '../context.ts';
import { reconcileDelegation } from '../delegation/runs/reconcile.ts';
import { batchWaitMs, reconcileBatch } from '../delegation/runs/reconcile-batch.ts';
import { sweepDeadWorkers } from '../delegation/runs/liveness.ts';
import { sweep, SWEEP_SCHEDULER_ID } from '../delegation/runs/sweep.ts';

export const RECONCILE_QUEUE = 'reconcile';
export { ReconcileJobSchema, SWEEP_SCHEDULER_ID };

/** Processes a sweep (no ids), a dead-worker sweep (`deadWorkers`), a batch (`refs`) or one delegation. */
export async function processReconcile(job: Job, ctx: WorkerContext): Promise<string> {
  const data = ReconcileJobSchema.parse(job.data);
  if (data.deadWorkers) return sweepDeadWorkers(ctx, data.deadWorkers);
  if (data.refs) {
    // A batch of workflow entries waits while this process opens reattached streams (`batchWaitMs`): delayed, not held,
    // each wait counted in the job's data first (a crash between the two counts one wait too many: the bound only nears).
    const openingWaits = data.openingWaits ?? 0;
    const waitMs = batchWaitMs(ctx, data.refs, openingWaits);
    if (waitMs > 0) {
      await job.updateData({ ...job.data, openingWaits: openingWaits + 1 });
      await job.moveToDelayed(Date.now() + waitMs, job.token); // BullMQ measures delays on the real clock
      throw new DelayedError();
    }
    return reconcileBatch(ctx, data.refs, job.id, { afterLease: data.afterLease === true, holderDied: data.holderDied === true });
  }
  if (!data.workflowId || !data.delegationId) return sweep(ctx, data.all === true);
  return reconcileDelegation(ctx, { workflowId: data.workflowId, delegationId: data.delegationId }, job.id, { afterLease: data.afterLease === true, ...(data.suspectTaskId !== undefined ? { suspectTaskId: data.suspectTaskId } : {}) });
}
