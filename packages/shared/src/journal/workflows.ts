/**
 * Workflow rows: creating a workflow with its first intent, journaling later intents, reading the
 * typed row, and compare-and-set updates (createWorkflow-11.lua, createIntent-4.lua, updateWorkflow-4.lua).
 */
import { unlessRefused } from './errors.ts';
import { arrayReply, defineScript, integerReply, isRefused, outcomeDecoder, refusal, ScriptReplyError, type Refused } from './scripts.ts';
import { isFinished, type JournalState } from './states.ts';
import { encodeWorkflowPatch, parseWorkflowHash, type WorkflowPatch, type WorkflowRecord } from './workflow-record.ts';
import { compactedRecordText, type StoredRow } from './compacted-record-text.ts';
import { rememberStoredRow, storedRowOf } from './stored-rows.ts';
import { parseDefinitionText, type WorkflowDefinition } from '../workflow.ts';
import { JournalIndex } from './unfinished-index.ts';
import { skipCorrupt } from './corrupt.ts';
import type { DelegationRef } from './core.ts';
import type { DelegationRecord } from './record.ts';
import { indexMember } from './keys.ts';
import { placeSendsApart } from './send-order.ts';
import { indexedPairs, searchMembers } from './search-index.ts';
import { historyArgument, type HistoryEntryInput } from './history.ts';
import { DEFAULT_TENANT, tenantOfWorkflowId } from './tenant.ts';
import { INTENT_ROW_LAYOUT, rowArguments, WORKFLOW_ROW_LAYOUT } from './create-layout.ts';
import { compactedWorkflowEnd, parseCompactedWorkflow, parseCompactedWorkflowRow, type CompactedWorkflow } from './compacted-record.ts';

/** Prefixes of a compacted record read for its workflow row, in bytes (then the whole record). */
const ROW_READS_BYTES = [4_096, 65_536];

/**
 * createWorkflow-11.lua: the workflow's fields, its first delegation's, the index entries it writes (flat ARGV), the
 * quota it checks and the places it takes for the workflow's first sends (on one server).
 */
const createWorkflowScript = defineScript({
  name: 'createWorkflow',
  keys: ['workflow', 'firstDelegation', 'delegationList', 'unfinished', 'search', 'updated', 'quotaInFlight', 'quotaStored', 'tenantCreated', 'sendOrderClock', 'sendOrderWeights'],
  encode: (input: {
    workflow: Record<string, string>;
    first?: Record<string, string>;
    unfinished: (string | number)[];
    search: string[];
    quota?: QuotaArgument;
    tenantCreatedAt?: number;
    places?: SendPlacesWanted & { tenant: string };
  }) => {
    // A field without a value is left out (as JSON.stringify left it out before).
    const pairs = (fields: Record<string, string>) => Object.entries(fields).filter(([, value]) => value !== undefined);
    // Each row in its fixed layout when its names begin with it (create-layout.ts): the names are then the script's.
    const workflow = rowArguments(WORKFLOW_ROW_LAYOUT, pairs(input.workflow));
    const first = input.first ? rowArguments(INTENT_ROW_LAYOUT, pairs(input.first)) : { count: 0, values: [] };
    return [
      workflow.count,
      first.count,
      input.unfinished.length / 2,
      input.search.length,
      input.quota ? JSON.stringify(input.quota) : '',
      input.tenantCreatedAt ?? '',
      input.workflow.workflowId ?? '',
      input.workflow.updatedAt ?? '',
      input.first?.delegationId ?? '',
      input.places?.count ?? 0,
      input.places?.windowMs ?? '',
      input.places?.tenant ?? '',
      ...workflow.values,
      ...first.values,
      ...input.unfinished,
      ...input.search.flatMap((member) => [0, member]),
    ];
  },
  decode: (reply, script) => {
    if (!Array.isArray(reply)) return createdDecoder(reply, script);
    const [code, ...places] = reply;
    if (code !== 1) throw new ScriptReplyError(script, reply);
    return { places: places.map((place) => integerReply(place, script)) };
  },
});
const createdDecoder = outcomeDecoder({ 1: 'created', 0: 'exists' });

