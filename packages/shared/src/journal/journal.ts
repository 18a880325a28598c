/**
 * Typed access to the journal. Every state change is one Lua script in
 * `lua/` (named `<verb>-<key count>.lua`, registered under a versioned name so
 * two releases can run side by side during a deploy); nothing here
 * read-modify-writes a row from TypeScript.
 */
import { readFileSync } from 'node:fs';
import type { Redis, Cluster } from 'ioredis';
import type { Artifact, Message } from '../a2a/schema.ts';
import { DEFAULT_A2A_LIMITS, artifactByteSize } from '../a2a/limits.ts';
import { journalKeys, indexMember, parseIndexMember, type JournalKeys } from './keys.ts';
import { DelegationRecordSchema, parseArtifacts, type DelegationRecord, type DelegationView, type RecordedError } from './record.ts';
import type { JournalState } from './states.ts';
import { JournalError, journalErrorFromCode } from './errors.ts';
import { parseAgentTimestamp } from './clock.ts';
import { encodeWorkflowPatch, parseWorkflowHash, type WorkflowPatch, type WorkflowRecord } from './workflow-record.ts';
import { WorkflowDefinitionSchema, type WorkflowDefinition } from '../workflow.ts';
import { NO_DURABILITY, awaitReplicas, connectionGeneration, type JournalDurability } from './durability.ts';

/**
 * Identifies a question: its status message's id, else its timestamp in ms (so "…00Z" and
 * "…00.000Z" are the same question), else '' (the script then numbers it).
 */
export function questionKeyOf(statusMessage: Message | undefined, statusTimestamp: string | undefined): string {
  if (statusMessage?.messageId) return statusMessage.messageId;
  const ms = parseAgentTimestamp(statusTimestamp);
  return Number.isNaN(ms) ? '' : String(ms);
}

/** Version of the script set; bump when a script's contract changes. */
const SCRIPT_VERSION = 'v2';
const SCRIPTS = {
  createWorkflow: 3,
  createIntent: 3,
  claim: 1,
  markSending: 1,
  applyStatus: 2,
  applyArtifact: 2,
  releaseForResend: 1,
  noteNotFound: 1,
  noteNoProgress: 1,
  recordReply: 1,
  markReply: 1,
  updateWorkflow: 2,
  lease: 1,
  recordEffect: 1,
  releaseHold: 1,
  takeToken: 1,
  bindTask: 1,
  noteProtocolError: 1,
} as const;
type ScriptName = keyof typeof SCRIPTS;

/** A delegation's address. */
export interface DelegationRef {
  workflowId: string;
  delegationId: string;
}

/** An observed status (or a local outcome) to apply with `applyStatus`. */
export interface StatusChange {
  /** Fencing token from `claim` (workers), or undefined for version-checked writers. */
  fence?: number;
  /** Compare-and-set on the version the caller read. */
  expectedVersion?: number;
  /** `event`: one stream or push event; `snapshot`: a full Task read that replaces state; `outcome`: our own decision. */
  mode: 'event' | 'snapshot' | 'outcome';
  state: JournalState;
  /** ISO 8601 status timestamp as the agent sent it. */
  statusTimestamp?: string;
  taskId?: string;
  contextId?: string;
  statusMessage?: Message;
  result?: unknown;
  error?: RecordedError;
  /** Snapshot artifacts: replace every stored artifact. Undefined leaves them. */
  artifacts?: Artifact[];
}

/** What `applyStatus` did. */
export type StatusChangeResult =
  | { applied: true; version: number }
  | { applied: false; reason: 'finished' | 'stale' | 'regress' | 'duplicate' };

export interface JournalOptions {
  /** Key prefix; default `da2a`. */
  prefix?: string;
  /** How long a finished workflow (with all its delegations) is kept, in ms; default 7 days; 0 keeps it forever. */
  retentionMs?: number;
  /** Clock, injectable for tests; default `Date.now`. */
  now?: () => number;
  /** Replicas that must acknowledge the critical writes (see durability.ts); default none. */
  durability?: JournalDurability;
  /** Artifact bytes one delegation may hold, summed over chunks and pushes; default 16 MiB (`DEFAULT_A2A_LIMITS`). */
  artifactBytesPerDelegation?: number;
}

