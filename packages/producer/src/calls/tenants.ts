/**
 * Tenant weights in the send queue's fairness (docs/flow-control.md "Tenants"): a tenant of weight 2 gets two sends
 * for another tenant's one while both have work waiting. Kept by the registry, read by every enqueue of a message send.
 */
import { TenantNameSchema, TenantWeightSchema } from '@durable-a2a/shared';
import { parseInput, type ProducerContext } from './context.ts';

/** The weight of a tenant nobody set a weight for. */
export const DEFAULT_TENANT_WEIGHT = 1;

/** One tenant's weight; `set` is false when it is the default (`DEFAULT_TENANT_WEIGHT`). */
export interface TenantWeight {
  tenant: string;
  weight: number;
  set: boolean;
}

/** `Producer.tenantWeights`: every tenant whose weight was set, by name (the others weigh `DEFAULT_TENANT_WEIGHT`). */
export function tenantWeights(context: ProducerContext): Promise<Record<string, number>> {
  return context.registry.tenantWeights();
}

/** `Producer.tenantWeight`: one tenant's weight. Throws ProducerInputError for a name that is not 1 to 64 characters. */
export async function tenantWeight(context: ProducerContext, tenant: string): Promise<TenantWeight> {
  const name = parseInput(TenantNameSchema, tenant);
  const weight = (await context.registry.tenantWeights())[name];
  return { tenant: name, weight: weight ?? DEFAULT_TENANT_WEIGHT, set: weight !== undefined };
}

/**
 * `Producer.setTenantWeight`: sets a tenant's weight (a whole number 1 to 100) or, with undefined, clears it back to
 * `DEFAULT_TENANT_WEIGHT`. Sends enqueued from then on use it. Throws ProducerInputError (nothing written).
 */
export async function setTenantWeight(context: ProducerContext, tenant: string, weight: number | undefined): Promise<TenantWeight> {
  const name = parseInput(TenantNameSchema, tenant);
  const parsed = weight === undefined ? undefined : parseInput(TenantWeightSchema, weight);
  await context.registry.setTenantWeight(name, parsed);
  return { tenant: name, weight: parsed ?? DEFAULT_TENANT_WEIGHT, set: parsed !== undefined };
}
