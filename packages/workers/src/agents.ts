/**
 * Resolves a delegation's agent to a transport: fetches and caches the Agent
 * Card, chooses the interface (first in card order that we support), and
 * builds one transport per interface with that agent's credentials, so that
 * sends, reconciliation, resubscription and replies run as one principal.
 */
import type { Dispatcher } from 'undici';
import { LRUCache } from 'lru-cache';
import {
  NetworkError,
  createAgentCardCache,
  setLongTimeout,
  createTransport,
  defaultTransports,
  fetchAgentCard,
  isInterfaceSupported,
  type A2ALimits,
  type A2ATransport,
  type AgentCard,
  type AddressPolicyOptions,
  type CredentialsProvider,
  type LongTimeout,
  type TransportFactory,
} from '@durable-a2a/a2a';
import { grpcTransports } from '@durable-a2a/a2a/grpc';
import type { AgentCall, AgentInterfaceRef } from '@durable-a2a/shared';

export interface AgentDirectoryOptions {
  /** Credentials per Agent Card URL; undefined = anonymous. */
  credentials?: (agentCardUrl: string) => CredentialsProvider | undefined;
  dispatcher?: Dispatcher;
  /** Checked on every card fetch (card URL and each interface URL). */
  addressPolicy?: AddressPolicyOptions;
  requestTimeoutMs: number;
  streamIdleTimeoutMs: number;
  /** Card cache lifetime in ms before a revalidation (ETag). */
  cardMaxAgeMs: number;
  /** Input limits for every answer and Agent Card (partial `A2ALimits`); default `DEFAULT_A2A_LIMITS`. */
  limits?: Partial<A2ALimits>;
  now: () => number;
  /**
   * Byte budget of the cards this worker remembers (the parsed cards and the ETag cache, each): card URLs come from
   * callers and cards from agents, so the budget is in bytes, not entries (B32). Default `CARD_CACHE_BYTES`.
   */
  cardCacheBytes?: number;
  /**
   * Told of every card fetch (a cached card is no fetch) and every SendMessage, with the error when it failed (a
   * SendMessage we aborted ourselves is not told): the registry's health of the agent. Must not throw; default nothing.
   */
  onAgentCall?: (agentCardUrl: string, call: AgentCall) => void;
  /** The bindings and versions the workers speak (card order picks among them). Default `WORKER_TRANSPORTS`. */
  transports?: readonly TransportFactory[];
}

/** Default `AgentDirectoryOptions.transports`: JSON-RPC, HTTP+JSON and gRPC, A2A 1.0 and 0.3 (gRPC loads on first use). */
export const WORKER_TRANSPORTS: readonly TransportFactory[] = [...defaultTransports, ...grpcTransports];

/** Default `AgentDirectoryOptions.cardCacheBytes`: 32 MiB (32 cards at the 1 MiB card limit, thousands of usual ones). */
export const CARD_CACHE_BYTES = 32 * 1024 * 1024;
/** Transports kept per worker (least recently used closed first): one per agent interface in use. */
export const TRANSPORTS_KEPT = 1_000;
/** Byte budget of remembered card failures (each holds what the agent answered, up to a card's size). */
const CARD_FAILURE_BYTES = 8 * 1024 * 1024;

/** Bytes a value takes as JSON (UTF-8), the measure of every cache budget here. */
const jsonBytes = (value: unknown): number => Buffer.byteLength(JSON.stringify(value) ?? '');

/** Raised when an agent has no interface we can speak. Permanent: the step moves to another agent. */
export class NoUsableInterfaceError extends Error {
  override readonly name = 'NoUsableInterfaceError';
  readonly code = 'NO_USABLE_INTERFACE';
  readonly retryable = false;
}

/**
 * After a failed card fetch, the same error is given back without asking the agent for one request
 * timeout (at most 1 s), then twice that, four times … up to this cap (ms): however many jobs want an
 * unreachable or hanging agent's card, it is asked about once per window (agent calls stay bounded
 * without progress). Short: when to try again is the send's own wait (the delegation core's backoff for
 * an unreachable agent); this window only folds the tries of many delegations into one fetch, so an agent
 * back from a restart is seen within it.
 */
