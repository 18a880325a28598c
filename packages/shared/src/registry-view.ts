/**
 * The agent registry's records and views, without I/O: what is stored per agent, how entries stored under other
 * spellings of one card URL merge into one, the agent's stable id, and the view the API, CLI and /ui show
 * (instants in ISO 8601). The Redis side is registry.ts.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { agentKeyOf } from '@durable-a2a/a2a/pure';

/** Recent calls (card fetches and SendMessages) an agent's health is computed over: the last 20. */
export const HEALTH_WINDOW_CALLS = 20;
/** Longest error text kept per agent (characters): an agent's error body is not ours to store whole. */
export const AGENT_ERROR_CHARS = 500;

/**
 * An agent's fleet-wide limits (`AgentLimits`, journal/agent-flow.ts): SendMessage calls in flight at once, sends
 * and resubscriptions per second. Absent fields: no limit of that kind.
 */
export const AgentLimitsSchema = z.strictObject({
  maxInFlight: z.number().int().min(1).max(100_000).optional(),
  rate: z
    .strictObject({
      sendsPerSecond: z.number().positive().max(100_000).optional(),
      resubscribesPerSecond: z.number().positive().max(100_000).optional(),
    })
    .optional(),
});

export const RegisteredAgentSchema = z.object({
  /** The normalized card URL (`normalizeAgentCardUrl`): the registry's key. */
  cardUrl: z.string(),
  registeredAt: z.number(),
  refreshedAt: z.number(),
  /** Set when a refresh found the card unusable (blocked address, no interface...): never selected then. */
  unavailable: z.object({ reason: z.string(), since: z.number() }).optional(),
  /** The operator's fleet-wide limits for this agent (`setLimits`); a refresh keeps them. Absent: no limits. */
  limits: AgentLimitsSchema.optional(),
  /** Set while an operator has the agent disabled (kept apart from the card: a refresh never clears it). */
  disabled: z.object({ since: z.number(), reason: z.string().optional() }).optional(),
  card: z.object({
    name: z.string(),
    description: z.string(),
    version: z.string(),
    skills: z.array(z.object({ id: z.string(), name: z.string(), description: z.string(), tags: z.array(z.string()) })),
    capabilities: z.object({ streaming: z.boolean().optional(), pushNotifications: z.boolean().optional() }),
    interfaces: z.array(z.object({ url: z.string(), protocolBinding: z.string(), protocolVersion: z.string(), tenant: z.string().optional() })),
  }),
});
/** A registered agent: its card URL and normalized card (instants in ms since the epoch). */
export type RegisteredAgent = z.infer<typeof RegisteredAgentSchema>;

export const DisabledSchema = z.object({ since: z.number(), reason: z.string().optional() });

/** An agent's health entry as recordAgentCall-1.lua writes it (unknown fields ignored, a bad one read as absent). */
export const AgentHealthSchema = z.object({
  recent: z.string().regex(/^[01]*$/).catch(''),
  lastSuccessAt: z.number().optional().catch(undefined),
  lastErrorAt: z.number().optional().catch(undefined),
  lastError: z.string().optional().catch(undefined),
  lastErrorKind: z.enum(['card', 'send']).optional().catch(undefined),
  lastCardFetchAt: z.number().optional().catch(undefined),
  lastCardFetchOk: z.boolean().optional().catch(undefined),
});
export type AgentHealthRecord = z.infer<typeof AgentHealthSchema>;

/**
 * The stable id of an agent: the first 16 hex digits of the SHA-256 of its normalized card URL. It names the agent in
 * `/v1/agents/:id` and the CLI; registering the agent by any spelling of its card URL gives the same id.
 */
export function agentIdOf(cardUrl: string): string {
  return createHash('sha256').update(agentKeyOf(cardUrl)).digest('hex').slice(0, 16);
}

/**
 * Entries stored under spellings of one card URL merged into one per normalized URL (the migration on read of
 * entries written before the registry normalized its keys): the newest card (latest `refreshedAt`), the earliest
 * `registeredAt` (the agent keeps its place in the preference order). `stale` lists the fields to delete; a group
 * whose only field is already its key needs nothing and is left out.
 */
