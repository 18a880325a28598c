/**
 * Input limits: nothing an agent sends is unbounded (docs/a2a-edge.md "Limits"; field cases RT2, RT4, RT5, RT7): a broken or hostile agent must not exhaust a worker's memory.
 *
 * | limit | default | enforced where |
 * |---|---|---|
 * | `responseBodyBytes` | 16 MiB | every non-stream answer, counted as bytes arrive (`http.ts`); reading stops at the limit |
 * | `sseEventBytes` | 8 MiB | one SSE event, counted as bytes arrive (`sse.ts`) |
 * | `agentCardBytes` | 1 MiB | the Agent Card body (`card.ts`) |
 * | `partsPerMessage` | 1,000 | parts of one message or artifact, in every answer, event and push body |
 * | `jsonDepth` | 64 | nesting of any body or event, checked on its whole text before parsing (no recursion), whatever its leading bytes |
 * | `artifactBytesPerDelegation` | 16 MiB | artifact bytes summed over chunks and pushes: exported for the journal, which enforces it |
 * | `artifactsPerDelegation` | 1,000 | artifacts (distinct ids) one delegation shows, over its stream, pushes and reads: exported for the journal, which enforces it |
 * | `statusMessageBytes` | 64 KiB | one status message as the journal keeps it (JSON); a longer one is kept as an excerpt that says it was cut (the journal's `boundedStatusMessage`) |
 *
 * Going over a limit throws `LimitExceededError` (permanent for the attempt, `limit` names it).
 */
import { z } from 'zod';
import { LimitExceededError, type LimitName } from './errors.ts';
import type { Artifact, Message, Part, StreamResponse, Task } from './schema.ts';

/** Every input limit (bytes, parts or nesting levels). */
export type A2ALimits = Readonly<Record<LimitName, number>>;

const MiB = 1024 * 1024;

/** The defaults; each can be overridden (`resolveLimits`, `A2ALimitsSchema` for config). */
export const DEFAULT_A2A_LIMITS: A2ALimits = Object.freeze({
  responseBodyBytes: 16 * MiB,
  sseEventBytes: 8 * MiB,
  agentCardBytes: 1 * MiB,
  partsPerMessage: 1_000,
  jsonDepth: 64,
  artifactBytesPerDelegation: 16 * MiB,
  artifactsPerDelegation: 1_000,
  statusMessageBytes: 64 * 1024,
});

/**
 * The smallest `statusMessageBytes` accepted (bytes): room for a cut message's ids, its note and some of its text.
 */
export const STATUS_MESSAGE_BYTES_MIN = 2_048;

/** zod schema of a partial override (positive integers), for config parsing. */
export const A2ALimitsSchema = z
  .object({
    responseBodyBytes: z.number().int().positive(),
    sseEventBytes: z.number().int().positive(),
    agentCardBytes: z.number().int().positive(),
    partsPerMessage: z.number().int().positive(),
    jsonDepth: z.number().int().positive(),
    artifactBytesPerDelegation: z.number().int().positive(),
    artifactsPerDelegation: z.number().int().positive(),
    statusMessageBytes: z.number().int().min(STATUS_MESSAGE_BYTES_MIN),
  })
  .partial();

/** The defaults with `overrides` applied (undefined fields keep the default). */
export function resolveLimits(overrides: Partial<Record<LimitName, number | undefined>> = {}): A2ALimits {
  const defined = Object.fromEntries(Object.entries(overrides).filter(([, value]) => value !== undefined));
  return Object.freeze({ ...DEFAULT_A2A_LIMITS, ...defined });
}

/**
 * Throws `LimitExceededError('jsonDepth')` when `text` nests objects/arrays deeper than `maxDepth`.
 * One linear pass over the characters (strings and escapes skipped), no recursion, so a
 * 5,000-deep body is refused before `JSON.parse` or anything recursive sees it.
 */
export function checkJsonDepth(text: string, maxDepth: number): void {
  let depth = 0;
  let inString = false;
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (inString) {
      if (code === 0x5c) index++; // backslash: skip the escaped character
      else if (code === 0x22) inString = false;
    } else if (code === 0x22) inString = true;
    else if (code === 0x7b || code === 0x5b) {
      if (++depth > maxDepth) throw new LimitExceededError('jsonDepth', maxDepth, `JSON nested deeper than ${maxDepth} levels`, { delivery: 'received' });
    } else if (code === 0x7d || code === 0x5d) depth--;
  }
}

