/**
 * Reads and the agent registry: workflow listing by page (and state), registering an agent by its
 * Agent Card URL, disabling, enabling and removing one. The workflow view itself is `readView` (context.ts).
 */
import { fetchAgentCard } from '@durable-a2a/a2a';
import { AgentLimitsSchema, agentIdOf, type AgentLimits, type AgentView } from '@durable-a2a/shared';
import { NotFoundError } from '../errors.ts';
import { AgentUrl } from './create.ts';
import { parseInput, type ProducerContext } from './context.ts';

/** `Producer.listWorkflows`: one page of workflow ids (limit clamped to 1..500, default 50), optionally of one state. */
export async function listWorkflows(
  context: ProducerContext,
  listOptions: { state?: string; cursor?: string; limit?: number } = {},
): Promise<{ ids: string[]; cursor?: string }> {
  const limit = Math.min(Math.max(listOptions.limit ?? 50, 1), 500);
  const { ids, cursor } = await context.journal.listWorkflowIds(listOptions.cursor, limit);
  let selected = ids;
  if (listOptions.state) {
    const states = await context.journal.workflowStates(ids);
    selected = ids.filter((_, index) => states[index] === listOptions.state);
  }
  return { ids: selected, cursor };
}

/**
 * `Producer.registerAgent`: fetches the Agent Card under the address policy and registers it under its normalized
 * card URL (another spelling of a registered agent refreshes that entry). A failed fetch of a registered agent's
 * card is recorded in its health. Throws AgentCardError (and the fetch's errors).
 */
export async function registerAgent(context: ProducerContext, cardUrl: string): Promise<AgentView> {
  const url = parseInput(AgentUrl, cardUrl);
  const { options } = context;
  let card;
  try {
    card = await fetchAgentCard(url, { dispatcher: context.cardDispatcher, addressPolicy: options.addressPolicy ?? {}, limits: options.limits });
  } catch (error) {
    await context.registry.recordCall(url, { kind: 'card', error: error instanceof Error ? error.message : String(error) }).catch(() => undefined); // the fetch's error is the answer
    throw error;
  }
  const { cardUrl: key } = await context.registry.register(url, card);
  await context.registry.recordCall(key, { kind: 'card' });
  return (await context.registry.view(key))!;
}

/** `Producer.setAgentDisabled`: disables (with an optional reason) or enables an agent by id or card URL. Throws NotFoundError. */
export async function setAgentDisabled(context: ProducerContext, idOrCardUrl: string, disabled: boolean, reason?: string): Promise<AgentView> {
  const view = await context.registry.setDisabled(idOrCardUrl, disabled, reason);
  if (!view) throw new NotFoundError(`no registered agent ${idOrCardUrl}`);
  return view;
}

/** `Producer.setAgentLimits`: sets or clears an agent's fleet-wide limits by id or card URL. Throws NotFoundError, ValidationError. */
export async function setAgentLimits(context: ProducerContext, idOrCardUrl: string, limits: AgentLimits | undefined): Promise<AgentView> {
  const parsed = limits === undefined ? undefined : parseInput(AgentLimitsSchema, limits);
  const view = await context.registry.setLimits(idOrCardUrl, parsed);
  if (!view) throw new NotFoundError(`no registered agent ${idOrCardUrl}`);
  return view;
}

/** `Producer.getAgent`: one agent's view by id or card URL (any spelling). Throws NotFoundError. */
export async function getAgent(context: ProducerContext, idOrCardUrl: string): Promise<AgentView> {
  const view = await context.registry.view(idOrCardUrl);
  if (!view) throw new NotFoundError(`no registered agent ${idOrCardUrl}`);
  return view;
}

/** `Producer.removeAgent`: removes an agent by id or card URL (delegations bound to it go on). Throws NotFoundError. */
export async function removeAgent(context: ProducerContext, idOrCardUrl: string): Promise<{ id: string; cardUrl: string }> {
  const cardUrl = await context.registry.remove(idOrCardUrl);
  if (!cardUrl) throw new NotFoundError(`no registered agent ${idOrCardUrl}`);
  return { id: agentIdOf(cardUrl), cardUrl };
}
