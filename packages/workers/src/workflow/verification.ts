/**
 * workflow/verification: runs a step's verifier (an independent read path, never the
 * same agent) after the step reaches any outcome: COMPLETED is a claim, FAILED
 * does not prove nothing happened. The finding (present / absent / unknown,
 * with evidence) is journaled once; a verifier that keeps failing is retried
 * with backoff and then recorded as unknown, which the workflow surfaces to a
 * person instead of guessing.
 */
import { declaredVerifier, delegationIdOf, type DelegationRef, type DelegationView } from '@durable-a2a/shared';
import type { JobRun, WorkerContext } from '../context.ts';
import { loadDefinition } from './advance.ts';
import { apply, applyToRef } from '../delegation/apply.ts';
import { provenUnsent } from '../delegation/core/policy.ts';

/** The verifier a delegation declares: its step's, or its compensation's. */
export async function verifierOf(ctx: WorkerContext, delegation: Pick<DelegationView, 'workflowId' | 'step' | 'kind'>) {
  const definition = await loadDefinition(ctx, delegation.workflowId);
  const step = definition?.steps.find((candidate) => candidate.name === delegation.step);
  return step ? declaredVerifier(step, delegation.kind) : undefined;
}

/** Verifies a finished delegation's effect once, journals the finding, then routes the delegation on. */
export async function verifyEffect(ctx: WorkerContext, data: DelegationRef, run: JobRun): Promise<string> {
  const delegation = await ctx.journal.getDelegationView(data);
  if (!delegation) return 'missing';
  if (delegation.effect !== undefined) {
    await applyToRef(ctx, data, { kind: 'row-checked' });
    return 'already-verified';
  }
  const reference = await verifierOf(ctx, delegation);
  const log = ctx.logger.child({ queue: 'verify', ...data, step: delegation.step, jobId: run.id, attempt: run.attemptsMade });
  let finding: { effect: 'present' | 'absent' | 'unknown'; evidence: unknown };
  const verifier = reference ? ctx.verifiers.get(reference.name) : undefined;
  // Our own journal proves it (`provenUnsent`): sendStartedAt is written before any message leaves, and no earlier
  // send of a row released for a resend may have left (an unknown verifier, a deadline or a refused card ended the
  // attempt first), so there is no effect to look for.
  if (provenUnsent(delegation)) finding = { effect: 'absent', evidence: 'nothing was sent (no sendStartedAt, no task id, no earlier send)' };
  else if (!reference) finding = { effect: 'unknown', evidence: 'no verifier declared' };
  else if (!verifier) finding = { effect: 'unknown', evidence: `no verifier registered under the name ${reference.name}` };
  else {
    try {
      const original =
        delegation.kind === 'compensation'
          ? await ctx.journal.getDelegationView({ workflowId: delegation.workflowId, delegationId: delegationIdOf('step', delegation.step, delegation.attempt) })
          : undefined;
      finding = await verifyWithin(ctx.options.verifyTimeoutMs, reference.name, (signal) => verifier.verify({ delegation, original, params: reference.params, signal }));
    } catch (error) {
      const lastAttempt = run.attemptsMade + 1 >= run.attempts;
      log.warn({ err: error, lastAttempt }, 'verifier failed');
      if (!lastAttempt) throw error;
      finding = { effect: 'unknown', evidence: { error: error instanceof Error ? error.message : String(error) } };
    }
  }
  ctx.crashPoint('verify.after-check', delegation.step);
  await apply(ctx, delegation, { kind: 'effect-verified', effect: finding.effect, evidence: finding.evidence }, { log, source: 'verify' });
  return finding.effect;
}

/**
 * `call` bounded by `timeoutMs` (the fleet's `verifyTimeoutMs`): past it, its signal is aborted and the bound rejects
 * (a failed verification: the verify job retries with backoff, then records `unknown`), whatever the call does later.
 * A verifier that never answers would otherwise hold its verify slot for ever, and `concurrency.verify` of them the
 * verification of every workflow (attack37).
 */
export async function verifyWithin<T>(timeoutMs: number, name: string, call: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      const error = new Error(`verifier ${name} did not answer within ${timeoutMs} ms (verifyTimeoutMs)`);
      controller.abort(error);
      reject(error);
    }, timeoutMs);
  });
  try {
    return await Promise.race([call(controller.signal), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
