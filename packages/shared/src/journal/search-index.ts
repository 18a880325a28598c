/**
 * The search index: how a workflow is found by its id's prefix, by its metadata, and listed by when it last changed,
 * without a scan. Two sorted sets beside the unfinished index (global keys, keys.ts):
 *
 * - `<prefix>:search`, every member scored 0 so Redis orders it by bytes (ZRANGEBYLEX):
 *   `i:<workflowId>` (id prefix search), `m:<key>=<value>\0<workflowId>` (one per indexed metadata pair, so one
 *   pair's workflows are a range, ordered by id) and `w:<workflowId>\0<key>=<value>` (the same pairs by workflow:
 *   what removal reads once the workflow's record has expired);
 * - `<prefix>:updated`, member workflowId scored by the time of its last workflow-level change (ms): creation and
 *   every workflow transition (updateWorkflow-4.lua). An attempt's own changes (a new status, a question) move the
 *   row's `updatedAt` but not this score: they would cost a write in every status script.
 *
 * - `<prefix>:tenant:<tenant>:created`, for each tenant other than `default` (tenant.ts): its workflow ids scored by
 *   creation time (ms), so a tenant's listing reads its own workflows, not every tenant's. Not kept for `default`,
 *   whose workflows from before tenants it could not hold: its listing reads the updated index.
 *
 * All are written by the script that creates the workflow (createWorkflow-11.lua) on one server; on a Cluster (other
 * slots) just before it, acknowledged. An entry is a candidate, never a verdict: every search reads the workflow's
 * row and keeps it only if the row matches (a stale entry, e.g. from a creation refused as an idempotency
 * conflict, matches nothing). Entries of workflows whose record expired (retention) are removed by
 * `pruneSearchIndex`, and by any search that meets one.
 *
 * Bounds (a caller's metadata cannot grow the index without limit): at most SEARCH_METADATA_LIMITS.pairs pairs per
 * workflow (the first in key order), keys of 1..64 characters `[A-Za-z0-9._-]`, values strings, numbers or booleans
 * of 1..128 characters without control characters. Other metadata is kept and sent, but not searchable.
 */
import type { Redis, Cluster } from 'ioredis';
import { DEFAULT_TENANT, tenantOfWorkflowId } from './tenant.ts';

/** Bounds of the metadata a workflow puts in the search index. */
export const SEARCH_METADATA_LIMITS = Object.freeze({ pairs: 16, keyChars: 64, valueChars: 128 });

/** A metadata key that can be searched: safe in an index member and in a `meta.<key>=<value>` filter. */
export const SEARCH_METADATA_KEY = /^[A-Za-z0-9._-]{1,64}$/;
const CONTROL = /[\u0000-\u001f\u007f]/;

/** A metadata value as indexed: its text (a number or boolean as JSON writes it), or undefined when it is not indexed. */
export function indexedValue(value: unknown): string | undefined {
  const text = typeof value === 'string' ? value : typeof value === 'number' && Number.isFinite(value) ? String(value) : typeof value === 'boolean' ? String(value) : undefined;
  if (text === undefined || text.length === 0 || text.length > SEARCH_METADATA_LIMITS.valueChars || CONTROL.test(text)) return undefined;
  return text;
}

/**
 * The metadata a workflow is found by: its definition's `metadata`, else, for a one-step workflow (a delegation),
 * its message's. The one rule for the index (at creation) and for the check of a search's candidates.
 */
export function searchableMetadata(definition: {
  metadata?: Record<string, unknown>;
  steps: readonly { message?: { metadata?: Record<string, unknown> } }[];
}): Record<string, unknown> | undefined {
  return definition.metadata ?? (definition.steps.length === 1 ? definition.steps[0]?.message?.metadata : undefined);
}

/** The `key=value` pairs of `metadata` the index holds (bounded, see the module comment), in key order. */
export function indexedPairs(metadata: Readonly<Record<string, unknown>> | undefined): string[] {
  if (!metadata) return [];
  const pairs: string[] = [];
  for (const key of Object.keys(metadata).sort()) {
    if (pairs.length >= SEARCH_METADATA_LIMITS.pairs) break;
    const value = indexedValue(metadata[key]);
    if (SEARCH_METADATA_KEY.test(key) && value !== undefined) pairs.push(`${key}=${value}`);
  }
  return pairs;
}

/** The search index members of one workflow with metadata `pairs` (`indexedPairs`). */
export function searchMembers(workflowId: string, pairs: readonly string[]): string[] {
  return [`i:${workflowId}`, ...pairs.map((pair) => `m:${pair}\0${workflowId}`), ...pairs.map((pair) => `w:${workflowId}\0${pair}`)];
}

/** A ZRANGEBYLEX range: every member starting with `start` (ids and metadata texts never hold byte 0xff). */
export function lexRange(start: string): { min: string; max: string } {
  return { min: `[${start}`, max: `[${start}\xff` };
}

/** The lexicographic range of one search driver, and how a member names its workflow. */
export interface LexDriver {
  /** Members from this one on (exclusive) with `after`, else the whole range. */
  range(after?: string): { min: string; max: string };
  workflowIdOf(member: string): string;
}

/** Workflows with metadata `pair` (`key=value`), ordered by id. */
export function metadataDriver(pair: string): LexDriver {
  const start = `m:${pair}\0`;
  return {
    range: (after) => ({ min: after === undefined ? `[${start}` : `(${start}${after}`, max: `[${start}\xff` }),
    workflowIdOf: (member) => member.slice(start.length),
  };
}

/** Workflows whose id starts with `prefix`, ordered by id. */
export function idPrefixDriver(prefix: string): LexDriver {
  return {
    range: (after) => ({ min: after === undefined ? `[i:${prefix}` : `(i:${after}`, max: `[i:${prefix}\xff` }),
    workflowIdOf: (member) => member.slice(2),
  };
}

/** The prefix of a search index key's workflow-side entries, `w:<workflowId>\0`. */
const byWorkflow = (workflowId: string) => `w:${workflowId}\0`;

/**
 * Removes `workflowIds` from both indexes (every member, the metadata pairs read from the `w:` entries): two reads and
 * two writes per workflow at most. For workflows whose record is gone (expired); a live one would be unfindable.
 */
export async function removeFromSearchIndex(redis: Redis | Cluster, keys: { search: string; updated: string; tenantCreated: (tenant: string) => string }, workflowIds: readonly string[]): Promise<void> {
  for (const workflowId of workflowIds) {
    const { min, max } = lexRange(byWorkflow(workflowId));
    const reverse = await redis.zrangebylex(keys.search, min, max, 'LIMIT', 0, SEARCH_METADATA_LIMITS.pairs);
    const pairs = reverse.map((member) => member.slice(byWorkflow(workflowId).length));
    await redis.zrem(keys.search, ...searchMembers(workflowId, pairs));
    await redis.zrem(keys.updated, workflowId);
    if (tenantOfWorkflowId(workflowId) !== DEFAULT_TENANT) await redis.zrem(keys.tenantCreated(tenantOfWorkflowId(workflowId)), workflowId);
  }
}
