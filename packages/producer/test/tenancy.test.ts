import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { DEFAULT_TENANT, ID_PATTERN, SendJobSchema, candidateAgents, type RegisteredAgent, WORKFLOW_ID_PATTERN, localWorkflowId, scopedWorkflowId, tenantOfWorkflowId, tenantWorkflowId } from '@durable-a2a/shared';
import { NotFoundError } from '../src/errors.ts';
import { listedTenant, quotaOf, resolveWorkflowId, scopedFilter, type ProducerScope } from '../src/tenancy.ts';
import { parseApiTokens } from '../src/server/callers.ts';
import { TenantsConfigError, parseTenantsConfig, quotaSettingsOf } from '../src/server/tenants.ts';

const tenant = fc.stringMatching(/^[A-Za-z0-9_-]{1,32}$/);
const id = fc.stringMatching(/^[A-Za-z0-9._-]{1,128}$/);

describe('tenant ids (tenant.ts)', () => {
  it('a tenant’s stored id names its tenant and the caller’s id; default’s ids stay as chosen', () => {
    fc.assert(
      fc.property(tenant, id, (owner, local) => {
        const stored = tenantWorkflowId(owner, local);
        expect(stored).toMatch(WORKFLOW_ID_PATTERN);
        expect(tenantOfWorkflowId(stored)).toBe(owner);
        expect(localWorkflowId(stored)).toBe(local);
        if (owner === DEFAULT_TENANT) expect(stored).toBe(local);
      }),
    );
  });

  it('two tenants never share a stored id, whatever ids they choose', () => {
    fc.assert(
      fc.property(tenant, tenant, id, id, (first, second, firstId, secondId) => {
        fc.pre(first !== second);
        expect(tenantWorkflowId(first, firstId)).not.toBe(tenantWorkflowId(second, secondId));
      }),
    );
  });

  it('a caller resolves its own ids (with or without its prefix) and never another tenant’s', () => {
    fc.assert(
      fc.property(tenant, tenant, id, (caller, owner, local) => {
        const stored = tenantWorkflowId(owner, local);
        const resolved = scopedWorkflowId(caller, stored);
        if (caller === owner) expect(resolved).toBe(stored);
        else expect(resolved === undefined || tenantOfWorkflowId(resolved) === caller).toBe(true);
        expect(scopedWorkflowId(caller, local)).toBe(tenantWorkflowId(caller, local));
      }),
    );
    expect(scopedWorkflowId('default', 'blue~x')).toBeUndefined();
    expect(scopedWorkflowId('red', 'blue~x')).toBeUndefined();
    expect(scopedWorkflowId('red', 'a~b~c')).toBeUndefined();
    expect(ID_PATTERN.test('blue~x')).toBe(false);
  });

  it('a send job carries its tenant; one enqueued before tenants reads as default', () => {
    expect(SendJobSchema.parse({ workflowId: 'blue~x', delegationId: 'main.1' }).tenant).toBe('default');
    expect(SendJobSchema.parse({ workflowId: 'blue~x', delegationId: 'main.1', tenant: 'blue' }).tenant).toBe('blue');
  });
});

describe('scopes (tenancy.ts)', () => {
  const service: ProducerScope = { tenant: 'blue', role: 'service' };
  const operator: ProducerScope = { tenant: 'default', role: 'operator' };

  it('an operator addresses stored ids as they are; a service its own namespace; anything else is not found', () => {
    expect(resolveWorkflowId(operator, 'blue~x')).toBe('blue~x');
    expect(resolveWorkflowId(operator, 'x')).toBe('x');
    expect(resolveWorkflowId(service, 'x')).toBe('blue~x');
    expect(resolveWorkflowId(service, 'blue~x')).toBe('blue~x');
    expect(() => resolveWorkflowId(service, 'red~x')).toThrow(NotFoundError);
    expect(() => resolveWorkflowId(operator, 'a b')).toThrow(NotFoundError);
  });

  it('listings: a service lists its tenant (another tenant asked for: nothing); an operator what it asks for', () => {
    expect(listedTenant(service, undefined)).toBe('blue');
    expect(listedTenant(service, 'red')).toBe('none');
    expect(listedTenant(operator, undefined)).toBeUndefined();
    expect(listedTenant(operator, 'red')).toBe('red');
    expect(scopedFilter(service, { idPrefix: 'ord' })).toEqual({ idPrefix: 'blue~ord', tenant: 'blue' });
    expect(scopedFilter(operator, { idPrefix: 'ord', tenant: 'red' })).toEqual({ idPrefix: 'red~ord', tenant: 'red' });
    expect(scopedFilter(operator, { idPrefix: 'ord' })).toEqual({ idPrefix: 'ord' });
    expect(scopedFilter(service, { tenant: 'red' })).toBeUndefined();
  });

  it('quotas: a tenant’s own entry, else `*`; a missing limit never binds; no entry, no quota', () => {
    const settings = quotaSettingsOf(parseTenantsConfig('{"quotas":{"*":{"maxInFlight":10},"blue":{"maxStored":5}}}', 'test'));
    expect(quotaOf(settings, 'blue')).toEqual({ maxInFlight: 2 ** 31, maxStored: 5 });
    expect(quotaOf(settings, 'red')).toEqual({ maxInFlight: 10, maxStored: 2 ** 31 });
    expect(quotaOf(quotaSettingsOf(undefined), 'red')).toBeUndefined();
  });
});

