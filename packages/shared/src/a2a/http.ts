/**
 * The one place that does HTTP for A2A: undici `request` on an injected
 * `Dispatcher`, `A2A-Version` on every request (spec §3.6: clients MUST send
 * it; the 1.3.0 SDK rejects a missing header with -32009), the agent's
 * credential headers, and network failures mapped to `NetworkError`.
 */
import { Agent, type Dispatcher, request } from 'undici';
import { traceContextHeaders } from '../tracing.ts';
import type { CredentialsProvider } from './credentials.ts';
import { A2AError, NetworkError } from './errors.ts';

/** Options of one HTTP client (one per agent interface). */
export interface HttpClientOptions {
  /** undici dispatcher; default one process-wide `Agent`. */
  dispatcher?: Dispatcher;
  /** The agent's credential headers, fetched per request. */
  credentials?: CredentialsProvider;
  /** Whole-request deadline for non-stream calls, and the deadline for a stream's response headers. Default 30_000. */
  requestTimeoutMs?: number;
  /** `A2A-Version` header value (`Major.Minor`). Default `'1.0'`. */
  a2aVersion?: string;
}

export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;

export interface HttpRequest {
  method: 'GET' | 'POST' | 'DELETE';
  url: string;
  headers?: Record<string, string>;
  body?: string;
  signal?: AbortSignal;
}

/** A fully read response. */
export interface HttpResponse {
  status: number;
  contentType: string | undefined;
  bodyText: string;
  /** Response headers, lower-case names, first value of repeated ones. */
  headers: Record<string, string>;
}

/** A response whose body is still streaming. Call `body.destroy()` (or iterate to the end) to release it. */
export interface HttpStreamResponse {
  status: number;
  contentType: string | undefined;
  body: Dispatcher.ResponseData['body'];
}

export interface HttpClient {
  /** Sends a request and reads the whole body within `requestTimeoutMs`. Throws `NetworkError`, or the caller's abort reason. */
  request(spec: HttpRequest): Promise<HttpResponse>;
  /**
   * Sends a request whose body is an SSE stream. undici's `bodyTimeout` is set to
   * 0 for it (field case R05: the default 300 s cut kills quiet but healthy
   * streams); the SSE reader's idle watchdog decides instead.
   */
  openStream(spec: HttpRequest): Promise<HttpStreamResponse>;
}

let sharedAgent: Agent | undefined;
/** The process-wide default dispatcher, created on first use. */
export const defaultDispatcher = (): Dispatcher => (sharedAgent ??= new Agent());

const NETWORK_ERROR_CODES = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH',
  'UND_ERR_SOCKET', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CLOSED',
]);

function errorCode(error: unknown): string | undefined {
  for (let current = error, depth = 0; current instanceof Error && depth < 4; current = current.cause, depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && NETWORK_ERROR_CODES.has(code)) return code;
  }
  return undefined;
}

/** Maps a thrown transport error: caller abort → its reason; our deadline or a socket failure → `NetworkError`. */
export function toNetworkError(error: unknown, url: string, callerSignal?: AbortSignal, timeoutSignal?: AbortSignal): unknown {
  if (error instanceof A2AError) return error;
  if (callerSignal?.aborted) return callerSignal.reason;
  if (timeoutSignal?.aborted) return new NetworkError(`request to ${url} timed out`, { cause: error });
  const code = errorCode(error);
  if (code !== undefined) return new NetworkError(`${code} on ${url}`, { cause: error });
  return error;
}

const headerValue = (value: string | string[] | undefined): string | undefined => (Array.isArray(value) ? value[0] : value);

/** Builds an `HttpClient`; options get their defaults here, once. */
export function createHttpClient(options: HttpClientOptions = {}): HttpClient {
  const dispatcher = options.dispatcher ?? defaultDispatcher();
  const requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  const a2aVersion = options.a2aVersion ?? '1.0';
  const credentials = options.credentials;

  async function buildHeaders(spec: HttpRequest): Promise<Record<string, string>> {
    const credentialHeaders = credentials ? await credentials() : {};
    // W3C Trace Context of the active span (the queue job's), when tracing is on.
    return { ...credentialHeaders, ...spec.headers, ...traceContextHeaders(), 'A2A-Version': a2aVersion };
  }

  return {
    async request(spec) {
      const timeoutSignal = AbortSignal.timeout(requestTimeoutMs);
      const signal = spec.signal ? AbortSignal.any([spec.signal, timeoutSignal]) : timeoutSignal;
      try {
        const response = await request(spec.url, {
          dispatcher,
          method: spec.method,
          headers: await buildHeaders(spec),
          body: spec.body,
          signal,
        });
        const bodyText = await response.body.text();
        const headers: Record<string, string> = {};
        for (const [name, value] of Object.entries(response.headers)) {
          const first = headerValue(value);
          if (first !== undefined) headers[name.toLowerCase()] = first;
        }
        return { status: response.statusCode, contentType: headers['content-type'], bodyText, headers };
      } catch (error) {
        throw toNetworkError(error, spec.url, spec.signal, timeoutSignal);
      }
    },

    async openStream(spec) {
      try {
        const response = await request(spec.url, {
          dispatcher,
          method: spec.method,
          headers: { accept: 'text/event-stream', ...(await buildHeaders(spec)) },
          body: spec.body,
          signal: spec.signal,
          headersTimeout: requestTimeoutMs,
          bodyTimeout: 0,
        });
        return { status: response.statusCode, contentType: headerValue(response.headers['content-type']), body: response.body };
      } catch (error) {
        throw toNetworkError(error, spec.url, spec.signal);
      }
    },
  };
}
