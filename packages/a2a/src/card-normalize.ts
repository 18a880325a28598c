/**
 * Agent Card shapes (spec §8): accept 1.0 cards (`supportedInterfaces`) and normalize 0.3 cards (root
 * `url`, `preferredTransport`, `additionalInterfaces`) into one `AgentCard` (field case R20). A card
 * without a usable http(s) interface is rejected, never stored with an empty URL. No I/O here; the
 * fetch is card.ts.
 */
import { z } from 'zod';
import { A2AError } from './errors.ts';
import type { AgentInterface } from './transport.ts';
import { cardUrlOf, isHttpUrl } from './card-url.ts';
import { withJsonNames } from './proto-names.ts';

export { AGENT_CARD_PATH, agentKeyOf, isHttpUrl } from './card-url.ts';

/** Why a card was rejected: `INVALID_URL`, `REDIRECT`, `HTTP_STATUS`, `NOT_JSON`, `INVALID_CARD`, `NO_USABLE_INTERFACE`, `BLOCKED_ADDRESS` (R19). */
export type AgentCardRejection = 'INVALID_URL' | 'REDIRECT' | 'HTTP_STATUS' | 'NOT_JSON' | 'INVALID_CARD' | 'NO_USABLE_INTERFACE' | 'BLOCKED_ADDRESS';

/** The rejections decided before any request leaves (the URL alone, or the address policy): delivery `not-sent`. */
const REFUSED_BEFORE_SENDING: ReadonlySet<AgentCardRejection> = new Set(['INVALID_URL', 'BLOCKED_ADDRESS']);

/**
 * A card we refuse to use. `reason` says why; not retryable (the same card gets the same verdict). Delivery `not-sent`
 * for a refusal decided before a request left (`INVALID_URL`, `BLOCKED_ADDRESS`), else `received` (the card arrived).
 */
export class AgentCardError extends A2AError {
  declare readonly reason: AgentCardRejection;
  constructor(reason: AgentCardRejection, message: string, details: { httpStatus?: number; cause?: unknown; bodyExcerpt?: string } = {}) {
    const notSent = details.httpStatus === undefined && REFUSED_BEFORE_SENDING.has(reason);
    super(message, 'AGENT_CARD_ERROR', false, { ...details, reason, ...(notSent ? { delivery: 'not-sent' as const } : {}) });
  }
}

/** The normalized card every other module uses, whatever the card's protocol version. */
export interface AgentCard {
  name: string;
  description: string;
  version: string;
  skills: { id: string; name: string; description: string; tags: string[] }[];
  capabilities: { streaming?: boolean; pushNotifications?: boolean };
  /** In card order: the first is the agent's preferred one (spec §8.3). Never empty. */
  interfaces: AgentInterface[];
}

const SkillSchema = z.object({
  id: z.string().min(1),
  name: z.string().default(''),
  description: z.string().default(''),
  tags: z.array(z.string()).default([]),
});

/** Fields both card generations share; everything not listed is ignored (spec §5.7). */
const CommonCardSchema = z.object({
  name: z.string().min(1),
  description: z.string().default(''),
  version: z.string().default(''),
  skills: z.array(z.unknown()).default([]),
  capabilities: z.object({ streaming: z.boolean().optional(), pushNotifications: z.boolean().optional() }).default({}),
});

const InterfaceV1Schema = z.object({
  url: z.string(),
  protocolBinding: z.string().min(1),
  protocolVersion: z.string().default('1.0'),
  tenant: z.string().optional(),
});
const CardV1Schema = z.object({ supportedInterfaces: z.array(z.unknown()) });

/** 0.3 card fields (spec v0.3.0 §5.5). */
const CardV03Schema = z.object({
  url: z.string(),
  preferredTransport: z.string().default('JSONRPC'),
  protocolVersion: z.string().default('0.3'),
  additionalInterfaces: z.array(z.unknown()).default([]),
});
const InterfaceV03Schema = z.object({ url: z.string(), transport: z.string().min(1) });

/** `"0.3.0"` → `'0.3'`, `"1.0"` → `'1.0'`, `"1"` → `'1.0'` (spec §3.6: Major.Minor; patch MUST NOT matter). */
export function normalizeProtocolVersion(version: string): string {
  const match = /^\s*v?(\d+)(?:\.(\d+))?/.exec(version);
  return match ? `${match[1]}.${match[2] ?? '0'}` : version;
}


/**
 * The one spelling of an agent's card URL (`cardUrlOf`, card-url.ts: what the registry keys agents by, what a card
 * fetch asks for). Throws AgentCardError `INVALID_URL` for anything but an absolute http(s) URL.
 */
export function normalizeAgentCardUrl(url: string): string {
  if (!isHttpUrl(url)) throw new AgentCardError('INVALID_URL', `not an http(s) URL: ${url}`);
  return cardUrlOf(new URL(url));
}

