/**
 * Delegation rows: reads, and the transitions around sending (claim, markSending, releaseForResend)
 * and the reconciler's bookkeeping (noteNotFound, noteNoProgress, releaseHold, recordEffect). Each
 * transition is one script (`lua/<verb>-1.lua`); status changes are in status.ts, replies in replies.ts.
 */
import { REFUSED_ARTIFACT_IDS_MAX, REFUSED_ARTIFACT_ID_BYTES_MAX, refusedResultOf, type LimitRefusal } from './refused-result.ts';
import { encodeRecordedError, parseArtifacts, type DelegationRecord, type DelegationView, type PushConfigState, type RecordedError } from './record.ts';
import { parseDelegationHash } from './record-parse.ts';
import { asHeldRow, changedRow, heldVersion } from './held-rows.ts';
import { rememberStoredRow } from './stored-rows.ts';
import { unlessRefused } from './errors.ts';
import { arrayReply, defineScript, isRefused, fenceDecoder, integerReply, outcomeDecoder, refusal, ScriptReplyError, type Refused } from './scripts.ts';
import { parseCompactedWorkflow, type CompactedWorkflow } from './compacted-record.ts';
import { readCompactedRecords } from './compacted-record-read.ts';
import { connectionGeneration } from './durability.ts';
import type { DelegationRef } from './core.ts';
import { JournalWorkflows } from './workflows.ts';
import { parseWorkflowHash, type WorkflowRecord } from './workflow-record.ts';
import { historyArgument, parseHistory, type History, type HistoryEntryInput } from './history.ts';
import { boundedEvidence } from './evidence.ts';

/** A workflow row with every delegation (views, artifacts included) and its history (history.ts). */
export interface WorkflowRecordSnapshot {
  workflow: WorkflowRecord;
  delegations: DelegationView[];
  history: History;
}

/** claim-1.lua: the new fencing token. */
const claimScript = defineScript({ name: 'claim', keys: ['delegation'], encode: (owner: string) => [owner], decode: fenceDecoder });

/**
 * markSending-2.lua (see its header): `lease` 'lease elsewhere' when another holder has the lease; `atHeldVersion`:
 * the row was at `heldVersion` before the mark; `markedVersion`: the version the mark wrote.
 */
const markSendingScript = defineScript({
  name: 'markSending',
  keys: ['delegation', 'lease'],
  encode: (input: { fence: number; nowMs: number; agentInterfaceText: string; leaseToken: string; leaseMs: number; claim: boolean; heldVersion: number | undefined }) => [
    input.fence,
    input.nowMs,
    input.agentInterfaceText,
    input.leaseToken,
    input.leaseMs,
    input.claim ? '1' : '',
    input.heldVersion ?? '',
  ],
  decode: (reply: unknown, script) => {
    if (!Array.isArray(reply)) {
      const refused = markSendingOutcome(reply, script);
      // A bare integer is a refusal only: a mark replies {outcome, version}.
      if (typeof refused === 'string') throw new ScriptReplyError(script, reply);
      return refused;
    }
    const [code, version] = arrayReply(reply, script);
    const outcome = markSendingOutcome(code, script);
    if (typeof outcome !== 'string') return outcome;
    return {
      lease: outcome === 'lease elsewhere' || outcome === 'lease elsewhere, at the held version' ? ('lease elsewhere' as const) : ('lease held' as const),
      atHeldVersion: outcome.endsWith('at the held version'),
      markedVersion: integerReply(version, script),
    };
  },
});
const markSendingOutcome = outcomeDecoder({ 1: 'lease held', 2: 'lease elsewhere', 3: 'lease held, at the held version', 4: 'lease elsewhere, at the held version' });

/**
 * Why a row is released for a resend (`releaseForResend`). `contextRefused`: the agent refused our contextId (resend
 * without it). `agentInterface`: resend on this interface instead of the journaled one (P37). `provenAbsent`: a search
 * proved our message absent at the agent, which covers every send so far (the row's `provenAbsentSends`); false for
 * a release without that proof (a deduplicating agent that cannot list tasks), whose sends may still be at the agent.
 */
