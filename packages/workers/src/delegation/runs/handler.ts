/**
 * Compensations run by a registered handler instead of an agent
 * (`{ handler: 'name' }`, workers option `compensationHandlers`).
 */
import { delegationIdOf, type DelegationRecord } from '@durable-a2a/shared';
import type { WorkerContext } from '../../context.ts';
import { apply } from '../apply.ts';
import type { Observation } from '../core/observation.ts';

/** A handler compensation (no agent): idempotent on `idempotencyKey`. */
export type CompensationHandler = (input: {
  idempotencyKey: string;
  original: DelegationRecord;
  params: Record<string, unknown>;
}) => Promise<{ evidence?: unknown }>;

/** Agent URL of a compensation run by a registered handler instead of an agent. */
export const HANDLER_PREFIX = 'handler:';

/**
 * Runs a registered compensation handler (no agent). Journaled like a send:
 * marked before it runs, so a crash in between goes through the reconciler,
 * which cannot search a handler and so leaves it AMBIGUOUS for a person; the
 * handler gets the delegation's messageId as its idempotency key.
 */
export async function runHandler(ctx: WorkerContext, record: DelegationRecord, fence: number): Promise<string> {
  const name = record.agentCardUrl.slice(HANDLER_PREFIX.length);
  const handler = ctx.compensationHandlers.get(name);
  await ctx.journal.markSending(record, fence);
  // The step attempt this compensation undoes: found by kind, step and attempt, never by parsing its id.
  const originalId = delegationIdOf('step', record.step, record.attempt);
  const original = await ctx.journal.getDelegation({ workflowId: record.workflowId, delegationId: originalId });
  let observation: Observation;
  try {
    if (!handler || !original) throw new Error(handler ? `original delegation ${originalId} is gone` : `no compensation handler named ${name}`);
    const definition = await ctx.journal.getWorkflowDefinition(record.workflowId);
    const compensation = definition?.steps.find((candidate) => candidate.name === record.step)?.compensation;
    const params = compensation && 'handler' in compensation ? compensation.params : {};
    const { evidence } = await handler({ idempotencyKey: record.messageId, original, params });
    observation = { kind: 'handler-ran', ok: true, handler: name, evidence };
  } catch (error) {
    observation = { kind: 'handler-ran', ok: false, handler: name, message: error instanceof Error ? error.message : String(error) };
  }
  await apply(ctx, record, observation, { fence, source: 'handler' });
  return 'handler-ran';
}

