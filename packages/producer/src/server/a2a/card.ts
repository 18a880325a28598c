/**
 * The front door's Agent Cards (spec §4.4): the service's own card, whose skills are the registered
 * agents' skills, and one card per registered agent whose interfaces point at the front door
 * (`/a2a/agents/<name>`), so a caller can pick a specific agent and still get every guarantee. Both declare
 * the API's bearer tokens as the security scheme, streaming, and push notifications (push.ts).
 */
import { AgentCard } from '@a2a-js/sdk';
import type { AgentView } from '@durable-a2a/shared';

/** Where the front door speaks A2A (JSON-RPC POSTs here; HTTP+JSON paths hang below it). */
export const FRONT_DOOR_PATH = '/a2a';
/** Where a registered agent's proxied interfaces are: `/a2a/agents/<encoded card name>`. */
export const agentPath = (name: string): string => `${FRONT_DOOR_PATH}/agents/${encodeURIComponent(name)}`;

/** The protocol bindings and versions served at every front-door URL (0.3 JSON-RPC for older clients). */
const INTERFACES = [
  { protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
  { protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' },
  { protocolBinding: 'JSONRPC', protocolVersion: '0.3' },
] as const;

/** Registered agents a front door may send to: active ones (not disabled by an operator, nothing wrong with their card). */
export function availableAgents(agents: readonly AgentView[]): AgentView[] {
  return agents.filter((agent) => agent.status === 'active');
}

/** Skills of `agents`, each id once (the first registered agent's description wins). */
function skillsOf(agents: readonly AgentView[]): object[] {
  const seen = new Map<string, object>();
  for (const agent of agents) {
    for (const skill of agent.card.skills) {
      if (!seen.has(skill.id)) seen.set(skill.id, { id: skill.id, name: skill.name, description: skill.description, tags: skill.tags });
    }
  }
  return [...seen.values()];
}

/**
 * The card served at `<baseUrl>/.well-known/agent-card.json` (no `agent`) or at
 * `<baseUrl>/a2a/agents/<name>/.well-known/agent-card.json` (that agent). `baseUrl`: the origin callers
 * reach this service at, without a trailing slash.
 */
export function frontDoorCard(baseUrl: string, agents: readonly AgentView[], agent?: AgentView): AgentCard {
  const url = `${baseUrl}${agent ? agentPath(agent.card.name) : FRONT_DOOR_PATH}`;
  return AgentCard.fromJSON({
    name: agent ? agent.card.name : 'durable-a2a',
    description: agent
      ? `${agent.card.description} (through durable-a2a: journaled, resubscribed, reconciled and compensated)`
      : `Durable delegation to the registered agents: name a skill in metadata.skill; every task is journaled, resubscribed, reconciled, re-delegated and compensated.`,
    version: agent ? agent.card.version : '1.0.0',
    supportedInterfaces: INTERFACES.map((binding) => ({ url, ...binding })),
    capabilities: { streaming: true, pushNotifications: true },
    securitySchemes: { bearer: { httpAuthSecurityScheme: { scheme: 'Bearer', description: 'An API token of the durable-a2a service (DA2A_API_TOKENS)' } } },
    securityRequirements: [{ schemes: { bearer: { list: [] } } }],
    defaultInputModes: ['text/plain', 'application/json'],
    defaultOutputModes: ['text/plain', 'application/json'],
    skills: skillsOf(agent ? [agent] : availableAgents(agents)),
  });
}
