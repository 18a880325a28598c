/**
 * Identifiers an agent sends must survive UTF-8 unchanged (attack 32: artifacts `a\ud800` and `a\udc00` became one
 * artifact `a\ufffd` in the journal, half the result dropped, the step COMPLETED). Property: whatever string an agent
 * uses as a task, context, message or artifact id, an answer naming it is accepted exactly when UTF-8 carries it
 * unchanged, and then it is kept as it was sent.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { StreamResponseSchema, TaskSchema } from '../src/schema.ts';

/** Strings of any UTF-16 code units: lone surrogates, whole pairs, ASCII. */
const anyId = fc.oneof(
  fc.string({ unit: 'binary', minLength: 1, maxLength: 12 }),
  fc.array(fc.integer({ min: 0xd7f0, max: 0xe010 }), { minLength: 1, maxLength: 6 }).map((units) => String.fromCharCode(...units)),
);
const survivesUtf8 = (text: string) => Buffer.from(text, 'utf8').toString('utf8') === text;

describe('ids an agent sends', () => {
  it('property: a Task, an artifact update or a message naming an id is accepted iff UTF-8 carries the id unchanged, and keeps it as sent', () => {
    fc.assert(
      fc.property(anyId, fc.constantFrom('task id', 'context id', 'artifact id', 'message id'), (id, where) => {
        const wire = JSON.parse(JSON.stringify(
          where === 'task id' ? { task: { id, status: { state: 'TASK_STATE_WORKING' } } }
          : where === 'context id' ? { task: { id: 'T1', contextId: id, status: { state: 'TASK_STATE_WORKING' } } }
          : where === 'artifact id' ? { artifactUpdate: { taskId: 'T1', contextId: 'C1', artifact: { artifactId: id, parts: [{ text: 'x' }] }, lastChunk: true } }
          : { message: { messageId: id, role: 'ROLE_AGENT', parts: [{ text: 'x' }] } },
        ));
        const parsed = StreamResponseSchema.safeParse(wire);
        expect(parsed.success).toBe(survivesUtf8(id));
        if (parsed.success) expect(JSON.stringify(parsed.data)).toContain(JSON.stringify(id).slice(1, -1));
      }),
      { numRuns: 2_000 },
    );
  });

  it('a Task whose history holds a message with an id UTF-8 cannot carry keeps the Task, drops that entry', () => {
    const parsed = TaskSchema.parse({ id: 'T1', status: { state: 'TASK_STATE_WORKING' }, history: [{ messageId: 'm\ud800', role: 'ROLE_USER', parts: [{ text: 'x' }] }, { messageId: 'm1', role: 'ROLE_USER', parts: [{ text: 'y' }] }] });
    expect(parsed.history?.map((message) => message.messageId)).toEqual(['m1']);
  });
});
