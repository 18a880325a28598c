/**
 * The one place that does HTTP for A2A: undici `request` on an injected
 * `Dispatcher`, `A2A-Version` on every request (spec §3.6: clients MUST send
 * it; the 1.3.0 SDK rejects a missing header with -32009), the agent's
 * credential headers, and network failures mapped to `NetworkError`.
 */
import type { Readable } from 'node:stream';
import { Agent, type Dispatcher, errors as undiciErrors, request } from 'undici';
import { BlockedAddressError, ownConnectionOf } from './address-policy.ts';
import { decodeContentCoding } from './content-coding.ts';
import { traceContextHeaders } from './trace-context.ts';
import type { CredentialsProvider } from './credentials.ts';
import { A2AError, type Delivery, LimitExceededError, NetworkError, ProtocolError, withDelivery } from './errors.ts';
import { type A2ALimits, checkJsonDepth, resolveLimits } from './limits.ts';
import { setLongTimeout } from './long-timer.ts';
import { utf8TextOf } from './utf8.ts';

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
  /** Input limits (`limits.ts`); defaults `DEFAULT_A2A_LIMITS`. */
  limits?: Partial<A2ALimits>;
}

/** Default deadline of a non-stream call, and of a stream's response headers: 30 s. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;

export interface HttpRequest {
  method: 'GET' | 'POST' | 'DELETE';
  url: string;
  headers?: Record<string, string>;
  body?: string;
  signal?: AbortSignal;
  /** This request's deadline in ms instead of `requestTimeoutMs`; 0 = none (only `signal`). */
  timeoutMs?: number;
  /** Which byte limit the answer's body is held to. Default `responseBodyBytes`. */
  bodyLimit?: 'responseBodyBytes' | 'agentCardBytes';
  /**
   * Streams: a connection of its own, closed with the stream, instead of one of the dispatcher's pool (`ownConnectionOf`;
   * only with a `createPolicyDispatcher` dispatcher). For a stream expected to stay open long (a task taken up again).
   */
  ownConnection?: boolean;
}

/** A fully read response. */
export interface HttpResponse {
  status: number;
  contentType: string | undefined;
  bodyText: string;
  /** Response headers, lower-case names, first value of repeated ones. */
  headers: Record<string, string>;
}

/**
 * A response whose body is still streaming, already decoded from its `Content-Encoding` (`content-coding.ts`).
 * Call `body.destroy()` (or iterate to the end) to release it.
 */
export interface HttpStreamResponse {
  status: number;
  contentType: string | undefined;
  body: Readable;
}

export interface HttpClient {
  /**
   * Sends a request and reads the whole body within `requestTimeoutMs`, decoded from its `Content-Encoding` (gzip,
   * deflate, br; `content-coding.ts`) and counting the decoded bytes as they arrive:
   * past the body limit it stops reading, closes the connection and throws `LimitExceededError`; any
   * body nested deeper than `jsonDepth` throws it too (checked on the whole text, whatever its leading bytes). Throws `NetworkError`, or the caller's abort reason.
   */
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

/** Codes raised before a request could leave: the agent never saw it. */
const NOT_SENT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT']);

/**
 * undici's failures to read a response whose bytes arrived: a head past its header limit (`HeadersOverflowError`),
 * bytes that are no HTTP/1.1 answer (`HTTPParserError`: a status line, a header token, a chunk size), a body that
 * contradicts its length or passes a size bound. The server answered with something we cannot read: an unreadable
 * answer (`ProtocolError`, delivery `received`), as a 2xx whose body is not JSON is; never an error of ours (attack 31:
 * such an error left the transport untyped, so the workers took it for their own fault and rethrew it: a search or a
 * read of our task failed for ever, the row INTENT or WORKING, nobody told).
 */
const UNREADABLE_ANSWER_ERRORS: readonly (abstract new (...args: never[]) => Error)[] = [
  undiciErrors.HeadersOverflowError,
  undiciErrors.HTTPParserError,
  undiciErrors.ResponseContentLengthMismatchError,
  undiciErrors.ResponseExceededMaxSizeError,
];

/** The first error in `error`'s cause chain (at most 4 deep) that is an instance of one of `classes`. */
function causeOf(error: unknown, classes: readonly (abstract new (...args: never[]) => Error)[]): Error | undefined {
  for (let current = error, depth = 0; current instanceof Error && depth < 4; current = current.cause, depth++) {
    if (classes.some((errorClass) => current instanceof errorClass)) return current as Error;
  }
  return undefined;
}

function errorCode(error: unknown): string | undefined {
  for (let current = error, depth = 0; current instanceof Error && depth < 4; current = current.cause, depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && NETWORK_ERROR_CODES.has(code)) return code;
  }
  return undefined;
}