const scriptSource = (name: ScriptName) =>
  readFileSync(new URL(`./lua/${name}-${SCRIPTS[name]}.lua`, import.meta.url), 'utf8');

type ScriptCaller = (name: ScriptName, keys: string[], args: (string | number)[]) => Promise<unknown>;

/** Journal over one Redis connection (standalone or Cluster). */
export class Journal {
  readonly keys: JournalKeys;
  readonly retentionMs: number;
  readonly now: () => number;
  readonly durability: JournalDurability;
  readonly artifactBytesPerDelegation: number;
  private readonly call: ScriptCaller;

  constructor(
    readonly redis: Redis | Cluster,
    options: JournalOptions = {},
  ) {
    this.keys = journalKeys(options.prefix);
    this.retentionMs = options.retentionMs ?? 7 * 24 * 3600 * 1000;
    this.now = options.now ?? Date.now;
    this.durability = options.durability ?? NO_DURABILITY;
    this.artifactBytesPerDelegation = options.artifactBytesPerDelegation ?? DEFAULT_A2A_LIMITS.artifactBytesPerDelegation;
    for (const name of Object.keys(SCRIPTS) as ScriptName[]) {
      const commandName = `da2a_${SCRIPT_VERSION}_${name}`;
      if (!(commandName in redis)) {
        redis.defineCommand(commandName, { numberOfKeys: SCRIPTS[name], lua: scriptSource(name) });
      }
    }
    this.call = (name, keys, args) => {
      const command = (redis as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>)[
        `da2a_${SCRIPT_VERSION}_${name}`
      ]!;
      return command.call(redis, ...keys, ...args);
    };
  }

  private delegationKeys(ref: DelegationRef): [string, string] {
    return [this.keys.delegation(ref.workflowId, ref.delegationId), this.keys.artifacts(ref.workflowId, ref.delegationId)];
  }

  /**
   * Creates a workflow and (optionally) its first delegation's intent, atomically.
   * The first delegation enters the unfinished index before the script runs.
   * @returns true if created, false if the workflow already existed (idempotent).
   */
  async createWorkflow(workflowId: string, fields: Record<string, string>, first?: Record<string, string>): Promise<boolean> {
    if (first) await this.scheduleCheck({ workflowId, delegationId: first.delegationId! }, this.now());
    // The listing set is global (another Cluster slot), so it is written outside the script; SADD is idempotent.
    await this.redis.sadd(this.keys.workflows(), workflowId);
    const created = await this.call(
      'createWorkflow',
      [this.keys.workflow(workflowId), first ? this.keys.delegation(workflowId, first.delegationId!) : this.keys.workflow(workflowId), this.delegationListKey(workflowId)],
      [JSON.stringify({ ...fields, workflowId, version: '1' }), first ? JSON.stringify(first) : ''],
    );
    return created === 1;
  }

  /**
   * Journals one more delegation of an existing workflow (next step, re-delegation, compensation).
   * @returns true if created, false if that delegation already existed.
   * @throws JournalError WORKFLOW_MISSING or VERSION_CONFLICT (another worker decided first).
   */
  async createIntent(
    workflowId: string,
    delegation: Record<string, string>,
    options: { expectedWorkflowVersion?: number; workflowFields?: Record<string, string> } = {},
  ): Promise<boolean> {
    const ref = { workflowId, delegationId: delegation.delegationId! };
    await this.scheduleCheck(ref, this.now());
    const code = Number(
      await this.call(
        'createIntent',
        [this.keys.workflow(workflowId), this.keys.delegation(workflowId, ref.delegationId), this.delegationListKey(workflowId)],
        [JSON.stringify(delegation), options.expectedWorkflowVersion ?? '', JSON.stringify(options.workflowFields ?? {})],
      ),
    );
    if (code < 0) throw journalErrorFromCode(code, ref, 'createIntent');
    return code === 1;
  }

