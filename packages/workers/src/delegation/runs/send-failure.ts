/**
 * What a failed or refused send does next (ownership, delivery and limits, docs/a2a-edge.md; V5; field case A31): the failure becomes an
 * observation (`io/send-errors.ts` sendFailureObservation: delivery, effect, limit) and `apply.ts` performs its row.
 * Here only the job mechanics: a retry rethrows the error for BullMQ, a permanent refusal throws UnrecoverableError.
 */
import { UnrecoverableError } from 'bullmq';
import { VersionNotSupportedError, isRetryable } from '@durable-a2a/a2a';
import { JournalError, type AgentInterfaceRef, type DelegationRecord, type RunMark } from '@durable-a2a/shared';
import type { JobRun, WorkerContext } from '../../context.ts';
import { apply } from '../apply.ts';
import { sendFailureObservation } from '../io/send-errors.ts';
import { unreachableBoundsOf } from '../attempt-step.ts';
import { pauseForRetryAfter } from './flow.ts';

type Log = WorkerContext['logger'];

/** Where a send failure happened: `afterMark` once the SendMessage may have left. */
export interface SendFailure {
  record: DelegationRecord;
  fence: number;
  error: unknown;
  log: Log;
  job: JobRun;
  afterMark: boolean;
  /** The run's own mark, once written (`markSending`): an unreachable agent clears it only while the row is as it left it. */
  mark?: RunMark;
}

/**
 * A failed send (ownership, delivery, limits; V5; field case A31), applied as an observation: before the mark nothing
 * left (BullMQ retries, or a permanent error ends the attempt FAILED); after it the agent may have our message, so an
 * answer is never read as "not created" unless it proves it: a refusal ends the attempt FAILED, an answer over a
 * limit goes to a person (it arrived: the work may be done), everything else goes to the reconciler's search.
 * Returns a short outcome; throws for a BullMQ retry (the error) or an unrecoverable error.
 */
export async function sendFailed(ctx: WorkerContext, failure: SendFailure): Promise<string> {
  const { record, error, log } = failure;
  if (error instanceof JournalError) {
    if (error.code === 'FENCE_LOST') {
      log.warn('another worker took this delegation over; stopping');
      return 'fence-lost';
    }
    if (error.code !== 'MAY_HAVE_SENT') throw error;
    await apply(ctx, record, { kind: 'send-in-doubt', reason: 'the journal refused a second send' }, { log });
    return 'may-have-sent';
  }
  // The agent asked every caller to wait (429/503 Retry-After, RetryInfo): the whole fleet pauses its sends to it.
  await pauseForRetryAfter(ctx, record.agentCardUrl, error, log);
  const nextInterface = failure.afterMark ? await interfaceAfterRefusal(ctx, record, error) : undefined;
  const bounds = isRetryable(error) ? await unreachableBoundsOf(ctx, record) : undefined;
  const observation = sendFailureObservation(error, failure.afterMark, failure.job, nextInterface, bounds, record.agentCardUrl);
  if (observation.kind !== 'send-failed') throw error;
  ctx.metrics.sendErrors.inc({ code: observation.error.code, agent: ctx.metrics.agentLabels.of(record.agentCardUrl) });
  const applied = await apply(ctx, record, observation, { fence: failure.fence, log, source: 'send', place: failure.job.place, ...(failure.mark ? { mark: failure.mark } : {}) });
  const detail = { err: error, code: observation.error.code, delivery: observation.delivery, effect: observation.effect };
  if (observation.unreachable) return unreachableOutcome(log, detail, applied.next, observation.afterMark);
  if (observation.addressRefused) {
    log.error(detail, `${observation.addressRefused.message}: the workflow waits for a person`);
    return 'address-refused';
  }
  if (applied.next === 'retry') {
    log.warn(detail, 'send failed; will retry');
    throw error;
  }
  if (applied.next === 'resend' && observation.nextInterface) {
    log.warn({ ...detail, next: observation.nextInterface }, 'the interface refused our protocol version; nothing was created: the same messageId goes to the next interface the card lists');
    return 'version-refused-next-interface';
  }
  if (observation.credentialsRefused) {
    log.warn(detail, applied.next === 'resend' ? 'the agent refused our credentials; nothing was created: resending the same messageId with fresh credentials' : 'the agent kept refusing our credentials; a person decides');
    return applied.next === 'resend' ? 'credentials-refused-resend' : 'credentials-refused';
  }
  if (observation.unacceptable?.limit && observation.afterMark) {
    log.warn({ ...detail, limit: observation.unacceptable.limit }, 'SendMessage answer over a limit: it arrived, so the work may be done; a person decides');
    return 'limit-exceeded';
  }
  if (observation.afterMark && observation.effect !== 'none') {
    log.warn(detail, 'SendMessage may have created work; the reconciler searches for our messageId');
    return observation.error.answer === 'error' ? 'error-answer' : observation.error.answer === 'unreadable' ? 'unreadable-answer' : 'no-answer';
  }
  log.warn({ ...detail, permanent: observation.permanent }, 'send failed; recording the step FAILED');
  if (observation.permanent) throw new UnrecoverableError(observation.error.message);
  return 'failed';
}

/** The log line and outcome of a try that found the agent unreachable (nothing sent): waiting, given up, or fenced out. */
function unreachableOutcome(log: Log, detail: Record<string, unknown>, next: string, afterMark: boolean): string {
  const where = afterMark ? 'SendMessage never left' : 'the Agent Card could not be fetched';
  if (next === 'send-later') {
    log.warn(detail, `the agent cannot be reached (${where}); nothing was sent: waiting for the next try`);
    return 'agent-unreachable';
  }
  if (next === 'nothing') return 'fence-lost';
  log.warn(detail, `the agent could not be reached within the attempt's bound (${where}); recording the step FAILED AGENT_UNREACHABLE`);
  return 'failed';
}

/**
 * P37: after an interface answered -32009 (our protocol version refused: nothing was created), the next interface
 * the card lists that we speak, read from the card the send used; undefined when there is none or the card fails.
 */
async function interfaceAfterRefusal(ctx: WorkerContext, record: DelegationRecord, error: unknown): Promise<AgentInterfaceRef | undefined> {
  if (!(error instanceof VersionNotSupportedError)) return undefined;
  const journaled = (await ctx.journal.getDelegation(record))?.agentInterface ?? record.agentInterface;
  if (!journaled) return undefined;
  return ctx.agents.interfaceAfter(record.agentCardUrl, journaled).catch(() => undefined);
}
