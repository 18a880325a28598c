/**
 * ProtoJSON proto field names (`proto-names.ts`; attack 26): A2A 1.0 JSON is ProtoJSON, whose parsers accept
 * `context_id` as well as `contextId`. An answer, stream event or listing written with the proto names, in any mix,
 * reads as the same value as the one written with JSON names; values (`metadata`, a `data` part) keep their keys; the
 * ownership proofs read by content (`answerContentProof`) see our messageId and context under either name.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { answerContentProof } from '../src/ownership.ts';
import { jsonNameOf, protoNameOf, withJsonNames } from '../src/proto-names.ts';
import { ListTasksResponseSchema, SendMessageResponseSchema, StreamResponseSchema } from '../src/schema.ts';

const word = fc.stringMatching(/^[a-z][a-z0-9]{0,6}$/);
/** Free JSON whose keys look like proto names: never renamed, whatever they look like. */
const freeJson = fc.dictionary(fc.constantFrom('context_id', 'message_id', 'task_id', 'x', 'last_chunk'), fc.oneof(word, fc.integer()), { maxKeys: 3 });
const part = fc.oneof(fc.record({ text: word }), fc.record({ data: freeJson }), fc.record({ url: word, mediaType: word }, { requiredKeys: ['url'] }));
const message = fc.record(
  { messageId: word, contextId: word, taskId: word, role: fc.constantFrom('ROLE_USER', 'ROLE_AGENT'), parts: fc.array(part, { maxLength: 2 }), metadata: freeJson, referenceTaskIds: fc.array(word, { maxLength: 2 }) },
  { requiredKeys: ['messageId', 'role', 'parts'] },
);
const artifact = fc.record({ artifactId: word, name: word, parts: fc.array(part, { minLength: 1, maxLength: 2 }), metadata: freeJson }, { requiredKeys: ['artifactId', 'parts'] });
const status = fc.record({ state: fc.constantFrom('TASK_STATE_WORKING', 'TASK_STATE_COMPLETED'), message, timestamp: fc.constant('2026-12-06T16:40:00.000Z') }, { requiredKeys: ['state'] });
const task = fc.record({ id: word, contextId: word, status, history: fc.array(message, { maxLength: 2 }), artifacts: fc.array(artifact, { maxLength: 2 }), metadata: freeJson }, { requiredKeys: ['id', 'status'] });
const event = fc.oneof(
  task.map((value) => ({ task: value })),
  message.map((value) => ({ message: value })),
  fc.record({ taskId: word, contextId: word, status }).map((value) => ({ statusUpdate: value })),
  fc.record({ taskId: word, contextId: word, artifact, append: fc.boolean(), lastChunk: fc.boolean() }).map((value) => ({ artifactUpdate: value })),
);

/** Keys whose values are free JSON: their insides are never field names. */
const FREE = new Set(['metadata', 'data']);

/** `value` with the field names of each object renamed to their proto names where `rename()` says so. */
function toProtoNames(value: unknown, rename: () => boolean): unknown {
  if (Array.isArray(value)) return value.map((entry) => toProtoNames(entry, rename));
  if (typeof value !== 'object' || value === null) return value;
  const renaming = rename();
  return Object.fromEntries(Object.entries(value).map(([key, inner]) => [renaming ? protoNameOf(key) : key, FREE.has(key) ? inner : toProtoNames(inner, rename)]));
}

/** A stream of choices from a list of booleans (cycled), so a run is reproducible and shrinks. */
const chooser = (choices: boolean[]) => {
  let index = 0;
  return () => choices[index++ % choices.length]!;
};

describe('ProtoJSON proto field names', () => {
  it('property: an event, send answer or listing written with proto names in any mix reads as its JSON-named form', () => {
    fc.assert(
      fc.property(event, fc.array(fc.boolean(), { minLength: 1, maxLength: 16 }), (value, choices) => {
        const renamed = toProtoNames(value, chooser(choices));
        expect(StreamResponseSchema.parse(renamed)).toEqual(StreamResponseSchema.parse(value));
        if ('task' in value || 'message' in value) expect(SendMessageResponseSchema.parse(renamed)).toEqual(SendMessageResponseSchema.parse(value));
        if ('task' in value) {
          const listing = { tasks: [value.task], nextPageToken: 'p2', pageSize: 50, totalSize: 1 };
          expect(ListTasksResponseSchema.parse(toProtoNames(listing, chooser(choices)))).toEqual(ListTasksResponseSchema.parse(listing));
        }
      }),
      {
        examples: [
          // Every object renamed (a printer with preserving_proto_field_name), wrapper members included.
          [{ statusUpdate: { taskId: 't', contextId: 'c', status: { state: 'TASK_STATE_COMPLETED' } } }, [true]],
          [{ artifactUpdate: { taskId: 't', contextId: 'c', artifact: { artifactId: 'a', parts: [{ text: 'x' }] }, append: true, lastChunk: true } }, [true]],
          [{ task: { id: 't', contextId: 'c', status: { state: 'TASK_STATE_COMPLETED' }, history: [{ messageId: 'm', role: 'ROLE_USER', parts: [{ data: { context_id: 'kept' } }] }] } }, [true]],
          // Only the inner objects renamed.
          [{ message: { messageId: 'm', role: 'ROLE_AGENT', parts: [{ url: 'u', mediaType: 'text/plain' }], referenceTaskIds: ['r'] } }, [false, true]],
        ],
      },
    );
  });

  it('the JSON name wins over the proto name on one object; free JSON keeps its keys; other names pass unchanged', () => {
    expect(withJsonNames({ context_id: 'proto', contextId: 'json' }, new Set(['contextId']))).toEqual({ context_id: 'proto', contextId: 'json' });
    expect(withJsonNames({ unknown_field: 1, __proto__x: 2 }, new Set(['contextId']))).toEqual({ unknown_field: 1, __proto__x: 2 });
    expect(jsonNameOf('last_chunk')).toBe('lastChunk');
    const parsed = StreamResponseSchema.parse({ task: { id: 't', context_id: 'c', status: { state: 'TASK_STATE_WORKING' }, metadata: { task_id: 'theirs' } } });
    expect(parsed).toEqual({ task: { id: 't', contextId: 'c', status: { state: 'TASK_STATE_WORKING' }, metadata: { task_id: 'theirs' } } });
  });

  it('property: the content proof of a send answer sees our messageId and context under either name', () => {
    fc.assert(
      fc.property(word, word, fc.boolean(), fc.array(fc.boolean(), { minLength: 1, maxLength: 8 }), (messageId, contextId, byHistory, choices) => {
        const proof = answerContentProof({ message: { messageId, contextId } })!;
        const answer = { task: { id: 't', contextId: byHistory ? 'theirs' : contextId, status: { state: 'TASK_STATE_COMPLETED' }, history: byHistory ? [{ messageId, role: 'ROLE_USER', parts: [] }] : [] } };
        expect(proof(toProtoNames(answer, chooser(choices)))).toBe(true);
        expect(answerContentProof({ id: 't' })!(toProtoNames({ statusUpdate: { taskId: 't', status: { state: 'TASK_STATE_WORKING' } } }, chooser(choices)))).toBe(true);
      }),
      { examples: [['m', 'c', true, [true]], ['m', 'c', false, [true]]] },
    );
  });
});
