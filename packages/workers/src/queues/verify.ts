/** verify queue: parses the job, then `workflow/verification.ts` checks the effect and journals the finding. */
import type { Job } from 'bullmq';
import { VerifyJobSchema } from '@durable-a2a/shared';
import { jobRunOf, type WorkerContext } from '../context.ts';
import { verifyEffect } from '../workflow/verification.ts';

export const VERIFY_QUEUE = 'verify';
export { VerifyJobSchema };

/** Processes one verify job. */
export async function processVerify(job: Job, ctx: WorkerContext): Promise<string> {
  const data = VerifyJobSchema.parse(job.data);
  return verifyEffect(ctx, { workflowId: data.workflowId, delegationId: data.delegationId }, jobRunOf(job));
}
