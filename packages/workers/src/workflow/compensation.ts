/**
 * workflow/compensation: undoes a workflow's effects in reverse order. Each undo is
 * itself a journaled delegation (kind `compensation`, id `<step>.<attempt>.undo`, its own ids),
 * recovered by the same reconciler after a crash, sent once, and verified in
 * turn. One job advances the chain by one step: it is re-enqueued whenever a
 * compensation settles, so a crash anywhere resumes where the journal says.
 * A compensation that cannot succeed is surfaced (NEEDS_ATTENTION with state,
 * reason and evidence), never silently dropped.
 */
import { buildIntent, delegationIdOf, delegationSpan, enqueueSend, isUnsuccessful, needsUndo, type DelegationRecord, type Step } from '@durable-a2a/shared';
import type { WorkerContext } from '../context.ts';
import { loadWorkflow } from './advance.ts';
import { HANDLER_PREFIX } from '../delegation/handler.ts';

export type { CompensationHandler } from '../delegation/handler.ts';

/**
 * The attempts to undo, last done first: steps in reverse order, attempts in reverse order. `retryApproved`:
 * AMBIGUOUS attempts a person sent back (they count as without effect, as in `decide`).
 */
export function undoPlan(steps: Step[], records: DelegationRecord[], retryApproved: readonly string[] = []): { step: Step; original: DelegationRecord }[] {
  const plan: { step: Step; original: DelegationRecord }[] = [];
  for (const step of [...steps].reverse()) {
    const attempts = records.filter((record) => record.kind === 'step' && record.step === step.name).sort((a, b) => b.attempt - a.attempt);
    for (const original of attempts) {
      const view = { ...original, error: original.error, effect: original.effect, retryApproved: retryApproved.includes(original.delegationId) };
      if (needsUndo(view, step)) plan.push({ step, original });
    }
  }
  return plan;
}

/** The compensation journaled for a step attempt, found by its kind, step and attempt (never by its id's spelling). */
export function compensationOf(records: DelegationRecord[], original: DelegationRecord): DelegationRecord | undefined {
  return records.find((record) => record.kind === 'compensation' && record.step === original.step && record.attempt === original.attempt);
}

/**
 * Advances a COMPENSATING workflow's chain by one undo: starts the next one, waits for one in flight,
 * surfaces a failed one (NEEDS_ATTENTION), or marks the workflow COMPENSATED. Returns a short outcome.
 */
export async function advanceCompensation(ctx: WorkerContext, workflowId: string, jobId: string | undefined): Promise<string> {
  const loaded = await loadWorkflow(ctx, workflowId);
  if (!loaded || loaded.state !== 'COMPENSATING') return 'not-compensating';
  const log = ctx.logger.child({ queue: 'compensate', workflowId, jobId });
  for (const { step, original } of undoPlan(loaded.definition.steps, loaded.records, loaded.record.retryApproved)) {
    const compensation = step.compensation!;
    const existing = compensationOf(loaded.records, original);
    const delegationId = existing?.delegationId ?? delegationIdOf('compensation', step.name, original.attempt);
    if (!existing) {
      await startCompensation(ctx, loaded.version, step, original, log);
      return `started ${delegationId}`;
    }
    if (existing.state === 'COMPLETED') {
      const verified = 'verifier' in compensation && compensation.verifier;
      if (verified && existing.effect === undefined) return `verifying ${delegationId}`;
      if (verified && existing.effect !== 'absent') {
        return surface(ctx, workflowId, loaded.version, `${delegationId} completed but the effect of ${original.delegationId} is still ${existing.effect}`, existing, log);
      }
      continue; // undone; next one back
    }
    if (isUnsuccessful(existing.state) || existing.state === 'AMBIGUOUS') {
      ctx.metrics.compensations.inc({ outcome: 'failed' });
      return surface(ctx, workflowId, loaded.version, `${delegationId} ended ${existing.state}: ${existing.error?.message ?? 'no reason'}`, existing, log);
    }
    return `waiting ${delegationId}`; // in flight; its settle re-enqueues this job
  }
  await ctx.journal.updateWorkflow(workflowId, { state: 'COMPENSATED' }, loaded.version);
  await ctx.journal.removeFromIndex({ workflowId, delegationId: '*' });
  log.info('every effect compensated');
  return 'compensated';
}

/** Journals the compensation's intent (before any I/O), then sends it or runs its handler. */
async function startCompensation(ctx: WorkerContext, workflowVersion: number, step: Step, original: DelegationRecord, log: WorkerContext['logger']): Promise<void> {
  const compensation = step.compensation!;
  const metadata = {
    durableA2a: {
      workflowId: original.workflowId,
      compensates: { step: step.name, delegationId: original.delegationId, taskId: original.taskId, messageId: original.messageId, effect: original.effect ?? null },
    },
  };
  let agentCardUrl: string;
  let parts: { text: string }[] | DelegationRecord['message']['parts'];
  if ('handler' in compensation) {
    agentCardUrl = `${HANDLER_PREFIX}${compensation.handler}`;
    parts = [{ text: `handler ${compensation.handler}` }];
  } else {
    agentCardUrl = 'agent' in compensation && compensation.agent ? compensation.agent : await agentForSkill(ctx, compensation.skill!);
    parts = 'text' in compensation.message ? [{ text: compensation.message.text }] : compensation.message.parts;
  }
  const intent = buildIntent({
    workflowId: original.workflowId,
    step: step.name,
    attempt: original.attempt,
    kind: 'compensation',
    agentCardUrl,
    message: { parts, metadata: { ...('message' in compensation ? (compensation.message.metadata ?? {}) : {}), ...metadata } },
    now: ctx.options.now(),
  });
  const created = await ctx.journal.createIntent(original.workflowId, intent, { expectedWorkflowVersion: workflowVersion });
  ctx.crashPoint('compensate.after-intent', step.name);
  const ref = { workflowId: original.workflowId, delegationId: intent.delegationId! };
  if (!created) return;
  log.info({ compensation: ref.delegationId, original: original.delegationId }, 'compensation journaled');
  // A handler compensation goes through the send queue too: delegation/handler.ts runs it, journaled like a send.
  await delegationSpan({ ...ref, step: step.name, attempt: original.attempt, kind: 'compensation', agentCardUrl, messageId: intent.messageId }, () => enqueueSend(ctx.queues, ref, 0));
}

async function agentForSkill(ctx: WorkerContext, skill: string): Promise<string> {
  const [agent] = await ctx.registry.findBySkill(skill);
  if (!agent) throw new Error(`no registered agent has skill ${skill} for a compensation`);
  return agent.cardUrl;
}

async function surface(ctx: WorkerContext, workflowId: string, version: number, reason: string, record: DelegationRecord, log: WorkerContext['logger']): Promise<string> {
  const attention = { code: 'COMPENSATION_FAILED' as const, message: reason, delegationId: record.delegationId, evidence: { state: record.state, error: record.error, evidence: record.evidence } };
  await ctx.journal.updateWorkflow(workflowId, { state: 'NEEDS_ATTENTION', attention }, version);
  log.error({ reason, delegationId: record.delegationId }, 'compensation needs a person');
  return 'needs-attention';
}
