/**
 * `boundedEvidence` (attack28): a verifier's evidence is journaled within the journal's bound on one outside text.
 * Kind: the read path that verifies an effect had no byte limit; a system of record that answered 20 MB had it
 * journaled whole on the row and in the history. Property: whatever the evidence (any JSON value, any size, text
 * with escapes and astral characters, values JSON cannot spell), what is kept is at most `maxBytes` bytes of JSON,
 * is the evidence itself when it fits, and otherwise the start of its JSON text with its whole size.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { boundedEvidence } from '../src/journal/evidence.ts';

const bytesOf = (value: unknown) => Buffer.byteLength(JSON.stringify(value), 'utf8');
const cyclic = (): unknown => {
  const value: Record<string, unknown> = { a: 1 };
  value.self = value;
  return value;
};

describe('boundedEvidence', () => {
  it('property: at most maxBytes of JSON; the evidence itself when it fits; else a prefix of its JSON and its size', () => {
    const evidence = fc.oneof(
      fc.jsonValue(),
      fc.string({ unit: 'grapheme', maxLength: 3_000 }).map((text) => ({ url: 'http://records/b/1', status: 200, body: { text } })),
      fc.integer({ min: 1, max: 60_000 }).map((length) => ({ body: { pad: '"\\\u0001é😀'.repeat(length) } })),
    );
    fc.assert(
      fc.property(evidence, fc.integer({ min: 256, max: 70_000 }), (found, maxBytes) => {
        const kept = boundedEvidence(found, maxBytes);
        expect(bytesOf(kept)).toBeLessThanOrEqual(maxBytes);
        const text = JSON.stringify(found ?? null);
        if (Buffer.byteLength(text, 'utf8') <= maxBytes) return void expect(kept).toEqual(found ?? null);
        const { excerpt, cut } = kept as { excerpt: string; cut: { bytes: number } };
        expect(text.startsWith(excerpt)).toBe(true);
        expect(cut.bytes).toBe(Buffer.byteLength(text, 'utf8'));
      }),
      {
        numRuns: 150,
        examples: [
          // attack28's input: a system of record's 20 MB answer, kept under 64 KiB.
          [{ url: 'http://records/b/1', status: 200, body: { status: 'booked', pad: 'y'.repeat(20 * 1024 * 1024) } }, 64 * 1024],
          [{ body: { pad: '😀'.repeat(10_000) } }, 256],
          [{ small: true }, 256],
          [null, 256],
        ],
      },
    );
  });

  it('evidence JSON cannot spell (a cycle, a BigInt) is kept as the error, never thrown; undefined is null', () => {
    expect(boundedEvidence(cyclic(), 1024)).toMatchObject({ unserializable: expect.stringContaining('circular') });
    expect(boundedEvidence({ amount: 10n }, 1024)).toMatchObject({ unserializable: expect.any(String) });
    expect(boundedEvidence(undefined, 1024)).toBeNull();
  });
});
