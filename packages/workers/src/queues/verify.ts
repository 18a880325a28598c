/**
 * verify queue: runs a step's verifier (an independent read path, never the
 * same agent) after the step reaches any outcome: COMPLETED is a claim, FAILED
 * does not prove nothing happened. The finding (present / absent / unknown,
 * with evidence) is journaled once; a verifier that keeps failing is retried
 * with backoff and then recorded as unknown, which the workflow surfaces to a
 * person instead of guessing.
 */
import type { Job } from 'bullmq';
import { VerifyJobSchema, type DelegationView } from '@durable-a2a/shared';
import type { WorkerContext } from '../context.ts';
import { loadDefinition } from '../advance.ts';
import { settleDelegation } from '../settle.ts';

export const VERIFY_QUEUE = 'verify';
export { VerifyJobSchema };

/** The verifier a delegation declares: its step's, or its compensation's. */
export async function verifierOf(ctx: WorkerContext, delegation: DelegationView) {
  const definition = await loadDefinition(ctx, delegation.workflowId);
  const step = definition?.steps.find((candidate) => candidate.name === delegation.step);
  if (!step) return undefined;
  if (delegation.kind === 'step') return step.verifier;
  return step.compensation && 'verifier' in step.compensation ? step.compensation.verifier : undefined;
}

export async function processVerify(job: Job, ctx: WorkerContext): Promise<string> {
  const data = VerifyJobSchema.parse(job.data);
  const delegation = await ctx.journal.getDelegationView(data);
  if (!delegation) return 'missing';
  if (delegation.effect !== undefined) {
    await settleDelegation(ctx, data);
    return 'already-verified';
  }
  const reference = await verifierOf(ctx, delegation);
  const log = ctx.logger.child({ queue: 'verify', ...data, step: delegation.step, jobId: job.id, attempt: job.attemptsMade });
  let finding: { effect: 'present' | 'absent' | 'unknown'; evidence: unknown };
  const verifier = reference ? ctx.verifiers.get(reference.name) : undefined;
  if (!reference) finding = { effect: 'unknown', evidence: 'no verifier declared' };
  else if (!verifier) finding = { effect: 'unknown', evidence: `no verifier registered under the name ${reference.name}` };
  else {
    try {
      const original =
        delegation.kind === 'compensation'
          ? await ctx.journal.getDelegationView({ workflowId: delegation.workflowId, delegationId: delegation.delegationId.replace(/^undo\./, '') })
          : undefined;
      finding = await verifier.verify({ delegation, original, params: reference.params });
    } catch (error) {
      const lastAttempt = job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
      log.warn({ err: error, lastAttempt }, 'verifier failed');
      if (!lastAttempt) throw error;
      finding = { effect: 'unknown', evidence: { error: error instanceof Error ? error.message : String(error) } };
    }
  }
  ctx.crashPoint('verify.after-check', delegation.step);
  if (await ctx.journal.recordEffect(data, finding.effect, finding.evidence)) {
    ctx.metrics.verifications.inc({ effect: finding.effect });
    log.info({ effect: finding.effect, evidence: finding.evidence }, 'effect verified');
  }
  await settleDelegation(ctx, data);
  return finding.effect;
}
