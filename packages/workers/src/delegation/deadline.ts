/**
 * The attempt deadline (field case RT-deadline): every delegation attempt has an overall deadline,
 * `attemptDeadlineMs` after the attempt was journaled (`createdAt`); the step's own `attemptDeadlineMs` wins over
 * the fleet-wide default (`DA2A_ATTEMPT_DEADLINE_MS`, default 24 h). Past it, whatever the agent is doing (hanging
 * on the Agent Card, holding the send, streaming nothing), the `deadline-passed` row ends it: FAILED
 * `DEADLINE_EXCEEDED` (re-delegable) when no task of ours exists at the agent, AMBIGUOUS for a person when the agent
 * took our message (the work may have happened: never re-delegated blind), or when no task is bound but the row keeps
 * suspects (a refused push showed a task holding our message) or a refused result (deadline35).
 *
 * Checked by the reconciler on every sweep of an unfinished delegation, by the send path before the Agent Card
 * fetch and before SendMessage (every agent call of a send is bounded by the time left), and by every follow: before
 * it streams or polls (`checkAttemptDeadline`), and while its stream is open (a timer at the deadline closes the
 * stream and applies the row: `io/stream.ts`). A healthy stream's lease renewals keep the reconciler's next check
 * ahead of it, so the reconciler alone would never see a followed delegation past its deadline. A send that may have
 * reached the agent is not abandoned blind: the reconciler searches first (adopt / AMBIGUOUS), and a proven
 * absence past the deadline ends it (the search row). A held step (waiting for earlier steps) is never past it.
 */
import { isFinished, type DelegationRecord } from '@durable-a2a/shared';
import type { WorkerContext } from '../context.ts';
import { apply } from './apply.ts';
import { attemptDeadlineAt } from './attempt-step.ts';
import { mayHaveReachedAgent } from './core/policy.ts';

/**
 * Ends an unfinished, released attempt that is past its deadline (the `deadline-passed` observation).
 * @returns true when the attempt was past its deadline (the caller stops), false otherwise.
 */
export async function enforceAttemptDeadline(ctx: WorkerContext, record: DelegationRecord, log: WorkerContext['logger']): Promise<boolean> {
  return (await checkAttemptDeadline(ctx, record, log)) === 'passed';
}

/**
 * `enforceAttemptDeadline` for a caller that goes on watching the attempt (a follow: its stream closes at the deadline).
 * @returns 'passed' when the attempt was past its deadline and was ended; else its deadline (epoch ms), or undefined
 *   when none applies now (finished, held, or a send that may have reached the agent: the reconciler's search decides).
 */
export async function checkAttemptDeadline(ctx: WorkerContext, record: DelegationRecord, log: WorkerContext['logger']): Promise<'passed' | number | undefined> {
  if (isFinished(record.state) || record.held) return undefined;
  // A send that may have reached the agent is never abandoned blind: the reconciler's search decides.
  if (mayHaveReachedAgent(record)) return undefined;
  const deadlineAt = await attemptDeadlineAt(ctx, record);
  if (ctx.options.now() < deadlineAt) return deadlineAt;
  log.warn({ deadlineAt, state: record.state }, 'attempt deadline exceeded; the step moves on');
  await apply(ctx, record, { kind: 'deadline-passed', deadlineAt }, { log });
  return 'passed';
}
