/**
 * The registry's pure rules: one spelling per Agent Card URL (`normalizeAgentCardUrl`, `agentKeyOf`), entries under
 * other spellings merged (`mergeSpellings`), candidates without a disabled agent or a second spelling of one
 * (`candidateAgents`), and the decider never taking another spelling of a tried agent for another agent.
 */
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { AgentCardError, agentKeyOf, normalizeAgentCardUrl } from '@durable-a2a/a2a';
import { DEFAULT_TENANT } from '../src/journal/tenant.ts';
import { agentVisibleTo, candidateAgents, type RegisteredAgent } from '../src/registry.ts';
import { agentIdOf, agentView, mergeSpellings } from '../src/registry-view.ts';
import { decide, firstAttempts } from '../src/decide.ts';
import type { WorkflowSnapshot } from '../src/decide-types.ts';
import { WorkflowDefinitionSchema } from '../src/workflow.ts';

describe('normalizeAgentCardUrl', () => {
  it('one card URL per agent: the base URL, the card URL and the base URL with a slash are one card URL', () => {
    const spellings = ['http://127.0.0.1:7202', 'http://127.0.0.1:7202/.well-known/agent-card.json', 'http://127.0.0.1:7202/'];
    expect(new Set(spellings.map(normalizeAgentCardUrl))).toEqual(new Set(['http://127.0.0.1:7202/.well-known/agent-card.json']));
  });

  it('keeps a card path and a query, drops the fragment, default port, case of scheme and host', () => {
    expect(normalizeAgentCardUrl('HTTPS://Agents.Example.COM:443/cards/travel.json/?tenant=a#top')).toBe('https://agents.example.com/cards/travel.json?tenant=a');
    expect(normalizeAgentCardUrl('http://example.com/a/b/../agent.json')).toBe('http://example.com/a/agent.json');
    expect(normalizeAgentCardUrl('http://example.com/some/base/path/')).toBe('http://example.com/.well-known/agent-card.json');
    expect(() => normalizeAgentCardUrl('ftp://example.com/')).toThrow(AgentCardError);
    expect(agentKeyOf('handler:refund')).toBe('handler:refund');
  });

  const label = fc.stringMatching(/^[a-z][a-z0-9]{0,8}$/);
  const host = fc.oneof(fc.constant('127.0.0.1'), fc.constant('localhost'), fc.tuple(label, label).map(([a, b]) => `${a}.${b}.test`));
  const cardPath = fc.oneof(fc.constant('/.well-known/agent-card.json'), label.map((name) => `/cards/${name}.json`));
  /** An agent: scheme, host, port (undefined: the default), card path, query ('' for none). */
  const agent = fc.record({ scheme: fc.constantFrom('http', 'https'), host, port: fc.option(fc.integer({ min: 1, max: 65535 }), { nil: undefined }), path: cardPath, query: fc.constantFrom('', '?tenant=a', '?v=2&x=y') });
  type Agent = typeof agent extends fc.Arbitrary<infer T> ? T : never;
  const randomCase = (text: string, flips: boolean[]) => [...text].map((char, index) => (flips[index % Math.max(1, flips.length)] ? char.toUpperCase() : char)).join('');
  /** One spelling of `agent`'s card URL: cases, an explicit default port, a base URL for the well-known path, trailing slashes, a dot segment, a fragment. */
  const spelling = (target: Agent) =>
    fc.record({ flips: fc.array(fc.boolean(), { minLength: 1, maxLength: 12 }), explicitPort: fc.boolean(), base: fc.boolean(), slashes: fc.integer({ min: 0, max: 2 }), dot: fc.boolean(), fragment: fc.option(label, { nil: undefined }) }).map((choice) => {
      const defaultPort = target.scheme === 'http' ? 80 : 443;
      const port = target.port ?? (choice.explicitPort ? defaultPort : undefined);
      const authority = `${randomCase(target.host, choice.flips)}${port === undefined ? '' : `:${port}`}`;
      const asBase = choice.base && target.path === '/.well-known/agent-card.json' && target.query === '';
      const path = (asBase ? '' : `${choice.dot ? '/.' : ''}${target.path}`) + '/'.repeat(choice.slashes);
      return `${randomCase(target.scheme, choice.flips)}://${authority}${path}${asBase ? '' : target.query}${choice.fragment ? `#${choice.fragment}` : ''}`;
    });

  it('property: every spelling of one card URL normalizes to the same URL, and to the same agent id', () => {
    fc.assert(
      fc.property(
        agent.chain((target) => fc.tuple(fc.constant(target), spelling(target), spelling(target))),
        ([, first, second]) => {
          expect(normalizeAgentCardUrl(first)).toBe(normalizeAgentCardUrl(second));
          expect(agentIdOf(first)).toBe(agentIdOf(second));
          expect(normalizeAgentCardUrl(normalizeAgentCardUrl(first))).toBe(normalizeAgentCardUrl(first));
        },
      ),
      { numRuns: 500 },
    );
  });

  it('property: another host, port, card path or query stays another agent', () => {
    const effectivePort = (target: Agent) => target.port ?? (target.scheme === 'http' ? 80 : 443);
    const same = (a: Agent, b: Agent) => a.scheme === b.scheme && a.host === b.host && effectivePort(a) === effectivePort(b) && a.path === b.path && a.query === b.query;
    fc.assert(
      fc.property(
        fc.tuple(agent, agent).filter(([a, b]) => !same(a, b)).chain(([a, b]) => fc.tuple(spelling(a), spelling(b))),
        ([first, second]) => {
          expect(normalizeAgentCardUrl(first)).not.toBe(normalizeAgentCardUrl(second));
        },
      ),
      { numRuns: 500 },
    );
  });
});

