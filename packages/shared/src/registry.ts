/**
 * Agent registry in Redis: agents registered by Agent Card URL, with their normalized card, looked up by skill id
 * and tags for re-delegation. Keyed by the normalized card URL (`normalizeAgentCardUrl`): any spelling of one card
 * URL is one agent. Three hashes, each with one writer: the cards (registration and refresh), the operator's
 * disabled marks, and each agent's health (recordAgentCall-1.lua, from card fetches and SendMessages).
 * With the journal, the only module that touches Redis.
 */
import type { Redis, Cluster } from 'ioredis';
import { z } from 'zod';
import { normalizeAgentCardUrl, type AgentCard } from '@durable-a2a/a2a';
import { agentKeyOf, isHttpUrl } from '@durable-a2a/a2a/pure';
import { journalKeys } from './journal/keys.ts';
import { DEFAULT_TENANT } from './journal/tenant.ts';
import { callScript, defineScript, outcomeDecoder } from './journal/scripts.ts';
import { CorruptRecordError, parseRecordAt, skipCorrupt, type CorruptRecordHandler } from './journal/corrupt.ts';
import type { AgentLimits } from './journal/agent-flow.ts';
import {
  AGENT_ERROR_CHARS,
  AgentLimitsSchema,
  AgentHealthSchema,
  DisabledSchema,
  HEALTH_WINDOW_CALLS,
  RegisteredAgentSchema,
  agentIdOf,
  agentView,
  agentVisibleTo,
  mergeSpellings,
  type AgentHealthRecord,
  type AgentView,
  type RegisteredAgent,
} from './registry-view.ts';

export { agentIdOf, agentVisibleTo, AgentLimitsSchema, HEALTH_WINDOW_CALLS, type AgentView, type AgentStatus, type RegisteredAgent } from './registry-view.ts';

/** Options of an `AgentRegistry`. */
export interface AgentRegistryOptions {
  /** Key prefix; default `da2a`. */
  prefix?: string;
  /** Clock; default `Date.now`. */
  now?: () => number;
  /** Told of every registry entry that does not parse (`corruptRecordReporter`); default nothing. */
  onCorruptRecord?: CorruptRecordHandler;
}

/** One call to an agent, for its health: a card fetch or a SendMessage, and the error when it failed. */
export interface AgentCall {
  kind: 'card' | 'send';
  /** The error's text (cut to `AGENT_ERROR_CHARS`); absent for a success. */
  error?: string;
}

/** A tenant's weight in the send queue's fairness: a whole number 1 to 100 (default 1). */
export const TenantWeightSchema = z.number().int().min(1).max(100);
/** A tenant's name, as send jobs carry it: 1 to 64 characters. */
export const TenantNameSchema = z.string().min(1).max(64);

/** A call to an agent and when it ended (ms since the epoch): one outcome of a coalesced health write. */
export interface TimedAgentCall extends AgentCall {
  at: number;
}

const recordAgentCall = defineScript({
  name: 'recordAgentCall',
  keys: ['health'],
  encode: (input: { cardUrl: string; calls: readonly TimedAgentCall[] }) => [
    input.cardUrl,
    HEALTH_WINDOW_CALLS,
    ...input.calls.flatMap((call) => [call.error === undefined ? '1' : '0', call.kind, call.at, (call.error ?? '').slice(0, AGENT_ERROR_CHARS)]),
  ],
  decode: outcomeDecoder({ 0: 'unregistered', 1: 'recorded' } as const),
});

export class AgentRegistry {
  private readonly keys: { agents: string; health: string; disabled: string };
  private readonly prefix: string | undefined;
  private readonly now: () => number;
  private readonly onCorruptRecord: CorruptRecordHandler;

