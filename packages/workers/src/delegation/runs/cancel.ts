/**
 * Cancel (spec §3.1.5): CancelTask on a running task; a terminal task's outcome is read instead (a refusal such as
 * TaskNotCancelableError); a delegation never sent is closed locally as CANCELED; one that may have been sent is
 * found by the reconciler first. What the agent answers is an observation applied by `apply.ts` (TaskNotFound from
 * CancelTask or the GetTask after it, as the binding speaks it, is the `task-not-found` row, never a BullMQ retry
 * loop; a bare 404 or NOT_FOUND is an answer we cannot use: `readFailure`).
 */
import { A2AError, TaskNotFoundError, isRetryable } from '@durable-a2a/a2a';
import { isFinished, isParked, journalStateOf, type DelegationRecord } from '@durable-a2a/shared';
import type { WorkerContext } from '../../context.ts';
import { apply } from '../apply.ts';
import type { Observation } from '../core/observation.ts';
import { readFailure } from '../io/read.ts';
import { answerOf } from '../io/send-errors.ts';

/** How long the count of CancelTask answers that left the task waiting is kept (a day: far past any reconcile interval). */
const PARKED_ROUNDS_TTL_MS = 24 * 3600 * 1000;

/** The user canceled the workflow: CancelTask on a running task (see the module header). Returns a short outcome. */
export async function cancelTask(ctx: WorkerContext, record: DelegationRecord): Promise<string> {
  if (isFinished(record.state)) {
    await apply(ctx, record, { kind: 'row-checked' });
    return 'already-finished';
  }
  if (!record.taskId) {
    const applied = await apply(ctx, record, { kind: 'cancel-before-task', mayHaveSent: record.sendStartedAt !== undefined }, { source: 'cancel' });
    return applied.next === 'ask-reconciler' ? 'cancel-after-reconcile' : applied.next === 'settle' ? 'already-finished' : 'canceled-locally';
  }
  const observation = await cancelObservation(ctx, record);
  // A task still waiting for an answer after the agent answered the cancel: counted, so the row goes to a person
  // after a few rounds instead of CancelTask every reconcile interval for ever (the cancel-answered row). A round is
  // a reconcile round: answers within half an interval of a counted one (several cancel requests, a late cancel, a
  // stop, a retried job) are that round, not more (an agent that cancels asynchronously gets its rounds' time).
  if (observation.kind === 'cancel-answered' && observation.refused === undefined && isParked(journalStateOf(observation.task.status.state))) {
    if (await ctx.journal.markOnce(record, 'cancel-parked-round', ctx.workerId, Math.max(1, Math.floor(ctx.options.reconcileIntervalMs / 2)))) {
      observation.parkedRounds = await ctx.journal.countRound(record, 'cancel-parked', PARKED_ROUNDS_TTL_MS);
    }
  }
  const applied = await apply(ctx, record, observation, { source: 'cancel' });
  return applied.next === 'settle' ? 'cancel-finished' : 'cancel-sent';
}

/** CancelTask's answer (or, when refused, GetTask's) as an observation. Retryable failures are thrown (BullMQ retries). */
async function cancelObservation(ctx: WorkerContext, record: DelegationRecord): Promise<Observation> {
  const transport = await ctx.agents.transportFor(record);
  const ownership = (id: string) => (id === record.taskId ? ({ kind: 'proven', by: 'task-id' } as const) : ({ kind: 'disproven', reason: `CancelTask ${record.taskId} answered task ${id}` } as const));
  let refusal: string;
  let unreadable = false;
  try {
    const task = await transport.cancelTask({ id: record.taskId! });
    return { kind: 'cancel-answered', task, ownership: ownership(task.id) };
  } catch (error) {
    if (!(error instanceof A2AError) || isRetryable(error)) throw error;
    const refused = readFailure(error, 'cancel', 'CancelTask refused', false, ctx.logger);
    if (refused.kind === 'task-not-found') return refused;
    refusal = error.message;
    // An answer we could not read (a protocol error, an invalid answer we judged so, a not-found the binding does not
    // speak: `readFailure` says so) is no refusal we know of: it counts as not canceled all the same, worded as what we know.
    unreadable = answerOf(error) === 'unreadable' || error instanceof TaskNotFoundError;
  }
  try {
    const task = await transport.getTask({ id: record.taskId! });
    return { kind: 'cancel-answered', task, ownership: ownership(task.id), refused: refusal, ...(unreadable ? { unreadable } : {}) };
  } catch (error) {
    if (isRetryable(error)) throw error;
    return readFailure(error, 'cancel', 'GetTask after a refused CancelTask', false, ctx.logger);
  }
}