/**
 * Places wanted for a new workflow's first message sends among its tenant's (send-order.ts): `count` sends (0: none),
 * on the send order's clock whose place lasts `windowMs` of Redis time (`SendOrder.windowMs`).
 */
export interface SendPlacesWanted {
  count: number;
  windowMs: number;
}

/** `createWorkflow`'s arguments (its doc comment says what each is). */
type CreateWorkflowArguments = [
  workflowId: string,
  fields: Record<string, string>,
  first?: Record<string, string>,
  workflowCheckAtMs?: number,
  metadata?: Readonly<Record<string, unknown>>,
  quota?: TenantQuota,
];

/** createWorkflow-11.lua's ARGV[5]: the tenant's quota, how many full-set members it checks, and the workflow key around an id. */
interface QuotaArgument extends TenantQuota {
  checked: number;
  at: number;
  workflowKey: [string, string];
}

/**
 * A tenant's quota: unfinished workflows at once (`maxInFlight`) and workflows kept, finished or not, until retention
 * removes them (`maxStored`). Counted from the first creation under a quota (createWorkflow-11.lua).
 */
export interface TenantQuota {
  maxInFlight: number;
  maxStored: number;
}

/** Members of a full quota set a creation checks for ones that left (oldest first; those still there go to the back): bounds a full tenant's creation. */
export const QUOTA_CHECKED_MEMBERS = 100;

/**
 * How long after a Cluster adds a new intent's index entry (before the script that writes its row) the reconciler
 * first looks at it, ms: longer than the script can take, so that no sweep finds the entry without its row.
 */
export const CLUSTER_INTENT_GRACE_MS = 30_000;

/** createIntent-4.lua: one more delegation of a workflow, fenced on the workflow version, with its index entry (one server). */
const createIntentScript = defineScript({
  name: 'createIntent',
  keys: ['workflow', 'delegation', 'delegationList', 'index'],
  encode: (input: {
    delegation: Record<string, string>;
    expectedWorkflowVersion?: number;
    workflowFields: Record<string, string>;
    history?: HistoryEntryInput;
    indexEntry?: { member: string; atMs: number };
  }) => [
    JSON.stringify(input.delegation),
    input.expectedWorkflowVersion ?? '',
    JSON.stringify(input.workflowFields),
    historyArgument(input.history),
    input.indexEntry?.member ?? '',
    input.indexEntry?.atMs ?? '',
  ],
  decode: outcomeDecoder({ 1: 'created', 0: 'exists' }),
});

/**
 * updateWorkflow-4.lua's input (see its header); `removeFromIndex`: index members dropped when it finishes;
 * `recordText`: the compacted record's text as the caller built it (`prebuiltRecordText`), or none.
 */
interface UpdateWorkflowInput {
  expectedVersion?: number;
  fields: Record<string, string>;
  nowMs: number;
  retentionMs: number;
  compact: boolean;
  publishRecord: boolean;
  history?: HistoryEntryInput;
  removeFromIndex: readonly string[];
  recordText: readonly string[];
}

/** updateWorkflow-4.lua: the new version, how many delegation entries it removed, and whether the caller's record text was kept. */
const updateWorkflowScript = defineScript({
  name: 'updateWorkflow',
  keys: ['workflow', 'delegationList', 'index', 'updated'],
  encode: (input: UpdateWorkflowInput) => [
    input.expectedVersion ?? '',
    JSON.stringify(input.fields),
    input.nowMs,
    input.retentionMs,
    input.compact ? '1' : '',
    input.publishRecord ? '1' : '',
    historyArgument(input.history),
    input.removeFromIndex.length,
    ...input.removeFromIndex,
    ...input.recordText,
  ],
  decode: (reply, script) => {
    if (Array.isArray(reply)) {
      const [version, removed, kept] = arrayReply(reply, script);
      return { version: integerReply(version, script), removedFromIndex: integerReply(removed, script), recordTextKept: integerReply(kept, script) === 1 };
    }
    const version = integerReply(reply, script);
    return version < 0 ? refusal(version, script) : { version, removedFromIndex: 0, recordTextKept: false };
  },
});

