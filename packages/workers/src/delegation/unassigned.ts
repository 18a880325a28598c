/**
 * A compensation no agent can run (attack28): its target names a skill no registered agent has (with its tags). The
 * undo is journaled like any compensation, under an Agent Card URL that names no agent (`unassignedAgent`), and
 * refused by the send path before anything is sent (the `agent-missing` row: FAILED `NO_AGENT`, delivery
 * `not-sent`): the compensation chain then asks a person (`COMPENSATION_FAILED`), who retries it once an agent is
 * registered (a new compensation, its agent chosen again) or abandons it. Before, the compensate job threw and was
 * enqueued again every reconcile interval: the workflow stayed COMPENSATING for ever and nobody was told.
 */
import type { DelegationRecord } from '@durable-a2a/shared';
import type { WorkerContext } from '../context.ts';
import { apply } from './apply.ts';

/** Agent Card URL prefix of a compensation that no agent can run. */
export const UNASSIGNED_PREFIX = 'unassigned:';

/** The Agent Card URL journaled for a compensation whose target `skill` no registered agent has. */
export const unassignedAgent = (skill: string): string => `${UNASSIGNED_PREFIX}${encodeURIComponent(skill)}`;

/**
 * Refuses an unsent attempt journaled without an agent (`unassignedAgent`).
 * @returns true when refused (the caller sends nothing), false for an attempt with an agent.
 */
export async function refuseUnassigned(ctx: WorkerContext, record: DelegationRecord, log: WorkerContext['logger']): Promise<boolean> {
  if (!record.agentCardUrl.startsWith(UNASSIGNED_PREFIX)) return false;
  const skill = decodeURIComponent(record.agentCardUrl.slice(UNASSIGNED_PREFIX.length));
  log.warn({ skill }, 'no agent can run this compensation: refused before sending');
  await apply(ctx, record, { kind: 'agent-missing', skill }, { log });
  return true;
}