  /** Key of the list of a workflow's delegation ids, in creation order. */
  delegationListKey(workflowId: string): string {
    return this.keys.delegationList(workflowId);
  }

  /** Reads one delegation, or undefined if missing (or expired). */
  async getDelegation(ref: DelegationRef): Promise<DelegationRecord | undefined> {
    const hash = await this.redis.hgetall(this.keys.delegation(ref.workflowId, ref.delegationId));
    if (!hash.delegationId) return undefined;
    return DelegationRecordSchema.parse(hash);
  }

  /** Reads one delegation with its artifacts. */
  async getDelegationView(ref: DelegationRef): Promise<DelegationView | undefined> {
    const [key, artifactsKey] = this.delegationKeys(ref);
    const [hash, artifacts] = await Promise.all([this.redis.hgetall(key), this.redis.hgetall(artifactsKey)]);
    if (!hash.delegationId) return undefined;
    return { ...DelegationRecordSchema.parse(hash), artifacts: parseArtifacts(artifacts) };
  }

  /** Delegation ids of a workflow, in creation order. */
  async delegationIds(workflowId: string): Promise<string[]> {
    return this.redis.lrange(this.delegationListKey(workflowId), 0, -1);
  }

  /**
   * Reads the raw workflow hash, or undefined.
   * @deprecated read `getWorkflow` (typed); kept for callers on other branches.
   */
  async getWorkflowHash(workflowId: string): Promise<Record<string, string> | undefined> {
    const hash = await this.redis.hgetall(this.keys.workflow(workflowId));
    return hash.workflowId ? hash : undefined;
  }

  /** Reads a workflow row, typed, or undefined if missing (or expired). Throws a ZodError on a corrupt row. */
  async getWorkflow(workflowId: string): Promise<WorkflowRecord | undefined> {
    const hash = await this.redis.hgetall(this.keys.workflow(workflowId));
    return hash.workflowId ? parseWorkflowHash(hash) : undefined;
  }

  /** Reads only a workflow's definition (one HGET), or undefined. */
  async getWorkflowDefinition(workflowId: string): Promise<WorkflowDefinition | undefined> {
    const text = await this.redis.hget(this.keys.workflow(workflowId), 'definition');
    return text ? WorkflowDefinitionSchema.parse(JSON.parse(text)) : undefined;
  }

  /** Reads one field of many workflows' state (listing by state), in order; undefined for missing ones. */
  async workflowStates(workflowIds: string[]): Promise<(string | undefined)[]> {
    const states = await Promise.all(workflowIds.map((workflowId) => this.redis.hget(this.keys.workflow(workflowId), 'state')));
    return states.map((state) => state ?? undefined);
  }

  /** One page of workflow ids (SSCAN); `cursor` undefined when done. */
  async listWorkflowIds(cursor: string | undefined, count: number): Promise<{ ids: string[]; cursor?: string }> {
    const [next, ids] = await this.redis.sscan(this.keys.workflows(), cursor ?? '0', 'COUNT', count);
    return { ids, cursor: next === '0' ? undefined : next };
  }

  /**
   * Marks a one-time act of a delegation (a CancelTask sent, an auth challenge handled) for `ttlMs`.
   * @returns true for the first caller in that window, false for every other one (fleet-wide).
   */
  async markOnce(ref: DelegationRef, name: string, owner: string, ttlMs: number): Promise<boolean> {
    return (await this.redis.set(this.keys.once(ref.workflowId, ref.delegationId, name), owner, 'PX', ttlMs, 'NX')) === 'OK';
  }

  /** The secret push token of a delegation (never part of the view). */
  async pushToken(ref: DelegationRef): Promise<string | undefined> {
    return (await this.redis.hget(this.keys.delegation(ref.workflowId, ref.delegationId), 'pushToken')) || undefined;
  }

