/**
 * Agent registry in Redis: agents registered by Agent Card URL, with their
 * normalized card, looked up by skill id and tags for re-delegation.
 */
import type { Redis, Cluster } from 'ioredis';
import { z } from 'zod';
import type { AgentCard } from './a2a/card.ts';
import { journalKeys } from './journal/keys.ts';
import { CorruptRecordError, parseRecordAt, skipCorrupt, type CorruptRecordHandler } from './journal/corrupt.ts';

const RegisteredAgentSchema = z.object({
  cardUrl: z.string(),
  registeredAt: z.number(),
  refreshedAt: z.number(),
  /** Set when a refresh found the card unusable (blocked address, no interface...): never selected then. */
  unavailable: z.object({ reason: z.string(), since: z.number() }).optional(),
  card: z.object({
    name: z.string(),
    description: z.string(),
    version: z.string(),
    skills: z.array(z.object({ id: z.string(), name: z.string(), description: z.string(), tags: z.array(z.string()) })),
    capabilities: z.object({ streaming: z.boolean().optional(), pushNotifications: z.boolean().optional() }),
    interfaces: z.array(z.object({ url: z.string(), protocolBinding: z.string(), protocolVersion: z.string(), tenant: z.string().optional() })),
  }),
});
/** A registered agent: its card URL and normalized card. */
export type RegisteredAgent = z.infer<typeof RegisteredAgentSchema>;

/** Options of an `AgentRegistry`. */
export interface AgentRegistryOptions {
  /** Key prefix; default `da2a`. */
  prefix?: string;
  /** Clock; default `Date.now`. */
  now?: () => number;
  /** Told of every registry entry that does not parse (`corruptRecordReporter`); default nothing. */
  onCorruptRecord?: CorruptRecordHandler;
}

export class AgentRegistry {
  private readonly key: string;
  private readonly now: () => number;
  private readonly onCorruptRecord: CorruptRecordHandler;

  /** `new AgentRegistry(redis, options)`; `new AgentRegistry(redis, prefix, now)` is the earlier form. */
  constructor(
    private readonly redis: Redis | Cluster,
    options: AgentRegistryOptions | string = {},
    now?: () => number,
  ) {
    const resolved = typeof options === 'string' ? { prefix: options, now } : { ...options, now: options.now ?? now };
    this.key = journalKeys(resolved.prefix).agents();
    this.now = resolved.now ?? Date.now;
    this.onCorruptRecord = resolved.onCorruptRecord ?? (() => undefined);
  }

  /** Stores (or refreshes) an agent's validated card. Registration order is kept as preference order; a corrupt entry is replaced. */
  async register(cardUrl: string, card: AgentCard): Promise<RegisteredAgent> {
    const existing = await skipCorrupt(this.get(cardUrl));
    const agent: RegisteredAgent = {
      cardUrl,
      registeredAt: existing?.registeredAt ?? this.now(),
      refreshedAt: this.now(),
      card: {
        name: card.name,
        description: card.description,
        version: card.version,
        skills: card.skills,
        capabilities: card.capabilities,
        interfaces: card.interfaces,
      },
    };
    await this.redis.hset(this.key, cardUrl, JSON.stringify(agent));
    return agent;
  }

  /** One registered agent, or undefined. Throws CorruptRecordError (reported) when its entry does not parse. */
  async get(cardUrl: string): Promise<RegisteredAgent | undefined> {
    const raw = await this.redis.hget(this.key, cardUrl);
    if (!raw) return undefined;
    const parsed = this.parseEntry(cardUrl, raw);
    if (parsed instanceof CorruptRecordError) throw parsed;
    return parsed;
  }

  /** Every registered agent, in registration order. An entry that does not parse is left out (and reported): one bad entry never fails the list. */
  async list(): Promise<RegisteredAgent[]> {
    const all = Object.entries(await this.redis.hgetall(this.key)).flatMap(([cardUrl, raw]) => {
      const parsed = this.parseEntry(cardUrl, raw);
      return parsed instanceof CorruptRecordError ? [] : [parsed];
    });
    return all.sort((a, b) => a.registeredAt - b.registeredAt || a.cardUrl.localeCompare(b.cardUrl));
  }

  /** The entry of `cardUrl` parsed, or its CorruptRecordError (already reported); the key names the field after `#`. */
  private parseEntry(cardUrl: string, raw: string): RegisteredAgent | CorruptRecordError {
    try {
      return parseRecordAt('agent', `${this.key}#${cardUrl}`, () => RegisteredAgentSchema.parse(JSON.parse(raw)));
    } catch (error) {
      this.onCorruptRecord(error as CorruptRecordError);
      return error as CorruptRecordError;
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
    await this.redis.hset(this.key, cardUrl, JSON.stringify({ ...agent, refreshedAt: this.now(), unavailable: { reason, since: this.now() } }));
  }

  async remove(cardUrl: string): Promise<void> {
    await this.redis.hdel(this.key, cardUrl);
  }
}

/** Where a step or a compensation may go: a fixed Agent Card URL, and/or any registered agent with a skill (and every tag). */
export interface AgentTarget {
  agent?: string;
  skill?: string;
  tags?: string[];
}

/** The available agents of `registered` with a skill of id `skillId` carrying every tag in `tags`, in their order. */
function withSkill(registered: readonly RegisteredAgent[], skillId: string, tags: readonly string[]): RegisteredAgent[] {
  return registered.filter((agent) => !agent.unavailable && agent.card.skills.some((skill) => skill.id === skillId && tags.every((tag) => skill.tags.includes(tag))));
}

/**
 * The candidate agents of a target, in the order they are tried: the fixed agent first, then the available
 * registered agents with the skill and every tag, in registration order (`AgentRegistry.list()`), no agent twice.
 * The one rule for the producer's first attempts, the workflow's re-delegations and compensations.
 */
export function candidateAgents(target: AgentTarget, registered: readonly RegisteredAgent[]): string[] {
  const fixed = target.agent ? [target.agent] : [];
  const bySkill = target.skill ? withSkill(registered, target.skill, target.tags ?? []).map((agent) => agent.cardUrl) : [];
  return [...new Set([...fixed, ...bySkill])];
}
