/**
 * A part of the attempt's result refused over a limit, as one fact for every path that refuses it (field case A32,
 * docs/delegation-core.md "A refused part of the result"): the workers' stream, reads and SendMessage answers, and the
 * push webhook all build it here (`refusedResultOf`) and journal it with `Journal.noteRefusedResult`; the workers'
 * table and the push webhook judge a finished task against it here (`refusedResultShown`). Pure.
 */
import type { RefusedResult } from './record.ts';

/**
 * Bounds of the refused artifacts' ids a row keeps (noteRefusedResult-1.lua): at most 32 ids (a result refused in more
 * pieces than that is for a person anyway), each at most 256 UTF-8 bytes (A2A ids are UUIDs or short names; a longer
 * one is an agent's own text we do not keep whole). An id past either bound sets `artifactIdsLost`.
 */
export const REFUSED_ARTIFACT_IDS_MAX = 32;
export const REFUSED_ARTIFACT_ID_BYTES_MAX = 256;

/** What a refusal over a limit knew: its text, the limit's name, and the artifact refused when it was one artifact. */
export interface LimitRefusal {
  message: string;
  limit?: string;
  /** The refused artifact's id (`LimitExceededError.artifactId`); undefined when the whole answer or body was refused. */
  artifactId?: string;
}

/**
 * The refusal a limit error reports (`LimitExceededError`, taken by its shape so this module stays pure): its limit, the
 * artifact it found the limit on when it was one artifact, and `message` (default: the error's own). Every path that
 * journals a refusal over a limit builds it here: the workers' observations (`limitOf`) and the push webhook.
 */
export function limitRefusalOf(error: { readonly message: string; readonly limit: string; readonly artifactId?: string | undefined }, message = error.message): LimitRefusal {
  return { message, limit: error.limit, ...(error.artifactId !== undefined ? { artifactId: error.artifactId } : {}) };
}

/**
 * The fact a refusal over a limit leaves on the row (`refusedResult`): LIMIT_EXCEEDED, delivery `received` (the answer
 * arrived: the agent may have done the work), the limit, and the refused artifact's id when known.
 */
export function refusedResultOf(refusal: LimitRefusal): RefusedResult {
  return {
    code: 'LIMIT_EXCEEDED',
    message: refusal.message,
    retryable: false,
    delivery: 'received',
    ...(refusal.limit !== undefined ? { limit: refusal.limit } : {}),
    ...(refusal.artifactId !== undefined ? { artifactIds: [refusal.artifactId] } : {}),
  };
}

/**
 * Whether the artifacts of a full read of the finished task (`artifacts`, within limits: it was read) show the result
 * the refusals left out: at least one artifact, and every refused artifact's id among them (a refused chunk, appended
 * or not, names the artifact the agent holds whole: the read must hold it; spec §5.5 TaskArtifactUpdateEvent). A
 * refusal that knew no artifact (a whole answer or body over a limit) asks only for artifacts of the read's own. Never
 * when ids were lost (`artifactIdsLost`): which artifacts must be back is unknown, a person decides.
 */
export function refusedResultShown(refused: Pick<RefusedResult, 'artifactIds' | 'artifactIdsLost'>, artifacts: readonly { artifactId: string }[] | undefined): boolean {
  if (!artifacts?.length || refused.artifactIdsLost) return false;
  const read = new Set(artifacts.map((artifact) => artifact.artifactId));
  return (refused.artifactIds ?? []).every((artifactId) => read.has(artifactId));
}

/** The refused artifacts a full read's `artifacts` leave out, for a person's message (empty when it shows them all). */
export function refusedArtifactsMissing(refused: Pick<RefusedResult, 'artifactIds'>, artifacts: readonly { artifactId: string }[] | undefined): string[] {
  const read = new Set((artifacts ?? []).map((artifact) => artifact.artifactId));
  return (refused.artifactIds ?? []).filter((artifactId) => !read.has(artifactId));
}

/**
 * `refused` with `refusal` added, as noteRefusedResult-1.lua writes it (the first error kept, the artifact's id
 * gathered within the bounds, else `artifactIdsLost`): for a caller that carries on with its copy of the row.
 */
export function withRefusal(refused: RefusedResult | undefined, refusal: LimitRefusal): RefusedResult {
  const kept: RefusedResult = refused ?? refusedResultOf({ message: refusal.message, ...(refusal.limit !== undefined ? { limit: refusal.limit } : {}) });
  const { artifactId } = refusal;
  const ids = kept.artifactIds ?? [];
  if (artifactId === undefined || ids.includes(artifactId)) return kept;
  if (ids.length >= REFUSED_ARTIFACT_IDS_MAX || new TextEncoder().encode(artifactId).length > REFUSED_ARTIFACT_ID_BYTES_MAX) return { ...kept, artifactIdsLost: true };
  return { ...kept, artifactIds: [...ids, artifactId] };
}
