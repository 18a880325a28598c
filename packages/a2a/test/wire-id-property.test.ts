/**
 * Identifiers an agent sends must survive UTF-8 unchanged (attack 32: artifacts `a\ud800` and `a\udc00` became one
 * artifact `a\ufffd` in the journal, half the result dropped, the step COMPLETED). Property: whatever string an agent
 * uses as a task, context, message or artifact id, an answer naming it is accepted exactly when UTF-8 carries it
 * unchanged, and then it is kept as it was sent.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ListTaskPushNotificationConfigsResponseSchema, StreamResponseSchema, TaskPushNotificationConfigSchema, TaskSchema } from '../src/schema.ts';
import { PushConfigV03Schema } from '../src/v03/wire-schemas.ts';
import { WIRE_ID_BYTES_MAX } from '../src/wire-id.ts';

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

  /*
   * edges35 (kind: an agent-supplied id stored and echoed unbounded): every id an agent sends, a push config's id
   * included (1.0 and 0.3), is at most `WIRE_ID_BYTES_MAX` UTF-8 bytes; an answer naming a longer one is refused (the
   * whole answer unreadable: delivery received, effect maybe), never journaled whole nor cut. Before: a push config id
   * was any string (a 200 KB one journaled as the row's `pushConfigId`, a lone surrogate as U+FFFD), and task, context,
   * message and artifact ids had no length bound at all.
   */
  it('property: any id of 1..3 KiB of 1-, 2-, 3- or 4-byte characters, in any place an agent sends one, is accepted iff within the byte bound', () => {
    const unitArb = fc.constantFrom('a', 'é', '界', '😀');
    fc.assert(
      fc.property(unitArb, fc.integer({ min: 1, max: 3 * 1024 }), fc.constantFrom('task id', 'context id', 'artifact id', 'message id', 'push config id', 'listed push config id', '0.3 push config id'), (unit, count, where) => {
        const id = unit.repeat(Math.max(1, Math.floor(count / unit.length)));
        const within = Buffer.byteLength(id, 'utf8') <= WIRE_ID_BYTES_MAX;
        const config = { id, taskId: 'T1', url: 'https://hooks.example/x' };
        const parsed =
          where === 'push config id' ? TaskPushNotificationConfigSchema.safeParse(config)
          : where === 'listed push config id' ? ListTaskPushNotificationConfigsResponseSchema.safeParse({ configs: [config] })
          : where === '0.3 push config id' ? PushConfigV03Schema.safeParse({ id, url: 'https://hooks.example/x' })
          : StreamResponseSchema.safeParse(
            where === 'task id' ? { task: { id, status: { state: 'TASK_STATE_WORKING' } } }
            : where === 'context id' ? { task: { id: 'T1', contextId: id, status: { state: 'TASK_STATE_WORKING' } } }
            : where === 'artifact id' ? { artifactUpdate: { taskId: 'T1', contextId: 'C1', artifact: { artifactId: id, parts: [{ text: 'x' }] }, lastChunk: true } }
            : { message: { messageId: id, role: 'ROLE_AGENT', parts: [{ text: 'x' }] } });
        expect(parsed.success, `${where}: ${Buffer.byteLength(id, 'utf8')} bytes`).toBe(within);
      }),
      { numRuns: 500, examples: [['a', 1024, 'push config id'], ['a', 1025, 'push config id'], ['界', 1026, 'task id'], ['😀', 512, 'listed push config id']] },
    );
  });

  it('a push config id UTF-8 cannot carry is refused (1.0 and 0.3); an absent or empty one is kept as the agent sent it', () => {
    expect(TaskPushNotificationConfigSchema.safeParse({ id: 'cfg-\ud800', url: 'https://hooks.example/x' }).success).toBe(false);
    expect(PushConfigV03Schema.safeParse({ id: 'cfg-\ud800', url: 'https://hooks.example/x' }).success).toBe(false);
    expect(TaskPushNotificationConfigSchema.parse({ url: 'https://hooks.example/x' }).id).toBeUndefined();
    expect(TaskPushNotificationConfigSchema.parse({ id: '', url: 'https://hooks.example/x' }).id).toBe('');
  });
});
