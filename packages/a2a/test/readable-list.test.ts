/**
 * A task's `history` is parsed once per entry (`readableList`): the same output and the same issues as the schema it
 * replaced, which filtered the entries with one parse and then parsed the readable ones again.
 */
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { MessageSchema, TaskSchema } from '../src/schema.ts';
import { MessageV03Schema, TaskV03Schema } from '../src/v03/wire-schemas.ts';

/** The history schema before `readableList`: the readable entries filtered with one parse, then parsed again. */
const filteredThenParsed = (entry: z.ZodType) =>
  z.preprocess((value) => (Array.isArray(value) ? value.filter((item) => entry.safeParse(item).success) : value), z.array(entry).optional());
const OldTaskSchema = TaskSchema.out.extend({ history: filteredThenParsed(MessageSchema) });
const OldTaskV03Schema = TaskV03Schema.extend({ history: filteredThenParsed(MessageV03Schema) });

const text = fc.string({ maxLength: 8 });
/** Mostly `usual`, now and then `odd`: most entries read, some do not. */
const mostly = <T, U>(usual: fc.Arbitrary<T>, odd: fc.Arbitrary<U>) => fc.oneof({ weight: 5, arbitrary: usual }, { weight: 1, arbitrary: odd });
const role = mostly(fc.constantFrom('ROLE_USER', 'ROLE_AGENT', 'user', 'agent', 'Agent', 1, 2), fc.constantFrom('bogus', 7, null));
const part = mostly(
  fc.oneof(
    fc.record({ text }),
    fc.record({ kind: fc.constant('text'), text }),
    fc.record({ kind: fc.constant('file'), file: fc.record({ uri: text, mimeType: text, name: text }, { requiredKeys: ['uri'] }) }),
    fc.record({ url: text, mediaType: text, filename: text }, { requiredKeys: ['url'] }),
    fc.record({ data: fc.jsonValue({ maxDepth: 2 }) }),
  ),
  fc.oneof(fc.record({ text, raw: text }), fc.constant({}), fc.anything({ maxDepth: 1 })),
);
const message = fc.record(
  {
    kind: fc.constant('message'),
    messageId: mostly(fc.string({ minLength: 1, maxLength: 8 }), fc.oneof(fc.constant(''), fc.integer())),
    contextId: text,
    taskId: text,
    role,
    parts: mostly(fc.array(part, { maxLength: 3 }), fc.anything({ maxDepth: 1 })),
    metadata: mostly(fc.dictionary(text, fc.jsonValue({ maxDepth: 2 }), { maxKeys: 2 }), fc.constant(null)),
    extensions: fc.array(text, { maxLength: 2 }),
    referenceTaskIds: mostly(fc.array(text, { maxLength: 2 }), text),
    extra: fc.anything({ maxDepth: 1 }),
  },
  { requiredKeys: ['messageId', 'role', 'parts'] },
);
const history = mostly(fc.array(mostly(message, fc.anything({ maxDepth: 2 })), { maxLength: 5 }), fc.anything({ maxDepth: 2 }));
const task = (state: fc.Arbitrary<unknown>) =>
  fc.record(
    {
      kind: fc.constant('task'),
      id: mostly(fc.constant('t-1'), fc.oneof(fc.constant(''), fc.integer())),
      contextId: text,
      status: fc.record({ state, timestamp: fc.oneof(text, fc.integer()) }, { requiredKeys: ['state'] }),
      history,
      metadata: fc.dictionary(text, fc.jsonValue({ maxDepth: 1 }), { maxKeys: 2 }),
    },
    { requiredKeys: ['id', 'status', 'history'] },
  );

/** A parse's result as data: the output (keys in order), or the issues. */
const outcome = (result: z.ZodSafeParseResult<unknown>) => (result.success ? { data: result.data, keys: Object.keys(result.data as object) } : { issues: result.error.issues });

describe('readableList (a task history, each entry parsed once)', () => {
  it('1.0 Task: the same output or the same issues as filtering, then parsing again', () => {
    fc.assert(
      fc.property(task(fc.constantFrom('TASK_STATE_COMPLETED', 'working', 3, 'nonsense')), fc.boolean(), (input, dropHistory) => {
        const value = dropHistory ? { ...input, history: undefined } : input;
        expect(outcome(TaskSchema.safeParse(value))).toStrictEqual(outcome(OldTaskSchema.safeParse(value)));
      }),
      { numRuns: 2_000 },
    );
  });

  it('0.3 Task: the same output or the same issues as filtering, then parsing again', () => {
    fc.assert(
      fc.property(task(fc.constantFrom('completed', 'input-required', 'TASK_STATE_FAILED', 'nonsense')), (input) => {
        expect(outcome(TaskV03Schema.safeParse(input))).toStrictEqual(outcome(OldTaskV03Schema.safeParse(input)));
      }),
      { numRuns: 2_000 },
    );
  });

  it('an absent history stays absent; unreadable entries are dropped; a non-array history is refused at history', () => {
    const base = { id: 't-1', status: { state: 'TASK_STATE_COMPLETED' } };
    expect(Object.keys(TaskSchema.parse(base))).not.toContain('history');
    const good = { messageId: 'm-1', role: 'ROLE_USER', parts: [{ text: 'hi' }] };
    expect(TaskSchema.parse({ ...base, history: [good, { role: 'ROLE_USER' }, 'junk', good] }).history).toStrictEqual([good, good]);
    const refused = TaskSchema.safeParse({ ...base, history: 'junk' });
    expect(refused.success).toBe(false);
    expect(refused.error?.issues.map((issue) => [issue.code, issue.path])).toStrictEqual([['invalid_type', ['history']]]);
  });

  it('parses each entry of a Task once (the schema before parsed a readable entry twice)', () => {
    // Every parse of MessageSchema, inside a safeParse or as an array's item, runs its `_zod.run`.
    const runs = vi.spyOn(MessageSchema._zod, 'run');
    try {
      const good = { messageId: 'm-1', role: 'ROLE_USER', parts: [{ text: 'hi' }] };
      TaskSchema.parse({ id: 't-1', status: { state: 'TASK_STATE_COMPLETED' }, history: [good, good, { nope: 1 }] });
      expect(runs).toHaveBeenCalledTimes(3);
    } finally {
      runs.mockRestore();
    }
  });
});
