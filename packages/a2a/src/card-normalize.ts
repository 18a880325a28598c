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

/** A snake_case proto field name's JSON name (proto3 JSON mapping: lowerCamelCase): `supported_interfaces` → `supportedInterfaces`. */
function jsonNameOf(protoName: string): string {
  return protoName.replace(/_([a-z0-9])/g, (_match, letter: string) => letter.toUpperCase());
}

/** An object's own keys under their JSON names; a key already spelled by its JSON name wins over its proto name. */
function renamed(value: unknown): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  const entries = Object.entries(value);
  const spelled = new Set(entries.map(([key]) => key));
  const result: Record<string, unknown> = {};
  for (const [key, member] of entries) {
    const name = jsonNameOf(key);
    if (name !== key && spelled.has(name)) continue;
    result[name] = member;
  }
  return result;
}

/**
 * The card with the proto field names of the members read here (the card's own, each interface's, the capabilities',
 * each skill's) read as their JSON names: a ProtoJSON printer that keeps proto field names writes
 * `supported_interfaces`, `protocol_binding`, `protocol_version`, and ProtoJSON parsers accept either spelling (spec
 * §5.7, proto3 JSON mapping). Map keys (`securitySchemes` names) and values are left as they are.
 */
function withJsonNames(raw: unknown): unknown {
  const card = renamed(raw);
  if (card === null || typeof card !== 'object' || Array.isArray(card)) return card;
  const record = card as Record<string, unknown>;
  const each = (list: unknown) => (Array.isArray(list) ? list.map(renamed) : list);
  return {
    ...record,
    ...('supportedInterfaces' in record ? { supportedInterfaces: each(record.supportedInterfaces) } : {}),
    ...('additionalInterfaces' in record ? { additionalInterfaces: each(record.additionalInterfaces) } : {}),
    ...('skills' in record ? { skills: each(record.skills) } : {}),
    ...('capabilities' in record ? { capabilities: renamed(record.capabilities) } : {}),
  };
}

/**
 * Normalizes a parsed card (1.0 or 0.3). Interfaces with a non-http(s) or
 * empty URL are dropped. Proto field names (`supported_interfaces`, `protocol_binding`) are read as their JSON names
 * (`withJsonNames`). Throws `AgentCardError` (`INVALID_CARD`,
 * `NO_USABLE_INTERFACE`).
 */
export function normalizeAgentCard(card: unknown): AgentCard {
  const raw = withJsonNames(card);
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