/** The rows a finishing decision read (typed, each remembering its stored row: stored-rows.ts), its delegations in list order. */
export interface FinishingRows {
  workflow: WorkflowRecord;
  delegations: readonly DelegationRecord[];
}

/**
 * updateWorkflow-4.lua's record text for a finishing change built from `rows` (compacted-record-text.ts), or []
 * when a row was not read whole, the workflow row is not at `expectedVersion`, or the text cannot be built here.
 */
function prebuiltRecordText(workflowId: string, fields: Record<string, string>, expectedVersion: number | undefined, nowMs: number, rows: FinishingRows | undefined): string[] {
  if (!rows || expectedVersion === undefined) return [];
  const workflowRow = storedRowOf(rows.workflow);
  if (!workflowRow || workflowRow.version !== String(expectedVersion) || workflowRow.workflowId !== workflowId) return [];
  const delegations = [];
  for (const record of rows.delegations) {
    const row = storedRowOf(record);
    if (!row) return [];
    delegations.push({ id: record.delegationId, row });
  }
  return recordTextArguments(workflowId, workflowRow, fields, nowMs, delegations);
}

/**
 * The record text's arguments (updateWorkflow-4.lua ARGV[9+n..], finishStep-5.lua ARGV[10..]) for the workflow row
 * `workflowRow` (at the version the change compares with) changed by `fields` at `nowMs`, and its delegations' rows
 * as the script will find them (list order); [] when the text cannot be built here.
 */
export function recordTextArguments(workflowId: string, workflowRow: StoredRow, fields: Record<string, string>, nowMs: number, delegations: { id: string; row: StoredRow }[]): string[] {
  // The row as the script leaves it: updatedAt, the change's fields, the version (in that order, as it writes them).
  const changed = { ...workflowRow, updatedAt: String(nowMs), ...fields, version: String(Number(workflowRow.version) + 1) };
  const built = compactedRecordText(workflowId, changed, delegations);
  if (!built) return [];
  return [
    built.workflow,
    workflowRow.historyDropped ?? '',
    ...built.delegations.flatMap(({ id, row, text }) => [id, row.version ?? '', row.fence ?? '', row.pushConfigState ?? '', row.pushConfigId ?? '', row.pushToken ?? '', text]),
  ];
}

/** Journal methods over workflow rows. */
/** A live workflow's versions (`Journal.workflowVersions`); undefined for a row that is not there (missing or compacted). */
export interface WorkflowVersions {
  /** The workflow row's `version`. */
  workflow: number | undefined;
  /** How many delegation ids its list holds (0 when the list is gone). */
  listLength: number;
  /** Each named delegation row's `version`, in the order asked. */
  delegations: (number | undefined)[];
}

export class JournalWorkflows extends JournalIndex {
  /**
   * Creates a workflow and (optionally) its first delegation's intent, atomically, with its index entries: the first
   * delegation (and, with `workflowCheckAtMs`, the workflow's own entry `*`, due then) in the unfinished index, and
   * the workflow in the search index with its `metadata` pairs (search-index.ts, bounded by SEARCH_METADATA_LIMITS).
   * On one server the script writes them with the workflow; on a Cluster (the indexes live in other slots) they are
   * written and acknowledged just before it (a crash in between leaves entries the sweep and searches drop, never a
   * workflow nobody looks at again).
   * The workflow and its first delegation record their tenant (`tenantOfWorkflowId`). With `quota`, the tenant's
   * quota is checked in the same script (one server; on a Cluster the quota sets live in other slots and `quota` is
   * ignored here: the producer and the API refuse quotas on a Cluster at start-up): an existing workflow is still answered as existing, a new one over quota writes nothing.
   * @returns true if created, false if the workflow already existed (idempotent: nothing written)
   * @throws JournalError QUOTA_IN_FLIGHT or QUOTA_STORED (nothing written)
   */
  async createWorkflow(...args: CreateWorkflowArguments): Promise<boolean> {
    return (await this.createWorkflowPlaced(...args)).created;
  }