  /**
   * Takes ownership for one job run; returns the fencing token to pass to later writes.
   * @throws JournalError DELEGATION_MISSING
   */
  async claim(ref: DelegationRef, owner: string): Promise<number> {
    const fence = Number(await this.call('claim', [this.delegationKeys(ref)[0]], [owner]));
    if (fence < 0) throw journalErrorFromCode(fence, ref, 'claim');
    return fence;
  }

  /**
   * Marks that SendMessage is about to leave (crash window 1 → 2).
   * @throws JournalError FENCE_LOST, WRONG_STATE, MAY_HAVE_SENT, DELEGATION_MISSING; ReplicationTimeoutError
   *   (durability on: the mark is written but not proven on the replicas, so nothing may leave)
   */
  async markSending(ref: DelegationRef, fence: number, agentInterface?: object): Promise<void> {
    const generation = connectionGeneration(this.redis);
    // Replicas behind or gone: refuse before the mark, so a send that cannot leave is not marked as maybe sent.
    await this.awaitReplicas(ref.workflowId, generation);
    const code = Number(
      await this.call('markSending', [this.delegationKeys(ref)[0]], [fence, this.now(), agentInterface ? JSON.stringify(agentInterface) : '']),
    );
    if (code < 0) throw journalErrorFromCode(code, ref, 'markSending');
    await this.awaitReplicas(ref.workflowId, generation);
  }

  /**
   * Waits for `durability.replicas` replicas to acknowledge this connection's writes so far (the
   * workflow's keys and the unfinished index); nothing when the setting is off.
   * @param generation `connectionGeneration(journal.redis)` taken before the writes.
   * @throws ReplicationTimeoutError (retryable)
   */
  async awaitReplicas(workflowId: string, generation: number): Promise<void> {
    await awaitReplicas(this.redis, this.durability, [this.keys.workflow(workflowId), this.keys.unfinished()], generation);
  }

  /**
   * Applies an observed status or a local outcome, forward only (see applyStatus-2.lua).
   * A new task id is bound to this delegation first (`bindTask`).
   * @throws JournalError FENCE_LOST, VERSION_CONFLICT, TASK_MISMATCH, TASK_BOUND_ELSEWHERE, DELEGATION_MISSING
   */
  async applyStatus(ref: DelegationRef, change: StatusChange): Promise<StatusChangeResult> {
    change = this.withinArtifactLimit(change);
    let [code, detail] = await this.applyStatusOnce(ref, change, false);
    if (code === -7) {
      // A new task id: bind it to this delegation first (at most one delegation per task id).
      await this.bindTask(ref, String(detail), change.taskId!);
      [code, detail] = await this.applyStatusOnce(ref, change, true);
    }
    if (code < 0) throw journalErrorFromCode(code, ref, 'applyStatus');
    // A finished delegation stays in the unfinished index until its workflow has
    // decided what comes next (`removeFromIndex`), so a crash in between is retried.
    if (code === 1) return { applied: true, version: Number(detail) };
    return { applied: false, reason: detail as 'finished' | 'stale' | 'regress' | 'duplicate' };
  }

  /**
   * A snapshot whose artifacts carry more than `artifactBytesPerDelegation` bytes ends the attempt
   * instead: FAILED with a permanent LIMIT_EXCEEDED error, nothing of the artifacts stored (RT5).
   */
  private withinArtifactLimit(change: StatusChange): StatusChange {
    if (!change.artifacts) return change;
    const bytes = change.artifacts.reduce((sum, artifact) => sum + artifactByteSize(artifact), 0);
    if (bytes <= this.artifactBytesPerDelegation) return change;
    const message = `artifacts of this delegation would reach ${bytes} bytes, over the limit of ${this.artifactBytesPerDelegation}`;
    return { fence: change.fence, expectedVersion: change.expectedVersion, mode: 'outcome', state: 'FAILED', taskId: change.taskId, contextId: change.contextId, error: { code: 'LIMIT_EXCEEDED', message, retryable: false } };
  }

