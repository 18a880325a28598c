/**
 * The `agent` label of the per-delegation metrics, bounded so an agent URL can never become a series of its own:
 * a registered agent is labelled by its card's name (at most `AGENT_LABEL_NAME_CHARS` characters), the first
 * `limit` distinct names in registration order; every other agent card URL (unregistered, past the limit,
 * handler steps) is `other`. Card URLs are compared in the registry's one spelling (`cardUrlOf`). The labels are kept in memory and replaced from the registry's list by whoever owns
 * the registry (the workers refresh them every `AGENT_LABEL_REFRESH_MS`); looking one up never touches Redis.
 */
import { cardUrlOf } from '@durable-a2a/a2a/pure';

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

/** Most card URL spellings whose label is remembered between registry refreshes (the memo is cleared when full). */
const SPELLINGS_REMEMBERED = 1_000;

/** The registry's one spelling of `cardUrl` (`cardUrlOf`), or the text itself when it is not a URL. */
function normalized(cardUrl: string): string {
  try {
    return cardUrlOf(new URL(cardUrl));
  } catch {
    return cardUrl;
  }
}

export class AgentLabels {
  private byCardUrl: ReadonlyMap<string, string> = new Map();
  /** Labels of spellings other than the registry's (a delegation named the agent by its base URL): looked up once. */
  private bySpelling = new Map<string, string>();

  /** `limit`: most distinct registered-agent names labelled (default `DEFAULT_AGENT_LABEL_LIMIT`). */
  constructor(private readonly limit: number = DEFAULT_AGENT_LABEL_LIMIT) {}

  /** The label of `agentCardUrl` in any spelling the registry normalises alike: its registered name, else `other`. */
  of(agentCardUrl: string | undefined): string {
    if (agentCardUrl === undefined) return OTHER_AGENT_LABEL;
    const exact = this.byCardUrl.get(agentCardUrl) ?? this.bySpelling.get(agentCardUrl);
    if (exact !== undefined) return exact;
    const label = this.byCardUrl.get(normalized(agentCardUrl)) ?? OTHER_AGENT_LABEL;
    if (this.bySpelling.size >= SPELLINGS_REMEMBERED) this.bySpelling.clear();
    this.bySpelling.set(agentCardUrl, label);
    return label;
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
      byCardUrl.set(normalized(agent.cardUrl), name);
    }
    this.byCardUrl = byCardUrl;
    this.bySpelling = new Map();
  }
}
