/**
 * Content codings of an answer (RFC 9110 §8.4): we never ask for one (no `Accept-Encoding`), yet some agents and
 * proxies compress every answer anyway. An answer is decoded before anything counts or reads it, so every byte limit
 * (`responseBodyBytes`, `sseEventBytes`, `agentCardBytes`) holds the decoded bytes we keep, never the compressed ones:
 * a 16 KiB gzip bomb stops at the limit like a 16 MiB plain body. Decoding is a stream under backpressure: a reader
 * that stops (a limit, an idle stream, an abort) stops the inflater and closes the connection.
 */
import { PassThrough, pipeline, type Readable, type Transform } from 'node:stream';
import zlib from 'node:zlib';
import { ProtocolError } from './errors.ts';

/**
 * At most this many codings applied one over another (`Content-Encoding: gzip, gzip`): real servers use one; each layer
 * multiplies the work an answer of a given size costs us, so a longer list is refused as an unreadable answer.
 */
export const MAX_CONTENT_CODINGS = 2;

/** Decoders by coding name (lower case; `x-gzip` is gzip, RFC 9110 §8.4.1.3). `deflate` is the zlib format (§8.4.1.2). */
const DECODERS: Readonly<Record<string, () => Transform>> = {
  gzip: () => zlib.createGunzip(),
  'x-gzip': () => zlib.createGunzip(),
  deflate: () => zlib.createInflate(),
  br: () => zlib.createBrotliDecompress(),
  ...(typeof zlib.createZstdDecompress === 'function' ? { zstd: () => zlib.createZstdDecompress() } : {}),
};

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