  /**
   * Binds `taskId` (of the agent at `agentCardUrl`) to this delegation, kept as long as a finished workflow.
   * @throws JournalError TASK_BOUND_ELSEWHERE when another delegation holds it; that refusal is journaled
   *   on this delegation as a protocol error and the delegation is handed to the reconciler (due now).
   */
  async bindTask(ref: DelegationRef, agentCardUrl: string, taskId: string): Promise<void> {
    const owner = indexMember(ref.workflowId, ref.delegationId);
    const ttlMs = this.retentionMs > 0 ? this.retentionMs * 2 : 0;
    const [bound, holder] = (await this.call('bindTask', [this.keys.taskOwner(agentCardUrl, taskId)], [owner, ttlMs])) as [number, string];
    if (bound === 1) return;
    await this.noteProtocolError(ref, {
      code: 'TASK_BOUND_ELSEWHERE',
      message: `the agent named task ${taskId}, which belongs to delegation ${holder}`,
      retryable: false,
    });
    throw new JournalError('TASK_BOUND_ELSEWHERE', ref, 'applyStatus');
  }

  /**
   * Journals a protocol error an agent caused (state unchanged, see noteProtocolError-1.lua) and
   * hands the delegation to the reconciler (due now). Returns false when the delegation is finished or missing.
   */
  async noteProtocolError(ref: DelegationRef, error: RecordedError): Promise<boolean> {
    const code = Number(await this.call('noteProtocolError', [this.delegationKeys(ref)[0]], [JSON.stringify(error), this.now()]));
    if (code === 1) await this.scheduleCheck(ref, this.now());
    return code === 1;
  }

  private async applyStatusOnce(ref: DelegationRef, change: StatusChange, taskBound: boolean): Promise<[number, string | number]> {
    const timestampMs = parseAgentTimestamp(change.statusTimestamp);
    const artifactArgs: string[] = [];
    if (change.artifacts) {
      const sizes = change.artifacts.map((artifact) => artifactByteSize(artifact));
      artifactArgs.push(String(sizes.reduce((sum, size) => sum + size, 0)), String(change.artifacts.length));
      change.artifacts.forEach(({ artifactId, parts, ...meta }, index) => {
        artifactArgs.push(artifactId, JSON.stringify(meta), JSON.stringify(parts), String(sizes[index]));
      });
    } else artifactArgs.push('', '');
    return (await this.call('applyStatus', this.delegationKeys(ref), [
      change.fence ?? '',
      change.expectedVersion ?? '',
      change.mode,
      change.state,
      Number.isNaN(timestampMs) ? '' : timestampMs,
      change.statusTimestamp ?? '',
      change.taskId ?? '',
      change.contextId ?? '',
      change.statusMessage ? JSON.stringify(change.statusMessage) : '',
      change.result === undefined ? '' : JSON.stringify(change.result),
      change.error ? JSON.stringify(change.error) : '',
      this.now(),
      questionKeyOf(change.statusMessage, change.statusTimestamp),
      taskBound ? '1' : '',
      ...artifactArgs,
    ])) as [number, string | number];
  }

  /**
   * Applies one artifact update (append / replace / seal, see applyArtifact-2.lua). The delegation's
   * artifact bytes (artifactByteSize, summed over chunks and pushes) stay within `artifactBytesPerDelegation`.
   * @returns 'applied', 'sealed' (dropped after the seal) or 'finished'.
   * @throws JournalError FENCE_LOST, DELEGATION_MISSING; ARTIFACT_LIMIT when this update would pass the
   *   limit: nothing was stored and the attempt ended FAILED (LIMIT_EXCEEDED, permanent, re-delegable).
   */
  async applyArtifact(
    ref: DelegationRef,
    fence: number | undefined,
    update: { artifact: Artifact; append?: boolean; lastChunk?: boolean },
  ): Promise<'applied' | 'sealed' | 'finished'> {
    const { artifactId, parts, ...meta } = update.artifact;
    const [code, detail] = (await this.call('applyArtifact', this.delegationKeys(ref), [
      fence ?? '',
      artifactId,
      JSON.stringify(meta),
      JSON.stringify(parts),
      update.append ? '1' : '0',
      update.lastChunk ? '1' : '0',
      this.now(),
      artifactByteSize(update.artifact),
      this.artifactBytesPerDelegation,
    ])) as [number, string];
    if (code < 0) throw journalErrorFromCode(code, ref, 'applyArtifact');
    return detail as 'applied' | 'sealed' | 'finished';
  }

