/**
 * Per-agent credentials. A provider is called once per request and returns the
 * headers to add (spec §7: credentials travel in HTTP headers, out of band of
 * the A2A payload).
 */

/** Returns the headers carrying an agent's credentials; called before every request. */
export type CredentialsProvider = () => Promise<Record<string, string>>;

/** `Authorization: Bearer <token>` with a fixed token. */
export function bearerToken(token: string): CredentialsProvider {
  const headers = { authorization: `Bearer ${token}` };
  return async () => ({ ...headers });
}

/** A fixed API key in a header of the agent's choosing (e.g. `X-API-Key`), see the card's `apiKeySecurityScheme`. */
export function apiKeyHeader(name: string, value: string): CredentialsProvider {
  return async () => ({ [name]: value });
}

/** What a token source returns. `expiresAtMs` is epoch milliseconds; omit it for a token that never expires. */
export interface IssuedToken {
  token: string;
  expiresAtMs?: number;
}

/** Options of `refreshingToken`. */
export interface RefreshingTokenOptions {
  /** Refresh this long before `expiresAtMs`, so a token does not expire in flight. Default 30_000. */
  refreshMarginMs?: number;
  /** Clock in epoch ms; injected by tests. Default `Date.now`. */
  now?: () => number;
}

/**
 * `Authorization: Bearer <token>` from `fetchToken`, cached until
 * `expiresAtMs - refreshMarginMs`. Concurrent requests share one fetch; a failed
 * fetch is not cached (the next request tries again) and its error propagates.
 */
export function refreshingToken(
  fetchToken: () => Promise<IssuedToken>,
  options: RefreshingTokenOptions = {},
): CredentialsProvider {
  const refreshMarginMs = options.refreshMarginMs ?? 30_000;
  const now = options.now ?? Date.now;
  let cached: IssuedToken | undefined;
  let inFlight: Promise<IssuedToken> | undefined;

  const isFresh = (token: IssuedToken | undefined): token is IssuedToken =>
    token !== undefined && (token.expiresAtMs === undefined || now() < token.expiresAtMs - refreshMarginMs);

  return async () => {
    if (!isFresh(cached)) {
      inFlight ??= fetchToken().finally(() => {
        inFlight = undefined;
      });
      cached = await inFlight;
    }
    return { authorization: `Bearer ${cached.token}` };
  };
}
