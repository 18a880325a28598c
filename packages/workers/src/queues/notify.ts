/** notify queue: parses the job, then `notify/deliver.ts` signs, POSTs and journals one notification event. */
import type { Job } from 'bullmq';
import { NotifyJobSchema } from '@durable-a2a/shared';
import { jobRunOf, type WorkerContext } from '../context.ts';
import { deliverNotification } from '../notify/deliver.ts';

export const NOTIFY_QUEUE = 'notify';
export { NotifyJobSchema };

/** Processes one notify job. */
export async function processNotify(job: Job, ctx: WorkerContext): Promise<string> {
  return deliverNotification(ctx, NotifyJobSchema.parse(job.data), jobRunOf(job));
}
