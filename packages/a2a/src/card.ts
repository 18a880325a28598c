/**
 * Agent Card discovery (spec §8): fetch `/.well-known/agent-card.json` with
 * ETag revalidation and the address policy (R19), normalize it (1.0 or 0.3,
 * card-normalize.ts, R20), and pick the interface we speak (§8.3).
 */
import { LRUCache } from 'lru-cache';
import { type AddressPolicyOptions, BlockedAddressError, checkUrl, createPolicyDispatcher } from './address-policy.ts';
import { AgentCardError, normalizeAgentCard, normalizeAgentCardUrl, type AgentCard } from './card-normalize.ts';
import type { CredentialsProvider } from './credentials.ts';
import { AuthenticationError, refusesCredentialsByStatus, UpstreamError } from './errors.ts';
import { readingAnswer } from './answer-fault.ts';
import { excerpt, tryParseJson } from './error-mapping.ts';
import { createHttpClient } from './http.ts';
import type { A2ALimits } from './limits.ts';
import type { AgentInterface } from './transport.ts';
import { isInterfaceSupported, type TransportFactory } from './client.ts';
import type { Dispatcher } from 'undici';

export {
  AGENT_CARD_PATH,
  AgentCardError,
  agentKeyOf,
  isHttpUrl,
  normalizeAgentCard,
  normalizeAgentCardUrl,
  normalizeProtocolVersion,
  type AgentCard,
  type AgentCardRejection,
} from './card-normalize.ts';

/** A cached card and the ETag it came with. */
export interface CachedAgentCard {
  etag: string;
  card: AgentCard;
}
/** Where ETag'd cards are kept between fetches, keyed by card URL. */
export interface AgentCardCache {
  get(cardUrl: string): CachedAgentCard | undefined;
  set(cardUrl: string, entry: CachedAgentCard): void;
}
/** Default byte budget of `createAgentCardCache`: 32 MiB of cards (as JSON), least recently used forgotten first. */
export const AGENT_CARD_CACHE_BYTES = 32 * 1024 * 1024;

/**
 * An in-memory `AgentCardCache` within `maxBytes` (default `AGENT_CARD_CACHE_BYTES`), measured as each card's JSON
 * bytes plus its ETag: card URLs come from callers, so the bound is in bytes, not entries (B32).
 */
export function createAgentCardCache(options: { maxBytes?: number } = {}): AgentCardCache {
  const entries = new LRUCache<string, CachedAgentCard>({
    maxSize: Math.max(1, options.maxBytes ?? AGENT_CARD_CACHE_BYTES),
    sizeCalculation: (entry) => Math.max(1, Buffer.byteLength(JSON.stringify(entry.card)) + entry.etag.length),
  });
  return { get: (cardUrl) => entries.get(cardUrl), set: (cardUrl, entry) => void entries.set(cardUrl, entry) };
}

/** Options of `fetchAgentCard`. */
export interface FetchAgentCardOptions {
  dispatcher?: Dispatcher;
  cache?: AgentCardCache;
  credentials?: CredentialsProvider;
  /** Default 30_000. */
  requestTimeoutMs?: number;
  signal?: AbortSignal;
  /**
   * Field case R19: the card URL and every interface URL of the card must pass
   * this policy, else `AgentCardError` `BLOCKED_ADDRESS`. Pass
   * `dispatcher: createPolicyDispatcher(policy)` too (shared, pooled); without a
   * dispatcher a policy dispatcher is made for this one fetch. No policy: no
   * address checks.
   */
  addressPolicy?: AddressPolicyOptions;
  /** Input limits (`limits.ts`): the body is read up to `agentCardBytes` (default 1 MiB), then `LimitExceededError`. */
  limits?: Partial<A2ALimits>;
}

/**
 * Fetches and normalizes an Agent Card (spec §8.2). With a `cache`, sends
 * `If-None-Match` and reuses the cached card on 304. Redirects are not followed
 * (R19). With `addressPolicy`, the card URL is checked before the fetch and every
 * interface URL after it, on every call (a cached card too: DNS can change). Throws `AgentCardError`, `AuthenticationError` (401/403),
 * `UpstreamError` (5xx/408/429) or `NetworkError`.
 */
export async function fetchAgentCard(cardOrBaseUrl: string, options: FetchAgentCardOptions = {}): Promise<AgentCard> {
  const cardUrl = normalizeAgentCardUrl(cardOrBaseUrl);
  const policy = options.addressPolicy;
  if (policy === undefined) return requestCard(cardUrl, options);
  await checkCardUrl(cardUrl, policy, 'card URL');
  const ownDispatcher = options.dispatcher ? undefined : createPolicyDispatcher(policy);
  let card: AgentCard;
  try {
    card = await requestCard(cardUrl, { ...options, dispatcher: options.dispatcher ?? ownDispatcher });
  } catch (error) {
    const blocked = blockedCause(error);
    throw blocked ? blockedCardError('card URL', cardUrl, blocked) : error;
  } finally {
    await ownDispatcher?.close();
  }
  await Promise.all(card.interfaces.map((agentInterface) => checkCardUrl(agentInterface.url, policy, `agent card "${card.name}" interface`)));
  return card;
}

