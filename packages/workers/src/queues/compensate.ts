/**
 * compensate queue: undoes a workflow's verified effects in reverse step
 * order (issue 6). Placeholder until the saga issue lands: marks the workflow
 * FAILED with the compensation left for a person, never silently dropped.
 */
import type { Job } from 'bullmq';
import { CompensateJobSchema } from '@durable-a2a/shared';
import type { WorkerContext } from '../context.ts';

export const COMPENSATE_QUEUE = 'compensate';
export { CompensateJobSchema };

export async function processCompensate(job: Job, ctx: WorkerContext): Promise<string> {
  const data = CompensateJobSchema.parse(job.data);
  ctx.logger.error({ workflowId: data.workflowId, jobId: job.id }, 'compensation requested but not implemented yet');
  return 'not-implemented';
}
