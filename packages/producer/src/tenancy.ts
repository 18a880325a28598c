/**
 * Who a producer acts for (docs/tenants.md). A scope is a tenant and a role:
 * - `operator` sees and acts on every tenant's workflows, addressed by their stored ids (`<tenant>~<id>`, or a
 *   `default` tenant's bare id), and alone may change the agent registry;
 * - `service` starts, reads, answers and cancels its own tenant's workflows, addressed by its own ids with or without
 *   the `<tenant>~` prefix;
 * - `viewer` reads its own tenant's workflows and writes nothing.
 * Another tenant's workflow does not exist for a service or viewer: its id is not resolved at all (NotFoundError,
 * never a hint that it exists), and listings leave it out.
 */
import { DEFAULT_TENANT, WORKFLOW_ID_PATTERN, scopedWorkflowId, tenantWorkflowId, type TenantQuota, type WorkflowFilter } from '@durable-a2a/shared';
import { ForbiddenError, NotFoundError, QuotasOnClusterError } from './errors.ts';

/** The roles an API token (or a producer) has. */
export const TENANT_ROLES = ['operator', 'service', 'viewer'] as const;
export type TenantRole = (typeof TENANT_ROLES)[number];

/** Who a producer acts for: records it creates belong to `tenant`; `role` says what it may see and do. */
export interface ProducerScope {
  tenant: string;
  role: TenantRole;
}

/** The scope of a producer created without a tenant: the `default` tenant's operator (every tenant, as before tenants). */
export const OPERATOR_SCOPE: ProducerScope = Object.freeze({ tenant: DEFAULT_TENANT, role: 'operator' });

/**
 * Quotas per tenant (`ProducerOptions.quotas`): `default` applies to every tenant without its own entry, an entry's
 * missing limit is unlimited. No entry and no `default`: no quota (nothing counted).
 */
export interface TenantQuotaSettings {
  default?: Partial<TenantQuota>;
  tenants?: Readonly<Record<string, Partial<TenantQuota>>>;
}

/** A limit that never binds (a whole number Lua's JSON decoder reads exactly). */
const UNLIMITED = 2 ** 31;

/** The quota `tenant` is held to, or undefined when none applies. */
export function quotaOf(settings: TenantQuotaSettings | undefined, tenant: string): TenantQuota | undefined {
  const quota = settings?.tenants?.[tenant] ?? settings?.default;
  if (!quota || (quota.maxInFlight === undefined && quota.maxStored === undefined)) return undefined;
  return { maxInFlight: quota.maxInFlight ?? UNLIMITED, maxStored: quota.maxStored ?? UNLIMITED };
}

/** True when `settings` hold at least one limit: the fallback's or a named tenant's (an entry without limits binds nothing). */
export function anyQuota(settings: TenantQuotaSettings | undefined): boolean {
  const binds = (quota: Partial<TenantQuota> | undefined) => quota !== undefined && (quota.maxInFlight !== undefined || quota.maxStored !== undefined);
  return binds(settings?.default) || Object.values(settings?.tenants ?? {}).some(binds);
}

/**
 * Refuses quotas on a Redis Cluster (`onCluster`): they cannot be applied there (`QuotasOnClusterError`), and a limit
 * silently not applied is worse than a start-up error. `setting` names where the quotas came from in the message.
 * @throws QuotasOnClusterError when `settings` hold a quota and `onCluster`
 */
export function refuseQuotasOnCluster(settings: TenantQuotaSettings | undefined, onCluster: boolean, setting: string): void {
  if (onCluster && anyQuota(settings)) throw new QuotasOnClusterError(setting);
}

/** True when the scope sees every tenant's workflows. */
export const seesAllTenants = (scope: ProducerScope): boolean => scope.role === 'operator';

/** The stored id of a workflow `scope` creates under the caller's own id or idempotency key `id`. */
export const createdWorkflowId = (scope: ProducerScope, id: string): string => tenantWorkflowId(scope.tenant, id);

/**
 * The stored workflow id `id` names for `scope` (see the module comment).
 * @throws NotFoundError when it cannot name a workflow the scope sees (nothing is read)
 */
export function resolveWorkflowId(scope: ProducerScope, id: string): string {
  const resolved = seesAllTenants(scope) ? (WORKFLOW_ID_PATTERN.test(id) ? id : undefined) : scopedWorkflowId(scope.tenant, id);
  if (resolved === undefined) throw new NotFoundError(`workflow ${id} not found`);
  return resolved;
}

/** @throws ForbiddenError when `scope` may not write (a viewer): `what` names the refused action */
export function requireWriter(scope: ProducerScope, what: string): void {
  if (scope.role === 'viewer') throw new ForbiddenError(`${what}: a viewer reads only (tenant ${scope.tenant})`);
}

/** @throws ForbiddenError unless `scope` is an operator: `what` names the refused action */
export function requireOperator(scope: ProducerScope, what: string): void {
  if (scope.role !== 'operator') throw new ForbiddenError(`${what}: operators only (the agent registry is shared by every tenant)`);
}

/**
 * The tenant a listing of `scope` keeps, given the `requested` one (an operator's optional filter): an operator's
 * request as given (undefined: every tenant); a service's or viewer's own tenant, or `none` when it asked for
 * another (an empty listing, as if that tenant had nothing).
 */
export function listedTenant(scope: ProducerScope, requested: string | undefined): string | undefined | 'none' {
  if (seesAllTenants(scope)) return requested;
  return requested === undefined || requested === scope.tenant ? scope.tenant : 'none';
}

/**
 * A journal filter narrowed to what `scope` sees (`listedTenant`), its id prefix in the listed tenant's namespace;
 * undefined when nothing can match.
 */
export function scopedFilter(scope: ProducerScope, filter: WorkflowFilter): WorkflowFilter | undefined {
  const tenant = listedTenant(scope, filter.tenant);
  if (tenant === 'none') return undefined;
  const idPrefix = filter.idPrefix !== undefined && tenant !== undefined ? tenantWorkflowId(tenant, filter.idPrefix) : filter.idPrefix;
  return { ...filter, ...(tenant !== undefined ? { tenant } : {}), ...(idPrefix !== undefined ? { idPrefix } : {}) };
}
