/**
 * How long an agent asks its callers to wait, in the three spellings A2A bindings carry it:
 * - HTTP `Retry-After` (RFC 9110 §10.2.3) on a 429 or 503: delta-seconds or an HTTP-date;
 * - a JSON-RPC error's `data`: a `google.rpc.RetryInfo` (`{"@type": "…/google.rpc.RetryInfo", "retryDelay": "2s"}`,
 *   alone, in an array, or under `details`, as ErrorInfo travels, spec §9.5), or a plain `retryAfter` in seconds;
 * - gRPC: a RetryInfo in the `google.rpc.Status` details of a RESOURCE_EXHAUSTED (decoded in `grpc/status-table.ts`).
 * Unbounded here (the caller bounds it: `retryAfterMaxMs`); a value that does not parse is no value.
 */

/** RetryInfo's type URL (google/rpc/error_details.proto). */
export const RETRY_INFO_TYPE_URL = 'type.googleapis.com/google.rpc.RetryInfo';

/** The wait (ms) of a `Retry-After` header value: delta-seconds, or an HTTP-date measured from `nowMs`. */
export function retryAfterOfHeader(value: string | undefined, nowMs: number): number | undefined {
  if (value === undefined) return undefined;
  const trimmed = value.trim();
  if (/^\d{1,10}$/.test(trimmed)) return Number(trimmed) * 1000;
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}

/** The wait (ms) of a protobuf JSON Duration (`"2s"`, `"1.5s"`) or `{ seconds, nanos }`. */
function durationMs(value: unknown): number | undefined {
  if (typeof value === 'string') {
    const match = /^(\d{1,10}(?:\.\d{1,9})?)s$/.exec(value.trim());
    return match ? Math.round(Number(match[1]) * 1000) : undefined;
  }
  if (typeof value === 'object' && value !== null) {
    const { seconds, nanos } = value as { seconds?: unknown; nanos?: unknown };
    const whole = Number(seconds ?? 0);
    const fraction = Number(nanos ?? 0);
    if (Number.isFinite(whole) && Number.isFinite(fraction) && whole >= 0 && fraction >= 0) return Math.round(whole * 1000 + fraction / 1e6);
  }
  return undefined;
}

/** The wait (ms) a JSON-RPC error's `data` asks for, if any (see the module header); looks at most two levels deep. */
export function retryAfterOfData(data: unknown, depth = 0): number | undefined {
  if (data === null || typeof data !== 'object' || depth > 2) return undefined;
  if (Array.isArray(data)) {
    for (const item of data.slice(0, 16)) {
      const found = retryAfterOfData(item, depth + 1);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  const record = data as Record<string, unknown>;
  if (typeof record['@type'] === 'string' && record['@type'].endsWith('google.rpc.RetryInfo')) return durationMs(record.retryDelay ?? record.retry_delay);
  if (typeof record.retryAfter === 'number' && Number.isFinite(record.retryAfter) && record.retryAfter >= 0) return Math.round(record.retryAfter * 1000);
  return retryAfterOfData(record.details, depth + 1);
}

/** Reads one protobuf varint at `offset`: its value and the next offset (undefined past the end or over 2^53). */
function varint(bytes: Uint8Array, offset: number): [number, number] | undefined {
  let value = 0;
  for (let shift = 0, index = offset; index < bytes.length && shift < 53; shift += 7, index++) {
    const byte = bytes[index]!;
    value += (byte & 0x7f) * 2 ** shift;
    if ((byte & 0x80) === 0) return [value, index + 1];
  }
  return undefined;
}

/**
 * The wait (ms) of a binary `google.rpc.RetryInfo` (`retry_delay = 1`, a Duration: `seconds = 1`, `nanos = 2`). Read
 * by hand: two varints in one nested message, where a descriptor of its own would be the only use of one.
 */
export function retryAfterOfRetryInfo(bytes: Uint8Array): number | undefined {
  const outer = varint(bytes, 0);
  if (!outer || outer[0] !== 0x0a) return undefined;
  const length = varint(bytes, outer[1]);
  if (!length) return undefined;
  const duration = bytes.subarray(length[1], length[1] + length[0]);
  let seconds = 0;
  let nanos = 0;
  for (let offset = 0; offset < duration.length; ) {
    const tag = varint(duration, offset);
    if (!tag) return undefined;
    const value = varint(duration, tag[1]);
    if (!value) return undefined;
    if (tag[0] === 0x08) seconds = value[0];
    else if (tag[0] === 0x10) nanos = value[0];
    else return undefined;
    offset = value[1];
  }
  return Math.round(seconds * 1000 + nanos / 1e6);
}
