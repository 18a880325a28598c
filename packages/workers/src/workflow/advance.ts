/**
 * workflow/advance: applies the decider (`decide`, pure, in shared) to the
 * journal. Safe to run any number of times from any worker: intents are
 * idempotent on their delegation id and every workflow change is
 * compare-and-set on the version the decision was made from. Owns: the
 * decision after each step outcome, re-delegation (new task, new messageId,
 * previous task ids and reasons carried), the budget (`maxAttemptsPerStep`),
 * stopping a failed workflow (CancelTask on running steps) and handing it to
 * compensation. It writes no delegation transition itself: a held intent it
 * closes goes through the executor (`delegation/apply.ts`), passed in as
 * `CloseHeldIntent` because the executor settles through this module.
 */
import {
  candidateAgents,
  tenantOfWorkflowId,
  JournalError,
  attemptMessage,
  buildIntent,
  decide,
  enqueueCancel,
  enqueueCompensate,
  delegationSpan,
  enqueueSend,
  isFinished,
  isWorkflowFinished,
  type Decision,
  type DelegationRecord,
  type DelegationRef,
  type HistoryEntryInput,
  type Step,
  type WorkflowDefinition,
  type WorkflowRecord,
  type WorkflowPatch,
  type WorkflowState,
  lazyChildLogger,
} from '@durable-a2a/shared';
import type { WorkerContext } from '../context.ts';
import { emitFinishedIfMissing, notifyAttentionNeeded, notifyWorkflowFinished } from '../notify/workflow.ts';
import { keepsEntryUntilNotified } from '../notify/emit.ts';

/**
 * Closes a held intent whose step will now never run (CANCELED `NEVER_SENT`, compare-and-set on the version read;
 * nothing when it is no longer a held intent). `delegation/apply.ts` `closeHeldIntent` is the one implementation:
 * a port, since the executor reaches this module (apply → settle → advance) and an import back would close a cycle.
 */
export type CloseHeldIntent = (ctx: WorkerContext, record: DelegationRecord) => Promise<void>;

/** A workflow row and all its attempts. */
export interface LoadedWorkflow {
  record: WorkflowRecord;
  definition: WorkflowDefinition;
  records: DelegationRecord[];
  version: number;
  state: WorkflowRecord['state'];
}

/** Reads only a workflow's definition (one HGET), for callers that need a step's declarations. */
export async function loadDefinition(ctx: WorkerContext, workflowId: string): Promise<WorkflowDefinition | undefined> {
  return ctx.journal.getWorkflowDefinition(workflowId);
}

/** What a caller already read of a workflow (saves those reads): its row, and finished attempts as written. */
export interface KnownWorkflow {
  record?: WorkflowRecord;
  /** The workflow's delegation ids, read with `record` (saves that read). */
  delegationIds?: string[];
  /** Finished attempts only (a finished row changes no more in what the decision reads). */
  settled?: DelegationRecord[];
  /**
   * The caller drops the workflow's index entry `*` itself, with its own entry in one ZREM, when the
   * decision finished the workflow (`complete`, `fail`): a crash before that leaves both for the reconciler.
   */
  callerDropsWorkflowEntry?: boolean;
  /**
   * Index entries a finishing decision (`complete`, `fail`) of the first round drops in its own transition, the
   * workflow's `*` with them (`Journal.finishWorkflow`, where `removesIndexWithFinish`): the settle's ZREM, one
   * round trip less. `removed` is told whether any of `entries` (the `*` not counted) was still there: the caller then
   * observes the delegation's duration; it drops none of them either way.
   */
  finishDrops?: { entries: DelegationRef[]; removed(any: boolean): void };
}