  /** `new AgentRegistry(redis, options)`; `new AgentRegistry(redis, prefix, now)` is the earlier form. */
  constructor(
    private readonly redis: Redis | Cluster,
    options: AgentRegistryOptions | string = {},
    now?: () => number,
  ) {
    const resolved = typeof options === 'string' ? { prefix: options, now } : { ...options, now: options.now ?? now };
    const keys = journalKeys(resolved.prefix);
    this.keys = { agents: keys.agents(), health: keys.agentHealth(), disabled: keys.agentsDisabled() };
    this.prefix = resolved.prefix;
    this.now = resolved.now ?? Date.now;
    this.onCorruptRecord = resolved.onCorruptRecord ?? (() => undefined);
  }

  /**
   * Stores (or refreshes) an agent's validated card under its normalized card URL: another spelling of a registered
   * card URL refreshes that one entry. Registration order is kept as preference order; a corrupt entry is replaced;
   * an operator's disabled mark stays. `options.tenant`: registered for that tenant only (a string), shared (null), or
   * as it was (undefined: a refresh never widens or narrows who sees the agent; a new one is shared).
   * Throws AgentCardError `INVALID_URL` for a card URL that is not http(s).
   */
  async register(cardUrl: string, card: AgentCard, options: { tenant?: string | null } = {}): Promise<RegisteredAgent> {
    const key = normalizeAgentCardUrl(cardUrl);
    if (!(await this.redis.hexists(this.keys.agents, key))) await this.list(); // merges entries stored under other spellings first
    const existing = await skipCorrupt(this.get(key));
    const stored = {
      cardUrl: key,
      registeredAt: existing?.registeredAt ?? this.now(),
      refreshedAt: this.now(),
      ...(existing?.limits ? { limits: existing.limits } : {}),
      ...((options.tenant === undefined ? existing?.tenant : options.tenant) ? { tenant: (options.tenant === undefined ? existing?.tenant : options.tenant)! } : {}),
      card: { name: card.name, description: card.description, version: card.version, skills: card.skills, capabilities: card.capabilities, interfaces: card.interfaces },
    };
    await this.redis.hset(this.keys.agents, key, JSON.stringify(stored));
    await this.redis.hsetnx(this.keys.health, key, '{}');
    return { ...stored, ...(existing?.disabled ? { disabled: existing.disabled } : {}) };
  }

  /** One registered agent by card URL (any spelling) or id, or undefined. Throws CorruptRecordError (reported) when its entry does not parse. */
  async get(cardUrlOrId: string): Promise<RegisteredAgent | undefined> {
    if (!isHttpUrl(cardUrlOrId)) return (await this.list()).find((agent) => agentIdOf(agent.cardUrl) === cardUrlOrId);
    const key = normalizeAgentCardUrl(cardUrlOrId);
    const [raw, disabled] = [await this.redis.hget(this.keys.agents, key), await this.redis.hget(this.keys.disabled, key)];
    if (!raw) return (await this.list()).find((agent) => agent.cardUrl === key); // perhaps stored under another spelling
    const parsed = this.parseEntry(key, raw);
    if (parsed instanceof CorruptRecordError) throw parsed;
    return withDisabled(parsed, disabled);
  }

  /**
   * Every registered agent, in registration order. An entry that does not parse is left out (and reported): one bad
   * entry never fails the list. Entries stored under other spellings of one card URL are merged on the way
   * (`mergeSpellings`) and written back under the normalized URL.
   */
  async list(): Promise<RegisteredAgent[]> {
    const [rawAgents, rawDisabled] = [await this.redis.hgetall(this.keys.agents), await this.redis.hgetall(this.keys.disabled)];
    let entries = Object.entries(rawAgents).flatMap(([field, raw]) => {
      const parsed = this.parseEntry(field, raw);
      return parsed instanceof CorruptRecordError ? [] : [[field, parsed] as const];
    });
    const merges = mergeSpellings(entries);
    if (merges.length > 0) {
      await this.writeMerges(merges);
      const stale = new Set(merges.flatMap((merge) => merge.stale));
      entries = [...entries.filter(([field]) => !stale.has(field) && !merges.some((merge) => merge.key === field)), ...merges.map((merge) => [merge.key, merge.merged] as const)];
    }
    return entries
      .map(([field, agent]) => withDisabled({ ...agent, cardUrl: field }, rawDisabled[field]))
      .sort((a, b) => a.registeredAt - b.registeredAt || a.cardUrl.localeCompare(b.cardUrl));
  }