export const CARD_RETRY_CAP_MS = 5_000;
const CARD_RETRY_BASE_MAX_MS = 1_000;
export class AgentDirectory {
  private readonly cardCache: ReturnType<typeof createAgentCardCache>;
  private readonly cards: LRUCache<string, { card: AgentCard; fetchedAt: number; bytes: number }>;
  private readonly cardFailures = new LRUCache<string, { error: unknown; until: number; count: number; bytes: number }>({
    maxSize: CARD_FAILURE_BYTES,
    sizeCalculation: (entry) => entry.bytes,
  });
  private readonly cardFetches = new Map<string, Promise<AgentCard>>();
  private readonly transports = new LRUCache<string, A2ATransport>({
    max: TRANSPORTS_KEPT,
    // A transport evicted is closed (a gRPC channel holds a connection); an HTTP one shares the fleet's dispatcher.
    dispose: (transport) => (transport as { close?: () => void }).close?.(),
  });

  private readonly transportFactories: readonly TransportFactory[];

  constructor(private readonly options: AgentDirectoryOptions) {
    this.transportFactories = options.transports ?? WORKER_TRANSPORTS;
    const maxSize = Math.max(1, options.cardCacheBytes ?? CARD_CACHE_BYTES);
    this.cardCache = createAgentCardCache({ maxBytes: maxSize });
    this.cards = new LRUCache({ maxSize, sizeCalculation: (entry) => Math.max(1, entry.bytes) });
  }

  /** How long one Agent Card fetch may last at most (ms): `requestTimeoutMs` (`card`'s default bound). */
  get cardFetchTimeoutMs(): number {
    return this.options.requestTimeoutMs;
  }

  /**
   * The agent's card, refreshed after `cardMaxAgeMs`; the fetch lasts at most `timeoutMs` (default
   * `requestTimeoutMs`: an agent that hangs on its card never holds a send past its deadline). A failed
   * fetch is not repeated for a growing window (`CARD_RETRY_CAP_MS`): the same error is thrown.
   * Throws AgentCardError, LimitExceededError (over `agentCardBytes`), NetworkError.
   */
  async card(agentCardUrl: string, timeoutMs = this.options.requestTimeoutMs): Promise<AgentCard> {
    const cached = this.cards.get(agentCardUrl);
    if (cached && this.options.now() - cached.fetchedAt < this.options.cardMaxAgeMs) return cached.card;
    const failed = this.cardFailures.get(agentCardUrl);
    if (failed && this.options.now() < failed.until) throw failed.error;
    // One fetch per card at a time: concurrent callers share it (and its failure).
    let pending = this.cardFetches.get(agentCardUrl);
    if (!pending) {
      pending = this.fetchCard(agentCardUrl).finally(() => this.cardFetches.delete(agentCardUrl));
      this.cardFetches.set(agentCardUrl, pending);
    }
    // The shared fetch always has the full request timeout, so a caller short on time (its attempt's
    // time left) gives up alone: its timeout is neither cached as the agent's failure nor shared.
    return timeoutMs >= this.options.requestTimeoutMs ? pending : waitAtMost(pending, Math.max(1, timeoutMs), agentCardUrl);
  }

  private async fetchCard(agentCardUrl: string, timeoutMs = this.options.requestTimeoutMs): Promise<AgentCard> {
    let card: AgentCard;
    try {
      card = await fetchAgentCard(agentCardUrl, {
        dispatcher: this.options.dispatcher,
        cache: this.cardCache,
        addressPolicy: this.options.addressPolicy,
        requestTimeoutMs: Math.max(1, Math.min(timeoutMs, this.options.requestTimeoutMs)),
        limits: this.options.limits,
      });
    } catch (error) {
      const count = (this.cardFailures.get(agentCardUrl)?.count ?? 0) + 1;
      const baseMs = Math.min(this.options.requestTimeoutMs, CARD_RETRY_BASE_MAX_MS);
      const bytes = 256 + String((error as Error)?.message ?? '').length + String((error as { cause?: unknown })?.cause ?? '').length;
      this.cardFailures.set(agentCardUrl, { error, count, bytes, until: this.options.now() + Math.min(baseMs * 2 ** (count - 1), CARD_RETRY_CAP_MS) });
      this.options.onAgentCall?.(agentCardUrl, { kind: 'card', error: errorText(error) });
      throw error;
    }
    this.options.onAgentCall?.(agentCardUrl, { kind: 'card' });
    this.cardFailures.delete(agentCardUrl);
    this.cards.set(agentCardUrl, { card, fetchedAt: this.options.now(), bytes: jsonBytes(card) });
    return card;
  }

  /** The first interface in card order that we speak (spec §8.3). Throws NoUsableInterfaceError (and see `card`). */
  async chooseInterface(agentCardUrl: string, timeoutMs?: number): Promise<AgentInterfaceRef> {
    const card = await this.card(agentCardUrl, timeoutMs);
    const chosen = card.interfaces.find((candidate) => isInterfaceSupported(candidate, this.transportFactories));
    if (!chosen) throw new NoUsableInterfaceError(`no supported interface in the Agent Card at ${agentCardUrl}`);
    return refOf(chosen);
  }

