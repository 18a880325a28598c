/**
 * workflow/compensation: undoes a workflow's effects in reverse order. Each undo is
 * itself a journaled delegation (kind `compensation`, id `<step>.<attempt>.undo`, its own ids;
 * `.undo-<n>` when a person sent a failed one back), the chain's moves decided in `undo-chain.ts`,
 * recovered by the same reconciler after a crash, sent once, and verified in
 * turn. One job advances the chain by one step: it is re-enqueued whenever a
 * compensation settles, so a crash anywhere resumes where the journal says.
 * A compensation that cannot succeed is surfaced (NEEDS_ATTENTION with state,
 * reason and evidence), never silently dropped; one a person abandoned is skipped and named in the
 * workflow's failure (FAILED, its effect left in place).
 */
import { buildIntent, compensationAgentOf, delegationSpan, tenantOfWorkflowId, enqueueSend, type AgentTarget, type DelegationRecord, type HistoryEntryInput, type Step } from '@durable-a2a/shared';
import type { WorkerContext } from '../context.ts';
import { loadWorkflow } from './advance.ts';
import { HANDLER_PREFIX } from '../delegation/runs/handler.ts';
import { unassignedAgent } from '../delegation/unassigned.ts';
import { nextUndo } from './undo-chain.ts';
import { notifyAttentionNeeded, notifyWorkflowFinished } from '../notify/workflow.ts';
import { keepsEntryUntilNotified } from '../notify/emit.ts';

export type { CompensationHandler } from '../delegation/runs/handler.ts';
export { undoPlan, compensationOf, nextUndo } from './undo-chain.ts';

/**
 * Advances a COMPENSATING workflow's chain by one undo (`nextUndo`): starts the next one, waits for one in
 * flight, surfaces a failed one (NEEDS_ATTENTION), or ends the workflow: COMPENSATED, or FAILED when a
 * person left an effect in place (each named in `failure`). Returns a short outcome.
 */
export async function advanceCompensation(ctx: WorkerContext, workflowId: string, jobId: string | undefined): Promise<string> {
  const loaded = await loadWorkflow(ctx, workflowId);
  if (!loaded || loaded.state !== 'COMPENSATING') return 'not-compensating';
  const log = ctx.logger.child({ queue: 'compensate', workflowId, jobId });
  const move = nextUndo(loaded.definition.steps, loaded.records, loaded.record);
  switch (move.kind) {
    case 'start':
      await startCompensation(ctx, loaded.version, move, log);
      return `started ${move.delegationId}`;
    case 'verifying':
    case 'waiting':
      return `${move.kind} ${move.delegationId}`;
    case 'failed':
      ctx.metrics.compensations.inc({ outcome: 'failed' });
      return surface(ctx, workflowId, loaded.version, move.reason, move.record, log);
    case 'done':
      break;
  }
  let emitted: boolean;
  if (move.leftInPlace.length > 0) {
    const failure = [...(loaded.record.failure ?? []), ...move.leftInPlace];
    await ctx.journal.updateWorkflow(workflowId, { state: 'FAILED', failure }, loaded.version);
    ctx.metrics.workflowsFinished.inc({ state: 'FAILED' });
    emitted = await notifyWorkflowFinished(ctx, workflowId, 'FAILED', failure, loaded.definition);
    log.warn({ leftInPlace: move.leftInPlace }, 'compensation ended: effects a person chose to leave in place');
  } else {
    await ctx.journal.updateWorkflow(workflowId, { state: 'COMPENSATED' }, loaded.version);
    ctx.metrics.workflowsFinished.inc({ state: 'COMPENSATED' });
    emitted = await notifyWorkflowFinished(ctx, workflowId, 'COMPENSATED', loaded.record.failure, loaded.definition);
    log.info('every effect compensated');
  }
  // A workflow with a receiver keeps its `*` while `workflow.finished` is not enqueued: the reconciler emits it then.
  if (emitted || !keepsEntryUntilNotified(ctx, loaded.definition)) await ctx.journal.removeFromIndex({ workflowId, delegationId: '*' });
  return move.leftInPlace.length > 0 ? 'failed' : 'compensated';
}

/** Journals the compensation's intent (before any I/O), then sends it or runs its handler. */
async function startCompensation(
  ctx: WorkerContext,
  workflowVersion: number,
  { step, original, undoAttempt }: { step: Step; original: DelegationRecord; undoAttempt: number },
  log: WorkerContext['logger'],
): Promise<void> {
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
    agentCardUrl = await compensationAgent(ctx, compensation, original);
    parts = 'text' in compensation.message ? [{ text: compensation.message.text }] : compensation.message.parts;
  }
  const intent = buildIntent({
    workflowId: original.workflowId,
    step: step.name,
    attempt: original.attempt,
    kind: 'compensation',
    undoAttempt,
    agentCardUrl,
    message: { parts, metadata: { ...('message' in compensation ? (compensation.message.metadata ?? {}) : {}), ...metadata } },
    now: ctx.options.now(),
    priority: original.priority,
  });
  const history: HistoryEntryInput = { kind: 'compensation', at: ctx.options.now(), delegationId: intent.delegationId!, step: step.name, compensates: original.delegationId, agentCardUrl };
  const created = await ctx.journal.createIntent(original.workflowId, intent, { expectedWorkflowVersion: workflowVersion, history });
  ctx.crashPoint('compensate.after-intent', step.name);
  const ref = { workflowId: original.workflowId, delegationId: intent.delegationId! };
  if (!created) return;
  log.info({ compensation: ref.delegationId, original: original.delegationId }, 'compensation journaled');
  // A handler compensation goes through the send queue too: delegation/handler.ts runs it, journaled like a send.
  await delegationSpan({ ...ref, step: step.name, attempt: original.attempt, kind: 'compensation', agentCardUrl, messageId: intent.messageId }, () => enqueueSend(ctx.queues, ref, 0, undefined, 0, { priority: original.priority }));
}

/**
 * The compensation's agent (`compensationAgentOf`): its fixed agent; else the agent of the attempt it undoes when that
 * one is registered (for the workflow's tenant, or shared) with its skill and tags; else the first registered agent with
 * them; else none (`unassignedAgent`: the send path refuses it, FAILED `NO_AGENT`, and a person is asked).
 */
async function compensationAgent(ctx: WorkerContext, target: AgentTarget, original: DelegationRecord): Promise<string> {
  const agent = compensationAgentOf(target, original.agentCardUrl, target.skill ? await ctx.registry.list() : [], tenantOfWorkflowId(original.workflowId));
  return agent ?? unassignedAgent(target.skill ?? '');
}

async function surface(ctx: WorkerContext, workflowId: string, version: number, reason: string, record: DelegationRecord, log: WorkerContext['logger']): Promise<string> {
  const attention = { code: 'COMPENSATION_FAILED' as const, message: reason, delegationId: record.delegationId, evidence: { state: record.state, error: record.error, evidence: record.evidence }, fromVersion: version };
  await ctx.journal.updateWorkflow(workflowId, { state: 'NEEDS_ATTENTION', attention }, version);
  log.error({ reason, delegationId: record.delegationId }, 'compensation needs a person');
  await notifyAttentionNeeded(ctx, workflowId, version, attention);
  return 'needs-attention';
}
