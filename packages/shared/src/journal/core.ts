/**
 * The journal's base: one Redis connection (standalone or Cluster), its keys, options and scripts,
 * and the replica wait. Each concern (unfinished index, workflows, delegations, status, replies,
 * coordination) adds its methods on top of this, ending in `Journal` (journal.ts).
 */
import type { Redis, Cluster } from 'ioredis';
import { DEFAULT_A2A_LIMITS, STATUS_MESSAGE_BYTES_MIN } from '@durable-a2a/a2a/pure';
import { journalKeys, type JournalKeys } from './keys.ts';
import { NO_DURABILITY, awaitReplicas, connectionGeneration, type JournalDurability } from './durability.ts';
import { callScript, type JournalScript } from './scripts.ts';
import { parseRecordAt, type CorruptRecordError, type CorruptRecordHandler, type CorruptRecordKind } from './corrupt.ts';

/** A delegation's address. */
export interface DelegationRef {
  workflowId: string;
  delegationId: string;
}

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
  /**
   * Artifacts (distinct ids) one delegation may show, over its stream, pushes and reads; default 1,000
   * (`DEFAULT_A2A_LIMITS.artifactsPerDelegation`). Each Task the journal applies is one script over its whole list and
   * what the row holds: the count bounds how long one agent's answer holds Redis for everyone (attack35).
   */
  artifactsPerDelegation?: number;
  /**
   * UTF-8 bytes of an agent's status message the journal keeps (as JSON); a longer one is kept as an excerpt that says
   * it was cut (`boundedStatusMessage`); default 64 KiB (`DEFAULT_A2A_LIMITS.statusMessageBytes`), at least 2,048.
   */
  statusMessageBytes?: number;
  /** Told of every corrupt record a listing skipped or a read refused (`corruptRecordReporter`: metric, one log line per key); default nothing. */
  onCorruptRecord?: CorruptRecordHandler;
}

/** Connection, keys, options and script caller shared by every part of the journal. */
export class JournalCore {
  readonly keys: JournalKeys;
  readonly retentionMs: number;
  readonly now: () => number;
  readonly durability: JournalDurability;
  readonly artifactBytesPerDelegation: number;
  readonly artifactsPerDelegation: number;
  readonly statusMessageBytes: number;
  private readonly onCorruptRecord: CorruptRecordHandler;

  constructor(
    readonly redis: Redis | Cluster,
    options: JournalOptions = {},
  ) {
    this.keys = journalKeys(options.prefix);
    this.retentionMs = options.retentionMs ?? 7 * 24 * 3600 * 1000;
    this.now = options.now ?? Date.now;
    this.durability = options.durability ?? NO_DURABILITY;
    this.artifactBytesPerDelegation = options.artifactBytesPerDelegation ?? DEFAULT_A2A_LIMITS.artifactBytesPerDelegation;
    this.artifactsPerDelegation = options.artifactsPerDelegation ?? DEFAULT_A2A_LIMITS.artifactsPerDelegation;
    this.statusMessageBytes = Math.max(STATUS_MESSAGE_BYTES_MIN, options.statusMessageBytes ?? DEFAULT_A2A_LIMITS.statusMessageBytes);
    this.onCorruptRecord = options.onCorruptRecord ?? (() => undefined);
  }

  /** Runs a journal script (`defineScript`) with its keys by name and typed input; resolves to its decoded result. */
  protected call<Key extends string, Input, Result>(script: JournalScript<Key, Input, Result>, keys: Readonly<Record<Key, string>>, input: Input): Promise<Result> {
    return callScript(this.redis, script, keys, input);
  }

  /** Reports a corrupt record (a listing that skips it, or a read that refuses it) to `onCorruptRecord`. */
  reportCorrupt(error: CorruptRecordError): void {
    this.onCorruptRecord(error);
  }

  /**
   * Runs `parse` on the record at `key`; a failure is reported and thrown as `CorruptRecordError` (the typed
   * problem `CORRUPT_RECORD`), so a single read names the key and a listing can skip the record.
   */
  protected parseAt<T>(kind: CorruptRecordKind, key: string, parse: () => T): T {
    try {
      return parseRecordAt(kind, key, parse);
    } catch (error) {
      this.reportCorrupt(error as CorruptRecordError);
      throw error;
    }
  }

  /** The delegation's row key and its artifacts key (the two keys of applyStatus / applyArtifact). */
  protected delegationKeys(ref: DelegationRef): [string, string] {
    return [this.keys.delegation(ref.workflowId, ref.delegationId), this.keys.artifacts(ref.workflowId, ref.delegationId)];
  }

  /** Key of the list of a workflow's delegation ids, in creation order. */
  delegationListKey(workflowId: string): string {
    return this.keys.delegationList(workflowId);
  }

  /**
   * A mark of this journal's connection, taken before writes that `awaitReplicas` must then find replicated
   * (a reconnect in between makes that wait fail: the writes may have gone to a lost primary).
   */
  replicationMark(): number {
    return connectionGeneration(this.redis);
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
}
