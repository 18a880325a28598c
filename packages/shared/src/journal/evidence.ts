/**
 * The one bound on a verifier's evidence as the journal stores it (attack28): what a read path returned, kept for a
 * person on the delegation row (`evidence`) and in the workflow's history (the verification entry). A verifier reads a
 * system the fleet does not control, so its answer is bounded like an agent's status message (`statusMessageBytes`):
 * never dropped, never cut silently. Before, a 20 MB answer of a system of record was journaled whole, twice.
 */
import { longestStart } from './status-message.ts';

/** Characters of an unserializable evidence's error kept. */
const ERROR_TEXT_MAX = 500;

/**
 * `evidence` within `maxBytes` UTF-8 bytes of JSON: unchanged when it fits; else `{ excerpt, cut: { bytes } }`, the
 * start of its JSON text and its whole size in bytes, at most `maxBytes` bytes of JSON whenever `maxBytes` is at least
 * 256. Evidence JSON cannot spell (a cycle, a BigInt) is `{ unserializable }` with the error's text: a verifier's
 * finding is journaled whatever evidence came with it. `undefined` is `null`.
 */
export function boundedEvidence(evidence: unknown, maxBytes: number): unknown {
  let text: string;
  try {
    text = JSON.stringify(evidence ?? null) ?? 'null';
  } catch (error) {
    return { unserializable: (error instanceof Error ? error.message : String(error)).slice(0, ERROR_TEXT_MAX) };
  }
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes <= maxBytes) return evidence ?? null;
  const excerpt = longestStart(text, maxBytes, (start) => Buffer.byteLength(JSON.stringify({ excerpt: start, cut: { bytes } }), 'utf8') <= maxBytes);
  return { excerpt, cut: { bytes } };
}