function interfacesOf(raw: unknown): AgentInterface[] {
  const v1 = CardV1Schema.safeParse(raw);
  if (v1.success && v1.data.supportedInterfaces.length > 0) {
    return v1.data.supportedInterfaces.flatMap((entry) => {
      const parsed = InterfaceV1Schema.safeParse(entry);
      if (!parsed.success) return [];
      const { url, protocolBinding, protocolVersion, tenant } = parsed.data;
      return [{ url, protocolBinding, protocolVersion: normalizeProtocolVersion(protocolVersion), ...(tenant ? { tenant } : {}) }];
    });
  }
  const v03 = CardV03Schema.safeParse(raw);
  if (!v03.success) return [];
  const protocolVersion = normalizeProtocolVersion(v03.data.protocolVersion);
  const found = [{ url: v03.data.url, protocolBinding: v03.data.preferredTransport, protocolVersion }];
  for (const entry of v03.data.additionalInterfaces) {
    const parsed = InterfaceV03Schema.safeParse(entry);
    if (!parsed.success) continue;
    const duplicate = found.some((known) => known.url === parsed.data.url && known.protocolBinding === parsed.data.transport);
    if (!duplicate) found.push({ url: parsed.data.url, protocolBinding: parsed.data.transport, protocolVersion });
  }
  return found;
}

/** The fields read here at each level of a card, by their JSON names (the schemas above). */
const fieldsOf = (...schemas: z.ZodObject[]): ReadonlySet<string> => new Set(schemas.flatMap((schema) => Object.keys(schema.shape)));
const CARD_FIELDS = fieldsOf(CommonCardSchema, CardV1Schema, CardV03Schema);
const INTERFACE_FIELDS = fieldsOf(InterfaceV1Schema, InterfaceV03Schema);
const SKILL_FIELDS = fieldsOf(SkillSchema);
const CAPABILITY_FIELDS = fieldsOf(CommonCardSchema.shape.capabilities.unwrap());

/**
 * The card with the proto field names of the members read here (the card's own, each interface's, the capabilities',
 * each skill's) read as their JSON names (proto-names.ts `withJsonNames`, the one renaming rule): a ProtoJSON printer
 * that keeps proto field names writes `supported_interfaces`, `protocol_binding`, `protocol_version`, and ProtoJSON
 * parsers accept either spelling (spec §5.7, proto3 JSON mapping). Map keys (`securitySchemes` names) and values are
 * left as they are.
 */
function cardWithJsonNames(raw: unknown): unknown {
  const card = withJsonNames(raw, CARD_FIELDS);
  if (card === null || typeof card !== 'object' || Array.isArray(card)) return card;
  const record = card as Record<string, unknown>;
  const each = (list: unknown, fields: ReadonlySet<string>) => (Array.isArray(list) ? list.map((entry) => withJsonNames(entry, fields)) : list);
  return {
    ...record,
    ...('supportedInterfaces' in record ? { supportedInterfaces: each(record.supportedInterfaces, INTERFACE_FIELDS) } : {}),
    ...('additionalInterfaces' in record ? { additionalInterfaces: each(record.additionalInterfaces, INTERFACE_FIELDS) } : {}),
    ...('skills' in record ? { skills: each(record.skills, SKILL_FIELDS) } : {}),
    ...('capabilities' in record ? { capabilities: withJsonNames(record.capabilities, CAPABILITY_FIELDS) } : {}),
  };
}

/**
 * Normalizes a parsed card (1.0 or 0.3). Interfaces with a non-http(s) or
 * empty URL are dropped. Proto field names (`supported_interfaces`, `protocol_binding`) are read as their JSON names
 * (`cardWithJsonNames`). Throws `AgentCardError` (`INVALID_CARD`,
 * `NO_USABLE_INTERFACE`).
 */
export function normalizeAgentCard(card: unknown): AgentCard {
  const raw = cardWithJsonNames(card);
  const common = CommonCardSchema.safeParse(raw);
  if (!common.success) {
    throw new AgentCardError('INVALID_CARD', `agent card invalid: ${common.error.issues[0]?.message ?? 'unknown'}`, { cause: raw });
  }
  const interfaces = interfacesOf(raw).filter((agentInterface) => isHttpUrl(agentInterface.url));
  if (interfaces.length === 0) {
    throw new AgentCardError('NO_USABLE_INTERFACE', `agent card "${common.data.name}" has no http(s) interface`, { cause: raw });
  }
  const skills = common.data.skills.flatMap((skill) => {
    const parsed = SkillSchema.safeParse(skill);
    return parsed.success ? [parsed.data] : [];
  });
  const { name, description, version, capabilities } = common.data;
  return { name, description, version, skills, capabilities, interfaces };
}