  /**
   * Clears the "may have been sent" mark after the reconciler proved the agent never got the message.
   * @throws JournalError VERSION_CONFLICT, WRONG_STATE, DELEGATION_MISSING
   */
  async releaseForResend(ref: DelegationRef, expectedVersion: number, contextRefused = false): Promise<void> {
    const code = Number(
      await this.call('releaseForResend', [this.delegationKeys(ref)[0]], [expectedVersion, this.now(), contextRefused ? '1' : '0']),
    );
    if (code < 0) throw journalErrorFromCode(code, ref, 'releaseForResend');
  }

  /** Counts one TaskNotFoundError; returns the count and when the first one was seen (ms). */
  async noteNotFound(ref: DelegationRef): Promise<{ count: number; firstNotFoundAt: number }> {
    const [count, first] = (await this.call('noteNotFound', [this.delegationKeys(ref)[0]], [this.now()])) as [number, number];
    if (count < 0) throw journalErrorFromCode(count, ref, 'noteNotFound');
    return { count, firstNotFoundAt: first };
  }

  /**
   * Notes one observation for the progress rule (see noteNoProgress-1.lua): `mark` sums up what the delegation
   * shows after the observation (a digest); `what` is short evidence text (stored as `noProgressLast`, ≤ 500 chars).
   * @returns count 0 when the mark changed (progress), else the observations without progress, and since when (ms).
   */
  async noteNoProgress(ref: DelegationRef, mark: string, what: string): Promise<{ count: number; since: number }> {
    const [count, since] = (await this.call('noteNoProgress', [this.delegationKeys(ref)[0]], [mark, this.now(), what.slice(0, 500)])) as [number, number];
    if (count < 0) throw journalErrorFromCode(count, ref, 'noteNoProgress');
    return { count, since };
  }

  /**
   * Journals a reply to the parked question before it is sent.
   * @returns the reply's messageId and whether it is new (false = this question was already answered).
   * @throws JournalError WRONG_STATE (not parked), DELEGATION_MISSING; ReplicationTimeoutError (durability on)
   */
  async recordReply(ref: DelegationRef, messageId: string, message: object): Promise<{ messageId: string; created: boolean }> {
    const generation = connectionGeneration(this.redis);
    const [code, id] = (await this.call('recordReply', [this.delegationKeys(ref)[0]], [messageId, JSON.stringify(message), this.now()])) as [
      number,
      string,
    ];
    if (code < 0) throw journalErrorFromCode(code, ref, 'recordReply');
    await this.awaitReplicas(ref.workflowId, generation); // the producer acknowledges the reply
    return { messageId: id, created: code === 1 };
  }

  /**
   * Moves the journaled reply to 'sending' (about to leave), 'sent' (delivered) or 'refused'
   * (the agent refused it for good; the question opens again and `reason` is kept as `replyError`).
   * 'sending' is a lease owned by `send.token` for `send.leaseMs`: it is taken from 'pending', or from
   * an expired 'sending' (the taker must then ask the agent before any resend). 'sent' / 'refused'
   * are accepted with the fencing token or the lease owner's token.
   * @returns false if it was not in the state before (another run moved it on, or holds a live lease).
   * @throws JournalError FENCE_LOST, DELEGATION_MISSING; ReplicationTimeoutError ('sending', durability on)
   */
  async markReply(
    ref: DelegationRef,
    fence: number,
    messageId: string,
    state: 'sending' | 'sent' | 'refused',
    reason = '',
    send: { token?: string; leaseMs?: number } = {},
  ): Promise<boolean> {
    const generation = connectionGeneration(this.redis);
    // As markSending: replicas behind, no 'sending' mark (a rerun in 'sending' asks the agent before any resend).
    if (state === 'sending') await this.awaitReplicas(ref.workflowId, generation);
    const now = this.now();
    const until = send.leaseMs === undefined ? '' : now + send.leaseMs;
    const code = Number(await this.call('markReply', [this.delegationKeys(ref)[0]], [fence, messageId, now, state, reason, send.token ?? '', until]));
    if (code < 0) throw journalErrorFromCode(code, ref, 'markReply');
    if (state === 'sending') await this.awaitReplicas(ref.workflowId, generation); // before the reply leaves
    return code >= 1;
  }

