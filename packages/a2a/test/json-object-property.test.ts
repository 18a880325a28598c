/**
 * JSON objects inside A2A values (a message's, a part's or an artifact's `metadata`, a data part) are read as given:
 * every own key, `__proto__`, `constructor` and `prototype` included (JSON.parse makes them own keys). Before, the
 * wire schemas copied them through `z.record`, which dropped an own `__proto__` key and took its value as the copy's
 * prototype: an answer reached the agent with other metadata than the person sent.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ArtifactSchema, JsonObjectSchema, MessageSchema } from '../src/index.ts';

const PROTOTYPE_KEYS = ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty'];
const key = fc.oneof(fc.constantFrom(...PROTOTYPE_KEYS), fc.string({ maxLength: 8 }));
/** A JSON object text whose keys include prototype names, as a client or an agent would send it. */
const objectText = fc.dictionary(key, fc.jsonValue({ maxDepth: 3 }), { maxKeys: 6 }).map((object) => {
  // fc.dictionary defines keys as own properties; JSON.stringify writes them all, `__proto__` included.
  return JSON.stringify(object);
});

describe('JSON objects are kept as given (property)', () => {
  it('a message, part and artifact metadata and a data part read back byte for byte, whatever their keys; Object.prototype untouched', () => {
    fc.assert(
      fc.property(objectText, objectText, (metadataText, dataText) => {
        const wire = `{"messageId":"m1","role":"ROLE_USER","parts":[{"data":${dataText},"metadata":${metadataText}}],"metadata":${metadataText}}`;
        const parsed = MessageSchema.parse(JSON.parse(wire));
        expect(JSON.stringify(parsed.metadata)).toBe(metadataText);
        expect(JSON.stringify(parsed.parts[0]!.metadata)).toBe(metadataText);
        expect(JSON.stringify(parsed.parts[0]!.data)).toBe(dataText);
        const artifact = ArtifactSchema.parse(JSON.parse(`{"artifactId":"a1","parts":[{"text":"t"}],"metadata":${metadataText}}`));
        expect(JSON.stringify(artifact.metadata)).toBe(metadataText);
        expect(Object.getPrototypeOf(parsed.metadata)).toBe(Object.prototype);
        expect(({} as Record<string, unknown>).polluted).toBeUndefined();
      }),
      {
        numRuns: 300,
        examples: [
          ['{"__proto__":{"polluted":true},"note":"n"}', '{"__proto__":{"polluted":true}}'],
          ['{"constructor":{"prototype":{"polluted":true}}}', '{"__proto__":null}'],
          ['{}', '{"prototype":1,"toString":"x"}'],
        ],
      },
    );
  });

  it('anything but an object is refused', () => {
    for (const value of [null, [], 'text', 3, true]) expect(JsonObjectSchema.safeParse(value).success).toBe(false);
  });
});
