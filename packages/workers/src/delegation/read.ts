/**
 * One GetTask on terminal-subscribe or a dropped stream: a subscription
 * refused as terminal (-32004, -32001, an empty stream) or a stream that ended
 * early is read once, never looped; then `route.ts` settles, parks or
 * resubscribes with full-jitter backoff. TaskNotFound goes to `not-found.ts`.
 */
import { JournalError, TaskNotFoundError, applyTask, isRetryable, type DelegationRecord } from '@durable-a2a/shared';
import type { WorkerContext } from '../context.ts';
import { fullJitterDelayMs } from './backoff.ts';
import { handleTaskNotFound } from './not-found.ts';
import { followLater, routeDelegation } from './route.ts';

/** One GetTask, then: settle, park, or resubscribe with backoff. */
export async function readOnce(
  ctx: WorkerContext,
  record: DelegationRecord,
  fence: number,
  nextResubscription: number,
  log: WorkerContext['logger'],
): Promise<string> {
  const ref = { workflowId: record.workflowId, delegationId: record.delegationId };
  const delay = () => fullJitterDelayMs(nextResubscription, ctx.options.followBackoff);
  try {
    const transport = await ctx.agents.transportFor(record);
    const task = await transport.getTask({ id: record.taskId! });
    const applied = await applyTask(ctx.journal, ref, task, { fence, snapshot: true });
    if (applied.applied) ctx.metrics.transitions.inc({ state: task.status.state, source: 'get-task' });
  } catch (error) {
    if (error instanceof JournalError && error.code === 'FENCE_LOST') return 'fence-lost';
    // Possibly purged or an agent restart: decided over a window, never on one answer (R13).
    if (error instanceof TaskNotFoundError) return handleTaskNotFound(ctx, record, log);
    if (!isRetryable(error)) throw error;
    log.warn({ err: error }, 'GetTask failed; resubscribing later');
    await followLater(ctx, ref, nextResubscription, delay());
    return 'resubscribing';
  }
  return routeDelegation(ctx, ref, { resubscription: nextResubscription, delayMs: delay() });
}
