/**
 * send queue: parses the job, then hands it to the delegation state machine:
 * the journaled message (`delegation/send.ts`), the journaled reply
 * (`delegation/reply.ts`) or a CancelTask (`delegation/cancel.ts`).
 */
import type { Job } from 'bullmq';
import { SendJobSchema, placeOfSendPriority } from '@durable-a2a/shared';
import { jobRunOf, type WorkerContext } from '../context.ts';
import { sendMessage, outgoingMessage } from '../delegation/runs/send.ts';
import { sendReply } from '../delegation/runs/reply.ts';
import { cancelTask } from '../delegation/runs/cancel.ts';
import { HANDLER_PREFIX } from '../delegation/runs/handler.ts';
import { readAttemptWithStep } from '../delegation/attempt-step.ts';

export const SEND_QUEUE = 'send';
export { SendJobSchema, outgoingMessage, HANDLER_PREFIX };

/** Processes one send job. Returns a short outcome for logs and tests. */
export async function processSend(job: Job, ctx: WorkerContext): Promise<string> {
  const data = SendJobSchema.parse(job.data);
  const ref = { workflowId: data.workflowId, delegationId: data.delegationId };
  // A message's send reads its step next (deadline, verifier): read with the record, in one round trip.
  const record = data.kind === 'message' ? await readAttemptWithStep(ctx, ref) : await ctx.journal.getDelegation(ref);
  if (!record) return 'missing';
  if (data.kind === 'reply') return sendReply(ctx, record, jobRunOf(job));
  if (data.kind === 'cancel') return cancelTask(ctx, record);
  const place = placeOfSendPriority(job.opts.priority);
  return sendMessage(ctx, record, place === undefined ? jobRunOf(job) : { ...jobRunOf(job), place });
}
