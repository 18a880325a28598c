/**
 * A step (or compensation) that declares a verifier this worker does not have is refused before
 * anything is sent: its effect could never be checked, so running it would leave an effect nobody
 * can verify (the step would run, then wait for a person). The producer cannot refuse it at
 * `startWorkflow`: verifiers are registered in the workers (`verifiers` option, DA2A_HTTP_VERIFIERS),
 * in other processes and possibly other releases, and a workflow may be started before they run.
 * The attempt is journaled FAILED with the permanent `VERIFIER_UNKNOWN` (delivery `not-sent`), so the
 * workflow fails the step with the reason (nothing to verify or undo for it: nothing was sent).
 */
import type { DelegationRecord } from '@durable-a2a/shared';
import type { WorkerContext } from '../context.ts';
import { declaredVerifier, stepOfAttempt } from './attempt-step.ts';
import { routeDelegation } from './route.ts';

/** The error code journaled on an attempt refused for an unknown verifier. */
export const VERIFIER_UNKNOWN = 'VERIFIER_UNKNOWN';

/**
 * Refuses an unsent attempt whose declared verifier is not registered in this worker.
 * @returns true when refused (the caller sends nothing), false when the verifier is known or none is declared.
 */
export async function refuseUnknownVerifier(ctx: WorkerContext, record: DelegationRecord, log: WorkerContext['logger']): Promise<boolean> {
  const step = await stepOfAttempt(ctx, record);
  if (step === 'unreadable' || !step) return false;
  const reference = declaredVerifier(step, record.kind);
  if (!reference || ctx.verifiers.has(reference.name)) return false;
  const message = `verifier ${reference.name} is not registered in the workers (verifiers option or DA2A_HTTP_VERIFIERS); nothing was sent`;
  const applied = await ctx.journal.applyStatus(record, {
    expectedVersion: record.version,
    mode: 'outcome',
    state: 'FAILED',
    error: { code: VERIFIER_UNKNOWN, message, retryable: false, delivery: 'not-sent' },
  });
  if (applied.applied) log.warn({ verifier: reference.name }, 'unknown verifier: attempt refused before sending');
  await routeDelegation(ctx, record);
  return true;
}