export interface ReleaseOptions {
  contextRefused?: boolean;
  agentInterface?: object;
  provenAbsent?: boolean;
}

/** releaseForResend-1.lua: compare-and-set on the version the reconciler read. */
const releaseForResendScript = defineScript({
  name: 'releaseForResend',
  keys: ['delegation'],
  encode: (input: { expectedVersion: number; nowMs: number } & ReleaseOptions) => [
    input.expectedVersion,
    input.nowMs,
    input.contextRefused ? '1' : '0',
    input.agentInterface ? JSON.stringify(input.agentInterface) : '',
    input.provenAbsent ? '1' : '0',
  ],
  decode: outcomeDecoder({ 1: 'released' }),
});

/** giveBackMark-1.lua: compare-and-set on the run's fence and its own mark (its sendStartedAt and the version it wrote). */
const giveBackMarkScript = defineScript({
  name: 'giveBackMark',
  keys: ['delegation'],
  encode: (input: { fence: number; sendStartedAt: number; markedVersion: number; nowMs: number }) => [input.fence, input.sendStartedAt, input.markedVersion, input.nowMs],
  decode: outcomeDecoder({ 1: 'given back' }),
});

/** A reply `{count, …}` whose first element is a count or a negative code, as integers. */
function countsReply(reply: unknown, script: string, length: number): number[] | Refused {
  const values = arrayReply(reply, script).map((value) => integerReply(value, script));
  if (values[0]! < 0) return refusal(values[0]!, script);
  if (values.length < length) throw new ScriptReplyError(script, reply);
  return values;
}

/** noteNotFound-1.lua: the count and when the first one was seen (ms). */
const noteNotFoundScript = defineScript({
  name: 'noteNotFound',
  keys: ['delegation'],
  encode: (nowMs: number) => [nowMs],
  decode: (reply, script) => {
    const counts = countsReply(reply, script, 2);
    return Array.isArray(counts) ? { count: counts[0]!, firstNotFoundAt: counts[1]! } : counts;
  },
});

/** noteUnreachable-1.lua (see its header): the row's new version, its unreachable count and since when (ms). */
const noteUnreachableScript = defineScript({
  name: 'noteUnreachable',
  keys: ['delegation'],
  encode: (input: { fence: number; nowMs: number; nextTryAt: number; error: RecordedError; marked: boolean; mark?: RunMark }) => [
    input.fence,
    input.nowMs,
    input.nextTryAt,
    encodeRecordedError(input.error),
    input.marked ? '1' : '0',
    input.marked && input.mark ? input.mark.sendStartedAt : '',
    input.marked && input.mark ? input.mark.markedVersion : '',
  ],
  decode: (reply, script) => {
    const counts = countsReply(reply, script, 3);
    return Array.isArray(counts) ? { version: counts[0]!, unreachableCount: counts[1]!, unreachableSince: counts[2]! } : counts;
  },
});

/**
 * A send run's own mark as `markSending` returned it: its `sendStartedAt` (ms) and the version it wrote
 * (`markedVersion`). What `giveBackMark` and a marked `noteUnreachable` compare: only the run that wrote the mark knows
 * both, and any write since moves the version.
 */
export interface RunMark {
  sendStartedAt: number;
  markedVersion: number;
}

/** noteSlotWait-1.lua (see its header): the row's new version. */
const noteSlotWaitScript = defineScript({
  name: 'noteSlotWait',
  keys: ['delegation'],
  encode: (input: { fence: number; nowMs: number; nextTryAt: number }) => [input.fence, input.nowMs, input.nextTryAt],
  decode: (reply, script) => {
    const counts = countsReply(reply, script, 1);
    return Array.isArray(counts) ? { version: counts[0]! } : counts;
  },
});

