/**
 * A body's bytes read as UTF-8 text once it is whole, with one decoder for the process instead of one per body
 * (WHATWG Encoding §10.2: `decode` without `stream` leaves the decoder as new, so one decoder serves every call).
 */

/** The decoder of every whole text: invalid sequences become U+FFFD, a leading byte order mark is dropped. */
const WHOLE_TEXT_DECODER = new TextDecoder('utf-8');

/**
 * The UTF-8 text of `chunks` taken in order (`byteLength`: their bytes in all), what a fresh `TextDecoder('utf-8')`
 * fed them one by one with `{ stream: true }` and then flushed gives: the same U+FFFD for invalid or cut sequences
 * (also one split between two chunks), the same leading BOM dropped. Empty for no chunk.
 */
export function utf8TextOf(chunks: readonly Uint8Array[], byteLength: number): string {
  if (chunks.length === 0) return '';
  if (chunks.length === 1) return WHOLE_TEXT_DECODER.decode(chunks[0]);
  return WHOLE_TEXT_DECODER.decode(Buffer.concat(chunks, byteLength));
}
