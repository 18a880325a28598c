/**
 * Tenants: who owns a workflow. A tenant's workflows live in its own namespace of workflow ids, so two tenants may
 * use the same workflow id or idempotency key independently and a record's owner is known from its id alone:
 *
 * - the tenant `default` keeps the ids callers choose, unchanged (every record written before tenants existed is
 *   `default`'s: its id has no separator);
 * - any other tenant's workflow is stored as `<tenant>~<id>` (`~` is never part of a caller's id, `ID_PATTERN`).
 *
 * The stored id is the one every answer shows; a tenant's own calls accept its ids with or without the prefix
 * (`scopedWorkflowId`). The workflow and delegation rows also carry a `tenant` field, written by the script that
 * creates them; the id decides (a row without the field is `default`'s, as its id says).
 */
import { z } from 'zod';
import { ID_PATTERN } from './keys.ts';

/** The tenant of every record and token that names none. */
export const DEFAULT_TENANT = 'default';

/** Between a tenant and a caller's id in a stored workflow id; never part of `ID_PATTERN`. */
export const TENANT_SEPARATOR = '~';

/** Tenant names: 1 to 32 letters, digits, "_" or "-" (safe in ids, keys, job ids and metric labels). */
export const TENANT_PATTERN = /^[A-Za-z0-9_-]{1,32}$/;

/** A tenant name (`TENANT_PATTERN`). */
export const TenantSchema = z.string().regex(TENANT_PATTERN, 'a tenant: 1 to 32 letters, digits, "_" or "-"');

/** A stored workflow id: a caller's id (`ID_PATTERN`), optionally behind `<tenant>~`. */
export const WORKFLOW_ID_PATTERN = new RegExp(`^(?:${TENANT_PATTERN.source.slice(1, -1)}${TENANT_SEPARATOR})?${ID_PATTERN.source.slice(1, -1)}$`);

/** The stored workflow id of `id` (a caller's id, `ID_PATTERN`) in `tenant`'s namespace. */
export const tenantWorkflowId = (tenant: string, id: string): string => (tenant === DEFAULT_TENANT ? id : `${tenant}${TENANT_SEPARATOR}${id}`);

/** The tenant that owns a stored workflow id (`default` when it has no `<tenant>~`). */
export function tenantOfWorkflowId(workflowId: string): string {
  const separator = workflowId.indexOf(TENANT_SEPARATOR);
  return separator > 0 ? workflowId.slice(0, separator) : DEFAULT_TENANT;
}

/**
 * The stored workflow id that `id` names for a caller of `tenant`: its own id, with or without the `<tenant>~` prefix.
 * Undefined when `id` cannot be one of `tenant`'s (another tenant's prefix, or not an id at all): for the caller such a
 * workflow does not exist, so nothing is read (no existence leaks across tenants).
 */
export function scopedWorkflowId(tenant: string, id: string): string | undefined {
  if (!WORKFLOW_ID_PATTERN.test(id)) return undefined;
  if (!id.includes(TENANT_SEPARATOR)) return tenantWorkflowId(tenant, id);
  return tenantOfWorkflowId(id) === tenant && tenant !== DEFAULT_TENANT ? id : undefined;
}

/** The caller's part of a stored workflow id: `id` without its `<tenant>~` (the id itself for the default tenant). */
export function localWorkflowId(workflowId: string): string {
  const separator = workflowId.indexOf(TENANT_SEPARATOR);
  return separator > 0 ? workflowId.slice(separator + 1) : workflowId;
}
