/**
 * A small client of the durable-a2a HTTP API (/v1): bearer token, JSON in and
 * out, problem+json errors turned into ApiError with the service's code.
 */

/** Where the API is and how to authenticate. */
export interface ApiClientOptions {
  /** Base URL of the service, e.g. `http://127.0.0.1:8080` (no `/v1`). */
  url: string;
  /** One of the service's DA2A_API_TOKENS. */
  token?: string;
  /** Per-request timeout (ms). Default 60 000 (long polls last up to 30 s). */
  timeoutMs?: number;
}

/** The API answered with an error (RFC 9457 problem+json): `status`, `code` (e.g. NOT_FOUND), `detail`. */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** The API could not be reached (connection refused, DNS, timeout). */
export class ApiUnreachableError extends Error {
  override readonly name = 'ApiUnreachableError';
}

/** Calls `method path` with an optional JSON body; resolves with the parsed JSON answer. Throws ApiError, ApiUnreachableError. */
export async function callApi<T>(options: ApiClientOptions, method: 'GET' | 'POST' | 'PUT' | 'DELETE', path: string, body?: unknown): Promise<T> {
  const url = new URL(path, options.url.endsWith('/') ? options.url : `${options.url}/`);
  const headers: Record<string, string> = { accept: 'application/json' };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  let response: Response;
  try {
    response = await fetch(url, {
      method,
      headers,
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      signal: AbortSignal.timeout(options.timeoutMs ?? 60_000),
    });
  } catch (error) {
    const cause = error instanceof Error ? ((error.cause as Error | undefined)?.message ?? error.message) : String(error);
    throw new ApiUnreachableError(`cannot reach ${url.origin}: ${cause}`, { cause: error });
  }
  const text = await response.text();
  const parsed = parseJson(text);
  if (!response.ok) {
    const problem = (parsed ?? {}) as { code?: string; detail?: string; title?: string };
    throw new ApiError(response.status, problem.code ?? `HTTP_${response.status}`, problem.detail ?? problem.title ?? (text.slice(0, 200) || response.statusText));
  }
  return parsed as T;
}

function parseJson(text: string): unknown {
  try {
    return text ? JSON.parse(text) : undefined;
  } catch {
    return undefined;
  }
}
