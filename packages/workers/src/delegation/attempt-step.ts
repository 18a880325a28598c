/**
 * The workflow step an attempt belongs to, read once per attempt: an attempt's workflow definition
 * never changes, so the send path (attempt deadline, verifier check) parses the definition once per
 * attempt (its messageId), not at every check. Bounded: the oldest entries go first.
 */
import type { DelegationRecord, DelegationRef, WorkflowDefinition, WorkflowRecord } from '@durable-a2a/shared';
import type { WorkerContext } from '../context.ts';
import type { UnreachableBounds } from './core/observation.ts';
import { attemptDeadlineOf } from './core/policy.ts';

/** One step of a workflow definition. */
export type WorkflowStep = WorkflowDefinition['steps'][number];

/** Attempts whose step is remembered at most (the oldest go first). */
const STEPS_KEPT = 10_000;

/**
 * The steps of attempts this process has read, by messageId (an attempt's step never changes), at most
 * `STEPS_KEPT`. A member of `WorkerContext` (`attemptSteps`), created in `fleet.ts`: no module-level state.
 */
export class AttemptSteps {
  private readonly steps = new Map<string, WorkflowStep | undefined>();
  /** A one-step workflow's row as the send read it, by its attempt's messageId (`finish-step.ts` builds its record from it). */
  private readonly workflows = new Map<string, WorkflowRecord>();

  has(messageId: string): boolean {
    return this.steps.has(messageId);
  }

  get(messageId: string): WorkflowStep | undefined {
    return this.steps.get(messageId);
  }

  /** Finds and remembers the attempt's step in its workflow's definition. */
  remember(record: Pick<DelegationRecord, 'step' | 'messageId'>, definition: WorkflowDefinition): WorkflowStep | undefined {
    const step = definition.steps.find((candidate) => candidate.name === record.step);
    if (this.steps.size >= STEPS_KEPT) this.steps.delete(this.steps.keys().next().value!);
    this.steps.set(record.messageId, step);
    return step;
  }

  /**
   * Remembers the row of the attempt's workflow as the journal handed it out, when the workflow has one step (the
   * finish of its only delegation may then be one script: `finish-step.ts`), at most `STEPS_KEPT`; the oldest go first.
   */
  rememberWorkflow(record: Pick<DelegationRecord, 'messageId'>, workflow: WorkflowRecord): void {
    if (workflow.definition.steps.length !== 1) return;
    if (this.workflows.size >= STEPS_KEPT) this.workflows.delete(this.workflows.keys().next().value!);
    this.workflows.set(record.messageId, workflow);
  }

  /** The workflow row remembered for the attempt (`rememberWorkflow`), taken: a second finish reads it again. */
  takeWorkflow(messageId: string): WorkflowRecord | undefined {
    const workflow = this.workflows.get(messageId);
    this.workflows.delete(messageId);
    return workflow;
  }
}

/**
 * The attempt's step definition (`undefined` when the workflow has no such step), or `'unreadable'`
 * when the definition cannot be read now (not remembered: the next call reads again).
 */
export async function stepOfAttempt(ctx: WorkerContext, record: Pick<DelegationRecord, 'workflowId' | 'step' | 'messageId'>): Promise<WorkflowStep | undefined | 'unreadable'> {
  if (ctx.attemptSteps.has(record.messageId)) return ctx.attemptSteps.get(record.messageId);
  const definition = await ctx.journal.getWorkflowDefinition(record.workflowId).catch(() => undefined);
  if (!definition) return 'unreadable';
  return ctx.attemptSteps.remember(record, definition);
}

/**
 * Reads a delegation and, in the same round trip, its workflow's row, remembering the attempt's step (the send
 * path asks `stepOfAttempt` next: attempt deadline, verifier check) and a one-step workflow's row
 * (`rememberWorkflow`). Undefined when the delegation is missing. Throws what `getDelegation` throws (a corrupt
 * row); an unreadable workflow is read again later.
 */
export async function readAttemptWithStep(ctx: WorkerContext, ref: DelegationRef): Promise<DelegationRecord | undefined> {
  const [record, workflow] = await Promise.all([ctx.journal.getDelegation(ref), ctx.journal.getWorkflow(ref.workflowId).catch(() => undefined)]);
  if (record && workflow && !ctx.attemptSteps.has(record.messageId)) ctx.attemptSteps.remember(record, workflow.definition);
  if (record && workflow?.state === 'RUNNING' && record.kind === 'step') ctx.attemptSteps.rememberWorkflow(record, workflow);
  return record;
}

/**
 * The deadline of an attempt as epoch ms (`core/policy.ts` attemptDeadlineOf): `createdAt` + the step's
 * `attemptDeadlineMs`, else the fleet's (`attemptDeadlineMs` option, default 24 h). Compensations use the fleet's.
 */
export async function attemptDeadlineAt(ctx: WorkerContext, record: DelegationRecord): Promise<number> {
  if (record.kind !== 'step') return attemptDeadlineOf(record.createdAt, ctx.options.attemptDeadlineMs, undefined);
  const step = await stepOfAttempt(ctx, record);
  return attemptDeadlineOf(record.createdAt, ctx.options.attemptDeadlineMs, step === 'unreadable' ? undefined : step?.attemptDeadlineMs);
}

/**
 * How long the attempt may wait for an agent that cannot be reached: its deadline (`attemptDeadlineAt`) and its
 * step's `unreachableForMs` (none for a compensation, or when the definition cannot be read now).
 */
export async function unreachableBoundsOf(ctx: WorkerContext, record: DelegationRecord): Promise<UnreachableBounds> {
  const deadlineAt = await attemptDeadlineAt(ctx, record);
  const step = record.kind === 'step' ? await stepOfAttempt(ctx, record) : undefined;
  const unreachableForMs = step === 'unreadable' ? undefined : step?.unreachableForMs;
  return { deadlineAt, ...(unreachableForMs !== undefined ? { unreachableForMs } : {}) };
}

/** Milliseconds left before the attempt's deadline (≤ 0 = past it). */
export async function attemptTimeLeftMs(ctx: WorkerContext, record: DelegationRecord): Promise<number> {
  return (await attemptDeadlineAt(ctx, record)) - ctx.options.now();
}