  /**
   * `createWorkflow`, also taking the places of the workflow's first `places.count` message sends among its tenant's
   * (send-order.ts, the tenant `tenantOfWorkflowId`). On one server the create script takes them, and only when it
   * creates the workflow (`places` [] otherwise: an existing workflow or a refused one counts no send). On a Cluster
   * the send order lives in another slot: one sendOrder-2.lua call per send leaves with the create (same event-loop
   * turn, so the same socket write), counted whether or not the workflow is created.
   * @returns whether it was created, and the sends' places in order (one per send when created)
   * @throws JournalError QUOTA_IN_FLIGHT or QUOTA_STORED (nothing written); what Redis throws
   */
  async createWorkflowPlaced(...args: [...CreateWorkflowArguments, places?: SendPlacesWanted]): Promise<{ created: boolean; places: number[] }> {
    const [workflowId, fields, first, workflowCheckAtMs, metadata, quota, places] = args;
    const tenant = tenantOfWorkflowId(workflowId);
    const unfinished: (string | number)[] = [];
    if (workflowCheckAtMs !== undefined) unfinished.push(workflowCheckAtMs, indexMember(workflowId, '*'));
    if (first) unfinished.push(this.now(), indexMember(workflowId, first.delegationId!));
    const search = searchMembers(workflowId, indexedPairs(metadata));
    const updatedAt = Number(fields.updatedAt ?? this.now());
    const workflow = { ...fields, workflowId, tenant, version: '1', updatedAt: String(updatedAt) };
    const firstFields = first && { ...first, tenant };
    const createdAt = Number(fields.createdAt ?? updatedAt);
    // A tenant other than default lists its workflows from its own index (search-index.ts).
    const ownIndex = tenant !== DEFAULT_TENANT;
    const placesApart = this.redis.isCluster && places ? placeSendsApart(this.redis, this.keys, tenant, places) : [];
    if (this.redis.isCluster) {
      await Promise.all([
        unfinished.length > 0 ? this.redis.zadd(this.keys.unfinished(), ...unfinished) : undefined,
        this.redis.zadd(this.keys.search(), ...search.flatMap((member) => [0, member])),
        this.redis.zadd(this.keys.updated(), updatedAt, workflowId),
        ownIndex ? this.redis.zadd(this.keys.tenantCreated(tenant), createdAt, workflowId) : undefined,
      ]);
    }
    const workflowKey = this.keys.workflow(workflowId);
    const here = !this.redis.isCluster;
    const quotaKeys = here && quota ? this.keys.tenantQuota(tenant) : undefined;
    const [head, tail] = this.keys.workflow('\n').split('\n') as [string, string];
    const result = await this.call(
      createWorkflowScript,
      {
        workflow: workflowKey,
        firstDelegation: first ? this.keys.delegation(workflowId, first.delegationId!) : workflowKey,
        delegationList: this.delegationListKey(workflowId),
        unfinished: here && unfinished.length > 0 ? this.keys.unfinished() : workflowKey,
        search: here ? this.keys.search() : workflowKey,
        updated: here ? this.keys.updated() : workflowKey,
        quotaInFlight: quotaKeys?.inFlight ?? workflowKey,
        quotaStored: quotaKeys?.stored ?? workflowKey,
        tenantCreated: here && ownIndex ? this.keys.tenantCreated(tenant) : workflowKey,
        sendOrderClock: here && places ? this.keys.sendOrder().clock : workflowKey,
        sendOrderWeights: here && places ? this.keys.sendOrder().weights : workflowKey,
      },
      {
        workflow,
        first: firstFields,
        unfinished: here ? unfinished : [],
        search: here ? search : [],
        quota: quotaKeys && quota ? { ...quota, checked: QUOTA_CHECKED_MEMBERS, at: createdAt, workflowKey: [head, tail] } : undefined,
        ...(here && ownIndex ? { tenantCreatedAt: createdAt } : {}),
        ...(here && places ? { places: { ...places, tenant } } : {}),
      },
    );
    const outcome = unlessRefused(result, { workflowId, delegationId: '' }, 'createWorkflow');
    if (outcome === 'exists') return { created: false, places: [] };
    if (outcome !== 'created') return { created: true, places: outcome.places };
    return { created: true, places: await Promise.all(placesApart) };
  }

