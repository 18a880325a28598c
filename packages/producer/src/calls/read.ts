/**
 * Reads and the agent registry: workflow listing by page (and state), registering an agent by its
 * Agent Card URL. The workflow view itself is `readView` (context.ts).
 */
import { fetchAgentCard, type RegisteredAgent } from '@durable-a2a/shared';
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

/** `Producer.registerAgent`: fetches the Agent Card under the address policy and registers it. Throws AgentCardError. */
export async function registerAgent(context: ProducerContext, cardUrl: string): Promise<RegisteredAgent> {
  const url = parseInput(AgentUrl, cardUrl);
  const { options } = context;
  const card = await fetchAgentCard(url, { dispatcher: context.cardDispatcher, addressPolicy: options.addressPolicy ?? {}, limits: options.limits });
  return context.registry.register(url, card);
}
