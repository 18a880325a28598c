/**
 * A body's text decoded once at the end (`utf8TextOf`, `readLimitedText`, `readBodyText`; node36, before: one streaming
 * `TextDecoder` per body) is WHATWG Encoding's decode of the whole body, for any bytes (invalid and cut sequences, a
 * leading byte order mark, a multi-byte character split between chunks) in any chunking; the old reading's text
 * differed only by a U+FEFF Node's streaming decoder dropped. `readLimitedText` still refuses a body past its limit,
 * and `readBodyText` still stops at the chunk that reaches its limit.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LimitExceededError } from '../src/errors.ts';
import { readLimitedText } from '../src/http.ts';
import { readBodyText } from '../src/sse.ts';
import { utf8TextOf } from '../src/utf8.ts';

/** What the readers did before: one fresh streaming decoder per body, flushed at the end. */
function streamingText(chunks: readonly Uint8Array[]): string {
  const decoder = new TextDecoder('utf-8');
  return chunks.map((chunk) => decoder.decode(chunk, { stream: true })).join('') + decoder.decode();
}

/**
 * WHATWG Encoding's UTF-8 decode of the whole body (§4.1: a leading BOM dropped, the rest as `Buffer#toString`
 * reads it, the same U+FFFD per maximal invalid subpart), found without a `TextDecoder`.
 */
function wholeBodyText(chunks: readonly Uint8Array[]): string {
  const whole = Buffer.concat(chunks);
  const bom = whole.length >= 3 && whole[0] === 0xef && whole[1] === 0xbb && whole[2] === 0xbf;
  return (bom ? whole.subarray(3) : whole).toString('utf8');
}

const withoutBoms = (text: string) => text.replaceAll('\uFEFF', '');

/** Bytes rich in UTF-8 edge cases: text of any code points, stray continuation and lead bytes, a BOM. */
const byteRun = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 12 }).map((text) => new TextEncoder().encode(text)),
  fc.uint8Array({ maxLength: 8 }),
  fc.constantFrom(new Uint8Array([0xef, 0xbb, 0xbf]), new Uint8Array([0xf0, 0x9f]), new Uint8Array([0xe2, 0x82]), new Uint8Array([0xc3]), new Uint8Array([0x80, 0xbf])),
);

/** A body's bytes cut into chunks at arbitrary places (empty chunks included). */
const chunked = fc
  .tuple(fc.array(byteRun, { maxLength: 8 }), fc.array(fc.nat(), { maxLength: 6 }))
  .map(([runs, cutsSeed]) => {
    const whole = Buffer.concat(runs);
    const cuts = cutsSeed.map((seed) => (whole.length === 0 ? 0 : seed % (whole.length + 1))).sort((a, b) => a - b);
    const chunks: Uint8Array[] = [];
    let from = 0;
    for (const cut of [...cuts, whole.length]) {
      chunks.push(new Uint8Array(whole.subarray(from, cut)));
      from = cut;
    }
    return chunks;
  });

const byteLengthOf = (chunks: readonly Uint8Array[]) => chunks.reduce((sum, chunk) => sum + chunk.byteLength, 0);

async function* iterate(chunks: readonly Uint8Array[]): AsyncGenerator<Uint8Array> {
  for (const chunk of chunks) yield chunk;
}

describe('a body decoded once at the end', () => {
  it('utf8TextOf is the whole body decoded as WHATWG Encoding says, in any chunking', () => {
    fc.assert(
      fc.property(chunked, (chunks) => {
        expect(utf8TextOf(chunks, byteLengthOf(chunks))).toBe(wholeBodyText(chunks));
      }),
      { numRuns: 2000 },
    );
  });

  it('the old streaming reading gave the same text but for a U+FEFF it dropped after a cut start', () => {
    // Node 24's streaming decoder drops a BOM that comes before any character it has output: `[E2] [82 EF BB BF]`
    // gave '\uFFFD', where the whole body (and the standard) give '\uFFFD\uFEFF'. Every other character is the same.
    fc.assert(
      fc.property(chunked, (chunks) => {
        expect(withoutBoms(streamingText(chunks))).toBe(withoutBoms(utf8TextOf(chunks, byteLengthOf(chunks))));
      }),
      { numRuns: 2000 },
    );
    expect(streamingText([new Uint8Array([0xe2]), new Uint8Array([0x82, 0xef, 0xbb, 0xbf])])).toBe('\uFFFD');
    expect(utf8TextOf([new Uint8Array([0xe2]), new Uint8Array([0x82, 0xef, 0xbb, 0xbf])], 5)).toBe('\uFFFD\uFEFF');
  });

  it('a BOM, a cut sequence and a character split between chunks read as before', () => {
    const euro = new TextEncoder().encode('€');
    const cases: Uint8Array[][] = [
      [],
      [new Uint8Array([0xef, 0xbb, 0xbf, 0x61])],
      [new Uint8Array([0xef, 0xbb]), new Uint8Array([0xbf, 0x61])],
      [euro.subarray(0, 1), euro.subarray(1)],
      [new Uint8Array([0x61, 0xe2, 0x82])],
      [new Uint8Array([0xef, 0xbb, 0xbf]), new Uint8Array([0xef, 0xbb, 0xbf])],
    ];
    for (const chunks of cases) expect(utf8TextOf(chunks, byteLengthOf(chunks))).toBe(streamingText(chunks));
  });

  it('readLimitedText: the same text within the limit, LimitExceededError past it', async () => {
    await fc.assert(
      fc.asyncProperty(chunked, fc.nat({ max: 64 }), async (chunks, limit) => {
        const bytes = byteLengthOf(chunks);
        const reading = readLimitedText(iterate(chunks), limit, 'responseBodyBytes', 'http://agent.test');
        if (bytes > limit) await expect(reading).rejects.toBeInstanceOf(LimitExceededError);
        else expect(await reading).toBe(wholeBodyText(chunks));
      }),
      { numRuns: 500 },
    );
  });

  it('readBodyText: the text of the chunks up to the one that reaches the limit', async () => {
    await fc.assert(
      fc.asyncProperty(chunked, fc.integer({ min: 1, max: 64 }), async (chunks, limitBytes) => {
        const kept: Uint8Array[] = [];
        let bytes = 0;
        for (const chunk of chunks) {
          kept.push(chunk);
          bytes += chunk.byteLength;
          if (bytes >= limitBytes) break;
        }
        expect(await readBodyText(iterate(chunks), { limitBytes })).toBe(wholeBodyText(kept));
      }),
      { numRuns: 500 },
    );
  });
});