  /**
   * Journals one more delegation of an existing workflow (next step, re-delegation, compensation); `history`: its
   * history entry (a re-delegation with its reasons, a compensation), appended when it is created.
   * @returns true if created, false if that delegation already existed.
   * @throws JournalError WORKFLOW_MISSING or VERSION_CONFLICT (another worker decided first).
   */
  async createIntent(
    workflowId: string,
    delegation: Record<string, string>,
    options: { expectedWorkflowVersion?: number; workflowFields?: Record<string, string>; history?: HistoryEntryInput } = {},
  ): Promise<boolean> {
    const ref = { workflowId, delegationId: delegation.delegationId! };
    const workflowKey = this.keys.workflow(workflowId);
    // One server: the entry is added in the script, with the row. A Cluster's index is in another slot: added before
    // the script (a crash after it would leave a row nobody reconciles), see `addIntentEntryBefore`.
    const here = !this.redis.isCluster;
    const addedBefore = here ? false : await this.addIntentEntryBefore(ref);
    const result = await this.call(
      createIntentScript,
      { workflow: workflowKey, delegation: this.keys.delegation(workflowId, ref.delegationId), delegationList: this.delegationListKey(workflowId), index: here ? this.keys.unfinished() : workflowKey },
      {
        delegation,
        expectedWorkflowVersion: options.expectedWorkflowVersion,
        workflowFields: options.workflowFields ?? {},
        history: options.history,
        ...(here ? { indexEntry: { member: indexMember(workflowId, ref.delegationId), atMs: this.now() } } : {}),
      },
    );
    if (addedBefore && result !== 'created') await this.dropIntentEntryBefore(ref, result);
    return unlessRefused(result, ref, 'createIntent') === 'created';
  }

  /**
   * A Cluster's entry for a new intent, added before the script that writes its row (the index is in another slot):
   * only when the delegation has none (ZADD NX: an existing entry keeps its time), due `CLUSTER_INTENT_GRACE_MS` from
   * now, so that no sweep reconciles it while the row is still being written (a reconcile that finds no row drops the
   * entry, and nothing would add it again).
   * @returns true when this call added the entry
   */
  private async addIntentEntryBefore(ref: DelegationRef): Promise<boolean> {
    const member = indexMember(ref.workflowId, ref.delegationId);
    return (await this.redis.zadd(this.keys.unfinished(), 'NX', this.now() + CLUSTER_INTENT_GRACE_MS, member)) === 1;
  }

