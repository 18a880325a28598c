/**
 * `RecordedError.code` is one list (`RECORDED_ERROR_CODES`): every A2A client error's code is in it, a thrown error
 * of no known kind maps to `UNEXPECTED_ERROR`, and a record written with a code this release does not know reads as
 * `UNRECOGNIZED` with its message kept (never a parse failure of the whole record).
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  A2A_CLIENT_ERROR_CODES,
  A2A_ERROR_TABLE,
  AuthenticationError,
  LimitExceededError,
  NetworkError,
  ResponseIdMismatchError,
  UnknownWireValueError,
} from '@durable-a2a/a2a';
import { OUTCOME_CODES, RECORDED_ERROR_CODES, RecordedErrorSchema, recordedErrorCodeOf } from '../src/index.ts';
import { isRecordedErrorCode } from '../src/journal/error-codes.ts';

describe('recorded error codes', () => {
  it('holds every outcome code and every A2A client error code, each once', () => {
    for (const code of [...OUTCOME_CODES, ...A2A_CLIENT_ERROR_CODES]) expect(RECORDED_ERROR_CODES).toContain(code);
    expect(new Set(RECORDED_ERROR_CODES).size).toBe(RECORDED_ERROR_CODES.length);
  });

  it('every error class of the A2A error table, and the client’s own, carries a listed code', () => {
    const errors = [
      ...A2A_ERROR_TABLE.map((row) => new row.errorClass('x')),
      new AuthenticationError(),
      new LimitExceededError('jsonDepth', 64),
      new ResponseIdMismatchError(),
      new UnknownWireValueError(),
      new NetworkError(),
    ];
    for (const error of errors) {
      expect(isRecordedErrorCode(error.code)).toBe(true);
      expect(recordedErrorCodeOf(error)).toBe(error.code);
    }
  });

  it('an error of no known kind is UNEXPECTED_ERROR, whatever its code', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.integer(), fc.constant(undefined), fc.constant(null)), (code) => {
        fc.pre(!isRecordedErrorCode(code));
        expect(recordedErrorCodeOf(Object.assign(new Error('boom'), { code }))).toBe('UNEXPECTED_ERROR');
      }),
    );
    expect(recordedErrorCodeOf(undefined)).toBe('UNEXPECTED_ERROR');
    expect(recordedErrorCodeOf(Object.assign(new Error('refused'), { code: 'ECONNREFUSED' }))).toBe('UNEXPECTED_ERROR');
  });

  it('a stored code this release does not know reads as UNRECOGNIZED, the message kept', () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), (code, message) => {
        const parsed = RecordedErrorSchema.parse({ code, message });
        expect(parsed.message).toBe(message);
        expect(parsed.code).toBe(isRecordedErrorCode(code) ? code : 'UNRECOGNIZED');
      }),
    );
  });
});