/** noteRefusedResult-1.lua (see its header): the row's version, and whether the fact changed; {0, 0}: the row finished (left alone). */
const noteRefusedResultScript = defineScript({
  name: 'noteRefusedResult',
  keys: ['delegation'],
  encode: (input: { refusal: LimitRefusal; nowMs: number }) => {
    const { artifactIds: _id, ...refused } = refusedResultOf(input.refusal);
    return [encodeRecordedError(refused), input.nowMs, input.refusal.artifactId ?? '', REFUSED_ARTIFACT_IDS_MAX, REFUSED_ARTIFACT_ID_BYTES_MAX];
  },
  decode: (reply, script) => {
    const counts = countsReply(reply, script, 2);
    return Array.isArray(counts) ? { version: counts[0]!, changed: counts[1] === 1 } : counts;
  },
});

/** noteNoProgress-1.lua (see its header). */
const noteNoProgressScript = defineScript({
  name: 'noteNoProgress',
  keys: ['delegation'],
  encode: (input: { mark: string; nowMs: number; what: string; unacceptable: boolean; live: boolean }) => [
    input.mark,
    input.nowMs,
    input.what,
    input.unacceptable ? '1' : '0',
    input.live ? '1' : '0',
  ],
  decode: (reply, script) => {
    const counts = countsReply(reply, script, 3);
    return Array.isArray(counts) ? { count: counts[0]!, since: counts[1]!, unacceptableInRow: counts[2]! } : counts;
  },
});

/** releaseHold-1.lua: compare-and-set on the workflow's version when one is given. */
const releaseHoldScript = defineScript({
  name: 'releaseHold',
  keys: ['delegation'],
  encode: (input: { nowMs: number; expectedWorkflowVersion?: number }) => [input.nowMs, input.expectedWorkflowVersion ?? ''],
  decode: outcomeDecoder({ 1: 'released', 0: 'not held' }),
});

/** recordEffect-1.lua: a verifier's finding, once. */
const recordEffectScript = defineScript({
  name: 'recordEffect',
  keys: ['delegation'],
  encode: (input: { effect: 'present' | 'absent' | 'unknown'; evidence: unknown; nowMs: number; history: HistoryEntryInput }) => [
    input.effect,
    JSON.stringify(input.evidence ?? null),
    input.nowMs,
    historyArgument(input.history),
  ],
  decode: outcomeDecoder({ 1: 'recorded', 0: 'already recorded' }),
});

/** notePushConfig-1.lua: one compare-and-set step of the push config life cycle. */
const notePushConfigScript = defineScript({
  name: 'notePushConfig',
  keys: ['delegation'],
  encode: (input: { expected: string; to: PushConfigState; configId: string }) => [input.expected, input.to, input.configId],
  decode: outcomeDecoder({ 1: 'written', 0: 'not expected' }),
});

/** Journal methods over delegation rows. */
export class JournalDelegations extends JournalWorkflows {
  /** Reads one delegation, or undefined if missing (or expired). */
  async getDelegation(ref: DelegationRef): Promise<DelegationRecord | undefined> {
    const hash = await this.redis.hgetall(this.keys.delegation(ref.workflowId, ref.delegationId));
    if (hash.delegationId) return rememberStoredRow(this.parseDelegationRow(ref, hash, false), hash);
    const finished = await this.finishedDelegation(ref);
    return finished && this.parseDelegationRow(ref, finished.hash, true);
  }

  /** `parseDelegationHash`, a failure reported and thrown as CorruptRecordError naming the row's key (`compacted`: the workflow's record). */
  private parseDelegationRow(ref: DelegationRef, hash: Record<string, string>, compacted: boolean): DelegationRecord {
    const key = compacted ? this.keys.finished(ref.workflowId) : this.keys.delegation(ref.workflowId, ref.delegationId);
    const record = this.parseAt(compacted ? 'workflow' : 'delegation', key, () => parseDelegationHash(hash));
    // A live row's record may name its version to a status change (held-rows.ts); a compacted one has no row.
    return compacted ? record : asHeldRow(record);
  }