  /**
   * Takes the reply's 'sending' lease for `token` (C1): `taken` from 'pending'; `taken-over` from an
   * expired lease (the agent may have the reply: ask it before any resend); `busy` when another
   * worker's lease is live or the reply moved on.
   * @throws JournalError FENCE_LOST, DELEGATION_MISSING
   */
  async takeReplySend(ref: DelegationRef, fence: number, messageId: string, token: string, leaseMs: number): Promise<'taken' | 'taken-over' | 'busy'> {
    const generation = connectionGeneration(this.redis);
    await this.awaitReplicas(ref.workflowId, generation);
    const now = this.now();
    const code = Number(await this.call('markReply', [this.delegationKeys(ref)[0]], [fence, messageId, now, 'sending', '', token, now + leaseMs]));
    if (code < 0) throw journalErrorFromCode(code, ref, 'markReply');
    if (code >= 1) await this.awaitReplicas(ref.workflowId, generation); // before the reply leaves
    return code === 2 ? 'taken-over' : code === 1 ? 'taken' : 'busy';
  }

  /**
   * Changes workflow fields, compare-and-set on the version the caller decided from.
   * @returns the new workflow version.
   * @throws JournalError VERSION_CONFLICT, WRONG_STATE (workflow finished), DELEGATION_MISSING (no workflow)
   */
  async updateWorkflow(workflowId: string, patch: WorkflowPatch, expectedVersion?: number): Promise<number> {
    const fields = encodeWorkflowPatch(patch);
    const code = Number(
      await this.call('updateWorkflow', [this.keys.workflow(workflowId), this.delegationListKey(workflowId)], [expectedVersion ?? '', JSON.stringify(fields), this.now(), this.retentionMs]),
    );
    if (code < 0) throw journalErrorFromCode(code, { workflowId, delegationId: '' }, 'updateWorkflow');
    return code;
  }

  /**
   * Reserves a slot of a fleet-wide smooth rate limit (`name`: at most `max` per `windowMs`,
   * spaced evenly). Uses Redis's clock, so every worker agrees.
   * @returns 0 to go now, else the ms until the reserved slot.
   */
  async takeToken(name: string, max: number, windowMs: number, maxWaitMs = 600_000): Promise<number> {
    return Number(await this.call('takeToken', [this.keys.rateLimit(name)], [max, windowMs, maxWaitMs]));
  }

  /** Milliseconds left on a delegation's follow lease (0 when nobody holds it). */
  async followLeaseRemainingMs(ref: DelegationRef): Promise<number> {
    return Math.max(0, await this.redis.pttl(this.keys.followLease(ref.workflowId, ref.delegationId)));
  }

  /** Releases a held intent; returns false if it was not held. */
  async releaseHold(ref: DelegationRef): Promise<boolean> {
    const code = Number(await this.call('releaseHold', [this.delegationKeys(ref)[0]], [this.now()]));
    if (code < 0) throw journalErrorFromCode(code, ref, 'releaseHold');
    return code === 1;
  }

  /**
   * Records a verifier's finding once (see recordEffect-1.lua).
   * @returns true if recorded, false if an effect was already recorded.
   */
  async recordEffect(ref: DelegationRef, effect: 'present' | 'absent' | 'unknown', evidence: unknown): Promise<boolean> {
    const code = Number(await this.call('recordEffect', [this.delegationKeys(ref)[0]], [effect, JSON.stringify(evidence ?? null), this.now()]));
    if (code < 0) throw journalErrorFromCode(code, ref, 'recordEffect');
    return code === 1;
  }

