/**
 * Finding workflows for people and bulk actions: a filter (state, waiting for a person, attention code, agent,
 * metadata `key=value`, id prefix, created range) answered through the search index (search-index.ts), never a scan.
 *
 * One index drives a search, the narrowest the filter names: of its metadata pairs (each pair's workflows, by id)
 * and id prefix (by id), the one with the fewest entries; else, for one tenant other than `default`, that tenant's
 * created index (newest created first), else the updated index (newest change first). Its candidates are read in batches; each candidate's
 * row decides (an index entry proposes, the row disposes), so the answer is exactly the workflows whose rows match.
 * A call reads at most SEARCH_CANDIDATE_LIMIT candidates: a page may hold fewer rows than `limit` and still carry a
 * cursor (the position of the last candidate read); callers continue while a cursor is returned. The cost of a page
 * is bounded by the candidates it reads (a few commands each), whatever the number of workflows.
 */
import { z } from 'zod';
import { isWorkflowStopping, parseAttention, StoredMs } from './workflow-record.ts';
import { FINISHED_WORKFLOW_STATES, WORKFLOW_STATES } from './states.ts';
import { CorruptRecordError } from './corrupt.ts';
import { parseDefinitionText, type WorkflowDefinition } from '../workflow.ts';
import type { Journal } from './journal.ts';
import { DEFAULT_TENANT, tenantOfWorkflowId } from './tenant.ts';
import { decodeListingCursor, encodeListingCursor, openQuestionOf, OPEN_QUESTION_FIELDS, type CorruptListing, type OpenQuestionSummary, type Page, type WorkflowSummary } from './listing.ts';
import { idPrefixDriver, indexedValue, metadataDriver, removeFromSearchIndex, searchableMetadata, type LexDriver } from './search-index.ts';

/** A candidate of a tenant the filter does not name: skipped unread. */
const OTHER_TENANT = Symbol('another tenant');

/** At most this many candidates are read by one search call (rows of the driving index). */
export const SEARCH_CANDIDATE_LIMIT = 2_000;
/** The most recent delegations of a workflow read for its open questions and agents (open questions live on recent attempts). */
const RECENT_DELEGATIONS = 100;
/** Candidates read per round trip batch. */
const BATCH = 200;

/**
 * What a search keeps (every given criterion must hold). `state`: a workflow state, or INPUT_REQUIRED /
 * AUTH_REQUIRED (an open question of that kind); `waiting`: an open question or NEEDS_ATTENTION; `attentionCode`:
 * the attention's code; `agent`: a step's fixed agent or an unfinished workflow's recent attempt's agent (Agent Card
 * URL or base URL, compared without a trailing `/` or `/.well-known/agent-card.json`); `metadata`: every pair, as
 * indexed (`indexedValue`); `idPrefix`; `createdAfterMs` (inclusive) and `createdBeforeMs` (exclusive), ms since epoch; `tenant`: the
 * workflow's tenant (tenant.ts), decided by its id before its row is read.
 */
export interface WorkflowFilter {
  state?: string;
  waiting?: boolean;
  attentionCode?: string;
  agent?: string;
  metadata?: Readonly<Record<string, string>>;
  idPrefix?: string;
  createdAfterMs?: number;
  createdBeforeMs?: number;
  tenant?: string;
}

/** One candidate's row as a search reads it. */
interface CandidateRow {
  state: string;
  createdAt: number;
  updatedAt: number;
  attention?: string;
  definition?: string;
  live: boolean;
  /** The workflow is stopping (`isWorkflowStopping`): its steps' questions are closed, a compensation's stay open. */
  stopping: boolean;
}

const CandidateRowSchema = z.object({ state: z.enum(WORKFLOW_STATES), createdAt: StoredMs, updatedAt: StoredMs, attention: z.string().optional(), definition: z.string().optional() });
const FINISHED = new Set<string>(FINISHED_WORKFLOW_STATES);

/** Agent Card URL or base URL compared by one form: no trailing `/`, no card path. */
const agentForm = (url: string) => url.replace(/\/\.well-known\/agent(-card)?\.json$/, '').replace(/\/+$/, '');

/** A row's definition, or undefined when it has none or it does not parse (such a row matches no metadata or agent). */
function definitionOf(row: CandidateRow): WorkflowDefinition | undefined {
  if (!row.definition) return undefined;
  try {
    return parseDefinitionText(row.definition);
  } catch {
    return undefined;
  }
}