function checkParts(parts: readonly Part[] | undefined, maxParts: number, where: string, artifactId?: string): void {
  if (parts !== undefined && parts.length > maxParts) {
    throw new LimitExceededError('partsPerMessage', maxParts, `${where} has ${parts.length} parts, over the limit of ${maxParts}`, { delivery: 'received', ...(artifactId !== undefined ? { artifactId } : {}) });
  }
}

const checkMessage = (message: Message | undefined, maxParts: number): void => checkParts(message?.parts, maxParts, `message ${message?.messageId}`);
// The refused artifact's id travels with the error: a later full read must show that artifact (refused-result).
const checkArtifact = (artifact: Artifact, maxParts: number): void => checkParts(artifact.parts, maxParts, `artifact ${artifact.artifactId}`, artifact.artifactId);

/** Throws `LimitExceededError('partsPerMessage')` if any message or artifact of `task` has more than `maxParts` parts. */
export function checkTaskParts(task: Task, maxParts: number): void {
  checkMessage(task.status.message, maxParts);
  for (const message of task.history ?? []) checkMessage(message, maxParts);
  for (const artifact of task.artifacts ?? []) checkArtifact(artifact, maxParts);
}

/** The same for a StreamResponse or SendMessageResponse (stream events, push bodies, send answers). */
export function checkResponseParts(response: StreamResponse | { task: Task } | { message: Message }, maxParts: number): void {
  if ('task' in response) checkTaskParts(response.task, maxParts);
  else if ('message' in response) checkMessage(response.message, maxParts);
  else if ('statusUpdate' in response) checkMessage(response.statusUpdate.status.message, maxParts);
  else if ('artifactUpdate' in response) checkArtifact(response.artifactUpdate.artifact, maxParts);
}

/**
 * What the journal's artifacts hash costs for one artifact besides its JSON, in bytes: five fields (`meta:<id>`,
 * `parts:<id>`, `order:<id>`, `bytes:<id>`, `sealed:<id>`), their small values and Redis's own cost per hash field
 * (its entry, two allocations, its share of the bucket array, which doubles as the hash grows). redis-server's
 * MEMORY USAGE reads 290 to 360 bytes per artifact with a 6-byte id and nothing in it, by how full the buckets are;
 * 512 covers it.
 * Without it an agent streaming many empty artifacts was counted about 10 bytes for each and Redis held 22 times the
 * limit (attack 32: 20,000 empty artifacts under a 256 KiB limit, 5.8 MB).
 */
export const ARTIFACT_ENTRY_BYTES = 512;

/** How many times the artifacts hash writes an artifact's id: once in each of its five field names. */
const ARTIFACT_ID_COPIES = 5;

/**
 * The bytes an artifact costs the journal once, whatever its content (`ARTIFACT_ENTRY_BYTES` and its id in each field
 * name, UTF-8). Appended chunks of a stored artifact cost their parts only (applyArtifact-2.lua takes this off again).
 */
export function artifactEntryBytes(artifactId: string): number {
  return ARTIFACT_ENTRY_BYTES + ARTIFACT_ID_COPIES * Buffer.byteLength(artifactId, 'utf8');
}

/**
 * An artifact as the journal stores it: its id, its other fields (name, description, metadata, extensions) as JSON,
 * its parts (with their metadata, filenames, media types) as JSON, and `bytes`, every stored byte of the three (UTF-8)
 * and the artifact's entry (`entryBytes`, `artifactEntryBytes`), which is what `artifactBytesPerDelegation` counts
 * (field case B31: metadata, names and ids are stored bytes too; attack 32: so is each artifact's place in the hash).
 */
export function storedArtifact(artifact: Artifact): { artifactId: string; meta: string; parts: string; bytes: number; entryBytes: number } {
  const { artifactId, parts, ...meta } = artifact;
  const metaJson = JSON.stringify(meta);
  const partsJson = JSON.stringify(parts);
  const entryBytes = artifactEntryBytes(artifactId);
  return { artifactId, meta: metaJson, parts: partsJson, bytes: entryBytes + Buffer.byteLength(metaJson, 'utf8') + Buffer.byteLength(partsJson, 'utf8'), entryBytes };
}

/** Every byte the journal stores for an artifact (`storedArtifact(artifact).bytes`), for `artifactBytesPerDelegation`. */
export function artifactByteSize(artifact: Artifact): number {
  return storedArtifact(artifact).bytes;
}