describe('agents registered for one tenant (candidateAgents)', () => {
  const agent = (cardUrl: string, tenant?: string): RegisteredAgent => ({
    cardUrl,
    registeredAt: 1,
    refreshedAt: 1,
    ...(tenant ? { tenant } : {}),
    card: { name: cardUrl, description: '', version: '1', skills: [{ id: 'book', name: 'book', description: '', tags: [] }], capabilities: {}, interfaces: [] },
  });
  const registered = [agent('http://blue.example/card', 'blue'), agent('http://shared.example/card')];

  it('are candidates for their tenant’s workflows only; shared agents for every tenant; a fixed agent always', () => {
    expect(candidateAgents({ skill: 'book' }, registered, 'blue')).toEqual(['http://blue.example/card', 'http://shared.example/card']);
    expect(candidateAgents({ skill: 'book' }, registered, 'red')).toEqual(['http://shared.example/card']);
    expect(candidateAgents({ skill: 'book' }, registered)).toEqual(['http://shared.example/card']);
    expect(candidateAgents({ agent: 'http://blue.example/card', skill: 'book' }, registered, 'red')).toEqual(['http://blue.example/card', 'http://shared.example/card']);
  });
});

describe('tenants configuration (tenants.ts)', () => {
  it('tokens get their entry’s tenant and role; a token without one is the default tenant’s operator', () => {
    const config = parseTenantsConfig('{"tokens":{"billing":{"tenant":"billing","role":"service"},"audit":{"role":"viewer"}}}', 'DA2A_TENANTS');
    const tokens = parseApiTokens(['billing:b-secret', 'audit:a-secret', 'ops:o-secret', 'bare-secret'], config);
    expect(tokens.map(({ name, scope }) => [name, scope.tenant, scope.role])).toEqual([
      ['billing', 'billing', 'service'],
      ['audit', 'default', 'viewer'],
      ['ops', 'default', 'operator'],
      [tokens[3]!.name, 'default', 'operator'],
    ]);
  });

  it('refuses what an operator would regret: a role missing, a bad tenant, an unknown field, a token no entry has, not JSON', () => {
    expect(() => parseTenantsConfig('{"tokens":{"billing":{"tenant":"billing"}}}', 'DA2A_TENANTS')).toThrow(TenantsConfigError);
    expect(() => parseTenantsConfig('{"tokens":{"billing":{"tenant":"a~b","role":"service"}}}', 'DA2A_TENANTS')).toThrow(/tenant/);
    expect(() => parseTenantsConfig('{"tokens":{},"quota":{}}', 'DA2A_TENANTS')).toThrow(TenantsConfigError);
    expect(() => parseTenantsConfig('{"quotas":{"blue":{"maxInFlight":0}}}', 'DA2A_TENANTS')).toThrow(/maxInFlight/);
    expect(() => parseTenantsConfig('not json', 'DA2A_TENANTS_FILE /etc/tenants.json')).toThrow(/DA2A_TENANTS_FILE \/etc\/tenants.json: not JSON/);
    const config = parseTenantsConfig('{"tokens":{"biling":{"tenant":"billing","role":"service"}}}', 'DA2A_TENANTS');
    expect(() => parseApiTokens(['billing:b-secret'], config)).toThrow(/no API token is named biling/);
  });
});