/** A candidate's row: undefined when gone (expired); CorruptRecordError when it does not parse. */
async function candidateRow(journal: Journal, id: string): Promise<CandidateRow | undefined | CorruptRecordError> {
  const fields = ['state', 'createdAt', 'updatedAt', 'attention', 'definition', 'workflowId', 'cancelRequested', 'stopping'] as const;
  const live = await journal.redis.hmget(journal.keys.workflow(id), ...fields);
  const isLive = live[0] !== null || live[5] !== null;
  const key = isLive ? journal.keys.workflow(id) : journal.keys.finished(id);
  try {
    const row = isLive ? live : await journal.finishedWorkflowRow(id).then((finished) => finished && fields.map((field) => finished[field] ?? null));
    if (!row) return undefined;
    const [state, createdAt, updatedAt, attention, definition] = row.map((value) => value || undefined);
    const parsed = CandidateRowSchema.safeParse({ state, createdAt, updatedAt, attention, definition });
    if (parsed.success) return { ...parsed.data, live: isLive, stopping: isWorkflowStopping({ cancelRequested: row[6], stopping: row[7] }) };
    const error = new CorruptRecordError('workflow', key, { cause: parsed.error });
    journal.reportCorrupt(error);
    return error;
  } catch (error) {
    if (error instanceof CorruptRecordError) return error;
    throw error;
  }
}

/** True when the row's own fields (no delegation read) pass the filter. */
function rowMatches(id: string, row: CandidateRow, filter: WorkflowFilter): boolean {
  const questionState = filter.state === 'INPUT_REQUIRED' || filter.state === 'AUTH_REQUIRED';
  if (filter.state !== undefined && !questionState && row.state !== filter.state) return false;
  if (questionState && FINISHED.has(row.state)) return false;
  if (filter.idPrefix !== undefined && !id.startsWith(filter.idPrefix)) return false;
  if (filter.createdAfterMs !== undefined && row.createdAt < filter.createdAfterMs) return false;
  if (filter.createdBeforeMs !== undefined && row.createdAt >= filter.createdBeforeMs) return false;
  if (filter.attentionCode !== undefined && (!row.attention || parseAttention(row.attention).code !== filter.attentionCode)) return false;
  const pairs = Object.entries(filter.metadata ?? {});
  if (pairs.length > 0) {
    const definition = definitionOf(row);
    const metadata = definition ? searchableMetadata(definition) : undefined;
    if (!pairs.every(([key, value]) => metadata !== undefined && Object.hasOwn(metadata, key) && indexedValue(metadata[key]) === value)) return false;
  }
  return true;
}

/**
 * The open questions and the agents of a live workflow's recent delegations. A `stopping` workflow's step questions are
 * closed (the journal refuses their answers, stepStopped.lua): only its compensations' count, as in GET /v1/questions.
 */
async function liveDelegations(journal: Journal, id: string, stopping: boolean): Promise<{ questions: OpenQuestionSummary[]; agents: string[] }> {
  const delegationIds = await journal.redis.lrange(journal.delegationListKey(id), -RECENT_DELEGATIONS, -1);
  const rows = await Promise.all(delegationIds.map((delegationId) => journal.redis.hmget(journal.keys.delegation(id, delegationId), ...OPEN_QUESTION_FIELDS, 'agentCardUrl', 'kind')));
  const questions: OpenQuestionSummary[] = [];
  const agents: string[] = [];
  rows.forEach((row, index) => {
    const question = openQuestionOf({ workflowId: id, delegationId: delegationIds[index]! }, row.slice(0, OPEN_QUESTION_FIELDS.length));
    if (question && (!stopping || row[OPEN_QUESTION_FIELDS.length + 1] === 'compensation')) questions.push(question);
    const agent = row[OPEN_QUESTION_FIELDS.length];
    if (agent) agents.push(agent);
  });
  return { questions, agents };
}

/** The summary of a candidate whose row matched, or undefined when what its delegations show does not. */
async function summaryIfMatching(journal: Journal, id: string, row: CandidateRow, filter: WorkflowFilter): Promise<WorkflowSummary | undefined> {
  const { questions, agents } = row.live && !FINISHED.has(row.state) ? await liveDelegations(journal, id, row.stopping) : { questions: [], agents: [] };
  const waitingFor = row.state === 'NEEDS_ATTENTION' ? 'NEEDS_ATTENTION' : questions[0]?.state;
  if ((filter.state === 'INPUT_REQUIRED' || filter.state === 'AUTH_REQUIRED') && !questions.some((question) => question.state === filter.state)) return undefined;
  if (filter.waiting && waitingFor === undefined) return undefined;
  if (filter.agent !== undefined) {
    const wanted = agentForm(filter.agent);
    const fixed = (definitionOf(row)?.steps ?? []).flatMap((step) => ['agent' in step ? step.agent : undefined, step.compensation && 'agent' in step.compensation ? step.compensation.agent : undefined]);
    if (![...fixed, ...agents].some((agent) => agent !== undefined && agentForm(agent) === wanted)) return undefined;
  }
  return {
    workflowId: id,
    state: row.state,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
    openQuestions: questions.length,
    ...(waitingFor ? { waitingFor } : {}),
    ...(row.attention ? { attention: parseAttention(row.attention) } : {}),
  };
}