  /** The ids of the artifacts a live delegation row holds now (one HKEYS of its artifacts hash; none for a compacted or missing row). */
  async heldArtifactIds(ref: DelegationRef): Promise<string[]> {
    const [, artifactsKey] = this.delegationKeys(ref);
    return (await this.redis.hkeys(artifactsKey)).filter((field) => field.startsWith('order:')).map((field) => field.slice('order:'.length));
  }

  /** Reads one delegation (live or compacted) with its artifacts. */
  async getDelegationView(ref: DelegationRef): Promise<DelegationView | undefined> {
    const [key, artifactsKey] = this.delegationKeys(ref);
    const [live, liveArtifacts] = await Promise.all([this.redis.hgetall(key), this.redis.hgetall(artifactsKey)]);
    const { hash, artifacts } = live.delegationId ? { hash: live, artifacts: liveArtifacts } : ((await this.finishedDelegation(ref)) ?? {});
    if (!hash?.delegationId) return undefined;
    const compacted = !live.delegationId;
    const record = this.parseDelegationRow(ref, hash, compacted);
    const where = compacted ? this.keys.finished(ref.workflowId) : artifactsKey;
    return { ...record, artifacts: this.parseAt(compacted ? 'workflow' : 'delegation', where, () => parseArtifacts(artifacts ?? {})) };
  }

  /**
   * The snapshot of a workflow that was compacted as it finished, from the compacted record its finishing
   * transition published on its change channel (updateWorkflow-4.lua): no read. Undefined when `published` is
   * not such a record (a state name) or does not parse: the caller reads (`getWorkflowSnapshot`).
   */
  snapshotFromPublished(workflowId: string, published: string): WorkflowRecordSnapshot | undefined {
    if (!published.startsWith('{')) return undefined;
    try {
      return snapshotOfCompactedText(workflowId, published);
    } catch {
      return undefined;
    }
  }

  /**
   * A workflow row with every delegation (views, artifacts included) in as few round trips as its form
   * allows: the row, its delegation list and the compacted record together (finished and compacted: that is
   * all, one round trip), then a live workflow's delegations together. Undefined when missing (or
   * expired). Throws CorruptRecordError on a corrupt row.
   */
  async getWorkflowSnapshot(workflowId: string): Promise<WorkflowRecordSnapshot | undefined> {
    // The compacted record is asked for in the same round trip: a finished workflow is read in one.
    const [hash, ids, compacted, history] = await Promise.all([
      this.redis.hgetall(this.keys.workflow(workflowId)),
      this.redis.lrange(this.delegationListKey(workflowId), 0, -1),
      this.redis.get(this.keys.finished(workflowId)),
      this.redis.lrange(this.keys.history(workflowId), 0, -1),
    ]);
    if (!hash.workflowId) {
      if (compacted) return this.parseAt('workflow', this.keys.finished(workflowId), () => snapshotOfCompactedText(workflowId, compacted));
      const finished = await this.finishedWorkflow(workflowId);
      return finished ? this.parseAt('workflow', this.keys.finished(workflowId), () => snapshotOfCompacted(finished)) : undefined;
    }
    // A delegation compacted between the two reads is read from the compacted record (getDelegationView).
    const views = await Promise.all(ids.map((delegationId) => this.getDelegationView({ workflowId, delegationId })));
    const workflow = this.parseWorkflowRow(workflowId, hash);
    return { workflow, delegations: views.filter((view): view is DelegationView => view !== undefined), history: parseHistory(history, workflow.historyDropped) };
  }

  /** A delegation's hashes from its workflow's compacted record (compacted-record.ts), or undefined. */
  private async finishedDelegation(ref: DelegationRef): Promise<CompactedWorkflow['delegations'][number] | undefined> {
    return (await this.finishedWorkflow(ref.workflowId))?.delegations.find(({ hash }) => hash.delegationId === ref.delegationId);
  }

