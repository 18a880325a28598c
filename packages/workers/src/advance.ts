/**
 * Applies `decide` to the journal. Safe to run any number of times from any
 * worker: intents are idempotent on their delegation id and every workflow
 * change is compare-and-set on the version the decision was made from.
 */
import {
  AgentRegistry,
  buildIntent,
  JournalError,
  jobId,
  WorkflowDefinitionSchema,
  type DelegationRecord,
  type OutgoingMessage,
  type Step,
  type WorkflowDefinition,
  type WorkflowState,
} from '@durable-a2a/shared';
import type { WorkerContext } from './context.ts';
import { decide, type AttemptView, type Decision, type PreviousAttempt } from './decide.ts';

const FINISHED_WORKFLOW_STATES: ReadonlySet<WorkflowState> = new Set(['COMPLETED', 'FAILED', 'COMPENSATED', 'CANCELED']);

/** Reads only a workflow's definition (one HGET), for callers that need a step's declarations. */
export async function loadDefinition(ctx: WorkerContext, workflowId: string): Promise<WorkflowDefinition | undefined> {
  const text = await ctx.journal.redis.hget(ctx.journal.keys.workflow(workflowId), 'definition');
  return text ? WorkflowDefinitionSchema.parse(JSON.parse(text)) : undefined;
}

/** Reads a workflow and all its attempts. */
export async function loadWorkflow(ctx: WorkerContext, workflowId: string) {
  const hash = await ctx.journal.getWorkflowHash(workflowId);
  if (!hash) return undefined;
  const definition: WorkflowDefinition = WorkflowDefinitionSchema.parse(JSON.parse(hash.definition!));
  const ids = await ctx.journal.delegationIds(workflowId);
  const records = (await Promise.all(ids.map((delegationId) => ctx.journal.getDelegation({ workflowId, delegationId })))).filter(
    (record): record is DelegationRecord => record !== undefined,
  );
  return { hash, definition, records, version: Number(hash.version), state: hash.state as WorkflowState };
}

const toAttempt = (record: DelegationRecord, workflow: Record<string, string>): AttemptView => ({
  retryApproved: workflow[`retry:${record.delegationId}`] === '1',
  delegationId: record.delegationId,
  step: record.step,
  kind: record.kind,
  attempt: record.attempt,
  agentCardUrl: record.agentCardUrl,
  state: record.state,
  taskId: record.taskId,
  contextId: record.contextId,
  error: record.error,
  effect: record.effect,
  held: record.state === 'INTENT' && record.held,
});

/** Candidate agents per step: the fixed agent first, then registered agents with the skill. */
async function candidateLookup(ctx: WorkerContext, definition: WorkflowDefinition): Promise<(step: Step) => string[]> {
  const registry = new AgentRegistry(ctx.journal.redis, ctx.options.prefix);
  const bySkill = new Map<string, string[]>();
  for (const step of definition.steps) {
    if (step.skill && !bySkill.has(step.skill)) {
      const tags = 'tags' in step ? (step.tags ?? []) : [];
      bySkill.set(step.skill, (await registry.findBySkill(step.skill, tags)).map((agent) => agent.cardUrl));
    }
  }
  return (step) => {
    const fixed = 'agent' in step && step.agent ? [step.agent] : [];
    return [...new Set([...fixed, ...(step.skill ? (bySkill.get(step.skill) ?? []) : [])])];
  };
}

/** The message of a new attempt: the step's message, plus what earlier attempts learned (issue 5). */
export function attemptMessage(step: Step, previous: PreviousAttempt[], workflowId: string, attempt: number): OutgoingMessage {
  const parts = 'text' in step.message ? [{ text: step.message.text }] : step.message.parts;
  const metadata: Record<string, unknown> = { ...(step.message.metadata ?? {}), durableA2a: { workflowId, step: step.name, attempt } };
  if (previous.length === 0) return { parts, metadata };
  const summary = previous.map((entry) => `task ${entry.taskId ?? '(none)'} at ${entry.agentCardUrl} ended ${entry.reason}`).join('; ');
  (metadata.durableA2a as Record<string, unknown>).previousAttempts = previous.map(({ taskId, agentCardUrl, reason }) => ({ taskId, agentCardUrl, reason }));
  return {
    parts: [...parts, { text: `Note: this request was tried before and did not succeed (${summary}). Do not repeat that outcome.` }],
    metadata,
  };
}

/**
 * Decides and applies the next actions of a workflow until there is nothing
 * more to do now (several steps may start at once). Returns the last decision.
 */
export async function advanceWorkflow(ctx: WorkerContext, workflowId: string): Promise<Decision> {
  let last: Decision = { kind: 'wait', reason: 'not decided' };
  for (let round = 0; round < 20; round++) {
    const loaded = await loadWorkflow(ctx, workflowId);
    if (!loaded || FINISHED_WORKFLOW_STATES.has(loaded.state)) {
      // Nothing left to decide (or it expired): drop the workflow's index entry.
      await ctx.journal.removeFromIndex({ workflowId, delegationId: '*' });
      return { kind: 'wait', reason: loaded ? `workflow is ${loaded.state}` : 'workflow missing' };
    }
    last = decide(
      {
        definition: loaded.definition,
        state: loaded.state,
        cancelRequested: loaded.hash.cancelRequested === '1',
        stopping: loaded.hash.stopping ? (JSON.parse(loaded.hash.stopping) as string[]) : undefined,
        attempts: loaded.records.map((record) => toAttempt(record, loaded.hash)),
      },
      await candidateLookup(ctx, loaded.definition),
    );
    try {
      await applyDecision(ctx, workflowId, loaded, last);
    } catch (error) {
      // Another worker changed the workflow first: decide again from what it wrote.
      if (error instanceof JournalError && (error.code === 'VERSION_CONFLICT' || error.code === 'WRONG_STATE')) continue;
      throw error;
    }
    if (last.kind !== 'start-attempt' && last.kind !== 'release') return last;
  }
  return last;
}

