/**
 * parseDelegationHash (the fast path) returns exactly what DelegationRecordSchema.parse returns, and throws its errors;
 * mergeDelegationChange of a change into a parsed row returns exactly parseDelegationHash of the changed row. No Redis.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { DelegationRecordSchema } from '../src/journal/record.ts';
import { mergeDelegationChange, parseDelegationHash } from '../src/journal/record-parse.ts';

const message = JSON.stringify({ parts: [{ text: 'do the thing' }], metadata: { a: 1 } });
const question = JSON.stringify({ role: 'ROLE_AGENT', messageId: 'q1', parts: [{ text: 'which one?' }] });
const full: Record<string, string> = {
  workflowId: 'w1', delegationId: 'step:a:1', step: 'a', kind: 'compensation', attempt: '2', agentCardUrl: 'https://a.example/card',
  agentInterface: JSON.stringify({ url: 'https://a.example/rpc', protocolBinding: 'JSONRPC', protocolVersion: '1.0' }), messageId: 'm1',
  requestedContextId: 'c1', contextId: 'c1', contextRefused: '1', taskId: 't1', state: 'INPUT_REQUIRED', statusTimestamp: '2026-01-01T00:00:00Z',
  statusTimestampMs: '1767225600000', question, statusMessage: question, namedTaskUnread: '1', message, result: JSON.stringify({ parts: [{ text: 'done' }] }),
  error: JSON.stringify({ code: 'X', message: 'x', retryable: true, delivery: 'maybe' }), protocolError: JSON.stringify({ code: 'P', message: 'p' }),
  protocolErrorCount: '3', earlierProtocolErrors: JSON.stringify([{ code: 'Q', message: 'q', retryable: false }]), refusedResult: JSON.stringify({ code: 'LIMIT_EXCEEDED', message: 'over', limit: 'parts', delivery: 'received' }), artifactCount: '2', push: '1', held: '1', pushToken: 'secret', pushConfigId: 'da2a-config', pushConfigState: 'registered', createdAt: '10', updatedAt: '20', sendStartedAt: '11', priority: '7', sendCount: '1',
  resendCount: '2', unreachableCount: '3', unsentTries: '2', provenAbsentSends: '1', unreachableSince: '12', nextTryAt: '13', slotWaitUntil: '14', version: '7', fence: '4', notFoundCount: '1', firstNotFoundAt: '15', noProgressMark: 'mk', noProgressSince: '16',
  noProgressCount: '2', noProgressLast: 'ls', finishedAt: '19', replyMessageId: 'r1', replyMessage: message, replyState: 'sending',
  replySendToken: 'tok', replySendUntil: '30', replyError: 'no', replyForQuestion: 'q1', replyBy: 'expiry', questionKey: 'q1', questionAskedAt: '31', questionWordsAfter: 'p1', questionExpired: 'q0', questionExpiredAt: '32', questionExpiry: 'answer', effect: 'present',
  evidence: JSON.stringify({ id: 9 }), verifiedAt: '21', verifyAttempts: '1', suspects: JSON.stringify(['T2']), suspectsLost: '2', suspectsLostTold: '1',
  suspectReadRounds: '1', suspectReadRoundAt: '33', suspectRoundBy: 'claimer', suspectRoundUntil: '34', unknownExtra: 'ignored',
};
const minimal: Record<string, string> = { workflowId: 'w1', delegationId: 'd', step: 'a', attempt: '1', agentCardUrl: 'u', messageId: 'm', state: 'INTENT', message, createdAt: '1', updatedAt: '1', version: '1' };

/** Both parsers on one hash: equal output (keys, order, undefined-valued keys) or the same error. */
function expectSame(hash: Record<string, unknown>): void {
  let expected: unknown;
  let expectedError: unknown;
  try {
    expected = DelegationRecordSchema.parse(hash);
  } catch (error) {
    expectedError = error;
  }
  if (expectedError) {
    expect(() => parseDelegationHash(hash)).toThrow();
    let actualError: unknown;
    try {
      parseDelegationHash(hash);
    } catch (error) {
      actualError = error;
    }
    expect(String(actualError)).toBe(String(expectedError));
    return;
  }
  const actual = parseDelegationHash(hash);
  expect(actual).toStrictEqual(expected);
  expect(Object.keys(actual)).toEqual(Object.keys(expected as object));
}

const variants = ['', 'x', '1', '0', 'step', 'compensation', 'WORKING', 'sent', 'absent', '{', 'null', '{}', '[]', message, question, full.error!, full.agentInterface!];

