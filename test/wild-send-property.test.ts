/**
 * Properties of the send side (issue 12, one per kind, fast-check):
 * - delivery (V5): whatever error class and delivery, an answer that arrived (`received`) never
 *   leads to a resend of the same messageId, for any search outcome and whether or not the agent
 *   is listed as deduplicating; and a resend only ever follows a proven absence or a deduplicating
 *   agent that cannot be searched;
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
  LimitExceededError,
  NetworkError,
  ProtocolError,
  ResponseIdMismatchError,
  TaskNotFoundError,
  UnknownWireValueError,
  deliveryOf,
  type Delivery,
} from '@durable-a2a/shared';
import { isTypedProtocolError, recordedErrorOf, unfoundVerdict } from '../packages/workers/src/delegation/send-errors.ts';

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
  it('an answer that arrived is never resent, for any error class, search outcome and deduplication setting', () => {
    fc.assert(
      fc.property(errorArbitrary, fc.boolean(), fc.boolean(), searchArbitrary, ({ error }, afterMark, deduplicates, search) => {
        const recorded = recordedErrorOf(error, afterMark);
        expect(recorded.delivery).toBe(afterMark ? deliveryOf(error) : 'not-sent');
        const verdict = unfoundVerdict({ error: recorded, deduplicates, search });
        if (recorded.delivery === 'received') expect(verdict.resend).toBe(false);
        if (verdict.resend) {
          expect(recorded.delivery).not.toBe('received');
          const provenAbsent = search.kind === 'not-found' && !search.inconclusive && !search.paginationBroken;
          expect(provenAbsent || (search.kind === 'unsupported' && deduplicates)).toBe(true);
        }
      }),
      { numRuns: 500 },
    );
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
