/**
 * TaskNotFoundError for a task we once had. Agents with in-memory stores
 * forget tasks on restart, and replicas disagree (field case R13), so one
 * answer decides nothing: LOST only after `notFoundThreshold` answers spanning
 * `notFoundWindowMs`, and only if ListTasks does not show our message either.
 */
import { applyTask, isRetryable, type DelegationRecord } from '@durable-a2a/shared';
import type { WorkerContext } from '../context.ts';
import { findTaskByMessageId } from './search.ts';
import { routeDelegation } from './route.ts';

/** TaskNotFound for a task we had: LOST only after several answers over a window (R13). */
export async function handleTaskNotFound(ctx: WorkerContext, record: DelegationRecord, log: WorkerContext['logger']): Promise<string> {
  const ref = { workflowId: record.workflowId, delegationId: record.delegationId };
  const { count, firstNotFoundAt } = await ctx.journal.noteNotFound(ref);
  const windowPassed = ctx.options.now() - firstNotFoundAt >= ctx.options.notFoundWindowMs;
  if (count < ctx.options.notFoundThreshold || !windowPassed) {
    log.warn({ count }, 'task not found; asking again later');
    await ctx.journal.scheduleCheck(ref, ctx.options.now() + Math.ceil(ctx.options.notFoundWindowMs / ctx.options.notFoundThreshold));
    return 'not-found';
  }
  // Last check: is our message visible in ListTasks at all (R13)?
  try {
    const transport = await ctx.agents.transportFor(record);
    const search = await findTaskByMessageId(transport, record, { marginMs: ctx.options.searchMarginMs, maxListTasksCalls: ctx.options.maxListTasksCalls, now: ctx.options.now });
    if (search.kind === 'found' && search.task.id === record.taskId) {
      await applyTask(ctx.journal, ref, search.task, { snapshot: true });
      return 'found-again';
    }
  } catch (error) {
    if (!isRetryable(error)) log.warn({ err: error }, 'ListTasks check before LOST failed');
    else throw error;
  }
  await ctx.journal.applyStatus(ref, {
    mode: 'outcome',
    state: 'LOST',
    error: { code: 'TASK_LOST', message: `the agent denied task ${record.taskId} ${count} times over ${ctx.options.now() - firstNotFoundAt} ms`, retryable: false },
  });
  log.error({ count }, 'task LOST');
  await routeDelegation(ctx, ref);
  return 'lost';
}
