/**
 * The demo agent's Agent Card (SDK TS form): its interfaces in preference order (spec §8.3), its
 * capabilities and skills, from `DemoAgentOptions`.
 */
import type { AgentCard, AgentInterface } from '@a2a-js/sdk';
import type { DemoAgentBinding, DemoAgentOptions } from './agent.ts';

/** The card served at `${baseUrl}/.well-known/agent-card.json`. */
export function buildCard(baseUrl: string, options: DemoAgentOptions): AgentCard {
  const urls: Record<DemoAgentBinding, string> = { JSONRPC: `${baseUrl}/a2a/jsonrpc`, 'HTTP+JSON': `${baseUrl}/a2a/rest` };
  const interfaces: AgentInterface[] = (options.bindings ?? ['JSONRPC', 'HTTP+JSON']).map((binding) => ({
    url: urls[binding],
    protocolBinding: binding,
    tenant: '',
    protocolVersion: '1.0',
  }));
  const skills = options.skills ?? [{ id: 'demo', name: 'Demo', description: 'Does what the test scripted', tags: ['demo'] }];
  return {
    name: options.name ?? 'Demo agent',
    description: options.description ?? 'A scripted A2A agent for integration tests',
    supportedInterfaces: interfaces,
    provider: undefined,
    version: '1.0.0',
    capabilities: {
      streaming: options.streaming ?? true,
      pushNotifications: options.pushNotifications ?? true,
      extensions: [],
      extendedAgentCard: false,
    },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: skills.map((skill) => ({
      id: skill.id,
      name: skill.name,
      description: skill.description,
      tags: skill.tags,
      examples: skill.examples ?? [],
      inputModes: [],
      outputModes: [],
      securityRequirements: [],
    })),
    signatures: [],
  };
}
