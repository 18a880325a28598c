/**
 * follow queue: parses the job, then `delegation/follow.ts` follows the task.
 * The only BullMQ mechanics here: a job that must wait for its resubscription
 * slot is moved to delayed (once: `slotTaken`) instead of sleeping.
 */
import { DelayedError, type Job } from 'bullmq';
import { FollowJobSchema } from '@durable-a2a/shared';
import { jobRunOf, type WorkerContext } from '../context.ts';
import { followDelegation } from '../delegation/runs/follow.ts';

export const FOLLOW_QUEUE = 'follow';
export { FollowJobSchema };

/** Processes one follow job. */
export async function processFollow(job: Job, ctx: WorkerContext): Promise<string> {
  const data = FollowJobSchema.parse(job.data);
  return followDelegation(ctx, data, jobRunOf(job), async (waitMs) => {
    await job.updateData({ ...data, slotTaken: true });
    await job.moveToDelayed(Date.now() + waitMs, job.token); // BullMQ measures delays on the real clock
    throw new DelayedError();
  });
}