const card = (skill: string, name = 'Agent'): RegisteredAgent['card'] => ({
  name,
  description: '',
  version: '1',
  skills: [{ id: skill, name: skill, description: '', tags: [] }],
  capabilities: {},
  interfaces: [{ url: 'http://127.0.0.1:7202/a2a', protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
});
const registered = (cardUrl: string, extra: Partial<RegisteredAgent> = {}): RegisteredAgent => ({ cardUrl, registeredAt: 1, refreshedAt: 1, card: card('book'), ...extra });

describe('mergeSpellings (the migration of entries stored before normalization)', () => {
  it('three spellings become one entry: the newest card, the earliest registration, the others to delete', () => {
    const merges = mergeSpellings([
      ['http://127.0.0.1:7202', registered('http://127.0.0.1:7202', { registeredAt: 10, refreshedAt: 30, card: card('book', 'newest') })],
      ['http://127.0.0.1:7202/.well-known/agent-card.json', registered('x', { registeredAt: 20, refreshedAt: 20, card: card('book', 'older') })],
      ['http://127.0.0.1:7202/', registered('x', { registeredAt: 5, refreshedAt: 5, card: card('book', 'oldest') })],
      ['http://127.0.0.1:7300/.well-known/agent-card.json', registered('http://127.0.0.1:7300/.well-known/agent-card.json')],
    ]);
    expect(merges).toEqual([
      {
        key: 'http://127.0.0.1:7202/.well-known/agent-card.json',
        merged: expect.objectContaining({ cardUrl: 'http://127.0.0.1:7202/.well-known/agent-card.json', registeredAt: 5, refreshedAt: 30, card: card('book', 'newest') }),
        stale: ['http://127.0.0.1:7202', 'http://127.0.0.1:7202/'],
      },
    ]);
  });
});

describe('candidateAgents', () => {
  const url = 'http://127.0.0.1:7202/.well-known/agent-card.json';
  it('one candidate per agent: a fixed agent and its registered spelling are one candidate; a disabled or unavailable agent is never one', () => {
    expect(candidateAgents({ agent: 'http://127.0.0.1:7202/', skill: 'book' }, [registered(url)])).toEqual(['http://127.0.0.1:7202/']);
    const other = 'http://127.0.0.1:7300/.well-known/agent-card.json';
    const third = 'http://127.0.0.1:7400/.well-known/agent-card.json';
    expect(candidateAgents({ skill: 'book' }, [registered(url, { disabled: { since: 1 } }), registered(other), registered(third, { unavailable: { reason: 'x', since: 1 } })])).toEqual([other]);
    // An explicit agent is kept even while disabled: disabling is about picking agents for a skill.
    expect(candidateAgents({ agent: url }, [registered(url, { disabled: { since: 1 } })])).toEqual([url]);
  });

  it('the view says why a disabled agent is not picked', () => {
    const view = agentView(registered(url, { disabled: { since: Date.parse('2026-01-02T03:04:05Z'), reason: 'maintenance' } }), { recent: '1101' });
    expect(view).toMatchObject({ status: 'disabled', statusReason: expect.stringContaining('maintenance'), disabled: { since: '2026-01-02T03:04:05.000Z', reason: 'maintenance' } });
    expect(view.health).toEqual({ window: 20, calls: 4, successes: 3, successRate: 0.75 });
  });
});

/** candidateAgents as it was before a target without a skill returned its fixed agent at once (the reference, verbatim). */
function candidatesBefore(target: { agent?: string; skill?: string; tags?: string[] }, list: readonly RegisteredAgent[], tenant: string = DEFAULT_TENANT): string[] {
  const withSkill = (all: readonly RegisteredAgent[], skillId: string, tags: readonly string[]) =>
    all.filter((agent) => !agent.unavailable && !agent.disabled && agent.card.skills.some((skill) => skill.id === skillId && tags.every((tag) => skill.tags.includes(tag))));
  const chosen: string[] = target.agent ? [target.agent] : [];
  const seen = new Set(chosen.map(agentKeyOf));
  const visible = list.filter((agent) => agentVisibleTo(agent, tenant));
  for (const agent of target.skill ? withSkill(visible, target.skill, target.tags ?? []) : []) {
    const key = agentKeyOf(agent.cardUrl);
    if (seen.has(key)) continue;
    seen.add(key);
    chosen.push(agent.cardUrl);
  }
  return chosen;
}

describe('candidateAgents and firstAttempts: no agent key without a choice to make', () => {
  const spellingOf = fc.constantFrom('http://127.0.0.1:7202', 'http://127.0.0.1:7202/', 'HTTP://127.0.0.1:7202/.well-known/agent-card.json', 'http://127.0.0.1:7300/', 'https://b.example/cards/x.json?t=1', 'handler:refund', 'not a url');
  const agentEntry = fc.record({
    cardUrl: spellingOf,
    skill: fc.constantFrom('book', 'quote'),
    tags: fc.subarray(['eu', 'fast']),
    disabled: fc.boolean(),
    unavailable: fc.boolean(),
    tenant: fc.option(fc.constantFrom('t1', 't2'), { nil: undefined }),
  }).map(({ cardUrl, skill, tags, disabled, unavailable, tenant }): RegisteredAgent => ({
    ...registered(cardUrl, { card: { ...card(skill), skills: [{ id: skill, name: skill, description: '', tags }] } }),
    ...(disabled ? { disabled: { since: 1 } } : {}),
    ...(unavailable ? { unavailable: { reason: 'x', since: 1 } } : {}),
    ...(tenant ? { tenant } : {}),
  }));
  const target = fc.record({ agent: spellingOf, skill: fc.constantFrom('book', 'quote', 'none'), tags: fc.subarray(['eu', 'fast']) }, { requiredKeys: [] });

  it("a fixed agent's first attempt (delegate's) parses no URL: no agent key is computed", () => {
    const definition = WorkflowDefinitionSchema.parse({ workflowId: 'w', steps: [{ name: 'main', agent: 'http://127.0.0.1:7202', message: { text: 'go' } }] });
    const canParse = vi.spyOn(URL, 'canParse');
    try {
      const attempts = firstAttempts(definition, (step) => candidateAgents(step, [registered('http://127.0.0.1:7300/.well-known/agent-card.json')]));
      expect(attempts.map((attempt) => attempt.agentCardUrl)).toEqual(['http://127.0.0.1:7202']);
      // Two on the old code: the candidates' seen set and the search over untried agents.
      expect(canParse).not.toHaveBeenCalled();
    } finally {
      canParse.mockRestore();
    }
  });

  it('property: the candidates of a target are those of the rule before (a target without a skill: its fixed agent, or none)', () => {
    fc.assert(
      fc.property(target, fc.array(agentEntry, { maxLength: 5 }), fc.option(fc.constantFrom('t1', 't2'), { nil: undefined }), (aim, list, tenant) => {
        expect(candidateAgents(aim, list, tenant)).toEqual(candidatesBefore(aim, list, tenant));
      }),
      { numRuns: 1_000 },
    );
  });

  it('property: a first attempt goes to the first candidate, as the search over untried agents chose it', () => {
    fc.assert(
      fc.property(fc.array(fc.array(spellingOf, { maxLength: 3 }), { minLength: 1, maxLength: 3 }), (lists) => {
        const definition = WorkflowDefinitionSchema.parse({ workflowId: 'w', steps: lists.map((_, index) => ({ name: `s${index}`, skill: 'book', message: { text: 'go' } })) });
        const candidates = (step: { name: string }) => lists[Number(step.name.slice(1))]!;
        const before = lists.flatMap((list, index) => {
          const first = list.find((url) => !new Set<string>().has(agentKeyOf(url)));
          return first === undefined ? [] : [{ step: `s${index}`, agentCardUrl: first }];
        });
        expect(firstAttempts(definition, candidates).map(({ step, agentCardUrl }) => ({ step: step.name, agentCardUrl }))).toEqual(before);
      }),
      { numRuns: 500 },
    );
  });
});

describe('decide: another spelling of a tried agent is that agent', () => {
  it('maxAttemptsPerStep 2, the step failed on the one agent: the workflow fails with "no other agent", never a second attempt to it', () => {
    const definition = WorkflowDefinitionSchema.parse({ workflowId: 'one-agent', maxAttemptsPerStep: 2, steps: [{ name: 'main', skill: 'book', message: { text: 'go' } }] });
    const snapshot = {
      definition,
      state: 'RUNNING',
      attempts: [{ step: 'main', attempt: 1, delegationId: 'main.1', kind: 'step', state: 'FAILED', agentCardUrl: 'http://127.0.0.1:7202', taskId: 't1', contextId: 'c1', error: { code: 'TASK_FAILED', message: 'no' } }],
    } as unknown as WorkflowSnapshot;
    // The registry as it was before normalization: three spellings of the agent the first attempt went to.
    const spellings = ['http://127.0.0.1:7202/.well-known/agent-card.json', 'http://127.0.0.1:7202/', 'HTTP://127.0.0.1:7202'];
    const decision = decide(snapshot, () => spellings);
    expect(decision).toMatchObject({ kind: 'fail' });
    expect(JSON.stringify(decision)).toContain('no other agent can run step main');
  });
});