  /**
   * The secret push token of a delegation (never part of the view). Of a compacted workflow, from its small
   * token hash, never from the record: a push with wrong credentials costs what it did before compaction.
   */
  async pushToken(ref: DelegationRef): Promise<string | undefined> {
    const [token, delegationId] = await this.redis.hmget(this.keys.delegation(ref.workflowId, ref.delegationId), 'pushToken', 'delegationId');
    if (delegationId !== null) return token || undefined;
    return (await this.redis.hget(this.keys.finishedPushTokens(ref.workflowId), ref.delegationId)) || undefined;
  }

  /**
   * Journals one step of the delegation's push notification config life cycle (notePushConfig-1.lua):
   * compare-and-set from `from` (`undefined`: not checked yet; `'any'`: any state but `to`) to `to`, with the
   * config id the agent knows (omitted: the journaled one is kept). `deleted` is final. The row's version is
   * not bumped (no transition reads these fields).
   * @returns true when written; false when the state was not `from` (another worker moved it)
   * @throws JournalError DELEGATION_MISSING
   */
  async notePushConfig(ref: DelegationRef, from: PushConfigState | undefined | 'any', to: PushConfigState, configId?: string): Promise<boolean> {
    const expected = from === 'any' ? '*' : (from ?? '');
    const noted = await this.call(notePushConfigScript, { delegation: this.delegationKeys(ref)[0] }, { expected, to, configId: configId ?? '' });
    return unlessRefused(noted, ref, 'notePushConfig') === 'written';
  }

  /**
   * Takes ownership for one job run; returns the fencing token to pass to later writes.
   * @throws JournalError DELEGATION_MISSING
   */
  async claim(ref: DelegationRef, owner: string): Promise<number> {
    return unlessRefused(await this.call(claimScript, { delegation: this.delegationKeys(ref)[0] }, owner), ref, 'claim').fence;
  }

  /**
   * Marks that SendMessage is about to leave (crash window 1 → 2). With `sendLease`, the same script takes the
   * delegation's lease for `durationMs` (the follow lease's key; see markSending-2.lua), so the reconciler waits
   * from the mark on; with `sendLease.claim`, it also claims the delegation for `token` (one round trip instead
   * of `claim` first): `fence` is then the fencing token the caller read with the record (0: never claimed).
   * `ref` may be the record the journal handed out (a read: held-rows.ts); when the row was still at its version,
   * `record` is that record as the mark left it (the same as a read after the mark), which a status change after the
   * send can hold: its reply is then the change only (applyStatus-5.lua), not the row whole.
   * @returns `leaseHeld`: true when the lease was taken (or none was asked), false when another holder has it (never
   *   with `sendLease.claim`: a claiming mark takes the lease from whoever held it, a gone run fenced out by the claim);
   *   `sendStartedAt`: the mark's time as written (ms, the journal's clock), where the reconciler's
   *   `sendSettleMs` starts counting (after the WAIT before the mark, before the WAIT after it);
   *   `fence`: the run's fencing token from now on (`fence` + 1 when claimed, else `fence`);
   *   `markedVersion`: the version the mark wrote, always (what `giveBackMark` compares, whether or not `ref` held the
   *   row at its version);
   *   `record`: the row as the mark left it, when `ref` held it at its version (undefined otherwise, or when a
   *   written field does not parse)
   * @throws JournalError FENCE_LOST, WRONG_STATE, MAY_HAVE_SENT, DELEGATION_MISSING; ReplicationTimeoutError
   *   (durability on: the mark is written but not proven on the replicas, so nothing may leave)
   */
  async markSending(
    ref: DelegationRef,
    fence: number,
    agentInterface?: object,
    sendLease?: { token: string; durationMs: number; claim?: boolean },
  ): Promise<{ leaseHeld: boolean; sendStartedAt: number; fence: number; markedVersion: number; record?: DelegationRecord }> {
    const generation = connectionGeneration(this.redis);
    // Replicas behind or gone: refuse before the mark, so a send that cannot leave is not marked as maybe sent.
    await this.awaitReplicas(ref.workflowId, generation);
    const sendStartedAt = this.now();
    const agentInterfaceText = agentInterface ? JSON.stringify(agentInterface) : '';
    const claim = sendLease?.claim ?? false;
    const held = heldVersion(ref);
    const marked = await this.call(
      markSendingScript,
      { delegation: this.delegationKeys(ref)[0], lease: this.keys.followLease(ref.workflowId, ref.delegationId) },
      { fence, nowMs: sendStartedAt, agentInterfaceText, leaseToken: sendLease?.token ?? '', leaseMs: sendLease?.durationMs ?? 0, claim, heldVersion: held },
    );
    const { lease, atHeldVersion, markedVersion } = unlessRefused(marked, ref, 'markSending');
    await this.awaitReplicas(ref.workflowId, generation);
    const newFence = claim ? fence + 1 : fence;
    if (!atHeldVersion) return { leaseHeld: lease === 'lease held', sendStartedAt, fence: newFence, markedVersion };
    // The row was at the version `ref` holds (a held record): what the mark wrote, as markSending-2.lua writes it.
    // Without a claim the fence is the row's (the script compared it): `ref`'s copy may predate a claim elsewhere.
    const record = ref as DelegationRecord;
    const change: Record<string, string> = {
      sendStartedAt: String(sendStartedAt),
      updatedAt: String(sendStartedAt),
      sendCount: String(record.sendCount + 1),
      version: String(record.version + 1),
      ...(agentInterfaceText ? { agentInterface: agentInterfaceText } : {}),
      ...(claim ? { fence: String(newFence), owner: sendLease?.token ?? '' } : newFence !== record.fence ? { fence: String(newFence) } : {}),
    };
    const asMarked = changedRow(record, change);
    return { leaseHeld: lease === 'lease held', sendStartedAt, fence: newFence, markedVersion, ...(asMarked ? { record: asHeldRow(asMarked) } : {}) };
  }

