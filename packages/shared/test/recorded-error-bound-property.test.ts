/**
 * Property (attack 23's kind: an agent's text journaled without a byte bound): whatever text an agent puts in a
 * JSON-RPC error or an HTTP error body, and whatever error the workers build from it, the journal text of that error
 * (`encodeRecordedError`) reads back as a valid `RecordedError` whose message and limit hold at most
 * `RECORDED_ERROR_TEXT_MAX` characters (plus the ellipsis), with the code, delivery and retryable unchanged.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { errorFromHttp, errorFromJsonRpc } from '@durable-a2a/a2a';
import { RECORDED_ERROR_TEXT_MAX, RecordedErrorSchema, encodeRecordedError, type RecordedError } from '../src/journal/record.ts';

const text = fc.oneof(fc.string({ maxLength: 40 }), fc.string({ minLength: 900, maxLength: 1_100 }), fc.integer({ min: 0, max: 200_000 }).map((n) => 'x'.repeat(n)));

describe('an error is journaled bounded', () => {
  it('any RecordedError encodes within the bound and keeps its facts', () => {
    fc.assert(
      fc.property(
        fc.record({ code: fc.constantFrom('INTERNAL_ERROR', 'LIMIT_EXCEEDED', 'NETWORK_ERROR'), message: text, retryable: fc.option(fc.boolean(), { nil: undefined }), delivery: fc.option(fc.constantFrom('not-sent', 'maybe', 'received'), { nil: undefined }), limit: fc.option(text, { nil: undefined }) }),
        (error) => {
          const read = RecordedErrorSchema.parse(JSON.parse(encodeRecordedError(error as RecordedError)));
          expect(read.message.length).toBeLessThanOrEqual(RECORDED_ERROR_TEXT_MAX + 1);
          expect((read.limit ?? '').length).toBeLessThanOrEqual(RECORDED_ERROR_TEXT_MAX + 1);
          expect(read.message).toBe(error.message.length > RECORDED_ERROR_TEXT_MAX ? `${error.message.slice(0, RECORDED_ERROR_TEXT_MAX)}…` : error.message);
          expect([read.code, read.delivery, read.retryable]).toEqual([error.code, error.delivery, error.retryable]);
        },
      ),
      { numRuns: 200, examples: [[{ code: 'INTERNAL_ERROR', message: 'x'.repeat(8 * 1024 * 1024), retryable: true, delivery: 'maybe', limit: undefined }]] },
    );
  });

  it('an agent\'s error message, by JSON-RPC or by an HTTP error body, reaches the error bounded', () => {
    fc.assert(
      fc.property(text, fc.integer({ min: -32_768, max: 599 }), fc.constantFrom(400, 404, 429, 500, 503), (message, code, status) => {
        const rpc = errorFromJsonRpc({ code, message }, '');
        const http = errorFromHttp(status, 'application/json', JSON.stringify({ error: { code: status, status: 'X', message } }));
        for (const error of [rpc, http]) expect(error.message.length).toBeLessThanOrEqual(RECORDED_ERROR_TEXT_MAX);
      }),
      { numRuns: 200, examples: [['x'.repeat(8 * 1024 * 1024), -32603, 503]] },
    );
  });
});
