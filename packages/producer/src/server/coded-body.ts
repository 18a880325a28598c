/**
 * Request bodies in a content coding (RFC 9110 §8.4): an agent may gzip the push notifications it POSTs to our
 * webhook. The body is decoded with the A2A client's decoder (`decodeContentCoding`: the same codings, the same cap
 * on layers), as a fastify `preParsing` stream, so every byte limit after it (the route's `bodyLimit`) counts the
 * DECODED bytes: a small gzip bomb stops at the limit (413), its inflater stopped there, never inflated whole.
 */
import { PassThrough, type Readable, Transform, type TransformCallback } from 'node:stream';
import { CONTENT_CODINGS, contentCodingsOf, decodeContentCoding } from '@durable-a2a/a2a';

/** A client error fastify's problem handler maps by `statusCode` (400, 413, 415). */
const clientError = (statusCode: number, message: string, cause?: unknown): Error => Object.assign(new Error(message, { cause }), { statusCode });

/** The value of an `Accept-Encoding` answer to a body we cannot decode: the codings we can. */
export const ACCEPTED_REQUEST_CODINGS = ['identity', ...CONTENT_CODINGS].join(', ');

/** Passes bytes through up to `limitBytes`; past it fails with a 413 client error (stopping the decoder upstream). */
class DecodedLimit extends Transform {
  private bytes = 0;

  constructor(private readonly limitBytes: number) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.bytes > this.limitBytes) return callback(clientError(413, `the decoded body is larger than ${this.limitBytes} bytes`));
    callback(null, chunk);
  }
}

/**
 * `raw` (a request's body) decoded by its `Content-Encoding` (`contentEncoding`), for fastify's `preParsing` hook:
 * `raw` itself when it names none (or only `identity`). The result's decoded bytes stop at `limitBytes` with a 413
 * client error; a corrupt coding fails with a 400 one; `receivedEncodedLength` counts the bytes received (fastify
 * checks them against `Content-Length` and the route's `bodyLimit`). On failure the rest of `raw` is read and
 * dropped, never left on the connection, and the answer still goes out.
 * @throws a 415 client error (`statusCode` 415) for a coding we do not decode or more than `MAX_CONTENT_CODINGS`;
 * nothing of the body was read, and the rest of it is dropped.
 */
export function decodedRequestBody(raw: Readable, contentEncoding: string | undefined, limitBytes: number, what: string): Readable {
  if (contentCodingsOf(contentEncoding).length === 0) return raw;
  const input = new PassThrough();
  const release = () => {
    raw.unpipe(input);
    raw.resume();
  };
  let decoded: Readable;
  try {
    decoded = decodeContentCoding(input, contentEncoding, what);
  } catch (error) {
    release();
    throw clientError(415, (error as Error).message, error);
  }
  const output = Object.assign(new DecodedLimit(limitBytes), { receivedEncodedLength: 0 });
  raw.on('data', (chunk: Buffer) => void (output.receivedEncodedLength += chunk.length));
  raw.pipe(input);
  decoded.on('error', (error) => {
    release();
    output.destroy(error instanceof Error && 'statusCode' in error ? error : clientError(400, error.message, error));
  });
  output.on('error', () => {
    release();
    decoded.destroy();
  });
  decoded.pipe(output);
  return output;
}
