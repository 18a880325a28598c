/** compensate queue: parses the job, then `workflow/compensation.ts` advances the undo chain by one step. */
import type { Job } from 'bullmq';
import { CompensateJobSchema } from '@durable-a2a/shared';
import type { WorkerContext } from '../context.ts';
import { advanceCompensation } from '../workflow/compensation.ts';

export const COMPENSATE_QUEUE = 'compensate';
export { CompensateJobSchema };
export type { CompensationHandler } from '../delegation/runs/handler.ts';

/** Processes one compensate job. */
export async function processCompensate(job: Job, ctx: WorkerContext): Promise<string> {
  const { workflowId } = CompensateJobSchema.parse(job.data);
  return advanceCompensation(ctx, workflowId, job.id);
}