/**
 * Summaries of one set of workflow ids, in that order (missing or expired ones are left out). A workflow whose
 * record does not parse is left out of `summaries` and named in `corrupt` (reported once): one bad record never
 * fails a listing.
 */
export async function workflowSummaries(journal: Journal, ids: readonly string[]): Promise<{ summaries: WorkflowSummary[]; corrupt: CorruptListing[] }> {
  const rows = await Promise.all(ids.map((id) => candidateRow(journal, id)));
  const summaries: WorkflowSummary[] = [];
  const corrupt: CorruptListing[] = [];
  const found = await Promise.all(
    rows.map((row, index) => {
      if (row instanceof CorruptRecordError) return void corrupt.push({ workflowId: ids[index]!, key: row.key, code: row.code });
      return row ? summaryIfMatching(journal, ids[index]!, row, {}) : undefined;
    }),
  );
  for (const summary of found) if (summary) summaries.push(summary);
  return { summaries, corrupt };
}

/** A batch of candidates: ids in the driver's order, each with the position a cursor names. */
type Batch = { id: string; sortKey: number }[];

/** The next batch of a lexicographic driver after `afterId`. */
async function lexBatch(journal: Journal, driver: LexDriver, afterId: string | undefined, count: number): Promise<Batch> {
  const { min, max } = driver.range(afterId);
  const members = await journal.redis.zrangebylex(journal.keys.search(), min, max, 'LIMIT', 0, count);
  return members.map((member) => ({ id: driver.workflowIdOf(member), sortKey: 0 }));
}

const scored = (flat: string[]): Batch => {
  const batch: Batch = [];
  for (let index = 0; index < flat.length; index += 2) batch.push({ id: flat[index]!, sortKey: Number(flat[index + 1]) });
  return batch;
};

/**
 * The next batch of a scored index `key` (the updated index, or a tenant's created index; newest first, ties by id descending as Redis orders them) after the position
 * (`sortKey`, `id`). Where that workflow still has that score, by its rank; else (it moved or went) the rest of its
 * tie group by comparison, then what is older.
 */
async function scoredBatch(journal: Journal, key: string, after: { sortKey: number; id: string } | undefined, count: number): Promise<Batch> {
  if (!after) return scored(await journal.redis.zrevrangebyscore(key, '+inf', '-inf', 'WITHSCORES', 'LIMIT', 0, count));
  if (Number(await journal.redis.zscore(key, after.id)) === after.sortKey) {
    const rank = await journal.redis.zrevrank(key, after.id);
    if (rank !== null) return scored(await journal.redis.zrevrange(key, rank + 1, rank + count, 'WITHSCORES'));
  }
  const ties = scored(await journal.redis.zrevrangebyscore(key, after.sortKey, after.sortKey, 'WITHSCORES', 'LIMIT', 0, SEARCH_CANDIDATE_LIMIT)).filter((entry) => entry.id < after.id);
  const older = ties.length >= count ? [] : scored(await journal.redis.zrevrangebyscore(key, `(${after.sortKey}`, '-inf', 'WITHSCORES', 'LIMIT', 0, count - ties.length));
  return [...ties.slice(0, count), ...older];
}

/** How a search reads its candidates: the next batch after a position, and the driver's number a cursor carries. */
interface Driver {
  next: (after: { sortKey: number; id: string } | undefined, count: number) => Promise<Batch>;
  /** The position's sort key in a cursor: the updated index's score, or a lexicographic driver's number. */
  sortKeyOf: (entry: { sortKey: number; id: string }) => number;
}

/**
 * The index that drives a search of `filter` (see the module comment): of its metadata pairs (key order) and id
 * prefix, the one with the fewest entries (one ZLEXCOUNT each, first page only: a cursor names the one chosen, so
 * every page reads the same), else the updated index.
 */