async function applyDecision(
  ctx: WorkerContext,
  workflowId: string,
  loaded: NonNullable<Awaited<ReturnType<typeof loadWorkflow>>>,
  decision: Decision,
): Promise<void> {
  const log = ctx.logger.child({ workflowId });
  const workflowRef = { workflowId, delegationId: '*' };
  switch (decision.kind) {
    case 'wait':
      return;
    case 'cancel-running': {
      // Journal the stop first (no new attempts from here on), then CancelTask each running attempt:
      // at most once per reconcile interval each; each ends CANCELED (or finishes first) and settles.
      await ctx.journal.updateWorkflow(workflowId, { stopping: JSON.stringify(decision.reasons) }, loaded.version);
      const bucket = Math.floor(ctx.options.now() / ctx.options.reconcileIntervalMs);
      for (const delegationId of decision.delegationIds) {
        await ctx.queues.send.add('send', { workflowId, delegationId, kind: 'cancel' }, { jobId: jobId('cancel', workflowId, delegationId, 'stop', bucket) });
      }
      log.warn({ delegationIds: decision.delegationIds, reasons: decision.reasons }, 'a step failed for good: canceling the running steps before compensating');
      return;
    }
    case 'release': {
      await ctx.journal.releaseHold({ workflowId, delegationId: decision.delegationId });
      await ctx.queues.send.add('send', { workflowId, delegationId: decision.delegationId, kind: 'message' }, { jobId: jobId('send', workflowId, decision.delegationId, 0) });
      log.info({ step: decision.step }, 'earlier steps done: sending the held intent');
      return;
    }
    case 'start-attempt': {
      const step = loaded.definition.steps.find((candidate) => candidate.name === decision.step)!;
      const intent = buildIntent({
        workflowId,
        step: step.name,
        attempt: decision.attempt,
        agentCardUrl: decision.agentCardUrl,
        message: attemptMessage(step, decision.previous, workflowId, decision.attempt),
        push: step.push,
        now: ctx.options.now(),
      });
      const created = await ctx.journal.createIntent(workflowId, intent, { expectedWorkflowVersion: loaded.version });
      if (created && decision.attempt > 1) {
        ctx.metrics.redelegations.inc();
        log.info({ step: step.name, attempt: decision.attempt, agent: decision.agentCardUrl, previous: decision.previous }, 're-delegating step');
      }
      await ctx.queues.send.add('send', { workflowId, delegationId: intent.delegationId, kind: 'message' }, { jobId: jobId('send', workflowId, intent.delegationId!, 0) });
      return;
    }
    case 'complete':
      await ctx.journal.updateWorkflow(workflowId, { state: 'COMPLETED' }, loaded.version);
      await ctx.journal.removeFromIndex(workflowRef);
      log.info('workflow completed');
      return;
    case 'fail':
      await closeHeldIntents(ctx, loaded.records);
      await ctx.journal.updateWorkflow(
        workflowId,
        { state: loaded.hash.cancelRequested === '1' ? 'CANCELED' : 'FAILED', failure: JSON.stringify(decision.reasons) },
        loaded.version,
      );
      await ctx.journal.removeFromIndex(workflowRef);
      if (loaded.hash.cancelRequested === '1') log.info({ reasons: decision.reasons }, 'workflow canceled');
      else log.warn({ reasons: decision.reasons }, 'workflow failed');
      return;
    case 'compensate':
      await closeHeldIntents(ctx, loaded.records);
      await ctx.journal.updateWorkflow(workflowId, { state: 'COMPENSATING', failure: JSON.stringify([decision.reason]) }, loaded.version);
      await ctx.queues.compensate.add('compensate', { workflowId }, { jobId: jobId('compensate', workflowId, loaded.version) });
      log.warn({ reason: decision.reason }, 'workflow compensating');
      return;
    case 'needs-attention':
      await ctx.journal.updateWorkflow(workflowId, { state: 'NEEDS_ATTENTION', attention: decision.reason }, loaded.version);
      log.error({ step: decision.step, reason: decision.reason }, 'workflow needs a person');
      return;
  }
}

/** Intents journaled for steps that will now never run are closed as CANCELED (never sent). */
async function closeHeldIntents(ctx: WorkerContext, records: DelegationRecord[]): Promise<void> {
  for (const record of records) {
    if (record.state !== 'INTENT' || !record.held) continue;
    await ctx.journal.applyStatus(record, {
      expectedVersion: record.version,
      mode: 'outcome',
      state: 'CANCELED',
      error: { code: 'NEVER_SENT', message: 'the workflow stopped before this step was sent' },
    });
    await ctx.journal.removeFromIndex(record);
  }
}