  /** Every registered agent with its status and health (`AgentView`), in registration order. */
  async views(): Promise<AgentView[]> {
    const agents = await this.list();
    const health = await this.redis.hgetall(this.keys.health);
    return agents.map((agent) => agentView(agent, healthOf(health[agent.cardUrl])));
  }

  /** One agent's view by card URL (any spelling) or id, or undefined. */
  async view(cardUrlOrId: string): Promise<AgentView | undefined> {
    const agent = await this.get(cardUrlOrId);
    if (!agent) return undefined;
    return agentView(agent, healthOf((await this.redis.hget(this.keys.health, agent.cardUrl)) ?? undefined));
  }

  /** The entry of `field` parsed, or its CorruptRecordError (already reported); the key names the field after `#`. */
  private parseEntry(field: string, raw: string): RegisteredAgent | CorruptRecordError {
    try {
      return parseRecordAt('agent', `${this.keys.agents}#${field}`, () => RegisteredAgentSchema.omit({ disabled: true }).parse(JSON.parse(raw)));
    } catch (error) {
      this.onCorruptRecord(error as CorruptRecordError);
      return error as CorruptRecordError;
    }
  }

  /** Writes merged entries under their normalized URL and deletes the other spellings (one MULTI per agent). */
  private async writeMerges(merges: ReturnType<typeof mergeSpellings>): Promise<void> {
    for (const { key, merged, stale } of merges) {
      const { disabled: _disabled, ...stored } = merged;
      const transaction = this.redis.multi().hset(this.keys.agents, key, JSON.stringify(stored));
      if (stale.length > 0) transaction.hdel(this.keys.agents, ...stale);
      await transaction.exec();
      await this.redis.hsetnx(this.keys.health, key, '{}');
    }
  }

  /** Available agents with a skill of this id (and all the given tags), in registration order. */
  async findBySkill(skillId: string, tags: string[] = []): Promise<RegisteredAgent[]> {
    return withSkill(await this.list(), skillId, tags);
  }

  /** Marks an agent unusable (its refreshed card was rejected); it stays listed with the reason. */
  async markUnavailable(cardUrl: string, reason: string): Promise<void> {
    const agent = await skipCorrupt(this.get(cardUrl));
    if (!agent) return;
    const { disabled: _disabled, ...stored } = agent;
    await this.redis.hset(this.keys.agents, agent.cardUrl, JSON.stringify({ ...stored, refreshedAt: this.now(), unavailable: { reason, since: this.now() } }));
  }

  /**
   * Disables (`disabled: true`, with an optional reason) or enables an agent by card URL or id: a disabled agent is
   * never a candidate for a skill (`candidateAgents`); delegations already bound to it go on. Returns its view, or
   * undefined when no such agent is registered.
   */
  async setDisabled(cardUrlOrId: string, disabled: boolean, reason?: string): Promise<AgentView | undefined> {
    const agent = await skipCorrupt(this.get(cardUrlOrId));
    if (!agent) return undefined;
    if (disabled) await this.redis.hset(this.keys.disabled, agent.cardUrl, JSON.stringify({ since: agent.disabled?.since ?? this.now(), ...(reason ? { reason } : {}) }));
    else await this.redis.hdel(this.keys.disabled, agent.cardUrl);
    return this.view(agent.cardUrl);
  }

