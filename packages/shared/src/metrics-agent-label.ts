/**
 * The `agent` label of the per-delegation metrics, bounded so an agent URL can never become a series of its own:
 * a registered agent is labelled by its card's name (at most `AGENT_LABEL_NAME_CHARS` characters), the first
 * `limit` distinct names in registration order; every other agent card URL (unregistered, past the limit,
 * handler steps) is `other`. The labels are kept in memory and replaced from the registry's list by whoever owns
 * the registry (the workers refresh them every `AGENT_LABEL_REFRESH_MS`); looking one up never touches Redis.
 */

/** The label of every agent that is not a registered one within the limit. */
export const OTHER_AGENT_LABEL = 'other';
/** Default most distinct registered-agent labels (besides `other`): at most 51 values per labelled series. */
export const DEFAULT_AGENT_LABEL_LIMIT = 50;
/** Longest label value (characters): a card name is the agent's to choose. */
export const AGENT_LABEL_NAME_CHARS = 64;
/** How often the workers re-read the registry for the labels (ms). */
export const AGENT_LABEL_REFRESH_MS = 30_000;

/** What the labels need of a registered agent (`RegisteredAgent` fits). */
export interface LabelledAgent {
  cardUrl: string;
  card: { name: string };
}

export class AgentLabels {
  private byCardUrl: ReadonlyMap<string, string> = new Map();

  /** `limit`: most distinct registered-agent names labelled (default `DEFAULT_AGENT_LABEL_LIMIT`). */
  constructor(private readonly limit: number = DEFAULT_AGENT_LABEL_LIMIT) {}

  /** The label of `agentCardUrl`: its registered name, else `other`. */
  of(agentCardUrl: string | undefined): string {
    return (agentCardUrl !== undefined && this.byCardUrl.get(agentCardUrl)) || OTHER_AGENT_LABEL;
  }

  /** Replaces the labels from the registry's list (registration order): the first `limit` distinct names are kept. */
  update(agents: readonly LabelledAgent[]): void {
    const names = new Set<string>();
    const byCardUrl = new Map<string, string>();
    for (const agent of agents) {
      const name = agent.card.name.trim().slice(0, AGENT_LABEL_NAME_CHARS);
      if (!name) continue;
      if (!names.has(name) && names.size >= this.limit) continue;
      names.add(name);
      byCardUrl.set(agent.cardUrl, name);
    }
    this.byCardUrl = byCardUrl;
  }
}
