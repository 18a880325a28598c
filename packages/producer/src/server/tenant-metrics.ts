/**
 * Per-tenant metrics of the HTTP service (docs/tenants.md "Metrics"): workflows created and creations refused at a
 * quota, labelled by the caller's tenant. The label is bounded: tenants come from the configuration (a token's tenant),
 * never from a request. `/metrics` itself is not scoped: it is the operators' (open, or `DA2A_METRICS_TOKEN`).
 */
import { Counter, type Registry } from 'prom-client';
import type { FastifyInstance } from 'fastify';
import { scopeOf } from './callers.ts';

/** The routes that create workflows, as fastify names them (`request.routeOptions.url`). */
const CREATING_ROUTES = new Set(['/v1/workflows', '/v1/delegations']);

/** Counts, on `app` (the /v1 context), each creation answered 201 and each refused 429, by the caller's tenant. */
export function countTenantCreations(app: FastifyInstance, registry: Registry, tenants: readonly string[]): void {
  const created = new Counter({ name: 'durable_a2a_tenant_workflows_created_total', help: 'Workflows created through /v1, by tenant', labelNames: ['tenant'], registers: [registry] });
  const refused = new Counter({ name: 'durable_a2a_tenant_quota_refusals_total', help: 'Creations refused at a tenant quota (429), by tenant', labelNames: ['tenant'], registers: [registry] });
  // Every configured tenant shows (at 0) from the start: a rate over a series that appears late misses its first count.
  for (const tenant of tenants) {
    created.labels(tenant).inc(0);
    refused.labels(tenant).inc(0);
  }
  app.addHook('onResponse', async (request, reply) => {
    if (request.method !== 'POST' || !CREATING_ROUTES.has(request.routeOptions.url ?? '')) return;
    const tenant = scopeOf(request)?.tenant;
    if (tenant === undefined) return;
    if (reply.statusCode === 201) created.labels(tenant).inc();
    if (reply.statusCode === 429) refused.labels(tenant).inc();
  });
}
