/**
 * A step (or compensation) that declares a verifier this worker does not have is refused before anything is sent
 * (the `verifier-missing` row): its effect could never be checked, so running it would leave an effect nobody can
 * verify. The producer cannot refuse it at `startWorkflow`: verifiers are registered in the workers (`verifiers`
 * option, DA2A_HTTP_VERIFIERS), in other processes and possibly other releases. The attempt is journaled FAILED
 * `VERIFIER_UNKNOWN` (delivery `not-sent`), so the workflow fails the step with the reason.
 */
import { declaredVerifier, type DelegationRecord } from '@durable-a2a/shared';
import type { WorkerContext } from '../context.ts';
import { apply } from './apply.ts';
import { stepOfAttempt } from './attempt-step.ts';

/**
 * Refuses an unsent attempt whose declared verifier is not registered in this worker.
 * @returns true when refused (the caller sends nothing), false when the verifier is known or none is declared.
 */
export async function refuseUnknownVerifier(ctx: WorkerContext, record: DelegationRecord, log: WorkerContext['logger']): Promise<boolean> {
  const step = await stepOfAttempt(ctx, record);
  if (step === 'unreadable' || !step) return false;
  const reference = declaredVerifier(step, record.kind);
  if (!reference || ctx.verifiers.has(reference.name)) return false;
  log.warn({ verifier: reference.name }, 'unknown verifier: attempt refused before sending');
  await apply(ctx, record, { kind: 'verifier-missing', verifier: reference.name }, { log });
  return true;
}
