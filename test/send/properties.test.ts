/**
 * Properties of the send side (one per kind, fast-check):
 * - delivery (V5): whatever error class and delivery, an unreadable answer that arrived never leads
 *   to a resend of the same messageId, for any search outcome and whether or not the agent is listed
 *   as deduplicating; an error answer only when it is retryable and a conclusive search proves that
 *   no task holds our message; a resend only ever follows a proven absence or a deduplicating agent
 *   that cannot be searched;
 * - refusals: only the errors that refuse a request before acting on it prove "no task created";
 * - typed protocol errors: every `ProtocolError` with its own code is permanent for the attempt
 *   (never the reconciler's "maybe sent" path), a plain unreadable answer is not; the journaled
 *   form keeps code, limit and the error's delivery (`not-sent` before the mark).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  AuthenticationError,
  InternalAgentError,
  InvalidAgentResponseError,
  InvalidParamsError,
  LimitExceededError,
  NetworkError,
  ProtocolError,
  ResponseIdMismatchError,
  TaskNotCancelableError,
  TaskNotFoundError,
  UnknownWireValueError,
  UpstreamError,
  VersionNotSupportedError,
  deliveryOf,
  type Delivery,
  sendEffectOf,
} from '@durable-a2a/a2a';
import { isTypedProtocolError, recordedErrorOf, unfoundVerdict } from '../../packages/workers/src/delegation/io/send-errors.ts';

/** True when a SendMessage error proves the agent created no task (the A2A error table's effect column). */
const provesNotCreated = (error: unknown): boolean => sendEffectOf(error) === 'none';

const deliveries: Delivery[] = ['not-sent', 'maybe', 'received'];
const limitNames = ['responseBodyBytes', 'sseEventBytes', 'agentCardBytes', 'partsPerMessage', 'jsonDepth', 'artifactBytesPerDelegation'] as const;

/** Every error class a send can end with, built with a given delivery. */
const errorArbitrary = fc
  .record({
    kind: fc.constantFrom('wire', 'rpcId', 'limit', 'protocol', 'invalid', 'network', 'notFound', 'internal', 'auth'),
    delivery: fc.constantFrom(...deliveries),
    limit: fc.constantFrom(...limitNames),
    httpStatus: fc.option(fc.constantFrom(200, 400, 500), { nil: undefined }),
  })
  .map(({ kind, delivery, limit, httpStatus }) => {
    const details = { delivery, ...(httpStatus === undefined ? {} : { httpStatus }) };
    const error = {
      wire: () => new UnknownWireValueError('state "PONDERING"', details),
      rpcId: () => new ResponseIdMismatchError(undefined, details),
      limit: () => new LimitExceededError(limit, 1, undefined, details),
      protocol: () => new ProtocolError('not JSON', details),
      invalid: () => new InvalidAgentResponseError('schema', details),
      network: () => new NetworkError('reset', details),
      notFound: () => new TaskNotFoundError('gone', details),
      internal: () => new InternalAgentError('oops', details),
      auth: () => new AuthenticationError('no', details),
    }[kind]();
    return { kind, error };
  });

const searchArbitrary = fc.oneof(
  fc.constant({ kind: 'unsupported' as const }),
  fc.record({
    kind: fc.constant('not-found' as const),
    inconclusive: fc.boolean(),
    contextRefused: fc.boolean(),
    candidates: fc.array(fc.string({ minLength: 1, maxLength: 4 }), { maxLength: 3 }),
    paginationBroken: fc.boolean(),
  }),
);