export function mergeSpellings(entries: readonly (readonly [field: string, agent: RegisteredAgent])[]): { key: string; merged: RegisteredAgent; stale: string[] }[] {
  const groups = new Map<string, (readonly [string, RegisteredAgent])[]>();
  for (const entry of entries) {
    const key = agentKeyOf(entry[0]);
    groups.set(key, [...(groups.get(key) ?? []), entry]);
  }
  return [...groups.entries()].flatMap(([key, group]) => {
    if (group.length === 1 && group[0]![0] === key) return [];
    const newest = group.reduce((best, entry) => (entry[1].refreshedAt > best[1].refreshedAt ? entry : best))[1];
    const registeredAt = Math.min(...group.map(([, agent]) => agent.registeredAt));
    return [{ key, merged: { ...newest, cardUrl: key, registeredAt }, stale: group.map(([field]) => field).filter((field) => field !== key) }];
  });
}

/** Why an agent is selectable for a skill or not: `active`, `disabled` (by an operator), `unavailable` (its card was rejected). */
export type AgentStatus = 'active' | 'disabled' | 'unavailable';

/** What the API (`GET /v1/agents`), the CLI and /ui show of an agent. Instants in ISO 8601, `null` when never. */
export interface AgentView {
  /** `agentIdOf(cardUrl)`: stable across spellings and restarts. */
  id: string;
  /** The normalized card URL. */
  cardUrl: string;
  card: RegisteredAgent['card'];
  /** `active` agents are candidates for a skill; `disabled` and `unavailable` ones never are (steps already bound to them go on). */
  status: AgentStatus;
  /** Why the agent is not a candidate (`status` other than `active`), else null. */
  statusReason: string | null;
  registeredAt: string;
  /** When the registered card was last written (registration or refresh). */
  refreshedAt: string;
  disabled: { since: string; reason: string | null } | null;
  unavailable: { reason: string; since: string } | null;
  /** The operator's fleet-wide limits (`AgentLimits`: maxInFlight, rate), null when none are set. */
  limits: z.infer<typeof AgentLimitsSchema> | null;
  /** The last card fetch a worker or the producer made (a cached card is no fetch), and whether it succeeded. */
  lastCardFetchAt: string | null;
  lastCardFetchOk: boolean | null;
  lastSuccessAt: string | null;
  /** The last failed call: what failed (`card` fetch or `send`), the error and when. */
  lastError: { kind: 'card' | 'send'; message: string; at: string } | null;
  /**
   * The recent success rate: `successes / calls` over the last `window` calls (card fetches and SendMessages, each a
   * success or a failure), null before any call.
   */
  health: { window: number; calls: number; successes: number; successRate: number | null };
}

const iso = (ms: number | undefined): string | null => (ms === undefined ? null : new Date(ms).toISOString());

/** The view of a registered agent and its health entry (none: no call recorded yet). */
export function agentView(agent: RegisteredAgent, health: AgentHealthRecord | undefined): AgentView {
  const recent = health?.recent ?? '';
  const successes = [...recent].filter((outcome) => outcome === '1').length;
  const status: AgentStatus = agent.disabled ? 'disabled' : agent.unavailable ? 'unavailable' : 'active';
  const statusReason = agent.disabled
    ? `disabled by an operator since ${iso(agent.disabled.since)}${agent.disabled.reason ? `: ${agent.disabled.reason}` : ''}; never picked for a skill`
    : agent.unavailable
      ? `card rejected on refresh: ${agent.unavailable.reason}; never picked for a skill`
      : null;
  const lastError =
    health?.lastErrorAt !== undefined ? { kind: health.lastErrorKind ?? ('send' as const), message: health.lastError ?? '', at: iso(health.lastErrorAt)! } : null;
  return {
    id: agentIdOf(agent.cardUrl),
    cardUrl: agent.cardUrl,
    card: agent.card,
    status,
    statusReason,
    registeredAt: iso(agent.registeredAt)!,
    refreshedAt: iso(agent.refreshedAt)!,
    disabled: agent.disabled ? { since: iso(agent.disabled.since)!, reason: agent.disabled.reason ?? null } : null,
    unavailable: agent.unavailable ? { reason: agent.unavailable.reason, since: iso(agent.unavailable.since)! } : null,
    limits: agent.limits ?? null,
    lastCardFetchAt: iso(health?.lastCardFetchAt),
    lastCardFetchOk: health?.lastCardFetchOk ?? null,
    lastSuccessAt: iso(health?.lastSuccessAt),
    lastError,
    health: { window: HEALTH_WINDOW_CALLS, calls: recent.length, successes, successRate: recent.length === 0 ? null : successes / recent.length },
  };
}
