/**
 * Tenant quotas on a Redis Cluster (docs/tenants.md "Quotas"): a tenant's quota sets live in another hash slot than its
 * workflows, so the create script cannot apply them there. They are refused at start-up, loudly, by the producer, the
 * API server and the API's environment, before anything connects; without quotas a Cluster is accepted as before.
 * Nothing connects in these tests (the refusal comes first; the accepted cases use a lazy client and close it).
 */
import { Cluster } from 'ioredis';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { QuotasOnClusterError, createProducer } from '@durable-a2a/producer';
import { TenantsConfigError, createServer, parseServerEnvironment, tenantsFrom } from '@durable-a2a/producer/server';

const CLUSTER_URL = 'redis-cluster://127.0.0.1:1,127.0.0.1:2';
const QUOTAS = JSON.stringify({ quotas: { billing: { maxInFlight: 500 } } });

describe('quotas on a Redis Cluster', () => {
  it('createProducer with quotas on a redis-cluster:// URL throws QuotasOnClusterError naming the option and the reason', () => {
    const attempt = () => createProducer({ redis: CLUSTER_URL, quotas: { tenants: { billing: { maxInFlight: 500 } } } });
    expect(attempt).toThrow(QuotasOnClusterError);
    expect(attempt).toThrow(/createProducer\(\{ quotas \}\): tenant quotas cannot be applied on a Redis Cluster .*another hash slot/);
  });

  it('createProducer with a fallback quota on a Cluster client throws; without quotas (or with only unlimited entries) it is accepted', async () => {
    const cluster = new Cluster([{ host: '127.0.0.1', port: 1 }], { lazyConnect: true });
    try {
      expect(() => createProducer({ redis: cluster, quotas: { default: { maxStored: 10 } } })).toThrow(QuotasOnClusterError);
      await createProducer({ redis: cluster }).close();
      await createProducer({ redis: cluster, quotas: { tenants: { billing: {} } } }).close();
    } finally {
      cluster.disconnect();
    }
  });

  it('createServer with tenants quotas on a redis-cluster:// URL throws before connecting', () => {
    expect(() => createServer({ redisUrl: CLUSTER_URL, apiTokens: ['ops-token-0123456789'], tenants: JSON.parse(QUOTAS) })).toThrow(/DA2A_TENANTS quotas.*Redis Cluster/);
  });

  it("the API's environment: DA2A_TENANTS with quotas and a Cluster REDIS_URL is a TenantsConfigError at DA2A_TENANTS.quotas; one server or no quotas pass", () => {
    const environment = (variables: Record<string, string>) => parseServerEnvironment({ DA2A_API_TOKENS: 'ops-token-0123456789', ...variables });
    let refusal: unknown;
    try {
      tenantsFrom(environment({ REDIS_URL: CLUSTER_URL, DA2A_TENANTS: QUOTAS }));
    } catch (error) {
      refusal = error;
    }
    expect(refusal).toBeInstanceOf(TenantsConfigError);
    expect((refusal as TenantsConfigError).issues).toEqual([{ path: ['DA2A_TENANTS', 'quotas'], message: expect.stringMatching(/cannot be applied on a Redis Cluster/) }]);
    expect(tenantsFrom(environment({ REDIS_URL: 'redis://127.0.0.1:6379', DA2A_TENANTS: QUOTAS }))?.quotas).toEqual({ billing: { maxInFlight: 500 } });
    expect(tenantsFrom(environment({ REDIS_URL: CLUSTER_URL, DA2A_TENANTS: JSON.stringify({ tokens: {} }) }))?.quotas).toEqual({});
  });

  it('property: on a Cluster the producer refuses exactly when some tenant (or the fallback) has a limit', async () => {
    const limits = fc.record({ maxInFlight: fc.option(fc.integer({ min: 1, max: 1000 }), { nil: undefined }), maxStored: fc.option(fc.integer({ min: 1, max: 1000 }), { nil: undefined }) });
    const cluster = new Cluster([{ host: '127.0.0.1', port: 1 }], { lazyConnect: true });
    try {
      await fc.assert(
        fc.asyncProperty(fc.option(limits, { nil: undefined }), fc.dictionary(fc.constantFrom('a', 'b', 'c'), limits), async (fallback, tenants) => {
          const defined = (entry: { maxInFlight?: number; maxStored?: number }) => entry.maxInFlight !== undefined || entry.maxStored !== undefined;
          const binds = (fallback !== undefined && defined(fallback)) || Object.values(tenants).some(defined);
          const quotas = { ...(fallback ? { default: fallback } : {}), tenants };
          let refused = false;
          try {
            await createProducer({ redis: cluster, quotas }).close();
          } catch (error) {
            expect(error).toBeInstanceOf(QuotasOnClusterError);
            refused = true;
          }
          expect(refused).toBe(binds);
        }),
        { numRuns: 50 },
      );
    } finally {
      cluster.disconnect();
    }
  });
});