  /**
   * The follow lease of a delegation (one open stream per task across the fleet).
   * `acquire` returns false when another holder has it; `renew`/`release` only act on our own.
   */
  async lease(ref: DelegationRef, op: 'acquire' | 'renew' | 'release', token: string, durationMs = 0): Promise<boolean> {
    return Number(await this.call('lease', [this.keys.followLease(ref.workflowId, ref.delegationId)], [op, token, durationMs])) === 1;
  }

  /** True while someone holds the follow lease. */
  async isFollowed(ref: DelegationRef): Promise<boolean> {
    return (await this.redis.exists(this.keys.followLease(ref.workflowId, ref.delegationId))) === 1;
  }

  /** Puts (or moves) a delegation in the unfinished index, due at `atMs`. */
  async scheduleCheck(ref: DelegationRef, atMs: number): Promise<void> {
    await this.redis.zadd(this.keys.unfinished(), atMs, indexMember(ref.workflowId, ref.delegationId));
  }

  /** When the reconciler next checks a delegation (ms since epoch), or undefined when it is not in the unfinished index. Read-only. */
  async nextCheckAt(ref: DelegationRef): Promise<number | undefined> {
    const score = await this.redis.zscore(this.keys.unfinished(), indexMember(ref.workflowId, ref.delegationId));
    return score === null ? undefined : Number(score);
  }

  /** Removes a delegation from the unfinished index. */
  /** Drops a delegation from the unfinished index; true when this call removed it (false if already gone). */
  async removeFromIndex(ref: DelegationRef): Promise<boolean> {
    return (await this.redis.zrem(this.keys.unfinished(), indexMember(ref.workflowId, ref.delegationId))) === 1;
  }

  /** Unfinished delegations due at or before `atMs` (all of them with Infinity), at most `limit`. */
  async dueDelegations(atMs: number, limit: number): Promise<DelegationRef[]> {
    const members = await this.redis.zrangebyscore(this.keys.unfinished(), '-inf', Number.isFinite(atMs) ? atMs : '+inf', 'LIMIT', 0, limit);
    return members.map(parseIndexMember);
  }

  /** Like `dueDelegations`, with each entry's due time (ms). */
  async dueDelegationsWithTimes(atMs: number, limit: number): Promise<{ ref: DelegationRef; dueAt: number }[]> {
    const flat = await this.redis.zrangebyscore(this.keys.unfinished(), '-inf', Number.isFinite(atMs) ? atMs : '+inf', 'WITHSCORES', 'LIMIT', 0, limit);
    const due: { ref: DelegationRef; dueAt: number }[] = [];
    for (let index = 0; index < flat.length; index += 2) due.push({ ref: parseIndexMember(flat[index]!), dueAt: Number(flat[index + 1]) });
    return due;
  }

  /** Number of unfinished delegations. */
  async unfinishedCount(): Promise<number> {
    return this.redis.zcard(this.keys.unfinished());
  }
}

export { JournalError };

/** At most this many unfinished delegations are sampled per scrape (cost grows with unfinished work only). */
export const STATE_SAMPLE_LIMIT = 10_000;

/**
 * Counts unfinished delegations by journal state, from the unfinished index
 * (never from history). Workflow entries (`*`) are skipped.
 */
export async function countUnfinishedByState(journal: Journal, limit = STATE_SAMPLE_LIMIT): Promise<Record<string, number>> {
  const members = await journal.redis.zrange(journal.keys.unfinished(), 0, limit - 1);
  const refs = members.map(parseIndexMember).filter((ref) => ref.delegationId !== '*');
  const states = await Promise.all(refs.map((ref) => journal.redis.hget(journal.keys.delegation(ref.workflowId, ref.delegationId), 'state')));
  const counts: Record<string, number> = {};
  for (const state of states) if (state) counts[state] = (counts[state] ?? 0) + 1;
  return counts;
}