/**
 * Maps a thrown transport error: caller abort → its reason; our deadline or a socket failure → `NetworkError`; an
 * answer undici could not read (`UNREADABLE_ANSWER_ERRORS`) → `ProtocolError`, delivery `received`; any other failure
 * of undici's (`UndiciError`) → `NetworkError`, so no failure of the HTTP layer leaves it untyped.
 * `answered` (the response headers had arrived) makes its `delivery` `received`; otherwise a connect-phase
 * failure or a blocked address is `not-sent` and anything else `maybe` (V5).
 */
export function toNetworkError(error: unknown, url: string, callerSignal?: AbortSignal, timedOut = false, answered = false): unknown {
  const blocked = error instanceof BlockedAddressError || (error instanceof Error && error.cause instanceof BlockedAddressError);
  if (error instanceof A2AError) return answered ? withDelivery(error, 'received') : blocked ? withDelivery(error, 'not-sent') : error;
  if (callerSignal?.aborted) return callerSignal.reason;
  const code = errorCode(error);
  const delivery: Delivery = answered ? 'received' : code !== undefined && NOT_SENT_CODES.has(code) ? 'not-sent' : 'maybe';
  if (timedOut) return new NetworkError(`request to ${url} timed out`, { cause: error, delivery });
  if (code !== undefined) return new NetworkError(`${code} on ${url}`, { cause: error, delivery });
  if (blocked) {
    withDelivery((error as Error).cause, 'not-sent');
    return error;
  }
  const unreadable = causeOf(error, UNREADABLE_ANSWER_ERRORS);
  if (unreadable) return new ProtocolError(`the answer from ${url} is no HTTP answer we can read (${unreadable.name}: ${unreadable.message})`, { cause: error, delivery: 'received' });
  const undici = causeOf(error, [undiciErrors.UndiciError]);
  if (undici) return new NetworkError(`${undici.name} on ${url}: ${undici.message}`, { cause: error, delivery });
  return error;
}

/**
 * Reads a body as UTF-8 text, counting bytes as they arrive; past `limitBytes` it stops, destroys the body (a Node
 * stream's `destroy`; a web `ReadableStream` is canceled by leaving its iteration), closing the connection, and throws
 * `LimitExceededError(limit)` (delivery `received`). Never holds more than the limit plus one chunk.
 */
export async function readLimitedText(body: AsyncIterable<Uint8Array> & { destroy?(): unknown }, limitBytes: number, limit: 'responseBodyBytes' | 'agentCardBytes', url: string): Promise<string> {
  // The bytes are kept and decoded once at the end (`utf8TextOf`: the text a streaming decoder gives, without one per body).
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  for await (const chunk of body) {
    bytes += chunk.byteLength;
    if (bytes > limitBytes) {
      body.destroy?.();
      throw new LimitExceededError(limit, limitBytes, `answer from ${url} is larger than the ${limit} limit of ${limitBytes} bytes`, { delivery: 'received' });
    }
    chunks.push(chunk);
  }
  return utf8TextOf(chunks, bytes);
}

const headerValue = (value: string | string[] | undefined): string | undefined => (Array.isArray(value) ? value[0] : value);

/**
 * The `Content-Encoding` list of an answer, every header line of it joined (RFC 9110 §5.3: two lines are one list);
 * none for an answer without a body (204, 304, `Content-Length: 0`), whose empty body no decoder would accept.
 */
function contentCodingsHeader(status: number, raw: Record<string, string | string[] | undefined>): string | undefined {
  if (status === 204 || status === 304 || headerValue(raw['content-length'])?.trim() === '0') return undefined;
  const value = raw['content-encoding'];
  return Array.isArray(value) ? value.join(', ') : value;
}

/** Response headers by lower-case name, the first value of each. */
function firstHeaderValues(raw: Record<string, string | string[] | undefined>): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(raw)) {
    const first = headerValue(value);
    if (first !== undefined) headers[name.toLowerCase()] = first;
  }
  return headers;
}