async function driverOf(journal: Journal, filter: WorkflowFilter, cursor: { sortKey: number } | undefined): Promise<Driver> {
  const pairs = Object.entries(filter.metadata ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const lex: LexDriver[] = [...pairs.map(([key, value]) => metadataDriver(`${key}=${value}`)), ...(filter.idPrefix !== undefined ? [idPrefixDriver(filter.idPrefix)] : [])];
  if (lex.length === 0) {
    // A tenant other than default reads its own index (by creation time), never the other tenants' workflows.
    const key = filter.tenant !== undefined && filter.tenant !== DEFAULT_TENANT ? journal.keys.tenantCreated(filter.tenant) : journal.keys.updated();
    return { next: (after, count) => scoredBatch(journal, key, after, count), sortKeyOf: (entry) => entry.sortKey };
  }
  let chosen = cursor && cursor.sortKey < lex.length ? cursor.sortKey : 0;
  if (!cursor && lex.length > 1) {
    const sizes = await Promise.all(lex.map((driver) => journal.redis.zlexcount(journal.keys.search(), driver.range().min, driver.range().max)));
    chosen = sizes.indexOf(Math.min(...sizes));
  }
  const driver = lex[chosen]!;
  return { next: (after, count) => lexBatch(journal, driver, after?.id, count), sortKeyOf: () => chosen };
}

/**
 * Workflow summaries matching `filter`, in the driving index's order (the updated index: newest change first; a
 * metadata pair or an id prefix: by id), `limit` (1..500) at most, paged by an opaque keyset cursor. Reads at most
 * SEARCH_CANDIDATE_LIMIT candidates per call. A record that does not parse is named in `corrupt`; entries of workflows
 * whose record expired are removed from the index on the way (one server; on a Cluster `pruneSearchIndex` does it).
 */
export async function searchWorkflows(journal: Journal, filter: WorkflowFilter, options: { cursor?: string; limit: number }): Promise<Page<WorkflowSummary> & { corrupt: CorruptListing[] }> {
  let after = options.cursor ? decodeListingCursor(options.cursor) : undefined;
  const driver = await driverOf(journal, filter, after);
  const nextBatch = driver.next;
  const items: WorkflowSummary[] = [];
  const corrupt: CorruptListing[] = [];
  const gone: string[] = [];
  let read = 0;
  while (items.length < options.limit && read < SEARCH_CANDIDATE_LIMIT) {
    const batch = await nextBatch(after, Math.min(BATCH, SEARCH_CANDIDATE_LIMIT - read, Math.max(2 * (options.limit - items.length), 20)));
    if (batch.length === 0) {
      after = undefined;
      break;
    }
    // Another tenant's workflow is not read at all: its id says whose it is.
    const rows = await Promise.all(batch.map(({ id }) => (filter.tenant === undefined || tenantOfWorkflowId(id) === filter.tenant ? candidateRow(journal, id) : OTHER_TENANT)));
    const matched = await Promise.all(
      rows.map((row, index) => {
        const { id } = batch[index]!;
        if (row instanceof CorruptRecordError) return void corrupt.push({ workflowId: id, key: row.key, code: row.code });
        if (row === OTHER_TENANT) return undefined;
        if (!row) return void gone.push(id);
        return rowMatches(id, row, filter) ? summaryIfMatching(journal, id, row, filter) : undefined;
      }),
    );
    for (let index = 0; index < batch.length; index++) {
      read++;
      after = batch[index];
      const summary = matched[index];
      if (summary) items.push(summary);
      if (items.length >= options.limit) break;
    }
  }
  if (gone.length > 0 && !journal.redis.isCluster) await removeFromSearchIndex(journal.redis, { search: journal.keys.search(), updated: journal.keys.updated(), tenantCreated: journal.keys.tenantCreated }, gone);
  const more = after !== undefined && (await nextBatch(after, 1)).length > 0;
  return { items, ...(more && after ? { cursor: encodeListingCursor(driver.sortKeyOf(after), after.id) } : {}), corrupt };
}

/**
 * Removes the search index entries of workflows whose record expired: the updated index's entries older than the
 * retention (`retentionMs`, plus a minute for a creation in flight on a Cluster), oldest first, at most `limit`,
 * each checked (one EXISTS) before it goes. Nothing with retention 0 (records are kept). Resolves with how many went.
 */
export async function pruneSearchIndex(journal: Journal, limit = 500): Promise<number> {
  if (journal.retentionMs <= 0) return 0;
  const before = journal.now() - journal.retentionMs - 60_000;
  const ids = await journal.redis.zrangebyscore(journal.keys.updated(), '-inf', before, 'LIMIT', 0, limit);
  const exists = await Promise.all(ids.map((id) => journal.redis.exists(journal.keys.workflow(id), journal.keys.finished(id))));
  const gone = ids.filter((_, index) => exists[index] === 0);
  await removeFromSearchIndex(journal.redis, { search: journal.keys.search(), updated: journal.keys.updated(), tenantCreated: journal.keys.tenantCreated }, gone);
  return gone.length;
}

/**
 * Workflow summaries, newest (the updated index: a workflow's last workflow-level change) first, paged (limit
 * 1..500): `searchWorkflows` with `filter` (search.ts), which bounds what one call reads.
 */
export async function listWorkflowSummaries(
  journal: Journal,
  filter: WorkflowFilter,
  options: { cursor?: string; limit: number },
): Promise<Page<WorkflowSummary> & { corrupt: CorruptListing[] }> {
  return searchWorkflows(journal, filter, options);
}
