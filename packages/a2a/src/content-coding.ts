/**
 * Content codings of an answer (RFC 9110 §8.4): we never ask for one (no `Accept-Encoding`), yet some agents and
 * proxies compress every answer anyway. An answer is decoded before anything counts or reads it, so every byte limit
 * (`responseBodyBytes`, `sseEventBytes`, `agentCardBytes`) holds the decoded bytes we keep, never the compressed ones:
 * a 16 KiB gzip bomb stops at the limit like a 16 MiB plain body. Decoding is a stream under backpressure: a reader
 * that stops (a limit, an idle stream, an abort) stops the inflater and closes the connection.
 */
import { PassThrough, pipeline, type Readable, Transform } from 'node:stream';
import zlib from 'node:zlib';
import { ProtocolError } from './errors.ts';

/**
 * At most this many codings applied one over another (`Content-Encoding: gzip, gzip`): real servers use one; each layer
 * multiplies the work an answer of a given size costs us, so a longer list is refused as an unreadable answer.
 */
export const MAX_CONTENT_CODINGS = 2;

/**
 * `true` when `head` (the first two bytes of a `deflate` body) is a zlib header (RFC 1950 §2.2: method 8, window at
 * most 32 KiB, `CMF·256 + FLG` a multiple of 31). A raw deflate stream (RFC 1951) cannot start so: its first byte's low
 * nibble is 8 only in a stored block's zero padding, which encoders never set.
 */
export function isZlibHeader(head: Uint8Array): boolean {
  return head.length >= 2 && (head[0]! & 0x0f) === 8 && head[0]! >> 4 <= 7 && ((head[0]! << 8) | head[1]!) % 31 === 0;
}

/**
 * The `deflate` decoder. RFC 9110 §8.4.1.2 says the zlib format, yet some servers send raw deflate under that name;
 * browsers and curl read both, and so do we: the first two bytes pick the inflater (`isZlibHeader`), as undici's own
 * fetch does (it does not export that decoder). Output flows under the consumer's backpressure like any transform.
 */
class DeflateEitherForm extends Transform {
  private inflater: zlib.Inflate | zlib.InflateRaw | undefined;
  private head = Buffer.alloc(0);

  private start(): zlib.Inflate | zlib.InflateRaw {
    const inflater = this.head.length < 2 || isZlibHeader(this.head) ? zlib.createInflate() : zlib.createInflateRaw();
    inflater.on('data', (chunk: Buffer) => this.push(chunk));
    inflater.on('error', (error) => this.destroy(error));
    this.inflater = inflater;
    return inflater;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    if (this.inflater !== undefined) return void this.inflater.write(chunk, () => callback());
    this.head = Buffer.concat([this.head, chunk]);
    if (this.head.length < 2) return callback();
    this.start().write(this.head, () => callback());
  }

  override _flush(callback: (error?: Error | null) => void): void {
    let inflater = this.inflater;
    if (inflater === undefined) {
      // Under two bytes: nothing to tell the forms apart by, and neither decodes it (the zlib inflater reports it).
      inflater = this.start();
      if (this.head.length > 0) inflater.write(this.head);
    }
    inflater.once('end', () => callback());
    inflater.end();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.inflater?.destroy();
    callback(error);
  }
}

/** Decoders by coding name (lower case; `x-gzip` is gzip, RFC 9110 §8.4.1.3). `deflate`: zlib or raw (`DeflateEitherForm`). */
const DECODERS: Readonly<Record<string, () => Transform>> = {
  gzip: () => zlib.createGunzip(),
  'x-gzip': () => zlib.createGunzip(),
  deflate: () => new DeflateEitherForm(),
  br: () => zlib.createBrotliDecompress(),
  ...(typeof zlib.createZstdDecompress === 'function' ? { zstd: () => zlib.createZstdDecompress() } : {}),
};

/** The content codings we decode, by name (for an `Accept-Encoding` answer, RFC 9110 §12.5.3). */
export const CONTENT_CODINGS: readonly string[] = Object.keys(DECODERS);

/** The content codings a `Content-Encoding` value names, in the order they were applied, `identity` left out. */
export function contentCodingsOf(header: string | undefined): string[] {
  if (header === undefined) return [];
  return header
    .split(',')
    .map((coding) => coding.trim().toLowerCase())
    .filter((coding) => coding !== '' && coding !== 'identity');
}

/** A stream output whose failure (a corrupt or truncated coding) is an unreadable answer: a `ProtocolError`, delivery `received`. */
class DecodedBody extends PassThrough {
  private readonly what: string;

  constructor(what: string) {
    super();
    this.what = what;
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    const code = (error as { code?: unknown } | null)?.code;
    // zlib's (Z_*, ERR_ZLIB*), brotli's (ERR__*) and zstd's (ZSTD_*) decoding errors; anything else (the connection) is the body's own.
    const isCoding = typeof code === 'string' && ['Z_', 'ERR_ZLIB', 'ERR__', 'ZSTD_'].some((prefix) => code.startsWith(prefix));
    callback(isCoding ? new ProtocolError(`${this.what}: its content coding does not decode (${error!.message})`, { cause: error, delivery: 'received' }) : error);
  }
}

/**
 * `body` decoded by its `Content-Encoding` (`contentEncoding`; none or `identity`: `body` itself). Destroying the
 * result destroys `body` (the connection closes). A failure while decoding is a `ProtocolError` (delivery `received`).
 * @throws ProtocolError (delivery `received`, `body` destroyed) for a coding we cannot decode or more than
 * `MAX_CONTENT_CODINGS` of them; `what` names the answer in the message.
 */
export function decodeContentCoding<Body extends Readable>(body: Body, contentEncoding: string | undefined, what: string): Body | Readable {
  const codings = contentCodingsOf(contentEncoding);
  if (codings.length === 0) return body;
  const unknown = codings.find((coding) => DECODERS[coding] === undefined);
  if (unknown !== undefined || codings.length > MAX_CONTENT_CODINGS) {
    body.on('error', () => undefined).destroy(); // undici reports its own abort as an error: nobody else listens
    const why = unknown !== undefined ? `an unknown content coding ${JSON.stringify(unknown.slice(0, 64))}` : `${codings.length} content codings (at most ${MAX_CONTENT_CODINGS})`;
    throw new ProtocolError(`${what} is encoded with ${why}`, { delivery: 'received' });
  }
  const decoders = codings.reverse().map((coding) => DECODERS[coding]!());
  const output = new DecodedBody(what);
  pipeline([body, ...decoders, output], () => undefined);
  return output;
}
