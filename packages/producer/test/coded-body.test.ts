/**
 * Property of the kind "a request body in a content coding" (coded-body.ts; the webhook cases are in
 * test/api/push-webhook.test.ts): any body, any codings the client decodes (raw deflate under `deflate` too), any
 * split into chunks: the decoded stream holds exactly what was sent, or fails with 413 past the limit, never a part;
 * a coding we cannot decode is a 415 before a byte is read, and the source is drained, never left stuck.
 */
import { Readable } from 'node:stream';
import zlib from 'node:zlib';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodedRequestBody } from '../src/server/coded-body.ts';

type Coding = 'gzip' | 'deflate' | 'raw-deflate' | 'br' | 'zstd' | 'identity';
const ENCODERS: Record<Coding, (bytes: Buffer) => Buffer> = {
  gzip: (bytes) => zlib.gzipSync(bytes),
  deflate: (bytes) => zlib.deflateSync(bytes),
  'raw-deflate': (bytes) => zlib.deflateRawSync(bytes),
  br: (bytes) => zlib.brotliCompressSync(bytes),
  zstd: (bytes) => zlib.zstdCompressSync(bytes),
  identity: (bytes) => bytes,
};
const headerOf = (codings: readonly Coding[]): string => codings.map((coding) => (coding === 'raw-deflate' ? 'deflate' : coding)).join(', ');

/** The decoded text, or the error's `statusCode`. */
function read(stream: Readable): Promise<string | number> {
  const chunks: Buffer[] = [];
  return new Promise((resolve) => {
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    stream.on('error', (error: Error & { statusCode?: number }) => resolve(error.statusCode ?? -1));
  });
}

describe('decodedRequestBody', () => {
  it('property: decoded text equals the original; past the limit 413, never a partial text', async () => {
    const limit = 2048;
    await fc.assert(
      fc.asyncProperty(
        fc.string({ unit: 'binary', maxLength: 3000 }),
        fc.array(fc.constantFrom<Coding>('gzip', 'deflate', 'raw-deflate', 'br', 'zstd', 'identity'), { minLength: 1, maxLength: 2 }),
        fc.array(fc.integer({ min: 1, max: 64 }), { minLength: 1, maxLength: 8 }),
        async (text, codings, cuts) => {
          const plain = Buffer.from(text, 'utf8');
          const encoded = codings.reduce<Buffer>((body, coding) => ENCODERS[coding](body), plain);
          const chunks: Buffer[] = [];
          for (let offset = 0, index = 0; offset < encoded.length; index++) {
            const size = cuts[index % cuts.length]!;
            chunks.push(encoded.subarray(offset, offset + size));
            offset += size;
          }
          const source = Readable.from(chunks);
          const outcome = await read(decodedRequestBody(source, headerOf(codings), limit, 'body'));
          if (plain.length > limit) expect(outcome).toBe(413);
          else expect(outcome).toBe(plain.toString('utf8'));
        },
      ),
      { numRuns: 150 },
    );
  });

  it('an unknown coding, or three layers: a 415 thrown before reading, the source drained to its end', async () => {
    for (const header of ['compress', 'gzip, gzip, gzip', 'snappy, gzip']) {
      const source = Readable.from([Buffer.from('{"a":1}'), Buffer.from('more')]);
      const ended = new Promise<void>((resolve) => source.on('end', resolve));
      let thrown: unknown;
      try {
        decodedRequestBody(source, header, 1024, 'body');
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toMatchObject({ statusCode: 415 });
      await ended;
    }
  });

  it('no coding, or only identity: the body itself', () => {
    const source = Readable.from([Buffer.from('{}')]);
    expect(decodedRequestBody(source, undefined, 10, 'body')).toBe(source);
    expect(decodedRequestBody(source, 'identity', 10, 'body')).toBe(source);
  });

  it('a corrupt coding: 400', async () => {
    expect(await read(decodedRequestBody(Readable.from([Buffer.from('\x1f\x8b\x08\x00nope')]), 'gzip', 1024, 'body'))).toBe(400);
  });
});