  /**
   * The first interface we speak that the card lists after `current` (P37: the next one to try after `current`
   * refused our protocol version), or undefined. Card order, forward only. Throws like `card`.
   */
  async interfaceAfter(agentCardUrl: string, current: AgentInterfaceRef): Promise<AgentInterfaceRef | undefined> {
    const card = await this.card(agentCardUrl);
    const same = (candidate: { url: string; protocolBinding: string; protocolVersion: string }) =>
      candidate.url === current.url && candidate.protocolBinding === current.protocolBinding && candidate.protocolVersion === current.protocolVersion;
    const at = card.interfaces.findIndex(same);
    const next = at < 0 ? undefined : card.interfaces.slice(at + 1).find((candidate) => isInterfaceSupported(candidate, this.transportFactories) && !same(candidate));
    return next ? refOf(next) : undefined;
  }

  /** The transport for a journaled interface, with the agent's credentials. */
  transport(agentCardUrl: string, agentInterface: AgentInterfaceRef): A2ATransport {
    const key = `${agentCardUrl} ${agentInterface.protocolBinding} ${agentInterface.protocolVersion} ${agentInterface.url} ${agentInterface.tenant ?? ''}`;
    let transport = this.transports.get(key);
    if (!transport) {
      transport = createTransport(agentInterface, {
        transports: this.transportFactories,
        credentials: this.options.credentials?.(agentCardUrl),
        dispatcher: this.options.dispatcher,
        requestTimeoutMs: this.options.requestTimeoutMs,
        idleTimeoutMs: this.options.streamIdleTimeoutMs,
        limits: this.options.limits,
      });
      const onAgentCall = this.options.onAgentCall;
      if (onAgentCall) transport = withObservedSends(transport, (call) => onAgentCall(agentCardUrl, call));
      this.transports.set(key, transport);
    }
    return transport;
  }

  /** The transport for a delegation: its journaled interface, or the card's choice if none yet. */
  async transportFor(record: { agentCardUrl: string; agentInterface?: AgentInterfaceRef }): Promise<A2ATransport> {
    return this.transport(record.agentCardUrl, record.agentInterface ?? (await this.chooseInterface(record.agentCardUrl)));
  }

  /** Forgets cached transports for an agent (after its credentials changed). */
  forget(agentCardUrl: string): void {
    for (const key of [...this.transports.keys()]) if (key.startsWith(`${agentCardUrl} `)) this.transports.delete(key);
    this.cards.delete(agentCardUrl);
    this.cardFailures.delete(agentCardUrl);
  }
}

/** An error's text for the registry's health (its message; the registry bounds its length). */
const errorText = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/**
 * `transport` with each SendMessage's outcome told to `observe` (success, or the error it rejected with); a send
 * aborted by its own signal (we stopped waiting) tells nothing. Every other member is the transport's own.
 */
function withObservedSends(transport: A2ATransport, observe: (call: AgentCall) => void): A2ATransport {
  const sendMessage: A2ATransport['sendMessage'] = async (request, callOptions) => {
    try {
      const response = await transport.sendMessage(request, callOptions);
      observe({ kind: 'send' });
      return response;
    } catch (error) {
      if (!callOptions?.signal?.aborted) observe({ kind: 'send', error: errorText(error) });
      throw error;
    }
  };
  return new Proxy(transport, {
    get: (target, property) => {
      if (property === 'sendMessage') return sendMessage;
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/** The journal's form of a card interface. */
const refOf = (chosen: AgentCard['interfaces'][number]): AgentInterfaceRef => ({
  url: chosen.url,
  protocolBinding: chosen.protocolBinding as AgentInterfaceRef['protocolBinding'],
  protocolVersion: chosen.protocolVersion as AgentInterfaceRef['protocolVersion'],
  ...(chosen.tenant ? { tenant: chosen.tenant } : {}),
});

/** `pending`, or a NetworkError (delivery `maybe`) after `timeoutMs` for this caller only; `pending` runs on. */
function waitAtMost(pending: Promise<AgentCard>, timeoutMs: number, agentCardUrl: string): Promise<AgentCard> {
  let timer: LongTimeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    // The attempt's time left may pass Node's timer range (a month's deadline).
    timer = setLongTimeout(() => reject(new NetworkError(`Agent Card ${agentCardUrl}: no answer within the attempt's time left (${timeoutMs} ms)`)), timeoutMs);
  });
  return Promise.race([pending, timeout]).finally(() => timer?.clear());
}