describe('parseDelegationHash', () => {
  it('is tested on every field of the schema (a field added there must be added to `full` here, and then to the fast path)', () => {
    expect(Object.keys(full).filter((key) => key !== 'unknownExtra')).toEqual(Object.keys(DelegationRecordSchema.in.shape));
  });

  it('matches the zod schema on a full row, a minimal row and a row whose optional fields are all empty', () => {
    expectSame(full);
    expectSame(minimal);
    expectSame({ ...minimal, ...Object.fromEntries(Object.keys(full).filter((key) => !(key in minimal)).map((key) => [key, ''])) });
    expect(parseDelegationHash(full)).not.toHaveProperty('pushToken');
  });

  it('matches the zod schema (output or error) whatever one field holds: absent, empty, a number, any text, JSON', () => {
    for (const base of [full, minimal]) {
      for (const key of Object.keys(full)) {
        const { [key]: _dropped, ...without } = base;
        expectSame(without);
        expectSame({ ...base, [key]: 5 });
        for (const value of variants) expectSame({ ...base, [key]: value });
      }
    }
  });

  it('matches the zod schema on random rows', () => {
    const keys = Object.keys(full);
    fc.assert(
      fc.property(fc.dictionary(fc.constantFrom(...keys), fc.oneof(fc.constantFrom(...variants), fc.string())), fc.constantFrom(full, minimal), (changes, base) => {
        expectSame({ ...base, ...changes });
      }),
      { numRuns: 300 },
    );
  });
});

/** A parse that gives undefined for a row it refuses. */
function parsedOrUndefined(hash: Record<string, unknown>) {
  try {
    return parseDelegationHash(hash);
  } catch {
    return undefined;
  }
}

/**
 * The merge of `change` into the parse of `row` against the parse of the changed row: the same keys, values and order,
 * or undefined where the changed row does not parse.
 */
function expectMergeSame(row: Record<string, string>, change: Record<string, string>): void {
  const held = parsedOrUndefined(row);
  if (!held) return;
  const merged = mergeDelegationChange(held, change);
  const expected = parsedOrUndefined({ ...row, ...change });
  if (merged === undefined) {
    expect(expected).toBeUndefined();
    return;
  }
  expect(merged).toStrictEqual(expected);
  expect(Object.keys(merged)).toEqual(Object.keys(expected!));
}

describe('mergeDelegationChange', () => {
  const keys = Object.keys(full);
  const change = fc.dictionary(fc.constantFrom(...keys), fc.oneof(fc.constantFrom(...variants), fc.string()));

  it('matches the parse of the changed row when every changed field is held, when some are new, and after an earlier merge', () => {
    expectMergeSame(full, { state: 'COMPLETED', updatedAt: '40', version: '8' });
    expectMergeSame(minimal, { state: 'COMPLETED', updatedAt: '40', version: '2', finishedAt: '40', result: full.result! });
    expectMergeSame(minimal, { sendStartedAt: '5', pushToken: 'new secret', unknownExtra: 'x', contextId: '' });
    const held = parseDelegationHash(minimal);
    const once = mergeDelegationChange(held, { sendStartedAt: '5', updatedAt: '5', version: '2' })!;
    const twice = mergeDelegationChange(once, { state: 'WORKING', taskId: 't1', updatedAt: '6', version: '3' })!;
    expect(twice).toStrictEqual(parseDelegationHash({ ...minimal, sendStartedAt: '5', updatedAt: '6', version: '3', state: 'WORKING', taskId: 't1' }));
    expect(Object.keys(twice)).toEqual(Object.keys(parseDelegationHash({ ...minimal, sendStartedAt: '5', state: 'WORKING', taskId: 't1' })));
  });

  it('gives the keys of the schema in its order when the held record has a key of no field or its keys out of order', () => {
    const held = parseDelegationHash(full);
    const changed = { state: 'COMPLETED', updatedAt: '40', version: '8', finishedAt: '40' };
    const expected = parseDelegationHash({ ...full, ...changed });
    const withExtra = mergeDelegationChange({ ...held, artifacts: [] } as typeof held, changed)!;
    const reversed = mergeDelegationChange(Object.fromEntries(Object.entries(held).reverse()) as typeof held, changed)!;
    for (const merged of [withExtra, reversed]) {
      expect(merged).toStrictEqual(expected);
      expect(Object.keys(merged)).toEqual(Object.keys(expected));
    }
  });

  it('matches the parse of the changed row on random rows and random changes', () => {
    fc.assert(
      fc.property(change, change, fc.constantFrom(full, minimal), (rowChanges, changed, base) => {
        expectMergeSame({ ...base, ...rowChanges }, changed);
      }),
      { numRuns: 500 },
    );
  });
});
