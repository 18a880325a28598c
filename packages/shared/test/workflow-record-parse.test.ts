/**
 * parseWorkflowHash reads a row field by field (readWorkflowFields) when it reads as it stands: exactly the record
 * WorkflowHashSchema gives (keys, values, order), or its error. No Redis.
 */
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { WORKFLOW_STATES } from '../src/journal/states.ts';
import { parseWorkflowHash, parseWorkflowHashBySchema as parsedBySchema, WorkflowHashSchema } from '../src/journal/workflow-record.ts';

/** Both on one hash: the same record (keys in the same order), or the same error. */
function expectSame(hash: Record<string, string>): void {
  let expected: unknown;
  let expectedError: unknown;
  try {
    expected = parsedBySchema(hash);
  } catch (error) {
    expectedError = error;
  }
  if (expectedError !== undefined) {
    let actualError: unknown;
    try {
      parseWorkflowHash(hash);
    } catch (error) {
      actualError = error;
    }
    expect(actualError).toBeDefined();
    expect(String(actualError)).toBe(String(expectedError));
    return;
  }
  const actual = parseWorkflowHash(hash);
  expect(actual).toStrictEqual(expected);
  expect(Object.keys(actual)).toEqual(Object.keys(expected as object));
}

const definition = (workflowId: string) => JSON.stringify({ workflowId, steps: [{ agent: 'https://a.example/card', name: 'main', message: { text: 'do it' } }], maxAttemptsPerStep: 1 });
const row: Record<string, string> = {
  workflowId: 'w1',
  state: 'RUNNING',
  definition: definition('w1'),
  createdAt: '1764936000000',
  updatedAt: '1764936000001',
  version: '3',
};
/** Mostly `usual`, now and then `odd`: most rows read, some are corrupt. */
const mostly = <T>(usual: fc.Arbitrary<T>, odd: fc.Arbitrary<T>) => fc.oneof({ weight: 12, arbitrary: usual }, { weight: 1, arbitrary: odd });
const listText = mostly(
  fc.oneof(fc.array(fc.string({ maxLength: 6 }), { maxLength: 3 }).map((list) => JSON.stringify(list)), fc.constant('')),
  fc.constantFrom('null', '[1]', '{', '"x"', '["a",2]'),
);
const attentionText = mostly(
  fc.oneof(
    fc.record({ code: fc.constantFrom('COMPENSATION_FAILED', 'NO_PROGRESS'), message: fc.string({ maxLength: 6 }), delegationId: fc.string({ maxLength: 4 }), evidence: fc.jsonValue({ maxDepth: 2 }) }, { requiredKeys: ['code', 'message'] }).map((value) => JSON.stringify(value)),
    fc.constantFrom('', 'prose', '{"reason":"r","delegationId":"d","x":1}', '{"code":"BOGUS","message":"m"}', '1', '{'),
  ),
  fc.constant('{"code":"NO_PROGRESS"}'),
);
const msText = mostly(fc.integer({ min: 0, max: 2 ** 40 }).map(String), fc.constantFrom('', '-1', '1.5', 'x', '12345678901234567', '007'));
/** Fields beside the base row: each absent or holding a value of its kind, now and then one that is not. */
const extras = fc.record(
  {
    workflowId: mostly(fc.constant('w1'), fc.string({ maxLength: 4 })),
    state: mostly(fc.constantFrom(...WORKFLOW_STATES), fc.constantFrom('', 'DONE', 'running')),
    definition: mostly(fc.constant(definition('w1')), fc.constantFrom('', '{', '{"steps":[]}', 'null')),
    version: mostly(fc.integer({ min: 0, max: 1000 }).map(String), fc.constantFrom('', 'x', '1e3')),
    createdAt: msText,
    updatedAt: msText,
    cancelRequested: fc.constantFrom('1', '0', '', 'true'),
    stopping: listText,
    failure: listText,
    attention: attentionText,
    retryApproved: listText,
    abandonedCompensations: listText,
    historyDropped: fc.constantFrom('', '0', '3', 'x', '2.5'),
    definitionText: fc.constant('ignored'),
    'retry:main.1': mostly(fc.constant('0'), fc.constant('1')),
    unknownExtra: fc.string({ maxLength: 4 }),
  },
  { requiredKeys: [] },
);

describe('parseWorkflowHash', () => {
  it('gives what WorkflowHashSchema gives (record or error) on random rows', () => {
    fc.assert(
      fc.property(extras, mostly(fc.constant([] as string[]), fc.subarray(Object.keys(row))), mostly(fc.constant(false), fc.constant(true)), (changed, removed, olderRow) => {
        const hash: Record<string, string> = { ...row, ...(changed as Record<string, string>) };
        for (const key of removed) if (!(key in changed)) delete hash[key];
        // An older release's approvals: now and then (the row then goes through the schema).
        if (!olderRow) delete hash['retry:main.1'];
        expectSame(hash);
      }),
      { numRuns: 3_000 },
    );
  });

  it('reads a live row without the schema; a corrupt row or an older release`s retry: fields still go through it', () => {
    const runs = vi.spyOn(WorkflowHashSchema._zod, 'run');
    try {
      const record = parseWorkflowHash({ ...row, failure: '["x"]', attention: JSON.stringify({ code: 'NO_PROGRESS', message: 'm' }) });
      expect(record).toMatchObject({ workflowId: 'w1', state: 'RUNNING', version: 3, failure: ['x'], attention: { code: 'NO_PROGRESS', message: 'm' } });
      expect(runs).toHaveBeenCalledTimes(0);
      expect(parseWorkflowHash({ ...row, 'retry:main.1': '1' }).retryApproved).toEqual(['main.1']);
      expect(runs).toHaveBeenCalledTimes(1);
      expect(() => parseWorkflowHash({ ...row, state: 'DONE' })).toThrow();
      expect(runs).toHaveBeenCalledTimes(2);
    } finally {
      runs.mockRestore();
    }
  });
});
