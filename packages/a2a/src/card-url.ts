/**
 * Agent Card URLs without I/O and without the A2A model (the decider imports this): where a card lives, the one
 * spelling of a card URL, and when two targets are the same agent. `normalizeAgentCardUrl` (card-normalize.ts) is
 * the validating entry point.
 */

/** Where an agent publishes its card, under its origin (spec §8.2, RFC 8615 well-known URI). */
export const AGENT_CARD_PATH = '/.well-known/agent-card.json';

/** `true` for an absolute http(s) URL. */
export function isHttpUrl(url: string): boolean {
  if (!URL.canParse(url)) return false;
  const protocol = new URL(url).protocol;
  return protocol === 'http:' || protocol === 'https:';
}

/**
 * The one spelling of the card URL of a parsed http(s) URL. The WHATWG URL parser already lowercases the scheme and
 * host, drops the scheme's default port, resolves `.` and `..` segments and percent-encodes; then:
 * - a path (trailing slashes aside) ending in `.json` names the card itself and is kept, without its trailing slashes;
 * - any other path is a base URL: the card is `AGENT_CARD_PATH` under its origin (the base path is not kept);
 * - the query is kept (an agent may serve tenants' cards by query); the fragment is dropped (never sent anyway).
 * So `http://H:80`, `HTTP://h/`, `http://h/.well-known/agent-card.json#x` are one URL; another host, port or card
 * path is another agent.
 */
export function cardUrlOf(url: URL): string {
  const parsed = new URL(url.href);
  parsed.hash = '';
  let path = parsed.pathname;
  while (path.length > 1 && path.endsWith('/')) path = path.slice(0, -1);
  parsed.pathname = path.endsWith('.json') ? path : AGENT_CARD_PATH;
  return parsed.href;
}

/**
 * The identity of an agent target for comparisons: its normalized card URL (`cardUrlOf`), or `url` unchanged when
 * it is not an http(s) URL (a local handler target). Two targets are the same agent exactly when their keys are equal.
 */
export function agentKeyOf(url: string): string {
  return isHttpUrl(url) ? cardUrlOf(new URL(url)) : url;
}