/** The address policy's refusal in `error` (itself, or a cause up to 4 levels deep: an `AgentCardError` `BLOCKED_ADDRESS`, a connection's), if any. */
export function blockedCause(error: unknown): BlockedAddressError | undefined {
  for (let current = error, depth = 0; current instanceof Error && depth < 4; current = current.cause, depth++) {
    if (current instanceof BlockedAddressError) return current;
  }
  return undefined;
}

const blockedCardError = (what: string, url: string, blocked: BlockedAddressError): AgentCardError =>
  new AgentCardError('BLOCKED_ADDRESS', `${what} ${url}: ${blocked.message}`, { cause: blocked });

/** `checkUrl` with a refusal turned into `AgentCardError` `BLOCKED_ADDRESS`; DNS failures stay `NetworkError`. */
async function checkCardUrl(url: string, policy: AddressPolicyOptions, what: string): Promise<void> {
  try {
    await checkUrl(url, policy);
  } catch (error) {
    throw error instanceof BlockedAddressError ? blockedCardError(what, url, error) : error;
  }
}

async function requestCard(cardUrl: string, options: FetchAgentCardOptions): Promise<AgentCard> {
  const cached = options.cache?.get(cardUrl);
  const http = createHttpClient(options);
  const response = await http.request({
    method: 'GET',
    url: cardUrl,
    headers: { accept: 'application/json', ...(cached ? { 'if-none-match': cached.etag } : {}) },
    signal: options.signal,
    bodyLimit: 'agentCardBytes',
  });
  const { status, bodyText } = response;
  if (status === 304 && cached) return cached.card;
  if (status >= 300 && status < 400) throw new AgentCardError('REDIRECT', `agent card at ${cardUrl} redirects (HTTP ${status}); not followed`, { httpStatus: status });
  if (refusesCredentialsByStatus(status)) throw new AuthenticationError(`HTTP ${status} for ${cardUrl}`, { httpStatus: status, cause: bodyText });
  if (status >= 500 || status === 408 || status === 429) throw new UpstreamError(`HTTP ${status} for ${cardUrl}`, { httpStatus: status, cause: bodyText, bodyExcerpt: excerpt(bodyText) });
  if (status !== 200) throw new AgentCardError('HTTP_STATUS', `HTTP ${status} for ${cardUrl}`, { httpStatus: status, cause: bodyText, bodyExcerpt: excerpt(bodyText) });
  const raw = tryParseJson(bodyText);
  if (raw === undefined) throw new AgentCardError('NOT_JSON', `agent card at ${cardUrl} is not JSON`, { httpStatus: status, cause: bodyText, bodyExcerpt: excerpt(bodyText) });
  const card = readingAnswer(`agent card at ${cardUrl}`, () => normalizeAgentCard(raw));
  const etag = response.headers.etag;
  if (options.cache && etag) options.cache.set(cardUrl, { etag, card });
  return card;
}

/**
 * What a caller can speak. `transports` (e.g. `defaultTransports`, plus `grpcTransports`): only interfaces one of
 * them builds. `bindings` and `versions` narrow further; their defaults are every binding (JSONRPC, HTTP+JSON, GRPC)
 * and both versions (1.0, 0.3). Without `transports` the choice may name a binding the caller then has no transport
 * for: pass the same list to `selectInterface` and `createTransport`.
 */
export interface InterfaceSelection {
  transports?: readonly TransportFactory[];
  bindings?: readonly string[];
  versions?: readonly string[];
}
/** Default `InterfaceSelection.bindings`. */
export const DEFAULT_BINDINGS: readonly string[] = ['JSONRPC', 'HTTP+JSON', 'GRPC'];
/** Default `InterfaceSelection.versions`. */
export const DEFAULT_VERSIONS: readonly string[] = ['1.0', '0.3'];

/** The first interface in card order that the selection speaks (spec §8.3), or `undefined`. */
export function selectInterface(card: AgentCard, selection: InterfaceSelection = {}): AgentInterface | undefined {
  const bindings = selection.bindings ?? DEFAULT_BINDINGS;
  const versions = selection.versions ?? DEFAULT_VERSIONS;
  const transports = selection.transports;
  return card.interfaces.find(
    (agentInterface) =>
      bindings.includes(agentInterface.protocolBinding) &&
      versions.includes(agentInterface.protocolVersion) &&
      (transports === undefined || isInterfaceSupported(agentInterface, transports)),
  );
}