/** Reads a workflow and all its attempts (what `known` holds is not read again; none of a finished workflow). */
export async function loadWorkflow(ctx: WorkerContext, workflowId: string, known: KnownWorkflow = {}): Promise<LoadedWorkflow | undefined> {
  const record = known.record ?? (await ctx.journal.getWorkflow(workflowId));
  if (!record) return undefined;
  // A finished workflow takes no more decisions: its attempts are not read (a compacted one's would each read its whole record).
  if (isWorkflowFinished(record.state)) return { record, definition: record.definition, records: [], version: record.version, state: record.state };
  const ids = known.delegationIds ?? (await ctx.journal.delegationIds(workflowId));
  const settled = new Map((known.settled ?? []).map((attempt) => [attempt.delegationId, attempt]));
  const records = (await Promise.all(ids.map((delegationId) => settled.get(delegationId) ?? ctx.journal.getDelegation({ workflowId, delegationId })))).filter(
    (delegation): delegation is DelegationRecord => delegation !== undefined,
  );
  // The running attempts' steps, from the definition in hand (an attempt's step never changes): their own reconcile
  // or follow asks for it next (attempt deadline) and reads no definition then. After a whole-fleet crash the start-up
  // sweep's workflow entries come before the dead-worker sweep's reattaches: one HGET and lookup of the definition
  // fewer per reattached delegation.
  for (const attempt of records) {
    if (attempt.kind === 'step' && !isFinished(attempt.state) && !ctx.attemptSteps.has(attempt.messageId)) ctx.attemptSteps.remember(attempt, record.definition);
  }
  return { record, definition: record.definition, records, version: record.version, state: record.state };
}

const toAttempt = (record: DelegationRecord, workflow: WorkflowRecord) => ({
  retryApproved: workflow.retryApproved.includes(record.delegationId),
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
  artifactCount: record.artifactCount,
  held: record.state === 'INTENT' && record.held,
});

/**
 * The decision for a workflow whose attempts are `records`, for a definition with no step that names a skill (its
 * candidates need no registry read); `decide` as `advanceWorkflow` asks it. The one-step finish decides with it
 * before its call (`delegation/finish-step.ts`).
 */
export function decideWithoutRegistry(workflow: WorkflowRecord, records: readonly DelegationRecord[]): Decision {
  const tenant = tenantOfWorkflowId(workflow.definition.workflowId);
  return decide(
    { definition: workflow.definition, state: workflow.state, cancelRequested: workflow.cancelRequested, stopping: workflow.stopping, attempts: records.map((record) => toAttempt(record, workflow)) },
    (step) => candidateAgents(step, [], tenant),
  );
}

/**
 * What follows a workflow's finishing change (written by `finishWorkflow`, `updateWorkflow` or the one-step finish):
 * the count, the `workflow.finished` notification and the log line of the decision that made it.
 */
export async function workflowFinished(ctx: WorkerContext, workflowId: string, patch: WorkflowPatch & { state: WorkflowState }, definition: WorkflowDefinition): Promise<boolean> {
  const log = lazyChildLogger(ctx.logger, { workflowId });
  ctx.metrics.workflowsFinished.inc({ state: patch.state });
  // Killed here: the workflow is finished and its `workflow.finished` not emitted; a workflow with a receiver kept its
  // `*` for the reconciler to emit it (`emitFinishedIfMissing`).
  ctx.crashPoint('advance.after-finish');
  const emitted = await notifyWorkflowFinished(ctx, workflowId, patch.state, patch.failure ?? undefined, definition);
  if (patch.state === 'COMPLETED') log.info('workflow completed');
  else if (patch.state === 'CANCELED') log.info({ reasons: patch.failure }, 'workflow canceled');
  else log.warn({ reasons: patch.failure }, 'workflow failed');
  return emitted;
}

/** Candidate agents per step (`candidateAgents`: the fixed agent first, then registered agents with the skill and its tags). */
async function candidateLookup(ctx: WorkerContext, definition: WorkflowDefinition): Promise<(step: Step) => string[]> {
  const registered = definition.steps.some((step) => step.skill) ? await ctx.registry.list() : [];
  return (step) => candidateAgents(step, registered, tenantOfWorkflowId(definition.workflowId));
}

/**
 * Decides and applies the next actions of a workflow until there is nothing
 * more to do now (several steps may start at once). Returns the last decision.
 * `closeHeld`: how a held intent of a stopping workflow is closed (`CloseHeldIntent`).
 */