  /**
   * Takes back the entry `addIntentEntryBefore` added when the script created nothing and no one can need it: the
   * workflow is gone (DELEGATION_MISSING: no intent of it can be created), or the delegation exists finished (an
   * unfinished row always has an entry, so one missing was dropped by its settle; putting it back would settle it
   * again). Any other outcome keeps it: a VERSION_CONFLICT's intent may be created by another worker, which found our
   * entry and added none, and an unfinished row without an entry gets one back. A failed read keeps it too: the
   * reconcile of an entry whose row is finished or gone settles nothing new.
   */
  private async dropIntentEntryBefore(ref: DelegationRef, result: 'created' | 'exists' | Refused): Promise<void> {
    const member = indexMember(ref.workflowId, ref.delegationId);
    const gone = isRefused(result) && result.refused === 'DELEGATION_MISSING';
    const finished = result === 'exists' && (await this.delegationRowFinished(ref).catch(() => false));
    if (gone || finished) await this.redis.zrem(this.keys.unfinished(), member);
  }

  /** True when a delegation's live row exists in a finished state (one HGET of its `state`). */
  private async delegationRowFinished(ref: DelegationRef): Promise<boolean> {
    const state = await this.redis.hget(this.keys.delegation(ref.workflowId, ref.delegationId), 'state');
    return state !== null && isFinished(state as JournalState);
  }

  /**
   * Changes workflow fields, compare-and-set on the version the caller decided from. `history`: the change's history
   * entry (a cancel, a resolution, with who asked; `at` is set to the write's time), appended in the same script.
   * @returns the new workflow version.
   * @throws JournalError VERSION_CONFLICT, WRONG_STATE (workflow finished), DELEGATION_MISSING (no workflow)
   */
  async updateWorkflow(workflowId: string, patch: WorkflowPatch, expectedVersion?: number, history?: HistoryEntryInput): Promise<number> {
    return unlessRefused(await this.callUpdateWorkflow(workflowId, patch, expectedVersion, [], history), { workflowId, delegationId: '' }, 'updateWorkflow').version;
  }

  /**
   * True when `finishWorkflow` may drop index entries inside its script: one server (the index is another
   * Cluster slot) and no replicas to wait for (with journal durability the settle waits for the replicas
   * before it drops an entry: `awaitReplicas`).
   */
  get removesIndexWithFinish(): boolean {
    return !this.redis.isCluster && this.durability.replicas <= 0;
  }

  /**
   * `updateWorkflow` to a finished state (`patch.state`) that drops `entries` from the unfinished index in the
   * same script (updateWorkflow-4.lua ARGV[8..]): the settle of a workflow's last delegation, one round trip
   * instead of a ZREM after it. Only where `removesIndexWithFinish`; nothing is dropped when the update is refused.
   * @returns the new version, and whether any delegation's entry of `entries` was in the index (the settle that
   *   removed it observes its duration); a workflow's `*` entry does not count; whether the record written is the
   *   text built from `rows`
   * `rows`: the workflow row and its delegations as the decision read them; when the journal read each whole, the
   * compacted record's text is built here from them and the script keeps it if they are still current
   * (`recordTextKept`), else compacts as without them.
   * @throws JournalError VERSION_CONFLICT, WRONG_STATE, WORKFLOW_MISSING; Error when not `removesIndexWithFinish`
   */
  async finishWorkflow(
    workflowId: string,
    patch: WorkflowPatch,
    expectedVersion: number | undefined,
    entries: readonly DelegationRef[],
    rows?: FinishingRows,
  ): Promise<{ version: number; removedFromIndex: boolean; recordTextKept: boolean }> {
    if (!this.removesIndexWithFinish) throw new Error('finishWorkflow: the index entries cannot be dropped in the script here (a Cluster, or journal durability)');
    const result = await this.callUpdateWorkflow(workflowId, patch, expectedVersion, entries, undefined, rows);
    const { version, removedFromIndex, recordTextKept } = unlessRefused(result, { workflowId, delegationId: '' }, 'updateWorkflow');
    return { version, removedFromIndex: removedFromIndex > 0, recordTextKept };
  }