  /**
   * Clears the "may have been sent" mark so the same messageId is sent again (releaseForResend-1.lua); `options`
   * (`ReleaseOptions`, all off by default) say why. `provenAbsent` writes `provenAbsentSends`.
   * @throws JournalError VERSION_CONFLICT, WRONG_STATE, DELEGATION_MISSING
   */
  async releaseForResend(ref: DelegationRef, expectedVersion: number, options: ReleaseOptions = {}): Promise<void> {
    const released = await this.call(releaseForResendScript, { delegation: this.delegationKeys(ref)[0] }, { expectedVersion, nowMs: this.now(), ...options });
    unlessRefused(released, ref, 'releaseForResend');
  }

  /**
   * Gives back a send run's own "may have been sent" mark that never left (giveBackMark-1.lua): the run stalled between
   * the mark and the request and sent nothing, so the row is unmarked again (sendCount one less, resendCount unchanged)
   * and the run may mark again. Compare-and-set on `fence` (the run's, as the mark claimed it), the mark's
   * `sendStartedAt` (ms, as `markSending` returned it) and `markedVersion` (the version the mark wrote, `markSending`'s
   * `markedVersion`): only the run that wrote the mark knows all three, and any write since moves the version.
   * @returns true when given back; false when the row changed since the mark (the reconciler or another run acted, a
   *   push or an error was noted: the reconciler owns the delegation, nothing is written) or suspect evidence waits on
   *   it (a task a refused push showed holding our message: the reconciler reads it before anything is sent again)
   * @throws JournalError DELEGATION_MISSING
   */
  async giveBackMark(ref: DelegationRef, mark: { fence: number; sendStartedAt: number; markedVersion: number }): Promise<boolean> {
    const given = await this.call(giveBackMarkScript, { delegation: this.delegationKeys(ref)[0] }, { fence: mark.fence, sendStartedAt: mark.sendStartedAt, markedVersion: mark.markedVersion, nowMs: this.now() });
    if (isRefused(given) && given.refused !== 'DELEGATION_MISSING') return false;
    unlessRefused(given, ref, 'giveBackMark');
    return true;
  }

