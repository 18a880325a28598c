/**
 * Bodies the fuzz agent writes: JSON text in which one marked value may be
 * replaced by an oversized one (a long text, many parts, deep nesting),
 * written in 1 MiB chunks with back-pressure so the agent never holds the
 * whole body in memory.
 */
import type { ServerResponse } from 'node:http';
import type { Deviation } from './grammar.ts';

/** The marker a wire value carries where the oversized value goes. */
export const HUGE_MARK = '@@HUGE@@';

/** A piece of a body: literal text, or `bytes` bytes of the letter x. */
export type Chunk = string | { repeatBytes: number };

type Oversized = Extract<Deviation, { kind: 'oversized' }>;

/** The extra artifact an oversized behaviour adds to our task: its single part is the marker. */
export function hugeArtifact(oversized: Oversized): Record<string, unknown> {
  const part = oversized.shape === 'depth' ? { data: HUGE_MARK } : { text: HUGE_MARK };
  return { artifactId: 'big', parts: oversized.shape === 'parts' ? [HUGE_MARK] : [part] };
}

/** Splits `json` at the marker and puts the oversized value there. Without a marker (or deviation) the text is one chunk. */
export function expand(json: string, oversized: Oversized | undefined): Chunk[] {
  const mark = JSON.stringify(HUGE_MARK);
  const at = json.indexOf(mark);
  if (!oversized || at < 0) return [json];
  const before = json.slice(0, at);
  const after = json.slice(at + mark.length);
  switch (oversized.shape) {
    case 'bytes':
      return [before, '"', { repeatBytes: oversized.amount }, '"', after];
    case 'parts':
      return [before, Array.from({ length: oversized.amount }, (_, index) => `{"text":"p${index}"}`).join(','), after];
    case 'depth':
      return [before, `${'{"d":'.repeat(oversized.amount)}"bottom"${'}'.repeat(oversized.amount)}`, after];
  }
}

/** Total size in bytes of `chunks`. */
export const chunkBytes = (chunks: Chunk[]): number =>
  chunks.reduce((sum, chunk) => sum + (typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.repeatBytes), 0);

const MEBIBYTE = 1 << 20;
const FILLER = 'x'.repeat(MEBIBYTE);

/** Writes `chunks` to `response`, waiting for 'drain' when the socket is full. False when the response was destroyed. */
export async function writeChunks(response: ServerResponse, chunks: Chunk[]): Promise<boolean> {
  for (const chunk of chunks) {
    let remaining = typeof chunk === 'string' ? -1 : chunk.repeatBytes;
    const pieces = typeof chunk === 'string' ? [chunk] : [];
    while (pieces.length > 0 || remaining > 0) {
      if (response.destroyed) return false;
      const piece = pieces.pop() ?? FILLER.slice(0, Math.min(MEBIBYTE, remaining));
      if (remaining > 0) remaining -= piece.length;
      if (piece.length > 0 && !response.write(piece)) {
        const drained = await new Promise<boolean>((resolve) => {
          const settle = (value: boolean) => () => {
            response.off('drain', onDrain);
            response.off('close', onClose);
            resolve(value);
          };
          const onDrain = settle(true);
          const onClose = settle(false);
          response.once('drain', onDrain);
          response.once('close', onClose);
        });
        if (!drained) return false;
      }
    }
  }
  return !response.destroyed;
}

/** The first half of the text of `chunks` (for answers cut inside a body or an event). */
export function firstHalf(chunks: Chunk[]): string {
  const text = chunks.map((chunk) => (typeof chunk === 'string' ? chunk : 'x'.repeat(Math.min(chunk.repeatBytes, 64)))).join('');
  return text.slice(0, Math.max(1, Math.floor(text.length / 2)));
}