  /**
   * Sets (or, with `undefined` or `{}`, clears) an agent's fleet-wide limits (`AgentLimits`), by card URL or id. Workers
   * read them with the registry (every `agentLabelRefreshMs`). Returns the agent's view, or undefined when no such
   * agent is registered. Throws ZodError for limits out of range (nothing written).
   */
  async setLimits(cardUrlOrId: string, limits: AgentLimits | undefined): Promise<AgentView | undefined> {
    const parsed = limits === undefined ? undefined : AgentLimitsSchema.parse(limits);
    const agent = await skipCorrupt(this.get(cardUrlOrId));
    if (!agent) return undefined;
    const { disabled: _disabled, limits: _previous, ...stored } = agent;
    const keep = parsed && (parsed.maxInFlight !== undefined || parsed.rate !== undefined) ? { limits: parsed } : {};
    await this.redis.hset(this.keys.agents, agent.cardUrl, JSON.stringify({ ...stored, ...keep }));
    return this.view(agent.cardUrl);
  }

  /**
   * Sets (or, with `undefined`, clears back to 1) a tenant's weight in the send queue's fairness (`send-priority.ts`):
   * a tenant of weight 2 gets two sends for another's one while both have work waiting. Read by every enqueue of a
   * message send (sendOrder-2.lua). Throws ZodError for a weight that is not a whole number 1 to 100 (nothing written).
   */
  async setTenantWeight(tenant: string, weight: number | undefined): Promise<void> {
    const key = journalKeys(this.prefix).sendOrder().weights;
    const name = TenantNameSchema.parse(tenant);
    if (weight === undefined) await this.redis.hdel(key, name);
    else await this.redis.hset(key, name, String(TenantWeightSchema.parse(weight)));
  }

  /** Every tenant's weight set with `setTenantWeight` (the others weigh 1). */
  async tenantWeights(): Promise<Record<string, number>> {
    const stored = await this.redis.hgetall(journalKeys(this.prefix).sendOrder().weights);
    return Object.fromEntries(Object.entries(stored).map(([tenant, weight]) => [tenant, Number(weight)]));
  }

  /**
   * Removes an agent by card URL (any spelling) or id: its card, disabled mark and health. Delegations already bound
   * to it go on (they name its card URL). A corrupt entry is removed by card URL. Returns the normalized card URL
   * removed, or undefined when no such agent was registered.
   */
  async remove(cardUrlOrId: string): Promise<string | undefined> {
    if (isHttpUrl(cardUrlOrId)) await this.list(); // merges entries stored under other spellings first
    const key = isHttpUrl(cardUrlOrId) ? normalizeAgentCardUrl(cardUrlOrId) : (await skipCorrupt(this.get(cardUrlOrId)))?.cardUrl;
    if (!key) return undefined;
    const [removed] = [await this.redis.hdel(this.keys.agents, key), await this.redis.hdel(this.keys.disabled, key), await this.redis.hdel(this.keys.health, key)];
    return removed > 0 ? key : undefined;
  }

  /**
   * Records one call to the agent at `cardUrl` (any spelling) for its health: one script call (recordAgentCall-1.lua),
   * nothing written for an agent that is not registered. Resolves to whether it was recorded. Throws on Redis errors.
   */
  async recordCall(cardUrl: string, call: AgentCall): Promise<'recorded' | 'unregistered'> {
    return this.recordCalls(cardUrl, [{ ...call, at: this.now() }]);
  }

  /**
   * Records several calls to the agent at `cardUrl` (any spelling), oldest first, in one script call
   * (recordAgentCall-1.lua): what a worker's `AgentHealthRecorder` coalesced. Nothing is written for an agent that
   * is not registered, or for no calls. Resolves to whether they were recorded. Throws on Redis errors.
   */
  async recordCalls(cardUrl: string, calls: readonly TimedAgentCall[]): Promise<'recorded' | 'unregistered'> {
    if (!isHttpUrl(cardUrl) || calls.length === 0) return 'unregistered';
    const result = await callScript(this.redis, recordAgentCall, { health: this.keys.health }, { cardUrl: agentKeyOf(cardUrl), calls });
    return result === 'recorded' ? 'recorded' : 'unregistered';
  }
}

/** `agent` with the operator's disabled mark (raw JSON from the disabled hash; one that does not parse counts as disabled now). */
function withDisabled(agent: RegisteredAgent, raw: string | null | undefined): RegisteredAgent {
  const { disabled: _ignored, ...stored } = agent;
  if (!raw) return stored;
  const parsed = DisabledSchema.safeParse(safeJson(raw));
  return { ...stored, disabled: parsed.success ? parsed.data : { since: 0 } };
}