  /** updateWorkflow-4.lua; on a Cluster the updated index (another slot) is moved after the script, when it wrote. */
  private async callUpdateWorkflow(
    workflowId: string,
    patch: WorkflowPatch,
    expectedVersion: number | undefined,
    entries: readonly DelegationRef[],
    history?: HistoryEntryInput,
    rows?: FinishingRows,
  ) {
    const workflowKey = this.keys.workflow(workflowId);
    const nowMs = this.now();
    const fields = encodeWorkflowPatch(patch);
    const result = await this.call(
      updateWorkflowScript,
      {
        workflow: workflowKey,
        delegationList: this.delegationListKey(workflowId),
        index: entries.length > 0 ? this.keys.unfinished() : workflowKey,
        updated: this.redis.isCluster ? workflowKey : this.keys.updated(),
      },
      {
        expectedVersion,
        fields,
        nowMs,
        retentionMs: this.retentionMs,
        // Compact when a state is set (the script's own layout, compacted-record.ts).
        compact: patch.state !== undefined,
        // The compacted record on the change channel on one server only: a Cluster's PUBLISH goes to every node.
        publishRecord: !this.redis.isCluster,
        history: history ? { ...history, at: nowMs } : undefined,
        removeFromIndex: entries.map((entry) => indexMember(entry.workflowId, entry.delegationId)),
        // The caller's record text: with no history entry (its text is not in the rows) and a state that compacts.
        recordText: history || patch.state === undefined ? [] : prebuiltRecordText(workflowId, fields, expectedVersion, nowMs, rows),
      },
    );
    if (this.redis.isCluster && !isRefused(result)) await this.redis.zadd(this.keys.updated(), 'GT', nowMs, workflowId);
    return result;
  }

  /**
   * Reads the raw workflow hash, or undefined.
   * @deprecated read `getWorkflow` (typed); kept for callers on other branches.
   */
  async getWorkflowHash(workflowId: string): Promise<Record<string, string> | undefined> {
    const hash = await this.redis.hgetall(this.keys.workflow(workflowId));
    return hash.workflowId ? hash : this.finishedWorkflowRow(workflowId);
  }

  /**
   * A compacted workflow's row alone (a hash, as `finishedWorkflow(…).workflow`), read from the start of its
   * record (GETRANGE: the workflow object comes first, a few KB) instead of the whole record (up to 1 MiB).
   */
  async finishedWorkflowRow(workflowId: string): Promise<Record<string, string> | undefined> {
    for (const bytes of ROW_READS_BYTES) {
      const prefix = await this.redis.getrange(this.keys.finished(workflowId), 0, bytes - 1);
      if (!prefix) return undefined;
      const end = compactedWorkflowEnd(prefix);
      if (end !== undefined) return this.parseAt('workflow', this.keys.finished(workflowId), () => parseCompactedWorkflowRow(workflowId, prefix, end));
    }
    return (await this.finishedWorkflow(workflowId))?.workflow;
  }

  /**
   * Reads a finished workflow's compacted record (compacted-record.ts; one GET), or undefined when it
   * is not compacted (still live, or gone). Throws CorruptRecordError on a corrupt record.
   */
  async finishedWorkflow(workflowId: string): Promise<CompactedWorkflow | undefined> {
    const text = await this.redis.get(this.keys.finished(workflowId));
    return text ? this.parseCompacted(workflowId, text) : undefined;
  }

  /** `parseCompactedWorkflow`, a failure reported and thrown as CorruptRecordError naming the record's key. */
  protected parseCompacted(workflowId: string, text: string): CompactedWorkflow {
    return this.parseAt('workflow', this.keys.finished(workflowId), () => parseCompactedWorkflow(workflowId, text));
  }

  /** Whether the workflow finished and was compacted (one EXISTS): its delegations take no more transitions. */
  async isCompacted(workflowId: string): Promise<boolean> {
    return (await this.redis.exists(this.keys.finished(workflowId))) === 1;
  }