describe('send properties', () => {
  it('an answer that arrived is resent only when it was a retryable error and a conclusive search proves no task, for any error class, search outcome and deduplication setting', () => {
    fc.assert(
      fc.property(errorArbitrary, fc.boolean(), fc.boolean(), searchArbitrary, ({ error }, afterMark, deduplicates, search) => {
        const recorded = recordedErrorOf(error, afterMark);
        expect(recorded.delivery).toBe(afterMark ? deliveryOf(error) : 'not-sent');
        const verdict = unfoundVerdict({ error: recorded, deduplicates, search });
        const provenAbsent = search.kind === 'not-found' && !search.inconclusive && !search.paginationBroken;
        // An unreadable answer (V5) is never resent, nor is anything a search cannot prove absent.
        if (recorded.delivery === 'received' && recorded.answer !== 'error') expect(verdict.resend).toBe(false);
        if (verdict.resend && recorded.delivery === 'received') expect(recorded.retryable && provenAbsent).toBe(true);
        if (verdict.resend) expect(provenAbsent || (search.kind === 'unsupported' && deduplicates && recorded.delivery !== 'received')).toBe(true);
        // A permanent error answer proven to have created nothing ends the attempt with the agent's error.
        if ('fail' in verdict) expect(recorded.answer === 'error' && !recorded.retryable && provenAbsent).toBe(true);
      }),
      { numRuns: 500 },
    );
  });

  it('a send error proves that no task was created only when it is a refusal (request errors, validation errors, 401/403) under a refusing code; never a non-A2A 4xx', () => {
    fc.assert(
      fc.property(errorArbitrary, ({ kind, error }) => {
        const status = error.httpStatus;
        // A refusal class proves it only when the answer's own code refuses too. Raised without an answer (no status),
        // its class decides. An HTTP status alone refuses only as 401/403: a 400 without an ErrorInfo reason of the
        // spec's table is any server's answer, maybe after the agent acted (fourohfour: a plain 4xx was read as a wrong
        // URL's page, re-delegated, booked twice); a 500 or a 200 is a code that does not carry it (attack23).
        expect(provesNotCreated(error)).toBe((kind === 'notFound' || kind === 'auth') && status === undefined);
      }),
      { numRuns: 300 },
    );
    expect(provesNotCreated(new AuthenticationError('token refused', { httpStatus: 401 }))).toBe(true);
    expect(provesNotCreated(new InvalidParamsError('bad', { httpStatus: 400, reason: 'INVALID_PARAMS' }))).toBe(true);
    expect(provesNotCreated(new InvalidParamsError('bad', { httpStatus: 400 }))).toBe(false);
    expect(provesNotCreated(new ProtocolError('HTTP 404 (text/html)', { httpStatus: 404 }))).toBe(false);
    expect(provesNotCreated(new InvalidParamsError('bad', { jsonRpcCode: -32602 }))).toBe(true);
    expect(provesNotCreated(new VersionNotSupportedError('1.0?', { jsonRpcCode: -32009 }))).toBe(true);
    expect(provesNotCreated(new InternalAgentError('later', { jsonRpcCode: -32603, httpStatus: 400 }))).toBe(false);
    expect(provesNotCreated(new TaskNotCancelableError('odd', { jsonRpcCode: -32002 }))).toBe(false);
    expect(provesNotCreated(new UpstreamError('502', { httpStatus: 502 }))).toBe(false);
    expect(provesNotCreated(new TaskNotFoundError('404 in code', { jsonRpcCode: 404 }))).toBe(false);
    expect(provesNotCreated(new TaskNotFoundError('reason over -32050', { jsonRpcCode: -32050, reason: 'TASK_NOT_FOUND' }))).toBe(false);
  });

  it('typed protocol errors are permanent for the attempt and journal their code and limit; plain unreadable answers go to the reconciler', () => {
    fc.assert(
      fc.property(errorArbitrary, ({ kind, error }) => {
        const typed = kind === 'wire' || kind === 'rpcId' || kind === 'limit';
        expect(isTypedProtocolError(error)).toBe(typed);
        const recorded = recordedErrorOf(error, true);
        expect(recorded.code).toBe(error.code);
        if (error instanceof LimitExceededError) expect(recorded.limit).toBe(error.limit);
        else expect(recorded.limit).toBeUndefined();
      }),
      { numRuns: 300 },
    );
  });
});
