/**
 * Verifiers: independent read paths (a booking system, a ledger, a mail log)
 * registered by name in the workers. Never a question to the same agent.
 */
import type { DelegationView } from '@durable-a2a/shared';
import { LimitExceededError, readLimitedText } from '@durable-a2a/a2a';

/** present: the side effect exists; absent: it does not; unknown: the read path could not tell. */
export type Effect = 'present' | 'absent' | 'unknown';

export interface Verification {
  effect: Effect;
  /** What the read path returned, kept in the journal for people. */
  evidence: unknown;
}

/**
 * A verifier plugin. For a step it answers "is the effect there?"; for a
 * compensation it is given the `original` step attempt and answers "is the
 * original effect still there?" (absent = the undo worked). Throwing means
 * "could not check now": the verify job retries with backoff.
 */
export interface Verifier {
  /**
   * Reads the effect. `signal` is aborted at the fleet's `verifyTimeoutMs` (the call then counts as failed whatever it
   * answers later): a verifier stops its read on it.
   */
  verify(input: { delegation: DelegationView; original?: DelegationView; params: Record<string, unknown>; signal?: AbortSignal }): Promise<Verification>;
}

export type VerifierRegistry = ReadonlyMap<string, Verifier>;

/** Options of the built-in HTTP verifier. */
export interface HttpVerifierOptions<T> {
  /**
   * URL with placeholders filled from the delegation, each value one URL-encoded path segment (an empty value, `.`
   * or `..` is refused: the effect is recorded `unknown` with the reason, nothing is read): `{messageId}`, `{taskId}`,
   * `{workflowId}`, `{step}`, `{delegationId}`, for a compensation `{original.messageId}`, `{original.taskId}`,
   * and `{subjectMessageId}`: the step attempt's messageId (the original's, for a compensation), so one
   * verifier reads the same record for a step and for its undo.
   */
  urlTemplate: string;
  /** Validates a 2xx JSON body (zod or anything with `parse`). */
  responseSchema: { parse(value: unknown): T };
  /** Effect from a validated body. Default: present. */
  effectOf?: (body: T) => Effect;
  /** HTTP statuses that mean "absent". Default [404, 410]. */
  absentStatuses?: number[];
  /** Extra request headers (e.g. a read-only token for the system of record). */
  headers?: Record<string, string>;
  /** Request timeout in ms. Default 10_000. */
  timeoutMs?: number;
  /**
   * Largest body read, in bytes (default 1 MiB, `HTTP_VERIFIER_BODY_BYTES`): reading stops there and the effect is
   * `unknown` with the reason (the same read would answer the same again, so it is not retried).
   */
  maxBodyBytes?: number;
}

/** Default `maxBodyBytes` of `httpVerifier`: a record of a booking or a ledger entry, with room to spare. */
const HTTP_VERIFIER_BODY_BYTES = 1024 * 1024;

/**
 * The built-in verifier: an HTTP GET on the user's system of record. 2xx → the
 * body (at most `maxBodyBytes`: over it, unknown with the reason) is validated and mapped to an effect; an absent
 * status → absent; any other status or a network error throws (the verify job retries, then records unknown).
 */
export function httpVerifier<T>(options: HttpVerifierOptions<T>): Verifier {
  const absent = new Set(options.absentStatuses ?? [404, 410]);
  return {
    async verify({ delegation, original, signal }) {
      const values: Record<string, string | undefined> = {
        messageId: delegation.messageId,
        taskId: delegation.taskId,
        workflowId: delegation.workflowId,
        step: delegation.step,
        delegationId: delegation.delegationId,
        'original.messageId': original?.messageId,
        'original.taskId': original?.taskId,
        subjectMessageId: original?.messageId ?? delegation.messageId,
      };
      // A38: each value is one path segment whatever its text: encoded, and refused when empty or a dot segment, so the
      // agent being verified (which names its task) cannot point the read at another record.
      const refused = new Set<string>();
      const url = options.urlTemplate.replace(/\{([a-zA-Z.]+)\}/g, (_, name: string) => {
        const segment = encodeURIComponent(values[name] ?? '');
        if (segment === '' || segment === '.' || segment === '..') refused.add(name);
        return segment;
      });
      if (refused.size > 0) {
        const names = [...refused].map((name) => `{${name}} = ${JSON.stringify(values[name] ?? '')}`).join(', ');
        return { effect: 'unknown', evidence: { refused: `${names}: not a path segment the verifier may read`, urlTemplate: options.urlTemplate } };
      }
      const response = await fetch(url, { headers: options.headers, signal: withTimeout(signal, options.timeoutMs ?? 10_000) });
      if (absent.has(response.status) || !response.ok) {
        // The body is not read (its size is the system's): canceled, so the connection is not held.
        await response.body?.cancel();
        if (absent.has(response.status)) return { effect: 'absent', evidence: { url, status: response.status } };
        throw new Error(`verifier read ${url} answered ${response.status}`);
      }
      const maxBytes = options.maxBodyBytes ?? HTTP_VERIFIER_BODY_BYTES;
      const text = await boundedText(response, maxBytes);
      if (text === undefined) return { effect: 'unknown', evidence: { url, status: response.status, refused: `the answer is over ${maxBytes} bytes (maxBodyBytes): not read` } };
      const body = options.responseSchema.parse(JSON.parse(text));
      return { effect: options.effectOf?.(body) ?? 'present', evidence: { url, status: response.status, body } };
    },
  };
}

/**
 * The body of `response` as text, read until `maxBytes` bytes (a larger `Content-Length` is refused before reading);
 * undefined when it is larger (the rest is not read: the stream is canceled). The a2a client's bounded reader.
 */
async function boundedText(response: Response, maxBytes: number): Promise<string | undefined> {
  const declared = Number(response.headers.get('content-length') ?? Number.NaN);
  if (declared > maxBytes) {
    await response.body?.cancel();
    return undefined;
  }
  if (!response.body) return '';
  try {
    return await readLimitedText(response.body, maxBytes, 'responseBodyBytes', response.url);
  } catch (error) {
    if (error instanceof LimitExceededError) return undefined;
    throw error;
  }
}

/** The caller's signal (the fleet's `verifyTimeoutMs`), if any, joined with this read's own timeout (ms). */
function withTimeout(signal: AbortSignal | undefined, timeoutMs: number): AbortSignal {
  const own = AbortSignal.timeout(timeoutMs);
  return signal ? AbortSignal.any([signal, own]) : own;
}