export async function advanceWorkflow(ctx: WorkerContext, workflowId: string, closeHeld: CloseHeldIntent, known?: KnownWorkflow): Promise<Decision> {
  let last: Decision = { kind: 'wait', reason: 'not decided' };
  for (let round = 0; round < 20; round++) {
    // The first round may decide from what the caller read (the workflow's version is compare-and-set).
    const loaded = await loadWorkflow(ctx, workflowId, round === 0 ? known : undefined);
    if (!loaded || isWorkflowFinished(loaded.state)) {
      // Nothing left to decide (or it expired): drop the workflow's index entry. A finished workflow whose receiver
      // never got `workflow.finished` journaled (a crash or a lost reply between the finishing write and the emit:
      // its `*` stayed for this) emits it first.
      // An emit that failed (Redis or the queue down) leaves the entry for the next look.
      if (loaded && !(await emitFinishedIfMissing(ctx, workflowId, { state: loaded.state, failure: loaded.record.failure, definition: loaded.definition }))) return { kind: 'wait', reason: 'workflow.finished not enqueued yet' };
      await ctx.journal.removeFromIndex({ workflowId, delegationId: '*' });
      return { kind: 'wait', reason: loaded ? `workflow is ${loaded.state}` : 'workflow missing' };
    }
    last = decide(
      {
        definition: loaded.definition,
        state: loaded.state,
        cancelRequested: loaded.record.cancelRequested,
        stopping: loaded.record.stopping,
        attempts: loaded.records.map((record) => toAttempt(record, loaded.record)),
      },
      await candidateLookup(ctx, loaded.definition),
    );
    // The reconciler's next look at this workflow compares versions with this "wait" (`wait-memory.ts`); any other
    // decision is forgotten there, so the next look reads in full.
    if (last.kind === 'wait') ctx.workflowWaits.rememberWait(loaded);
    else ctx.workflowWaits.forget(workflowId);
    try {
      await applyDecision(ctx, workflowId, loaded, last, closeHeld, round === 0 && known?.callerDropsWorkflowEntry === true, round === 0 ? known?.finishDrops : undefined);
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
  loaded: LoadedWorkflow,
  decision: Decision,
  closeHeld: CloseHeldIntent,
  callerDropsWorkflowEntry = false,
  finishDrops?: KnownWorkflow['finishDrops'],
): Promise<void> {
  const log = lazyChildLogger(ctx.logger, { workflowId });
  const dropWorkflowEntry = async () => {
    if (!callerDropsWorkflowEntry) await ctx.journal.removeFromIndex({ workflowId, delegationId: '*' });
  };
  // A finished state: with `finishDrops`, the index entries go in the same script (and the caller is told).
  // Counted once: the write is compare-and-set on the version the decision read (a conflict throws first).
  // A workflow with a receiver keeps its `*` until `workflow.finished` is emitted (an outbox: a crash or a lost reply
  // in between leaves the entry, and the reconciler emits it, `emitFinishedIfMissing`).
  const finish = async (patch: WorkflowPatch & { state: WorkflowState }) => {
    const keepsEntryForNotification = keepsEntryUntilNotified(ctx, loaded.definition);
    if (finishDrops && ctx.journal.removesIndexWithFinish) {
      // The rows the decision read: the compacted record's text is built from them, not read again in the script.
      const rows = { workflow: loaded.record, delegations: loaded.records };
      const entries = keepsEntryForNotification ? finishDrops.entries : [...finishDrops.entries, { workflowId, delegationId: '*' }];
      const { removedFromIndex } = await ctx.journal.finishWorkflow(workflowId, patch, loaded.version, entries, rows);
      finishDrops.removed(removedFromIndex);
      const emitted = await workflowFinished(ctx, workflowId, patch, loaded.definition);
      if (keepsEntryForNotification && emitted) await ctx.journal.removeFromIndex({ workflowId, delegationId: '*' });
      return;
    }
    await ctx.journal.updateWorkflow(workflowId, patch, loaded.version);
    const emitted = await workflowFinished(ctx, workflowId, patch, loaded.definition);
    // The settle's own ZREM leaves a kept `*` to this one (settle.ts).
    if (!keepsEntryForNotification) await dropWorkflowEntry();
    else if (emitted) await ctx.journal.removeFromIndex({ workflowId, delegationId: '*' });
  };
  switch (decision.kind) {
    case 'wait':
      return;
    case 'cancel-running': {
      // Journal the stop first (no new attempts from here on), then CancelTask each running attempt:
      // at most once per reconcile interval each; each ends CANCELED (or finishes first) and settles.
      await ctx.journal.updateWorkflow(workflowId, { stopping: decision.reasons }, loaded.version);
      const bucket = Math.floor(ctx.options.now() / ctx.options.reconcileIntervalMs);
      for (const delegationId of decision.delegationIds) await enqueueCancel(ctx.queues, { workflowId, delegationId }, { by: 'stop', bucket });
      log.warn({ delegationIds: decision.delegationIds, reasons: decision.reasons }, 'a step failed for good: canceling the running steps before compensating');
      return;
    }
    case 'release': {
      // Compare-and-set on the version the decision was made from (a cancel or stop since: decide again).
      await ctx.journal.releaseHold({ workflowId, delegationId: decision.delegationId }, loaded.version);
      await enqueueSend(ctx.queues, { workflowId, delegationId: decision.delegationId }, 0, undefined, 0, { priority: loaded.definition.priority });
      log.info({ step: decision.step }, 'earlier steps done: sending the held intent');
      return;
    }
    case 'start-attempt':
      return journalAttempt(ctx, workflowId, loaded, decision);
    case 'complete':
      return finish(finishingPatch(decision));
    case 'fail':
      await closeHeldIntents(ctx, loaded.records, closeHeld);
      return finish(finishingPatch(decision));
    case 'compensate':
      await closeHeldIntents(ctx, loaded.records, closeHeld);
      await ctx.journal.updateWorkflow(workflowId, { state: 'COMPENSATING', failure: [decision.reason] }, loaded.version);
      await enqueueCompensate(ctx.queues, workflowId, { workflowVersion: loaded.version });
      log.warn({ reason: decision.reason }, 'workflow compensating');
      return;
    case 'needs-attention': {
      const attention = { code: decision.code, message: decision.reason, delegationId: decision.delegationId, evidence: decision.evidence, fromVersion: loaded.version };
      await ctx.journal.updateWorkflow(workflowId, { state: 'NEEDS_ATTENTION', attention }, loaded.version);
      log.error({ step: decision.step, reason: decision.reason }, 'workflow needs a person');
      await notifyAttentionNeeded(ctx, workflowId, loaded.version, attention, loaded.definition);
      return;
    }
  }
}

/** The workflow change of a finishing decision. */
export function finishingPatch(decision: Extract<Decision, { kind: 'complete' | 'fail' }>): WorkflowPatch & { state: WorkflowState } {
  if (decision.kind === 'complete') return { state: 'COMPLETED' };
  return { state: decision.canceled ? 'CANCELED' : 'FAILED', failure: decision.reasons };
}

/** Journals a new attempt of a step (before any I/O), then enqueues its send. */
async function journalAttempt(ctx: WorkerContext, workflowId: string, loaded: LoadedWorkflow, decision: Extract<Decision, { kind: 'start-attempt' }>): Promise<void> {
  const log = lazyChildLogger(ctx.logger, { workflowId });
  const step = loaded.definition.steps.find((candidate) => candidate.name === decision.step)!;
  const intent = buildIntent({
    workflowId,
    step: step.name,
    attempt: decision.attempt,
    agentCardUrl: decision.agentCardUrl,
    message: attemptMessage(step, decision.previous, workflowId, decision.attempt),
    push: step.push,
    now: ctx.options.now(),
    priority: loaded.definition.priority,
  });
  // A re-delegation keeps why in the workflow's history: each failed attempt before it and its reason.
  const history: HistoryEntryInput | undefined =
    decision.attempt > 1
      ? {
          kind: 'redelegation',
          at: ctx.options.now(),
          delegationId: intent.delegationId!,
          step: step.name,
          attempt: decision.attempt,
          agentCardUrl: decision.agentCardUrl,
          previous: decision.previous.map(({ delegationId, agentCardUrl, taskId, reason }) => ({ delegationId, agentCardUrl, ...(taskId ? { taskId } : {}), reason })),
        }
      : undefined;
  const created = await ctx.journal.createIntent(workflowId, intent, { expectedWorkflowVersion: loaded.version, history });
  if (created && decision.attempt > 1) {
    ctx.metrics.redelegations.inc();
    log.info({ step: step.name, attempt: decision.attempt, agent: decision.agentCardUrl, previous: decision.previous }, 're-delegating step');
  }
  // One span per attempt (docs/observability.md "Tracing (OpenTelemetry)"): the send job's spans are its children.
  await delegationSpan({ workflowId, delegationId: intent.delegationId!, step: step.name, attempt: decision.attempt, kind: 'step', agentCardUrl: decision.agentCardUrl, messageId: intent.messageId }, () =>
    enqueueSend(ctx.queues, { workflowId, delegationId: intent.delegationId! }, 0, undefined, 0, { priority: loaded.definition.priority }),
  );
}

/** Intents journaled for steps that will now never run are closed as CANCELED (never sent). */
async function closeHeldIntents(ctx: WorkerContext, records: DelegationRecord[], closeHeld: CloseHeldIntent): Promise<void> {
  for (const record of records) {
    if (record.state !== 'INTENT' || !record.held) continue;
    await closeHeld(ctx, record);
    await ctx.journal.removeFromIndex(record);
  }
}
