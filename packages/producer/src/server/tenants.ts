/**
 * The tenants configuration (docs/tenants.md): which tenant and role each API token has, and each tenant's quotas.
 * One JSON document, `DA2A_TENANTS` (inline) or `DA2A_TENANTS_FILE` (a path), parsed once at start-up:
 *
 * ```json
 * {
 *   "tokens": { "billing-api": { "tenant": "billing", "role": "service" }, "alice": { "tenant": "billing", "role": "viewer" } },
 *   "quotas": { "*": { "maxInFlight": 10000 }, "billing": { "maxInFlight": 500, "maxStored": 100000 } }
 * }
 * ```
 *
 * `tokens` names tokens of `DA2A_API_TOKENS` by their name (`name:token`, or `token-<8 hex>` for a bare token); a
 * token it does not name is the `default` tenant's operator, as every token was before tenants. `quotas`: per tenant,
 * `*` for every tenant without its own entry; a missing limit is unlimited.
 */
import { z } from 'zod';
import { DEFAULT_TENANT, TenantSchema } from '@durable-a2a/shared';
import { TENANT_ROLES, type ProducerScope, type TenantQuotaSettings } from '../tenancy.ts';

/** Quota limits: whole numbers of workflows, 1 to 10,000,000. */
const Limit = z.number().int().min(1).max(10_000_000);
const QuotaSchema = z.strictObject({ maxInFlight: Limit.optional(), maxStored: Limit.optional() });

/** The tenants document (see the module comment). */
export const TenantsConfigSchema = z.strictObject({
  tokens: z
    .record(z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, 'an API token name (DA2A_API_TOKENS entries are name:token)'), z.strictObject({ tenant: TenantSchema.default(DEFAULT_TENANT), role: z.enum(TENANT_ROLES) }))
    .default({}),
  quotas: z.record(z.union([z.literal('*'), TenantSchema]), QuotaSchema).default({}),
});
export type TenantsConfig = z.output<typeof TenantsConfigSchema>;
export type TenantsConfigInput = z.input<typeof TenantsConfigSchema>;

/** A tenants document that does not parse: `issues` name the source and each bad field (never a token: there is none in it). */
export class TenantsConfigError extends Error {
  override readonly name = 'TenantsConfigError';
  constructor(readonly issues: { path: string[]; message: string }[]) {
    super(issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; '));
  }
}

/**
 * The tenants document in `text` (JSON); `source` names where it came from in the error.
 * @throws TenantsConfigError naming the source and every bad field
 */
export function parseTenantsConfig(text: string, source: string): TenantsConfig {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new TenantsConfigError([{ path: [source], message: `not JSON (${error instanceof Error ? error.message : String(error)})` }]);
  }
  const parsed = TenantsConfigSchema.safeParse(json);
  if (!parsed.success) throw new TenantsConfigError(parsed.error.issues.map((issue) => ({ path: [source, ...issue.path.map(String)], message: issue.message })));
  return parsed.data;
}

/** The scope of the token named `name`: its entry's tenant and role, else the `default` tenant's operator. */
export function scopeOfTokenName(config: TenantsConfig | undefined, name: string): ProducerScope {
  const entry = config?.tokens[name];
  return entry ? { tenant: entry.tenant, role: entry.role } : { tenant: DEFAULT_TENANT, role: 'operator' };
}

/** The producer's quota settings of the document. */
export function quotaSettingsOf(config: TenantsConfig | undefined): TenantQuotaSettings {
  const { '*': fallback, ...tenants } = config?.quotas ?? {};
  return { ...(fallback ? { default: fallback } : {}), tenants };
}

/** Every tenant the document names (tokens and quotas), `default` first: the bounded set of metric label values. */
export function configuredTenants(config: TenantsConfig | undefined): string[] {
  const named = [...Object.values(config?.tokens ?? {}).map((entry) => entry.tenant), ...Object.keys(config?.quotas ?? {}).filter((key) => key !== '*')];
  return [...new Set([DEFAULT_TENANT, ...named])];
}