  /**
   * Journals a try that could not reach the agent and created nothing (noteUnreachable-1.lua): the attempt stays
   * INTENT with the error, one more unreachable try, since when, and the next try at `nextTryAt` (ms). `marked`: the
   * try had written the send mark (its SendMessage never left): the mark is cleared, so the next try sends again, only
   * while the row is as the run's own `mark` left it (its sendStartedAt and the version it wrote, no suspect evidence):
   * as `giveBackMark`. Compare-and-set on the send run's fencing token.
   * @returns the row's new version, its unreachable tries so far and since when (ms)
   * @throws JournalError FENCE_LOST, WRONG_STATE (not INTENT, or a task is bound), MAY_HAVE_SENT (an unmarked try on a
   *   marked row), VERSION_CONFLICT (a marked try without its `mark`, or the row written since the mark, or suspects
   *   wait on it: the reconciler decides), DELEGATION_MISSING
   */
  async noteUnreachable(ref: DelegationRef, fence: number, input: { error: RecordedError; nextTryAt: number; marked: boolean; mark?: RunMark }): Promise<{ version: number; unreachableCount: number; unreachableSince: number }> {
    const noted = await this.call(noteUnreachableScript, { delegation: this.delegationKeys(ref)[0] }, { fence, nowMs: this.now(), ...input });
    return unlessRefused(noted, ref, 'noteUnreachable');
  }

  /**
   * Journals a send that waits for its agent's flow control before the mark (noteSlotWait-1.lua): nothing was sent,
   * the attempt stays INTENT with `slotWaitUntil` and `nextTryAt` set to the next try (ms). Compare-and-set on the send
   * run's fencing token.
   * @returns the row's new version
   * @throws JournalError FENCE_LOST, WRONG_STATE (not INTENT, or a task is bound), MAY_HAVE_SENT (marked), DELEGATION_MISSING
   */
  async noteSlotWait(ref: DelegationRef, fence: number, nextTryAt: number): Promise<{ version: number }> {
    const noted = await this.call(noteSlotWaitScript, { delegation: this.delegationKeys(ref)[0] }, { fence, nowMs: this.now(), nextTryAt });
    return unlessRefused(noted, ref, 'noteSlotWait');
  }

  /**
   * Journals a part of the attempt's result we refused over a limit (`refusedResult`, noteRefusedResult-1.lua; field
   * case A32), as `refusedResultOf(refusal)`: the first refusal's error is kept, the refused artifact's id gathered
   * (bounded: `REFUSED_ARTIFACT_IDS_MAX`, `REFUSED_ARTIFACT_ID_BYTES_MAX`), a finished row left alone. Written only when
   * a refusal happens; every path that refuses an answer about our task over a limit calls it (the workers' table
   * `note-refused-result`, the push webhook).
   * @returns the row's version, and `changed` when this call bumped it (`undefined`: the row finished)
   * @throws JournalError DELEGATION_MISSING
   */
  async noteRefusedResult(ref: DelegationRef, refusal: LimitRefusal): Promise<{ version: number; changed: boolean } | undefined> {
    const noted = unlessRefused(await this.call(noteRefusedResultScript, { delegation: this.delegationKeys(ref)[0] }, { refusal, nowMs: this.now() }), ref, 'noteRefusedResult');
    return noted.version === 0 ? undefined : noted;
  }

  /** Counts one TaskNotFoundError; returns the count and when the first one was seen (ms). */
  async noteNotFound(ref: DelegationRef): Promise<{ count: number; firstNotFoundAt: number }> {
    return unlessRefused(await this.call(noteNotFoundScript, { delegation: this.delegationKeys(ref)[0] }, this.now()), ref, 'noteNotFound');
  }