function healthOf(raw: string | undefined): AgentHealthRecord | undefined {
  if (raw === undefined) return undefined;
  const parsed = AgentHealthSchema.safeParse(safeJson(raw));
  return parsed.success ? parsed.data : undefined;
}

function safeJson(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return undefined;
  }
}

/** Where a step or a compensation may go: a fixed Agent Card URL, and/or any registered agent with a skill (and every tag). */
export interface AgentTarget {
  agent?: string;
  skill?: string;
  tags?: string[];
}

/** The selectable agents of `registered` (neither disabled nor unavailable) with a skill of id `skillId` carrying every tag in `tags`, in their order. */
function withSkill(registered: readonly RegisteredAgent[], skillId: string, tags: readonly string[]): RegisteredAgent[] {
  return registered.filter((agent) => !agent.unavailable && !agent.disabled && hasSkill(agent, skillId, tags));
}

/** True when `agent`'s card declares a skill of id `skillId` carrying every tag in `tags`. */
const hasSkill = (agent: RegisteredAgent, skillId: string, tags: readonly string[]): boolean =>
  agent.card.skills.some((skill) => skill.id === skillId && tags.every((tag) => skill.tags.includes(tag)));

/**
 * The candidate agents of a target, in the order they are tried: the fixed agent first (as spelled: an operator's
 * disabled mark does not override an explicit choice), then the selectable registered agents with the skill and
 * every tag, in registration order (`AgentRegistry.list()`), no agent twice: two spellings of one card URL
 * (`agentKeyOf`) are one agent. The one rule for the producer's first attempts, the workflow's re-delegations and
 * compensations. `tenant`: the workflow's (`tenantOfWorkflowId`); agents registered for another tenant are left out.
 */
export function candidateAgents(target: AgentTarget, registered: readonly RegisteredAgent[], tenant: string = DEFAULT_TENANT): string[] {
  const chosen: string[] = target.agent ? [target.agent] : [];
  // Without a skill there is nothing to add, so no key to compare (a fixed agent's `delegate` computed one for nothing).
  if (!target.skill) return chosen;
  const seen = new Set(chosen.map(agentKeyOf));
  // Another tenant's agent is never a candidate (docs/tenants.md "Roles").
  const visible = registered.filter((agent) => agentVisibleTo(agent, tenant));
  for (const agent of withSkill(visible, target.skill, target.tags ?? [])) {
    const key = agentKeyOf(agent.cardUrl);
    if (seen.has(key)) continue;
    seen.add(key);
    chosen.push(agent.cardUrl);
  }
  return chosen;
}

/**
 * The agent a compensation goes to (attack28): the one that holds the effect it undoes, whenever the target allows it.
 * A fixed `agent` is the definition's explicit choice. A skill alone: the agent of the attempt it undoes (`undoing`, its
 * Agent Card URL, compared by `agentKeyOf`) when that agent is registered, visible to `tenant`, with the skill and every
 * tag, disabled or unavailable included (those marks are about new work; only the agent that did the work holds it, so
 * an undo sent elsewhere undoes nothing and the workflow would read COMPENSATED with the effect in place); else the
 * first candidate (`candidateAgents`: a separate service that cancels, say). Undefined: no agent can run it.
 */
export function compensationAgentOf(target: AgentTarget, undoing: string, registered: readonly RegisteredAgent[], tenant: string = DEFAULT_TENANT): string | undefined {
  if (target.agent || !target.skill) return candidateAgents(target, registered, tenant)[0];
  const key = agentKeyOf(undoing);
  const skill = target.skill;
  const holder = registered.find((agent) => agentVisibleTo(agent, tenant) && agentKeyOf(agent.cardUrl) === key && hasSkill(agent, skill, target.tags ?? []));
  return holder?.cardUrl ?? candidateAgents(target, registered, tenant)[0];
}
