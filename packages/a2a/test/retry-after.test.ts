/**
 * The wait an agent asks for (`retryAfterMs`), in each binding's spelling: HTTP Retry-After on 429/503 (seconds or an
 * HTTP-date), a JSON-RPC error's RetryInfo or `retryAfter`, a gRPC RetryInfo's binary Duration.
 */
import { describe, expect, it } from 'vitest';
import { errorFromHttp, errorFromJsonRpc, retryAfterOfData, retryAfterOfHeader, retryAfterOfRetryInfo } from '../src/index.ts';

describe('Retry-After', () => {
  it('HTTP: delta-seconds or an HTTP-date on 429 and 503; ignored on other statuses and when unreadable', () => {
    expect(errorFromHttp(429, 'application/json', '{}', { 'retry-after': '2' }).retryAfterMs).toBe(2_000);
    expect(errorFromHttp(503, 'text/html', '<html>', { 'retry-after': '0' }).retryAfterMs).toBe(0);
    expect(errorFromHttp(500, 'text/html', '<html>', { 'retry-after': '2' }).retryAfterMs).toBeUndefined();
    expect(errorFromHttp(429, 'text/plain', 'slow down', { 'retry-after': 'soon' }).retryAfterMs).toBeUndefined();
    expect(retryAfterOfHeader(new Date(10_000 + 3_000).toUTCString(), 10_000)).toBe(3_000);
  });
  it('JSON-RPC: a RetryInfo (alone, in an array, under details) or retryAfter seconds in the error data', () => {
    const retryInfo = { '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '1.5s' };
    expect(errorFromJsonRpc({ code: -32603, message: 'busy', data: [retryInfo] }, '').retryAfterMs).toBe(1_500);
    expect(retryAfterOfData({ details: [retryInfo] })).toBe(1_500);
    expect(retryAfterOfData({ retryAfter: 3 })).toBe(3_000);
    expect(retryAfterOfData({ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: { seconds: 2, nanos: 500_000_000 } })).toBe(2_500);
    expect(retryAfterOfData([{ reason: 'TASK_NOT_FOUND' }])).toBeUndefined();
    expect(errorFromJsonRpc({ code: -32603, message: 'busy' }, '').retryAfterMs).toBeUndefined();
  });
  it('gRPC: a binary RetryInfo (retry_delay = Duration{seconds, nanos})', () => {
    // field 1 (Duration, 4 bytes): seconds = 2 (0x08 0x02), nanos = 100 (0x10 0x64)
    expect(retryAfterOfRetryInfo(Uint8Array.from([0x0a, 0x04, 0x08, 0x02, 0x10, 0x64]))).toBe(2_000);
    expect(retryAfterOfRetryInfo(Uint8Array.from([0x0a, 0x02, 0x08, 0x05]))).toBe(5_000);
    expect(retryAfterOfRetryInfo(Uint8Array.from([0x12, 0x00]))).toBeUndefined();
  });
});