  /**
   * Notes one observation for the progress rule (see noteNoProgress-1.lua): `mark` sums up what the delegation
   * shows after the observation (a digest); `what` is short evidence text (stored as `noProgressLast`, ≤ 500 chars);
   * `unacceptable`: the cycle ended on an answer we cannot accept; `live`: the cycle's stream delivered events before
   * it ended (P36: the count, and with it the follow's backoff, starts again; the run's start is kept, so the
   * no-progress window still bounds an agent that repeats the same events on stream after stream).
   * @returns count 0 when the mark changed (progress), else the observations without progress; since when (ms); and
   *   how many cycles in a row ended on an answer we cannot accept (`unacceptableInRow`, this one included).
   */
  async noteNoProgress(ref: DelegationRef, mark: string, what: string, unacceptable = false, live = false): Promise<{ count: number; since: number; unacceptableInRow: number }> {
    const input = { mark, nowMs: this.now(), what: what.slice(0, 500), unacceptable, live };
    return unlessRefused(await this.call(noteNoProgressScript, { delegation: this.delegationKeys(ref)[0] }, input), ref, 'noteNoProgress');
  }

  /**
   * Releases a held intent; returns false if it was not held. With `expectedWorkflowVersion`, only while the
   * workflow row is still at that version (the decision to release was made from it).
   * @throws JournalError DELEGATION_MISSING, VERSION_CONFLICT (the workflow changed since: decide again)
   */
  async releaseHold(ref: DelegationRef, expectedWorkflowVersion?: number): Promise<boolean> {
    const released = await this.call(releaseHoldScript, { delegation: this.delegationKeys(ref)[0] }, { nowMs: this.now(), expectedWorkflowVersion });
    return unlessRefused(released, ref, 'releaseHold') === 'released';
  }

  /**
   * Records a verifier's finding once (see recordEffect-1.lua), with its history entry (the finding and its evidence).
   * `found`: the verifier's evidence, journaled within `statusMessageBytes` of JSON (`boundedEvidence`: an excerpt that
   * says it was cut).
   * @returns true if recorded, false if an effect was already recorded.
   */
  async recordEffect(ref: DelegationRef, effect: 'present' | 'absent' | 'unknown', found: unknown, step?: string): Promise<boolean> {
    const nowMs = this.now();
    // A verifier's answer within the journal's bound on one outside text (attack28: 20 MB journaled twice).
    const evidence = boundedEvidence(found, this.statusMessageBytes);
    const history: HistoryEntryInput = { kind: 'verification', at: nowMs, delegationId: ref.delegationId, ...(step ? { step } : {}), effect, evidence };
    const recorded = await this.call(recordEffectScript, { delegation: this.delegationKeys(ref)[0] }, { effect, evidence, nowMs, history });
    return unlessRefused(recorded, ref, 'recordEffect') === 'recorded';
  }
}

/**
 * The snapshot of a compacted record's text: its typed records read as they stand (compacted-record-read.ts), else
 * through its hashes. Throws on a corrupt record (the hash path's error).
 */
export function snapshotOfCompactedText(workflowId: string, text: string): WorkflowRecordSnapshot {
  const records = readCompactedRecords(workflowId, text);
  if (!records) return snapshotOfCompacted(parseCompactedWorkflow(workflowId, text));
  return { workflow: records.workflow, delegations: records.delegations, history: parseHistory(records.history, records.workflow.historyDropped) };
}

/** A compacted workflow's typed snapshot from its hashes (`parseCompactedWorkflow`): each row parsed by the journal's hash parsers, artifacts included. */
export function snapshotOfCompacted(finished: CompactedWorkflow): WorkflowRecordSnapshot {
  const delegations = finished.delegations.map(({ hash: row, artifacts }) => ({ ...parseDelegationHash(row), artifacts: parseArtifacts(artifacts) }));
  const workflow = parseWorkflowHash(finished.workflow);
  return { workflow, delegations, history: parseHistory(finished.history, workflow.historyDropped) };
}
