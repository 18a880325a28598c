/**
 * The workflow step an attempt belongs to, read once per attempt: an attempt's workflow definition
 * never changes, so the send path (attempt deadline, verifier check) parses the definition once per
 * attempt (its messageId), not at every check. Bounded: the oldest entries go first.
 */
import type { DelegationRecord, DelegationRef, WorkflowDefinition } from '@durable-a2a/shared';
import type { WorkerContext } from '../context.ts';
import { attemptDeadlineOf } from './core/policy.ts';

/** One step of a workflow definition. */
export type WorkflowStep = WorkflowDefinition['steps'][number];

const stepsByAttempt = new Map<string, WorkflowStep | undefined>();
const STEPS_KEPT = 10_000;

/**
 * The attempt's step definition (`undefined` when the workflow has no such step), or `'unreadable'`
 * when the definition cannot be read now (not remembered: the next call reads again).
 */
export async function stepOfAttempt(ctx: WorkerContext, record: Pick<DelegationRecord, 'workflowId' | 'step' | 'messageId'>): Promise<WorkflowStep | undefined | 'unreadable'> {
  if (stepsByAttempt.has(record.messageId)) return stepsByAttempt.get(record.messageId);
  const definition = await ctx.journal.getWorkflowDefinition(record.workflowId).catch(() => undefined);
  if (!definition) return 'unreadable';
  return rememberStep(record, definition);
}

/** Finds and remembers the attempt's step in its workflow's definition. */
function rememberStep(record: Pick<DelegationRecord, 'step' | 'messageId'>, definition: WorkflowDefinition): WorkflowStep | undefined {
  const step = definition.steps.find((candidate) => candidate.name === record.step);
  if (stepsByAttempt.size >= STEPS_KEPT) stepsByAttempt.delete(stepsByAttempt.keys().next().value!);
  stepsByAttempt.set(record.messageId, step);
  return step;
}

/**
 * Reads a delegation and, in the same round trip, its workflow's definition, remembering the attempt's step
 * (the send path asks `stepOfAttempt` next: attempt deadline, verifier check). Undefined when the delegation
 * is missing. Throws what `getDelegation` throws (a corrupt row); an unreadable definition is read again later.
 */
export async function readAttemptWithStep(ctx: WorkerContext, ref: DelegationRef): Promise<DelegationRecord | undefined> {
  const [record, definition] = await Promise.all([ctx.journal.getDelegation(ref), ctx.journal.getWorkflowDefinition(ref.workflowId).catch(() => undefined)]);
  if (record && definition && !stepsByAttempt.has(record.messageId)) rememberStep(record, definition);
  return record;
}

/** The verifier an attempt of `kind` declares in its step: the step's own, or its compensation's. */
export function declaredVerifier(step: WorkflowStep, kind: DelegationRecord['kind']) {
  if (kind === 'step') return step.verifier;
  return step.compensation && 'verifier' in step.compensation ? step.compensation.verifier : undefined;
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

/** Milliseconds left before the attempt's deadline (≤ 0 = past it). */
export async function attemptTimeLeftMs(ctx: WorkerContext, record: DelegationRecord): Promise<number> {
  return (await attemptDeadlineAt(ctx, record)) - ctx.options.now();
}
