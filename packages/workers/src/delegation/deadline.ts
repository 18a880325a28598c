/**
 * The attempt deadline (field case RT-deadline): every delegation attempt has an overall deadline,
 * `attemptDeadlineMs` after the attempt was journaled (`createdAt`); the step's own `attemptDeadlineMs` wins over
 * the fleet-wide default (`DA2A_ATTEMPT_DEADLINE_MS`, default 24 h). Past it, whatever the agent is doing (hanging
 * on the Agent Card, holding the send, streaming nothing), the `deadline-passed` row ends it: FAILED
 * `DEADLINE_EXCEEDED` (re-delegable) when no task of ours exists at the agent, AMBIGUOUS for a person when the agent
 * took our message (the work may have happened: never re-delegated blind).
 *
 * Checked by the reconciler on every sweep of an unfinished delegation, and by the send path before the Agent Card
 * fetch and before SendMessage; every agent call of a send is bounded by the time left. A send that may have
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
  if (isFinished(record.state) || record.held) return false;
  // A send that may have reached the agent is never abandoned blind: the reconciler's search decides.
  if (mayHaveReachedAgent(record)) return false;
  const deadlineAt = await attemptDeadlineAt(ctx, record);
  if (ctx.options.now() < deadlineAt) return false;
  log.warn({ deadlineAt, state: record.state }, 'attempt deadline exceeded; the step moves on');
  await apply(ctx, record, { kind: 'deadline-passed', deadlineAt }, { log });
  return true;
}