/**
 * One request's signal: the caller's, and a `timeoutMs` timeout (none when `timeoutMs` is 0). `timedOut` tells why it
 * aborted; `done` clears the timer and the listener on the caller's signal once the body is read (or the request
 * failed). One controller and a timer cleared at the end: `AbortSignal.timeout` keeps its timer until it fires (a
 * request timeout's worth of them at any rate of requests), and `AbortSignal.any` tracks each joined signal by weak
 * references, several µs of CPU and garbage per request.
 */
function requestSignal(callerSignal: AbortSignal | undefined, timeoutMs: number): { signal?: AbortSignal; timedOut: () => boolean; done: () => void } {
  if (timeoutMs <= 0) return { signal: callerSignal, timedOut: () => false, done: () => undefined };
  const controller = new AbortController();
  let timedOut = false;
  // A held send's timeout is its attempt's time left, which may pass Node's timer range (a month's deadline).
  const timer = setLongTimeout(
    () => {
      timedOut = true;
      // The reason `AbortSignal.timeout` gives.
      controller.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError'));
    },
    timeoutMs,
    { unref: true },
  );
  const onCallerAbort = () => controller.abort(callerSignal?.reason);
  if (callerSignal?.aborted) onCallerAbort();
  else callerSignal?.addEventListener('abort', onCallerAbort, { once: true });
  return {
    signal: controller.signal,
    timedOut: () => timedOut,
    done: () => {
      timer.clear();
      callerSignal?.removeEventListener('abort', onCallerAbort);
    },
  };
}

/** Builds an `HttpClient`; options get their defaults here, once. */
export function createHttpClient(options: HttpClientOptions = {}): HttpClient {
  const dispatcher = options.dispatcher ?? defaultDispatcher();
  const requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  const a2aVersion = options.a2aVersion ?? '1.0';
  const credentials = options.credentials;
  const limits = resolveLimits(options.limits);

  async function buildHeaders(spec: HttpRequest): Promise<Record<string, string>> {
    const credentialHeaders = credentials ? await credentials() : {};
    // W3C Trace Context of the active span (the queue job's), when tracing is on.
    return { ...credentialHeaders, ...spec.headers, ...traceContextHeaders(), 'A2A-Version': a2aVersion };
  }

  return {
    async request(spec) {
      const { signal, timedOut, done } = requestSignal(spec.signal, spec.timeoutMs ?? requestTimeoutMs);
      const bodyLimit = spec.bodyLimit ?? 'responseBodyBytes';
      let answered = false;
      try {
        const response = await request(spec.url, {
          dispatcher,
          method: spec.method,
          headers: await buildHeaders(spec),
          body: spec.body,
          signal,
        });
        answered = true;
        const headers = firstHeaderValues(response.headers);
        const body = decodeContentCoding(response.body, contentCodingsHeader(response.statusCode, response.headers), `answer from ${spec.url}`);
        const bodyText = await readLimitedText(body, limits[bodyLimit], bodyLimit, spec.url);
        // Every body, whatever its content type or leading bytes (BOM, whitespace, record separators): a parser reads
        // past any of them (`parseJsonText`, `tryParseJson` on an error body), so no guess at the body's shape may
        // decide whether the limit applies. A text that is not JSON nests nothing past the limit in practice.
        checkJsonDepth(bodyText, limits.jsonDepth);
        return { status: response.statusCode, contentType: headers['content-type'], bodyText, headers };
      } catch (error) {
        throw toNetworkError(error, spec.url, spec.signal, timedOut(), answered);
      } finally {
        done();
      }
    },

    async openStream(spec) {
      const own = spec.ownConnection ? ownConnectionOf(dispatcher, new URL(spec.url).origin) : undefined;
      const closeOwn = () => void own?.destroy().catch(() => undefined);
      try {
        const response = await request(spec.url, {
          dispatcher: own ?? dispatcher,
          method: spec.method,
          headers: { accept: 'text/event-stream', ...(await buildHeaders(spec)) },
          body: spec.body,
          signal: spec.signal,
          headersTimeout: spec.timeoutMs ?? requestTimeoutMs, // a held streaming send (V2): up to its own deadline
          bodyTimeout: 0,
        });
        if (own) response.body.once('close', closeOwn);
        const body = decodeContentCoding(response.body, contentCodingsHeader(response.statusCode, response.headers), `stream from ${spec.url}`);
        if (own && body !== response.body) body.once('close', closeOwn);
        return { status: response.statusCode, contentType: headerValue(response.headers['content-type']), body };
      } catch (error) {
        closeOwn();
        throw toNetworkError(error, spec.url, spec.signal);
      }
    },
  };
}
