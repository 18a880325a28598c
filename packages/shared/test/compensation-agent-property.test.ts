/**
 * `compensationAgentOf` (attack28): an undo goes to the agent that holds the effect it undoes whenever the target
 * allows it. Kind: a skill compensation picked the first agent with the skill (registration order), not the agent of
 * the attempt it undoes; that agent, having done nothing, answered COMPLETED and the workflow read COMPENSATED with the
 * booking left in place.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { agentKeyOf } from '@durable-a2a/a2a';
import { candidateAgents, compensationAgentOf, type RegisteredAgent } from '../src/registry.ts';

const card = (skills: { id: string; tags: string[] }[]): RegisteredAgent['card'] => ({
  name: 'Agent',
  description: '',
  version: '1',
  skills: skills.map((skill) => ({ ...skill, name: skill.id, description: '' })),
  capabilities: {},
  interfaces: [{ url: 'http://127.0.0.1:7202/a2a', protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
});

const urls = ['http://127.0.0.1:7201/.well-known/agent-card.json', 'http://127.0.0.1:7202/.well-known/agent-card.json', 'http://127.0.0.1:7203/.well-known/agent-card.json', 'http://127.0.0.1:7204/.well-known/agent-card.json'];
/** Other spellings of the same card URLs (the attempt's journaled URL may be any of them). */
const spellings = (url: string) => [url, url.replace('/.well-known/agent-card.json', ''), url.replace('/.well-known/agent-card.json', '/'), url.replace('http://', 'HTTP://')];

const agentArbitrary = (cardUrl: string) =>
  fc.record({
    skills: fc.subarray([{ id: 'book', tags: [] as string[] }, { id: 'cancel', tags: ['fast'] }, { id: 'book', tags: ['eu'] }]),
    disabled: fc.boolean(),
    unavailable: fc.boolean(),
    tenant: fc.constantFrom(undefined, 'acme', 'other'),
  }).map(({ skills, disabled, unavailable, tenant }): RegisteredAgent => ({
    cardUrl,
    registeredAt: 1,
    refreshedAt: 1,
    card: card(skills),
    ...(disabled ? { disabled: { since: 1 } } : {}),
    ...(unavailable ? { unavailable: { reason: 'card', since: 1 } } : {}),
    ...(tenant ? { tenant } : {}),
  }));

const registry = fc.shuffledSubarray(urls).chain((chosen) => fc.tuple(...chosen.map(agentArbitrary)));
const target = fc.record({ skill: fc.constantFrom('book', 'cancel', 'none'), tags: fc.constantFrom<string[] | undefined>(undefined, ['fast'], ['eu']) });

describe('compensationAgentOf', () => {
  it('property: the agent of the undone attempt when it is registered, visible, with the skill; else the first candidate; a fixed agent as given', () => {
    fc.assert(
      fc.property(registry, target, fc.constantFrom(...urls), fc.nat(3), fc.constantFrom('default', 'acme'), fc.option(fc.constantFrom(...urls), { nil: undefined }), (list, skillTarget, undone, spelling, tenant, fixed) => {
        const undoing = spellings(undone)[spelling]!;
        const withTarget = { ...skillTarget, ...(fixed ? { agent: fixed } : {}) };
        const chosen = compensationAgentOf(withTarget, undoing, list, tenant);
        if (fixed) return void expect(chosen).toBe(fixed);
        const candidates = candidateAgents(skillTarget, list, tenant);
        const holder = list.find(
          (agent) => agentKeyOf(agent.cardUrl) === agentKeyOf(undoing) && (agent.tenant === undefined || agent.tenant === tenant) && agent.card.skills.some((skill) => skill.id === skillTarget.skill && (skillTarget.tags ?? []).every((tag) => skill.tags.includes(tag))),
        );
        expect(chosen).toBe(holder?.cardUrl ?? candidates[0]);
        // Never an agent without the skill, nor another tenant's.
        if (chosen !== undefined) {
          const agent = list.find((entry) => entry.cardUrl === chosen)!;
          expect(agent.card.skills.some((skill) => skill.id === skillTarget.skill)).toBe(true);
          expect(agent.tenant === undefined || agent.tenant === tenant).toBe(true);
        }
      }),
      {
        numRuns: 400,
        examples: [
          // attack28's input: A (first) and B both book; B did the attempt; the undo goes to B, not A.
          [[{ cardUrl: urls[0]!, registeredAt: 1, refreshedAt: 1, card: card([{ id: 'book', tags: [] }]) }, { cardUrl: urls[1]!, registeredAt: 1, refreshedAt: 1, card: card([{ id: 'book', tags: [] }]) }], { skill: 'book', tags: undefined }, urls[1]!, 1, 'default', undefined],
          // The agent that did it is disabled: still the one asked to undo it.
          [[{ cardUrl: urls[0]!, registeredAt: 1, refreshedAt: 1, card: card([{ id: 'book', tags: [] }]) }, { cardUrl: urls[1]!, registeredAt: 1, refreshedAt: 1, card: card([{ id: 'book', tags: [] }]), disabled: { since: 1 } }], { skill: 'book', tags: undefined }, urls[1]!, 0, 'default', undefined],
          // It lacks the compensation's skill: the first agent that has it (a separate canceling service).
          [[{ cardUrl: urls[0]!, registeredAt: 1, refreshedAt: 1, card: card([{ id: 'cancel', tags: ['fast'] }]) }, { cardUrl: urls[1]!, registeredAt: 1, refreshedAt: 1, card: card([{ id: 'book', tags: [] }]) }], { skill: 'cancel', tags: undefined }, urls[1]!, 2, 'default', undefined],
          // Nobody has the skill: none.
          [[{ cardUrl: urls[0]!, registeredAt: 1, refreshedAt: 1, card: card([{ id: 'book', tags: [] }]) }], { skill: 'none', tags: undefined }, urls[0]!, 0, 'default', undefined],
        ],
      },
    );
  });

  it('no agent for the skill: undefined (the compensation is journaled unassigned and refused, a person decides)', () => {
    expect(compensationAgentOf({ skill: 'cancel' }, urls[0]!, [])).toBeUndefined();
  });
});