  /** Reads a workflow row (live or compacted), typed, or undefined if missing (or expired). Throws CorruptRecordError on a corrupt row. */
  async getWorkflow(workflowId: string): Promise<WorkflowRecord | undefined> {
    const live = await this.redis.hgetall(this.keys.workflow(workflowId));
    if (live.workflowId) return rememberStoredRow(this.parseWorkflowRow(workflowId, live), live);
    const finished = await this.finishedWorkflowRow(workflowId);
    return finished ? this.parseWorkflowRow(workflowId, finished) : undefined;
  }

  /** `parseWorkflowHash`, a failure reported and thrown as CorruptRecordError naming the workflow's key. */
  protected parseWorkflowRow(workflowId: string, hash: Record<string, string>): WorkflowRecord {
    return this.parseAt('workflow', this.keys.workflow(workflowId), () => parseWorkflowHash(hash));
  }

  /** Reads only a workflow's definition (one HGET; one GET more once finished), or undefined. */
  async getWorkflowDefinition(workflowId: string): Promise<WorkflowDefinition | undefined> {
    const text = (await this.redis.hget(this.keys.workflow(workflowId), 'definition')) ?? (await this.finishedWorkflowRow(workflowId))?.definition;
    return text ? this.parseAt('workflow', this.keys.workflow(workflowId), () => parseDefinitionText(text)) : undefined;
  }

  /**
   * Reads one field of many workflows' state (listing by state), in order; undefined for missing ones and for
   * compacted records that do not parse (reported to `onCorruptRecord`, never a failed listing).
   */
  async workflowStates(workflowIds: string[]): Promise<(string | undefined)[]> {
    return Promise.all(
      workflowIds.map(async (workflowId) => (await this.redis.hget(this.keys.workflow(workflowId), 'state')) ?? (await skipCorrupt(this.finishedWorkflowRow(workflowId)))?.state),
    );
  }

  /** One page of workflow ids in no order (ZSCAN of the updated index, about `count`); `cursor` undefined when done. */
  async listWorkflowIds(cursor: string | undefined, count: number): Promise<{ ids: string[]; cursor?: string }> {
    const [next, flat] = await this.redis.zscan(this.keys.updated(), cursor ?? '0', 'COUNT', count);
    return { ids: flat.filter((_, index) => index % 2 === 0), cursor: next === '0' ? undefined : next };
  }

  /**
   * The versions a workflow's decision was made at, read without its rows (one round trip: HGET of the workflow's
   * `version`, LLEN of its delegation list, HGET of each named delegation's `version`): what the reconciler's check of
   * a running workflow compares with the versions of its last "wait" (`workflow/wait-memory.ts`). Every journal
   * change of a field the decision reads bumps the version of its row (packages/shared/test/decision-versions.test.ts);
   * a missing or compacted row reads as undefined (a live workflow's list length 0 when it is gone).
   */
  async workflowVersions(workflowId: string, delegationIds: readonly string[]): Promise<WorkflowVersions> {
    const version = (text: string | null) => (text === null ? undefined : Number(text));
    const [workflow, listLength, ...delegations] = await Promise.all([
      this.redis.hget(this.keys.workflow(workflowId), 'version'),
      this.redis.llen(this.delegationListKey(workflowId)),
      ...delegationIds.map((delegationId) => this.redis.hget(this.keys.delegation(workflowId, delegationId), 'version')),
    ]);
    return { workflow: version(workflow as string | null), listLength: listLength as number, delegations: (delegations as (string | null)[]).map(version) };
  }

  /** Delegation ids of a workflow, in creation order. */
  async delegationIds(workflowId: string): Promise<string[]> {
    const ids = await this.redis.lrange(this.delegationListKey(workflowId), 0, -1);
    if (ids.length > 0) return ids;
    return (await this.finishedWorkflow(workflowId))?.delegations.map(({ hash }) => hash.delegationId ?? '') ?? [];
  }
}
