/**
 * Status and artifact changes of a delegation, forward only (applyStatus-5.lua, applyArtifact-2.lua),
 * with the task-id binding (one SET NX GET: inside applyStatus on one server, `bindTask` on a Cluster) and protocol
 * errors an agent caused (noteProtocolError-1.lua); the pending suspects a refused push named (noteSuspect-1.lua,
 * clearSuspects-1.lua).
 */
import type { Artifact, Message } from '@durable-a2a/a2a/pure';
import { artifactByteSize } from '@durable-a2a/a2a/pure';
import { boundedStatusMessage, resultWithinLimit, statusMessageOverLimit } from './status-message.ts';
import { indexMember } from './keys.ts';
import type { DelegationRecord, RecordedError } from './record.ts';
import { parseDelegationHash } from './record-parse.ts';
import { asHeldRow, changedRow, heldVersion } from './held-rows.ts';
import { rememberStoredRow } from './stored-rows.ts';
import { PARKED_STATES, type JournalState, type WorkflowState } from './states.ts';
import { JournalError, unlessRefused } from './errors.ts';
import { parseWorkflowHash, type WorkflowRecord } from './workflow-record.ts';
import type { DelegationRef } from './core.ts';
import { JournalDelegations } from './delegations.ts';
import { SUSPECT_TASK_ID_MAX, SUSPECTS_PENDING_MAX } from './keys.ts';
import { historyArgument, type HistoryEntryInput } from './history.ts';
import { keepsSuspects, type SuspectRoundFields } from './suspects.ts';
import { isRefused, type Refused } from './scripts.ts';
import { z } from 'zod';
import {
  applyArtifactScript,
  applyArtifactThenStatusScript,
  applyStatusScript,
  claimSuspectRoundScript,
  clearSuspectsScript,
  noteDuplicateTaskScript,
  noteProtocolErrorScript,
  noteSuspectScript,
  noteSuspectsUncheckedScript,
  type ApplyStatusOutcome,
  type ArtifactOutcome,
  type ArtifactUpdate,
  type SuspectRoundClaim,
  type SuspectsLeft,
  type TaskBinding,
} from './status-scripts.ts';

/**
 * The fields a history entry about a finished attempt shares (`duplicate-task`, `duplicate-unchecked`): when (ms), the
 * attempt, its step and finished state when known, and our task (`taskId`, absent when it finished without one).
 */
function finishedAttemptEntry(record: DelegationRef & Partial<Pick<DelegationRecord, 'step' | 'state'>>, taskId: string | undefined, at: number) {
  return {
    at,
    delegationId: record.delegationId,
    ...(record.step !== undefined ? { step: record.step } : {}),
    ...(record.state !== undefined ? { state: record.state } : {}),
    ...(taskId !== undefined ? { taskId } : {}),
  };
}

/** The row's `suspects` field (noteSuspect-1.lua): a JSON list of task ids, oldest first. */
const PendingSuspectsSchema = z.array(z.string());

export { questionKeyOf, asksQuestion, type ArtifactOutcome, type ArtifactUpdate, type SuspectsLeft, type SuspectRoundClaim } from './status-scripts.ts';

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
  /**
   * `statusMessage` holds the agent's words of a parked status that had no message (its messages of the task:
   * question-words.ts), not the status's own message: the question is keyed by the status alone (its timestamp), as a
   * read of the same status without the words is.
   */
  questionWords?: true;
  /**
   * The messageId of the last agent message this status follows, as its observation showed it (question-words.ts
   * `wordsCut`: a stream's last Message event of our task since its last status, a Task's last agent message in its
   * `history`). Only for an unfinished, unparked status of the agent (a WORKING): applied, it becomes the row's
   * `questionWordsAfter`, so a later read of a question without words takes only the messages after it (field case
   * A36: a progress message before a later status is never the question). Undefined: none known (the row keeps its
   * cut, or the id of the status message this status clears). A cut other than the row's makes an equal status no
   * 'duplicate' (applyStatus-5.lua).
   */
  wordsCut?: string;
  /**
   * With `questionWords` cut from the caller's copy of the row (a Task's history, `held`): that copy's cut
   * (question-words.ts `wordsBasisOf`: its state, status message id, `questionWordsAfter` and whether it holds a
   * question). The script applies the words only when the row as stored has the same (a row another writer moved since,
   * e.g. a push of a WORKING with a progress message, would have cut them elsewhere: review35); else the status as
   * without a message (its key is the status's alone either way), and a later read with the row takes its words.
   */
  questionWordsOn?: string;
  result?: unknown;
  error?: RecordedError;
  /**
   * The error a COMPLETED change ends with when its status message had to be cut (`withinLimits`) and is the step's
   * result: the row holds no artifacts after the change (applyStatus-5.lua ARGV[28 + 4N], read against `artifactCount`
   * and the Task's list in the same script). The change is then written AMBIGUOUS with this LIMIT_EXCEEDED
   * (`statusMessageBytes`), the excerpt kept; with artifacts it stays COMPLETED (the status message is not the result).
   */
  overLimitIfResult?: RecordedError;
  /**
   * A full Task's artifacts (snapshot or event), stored in this same transition: a finished state's list replaces every
   * stored artifact (`[]` included), an unfinished one's is merged in (the held ones it leaves out are kept, `[]`
   * changes nothing; applyStatus-5.lua). Undefined leaves them. The result's `leftOut` names the held ones it left out.
   */
  artifacts?: Artifact[];
  /**
   * This change binds the row to a task a Message answer named, not yet read (the row's `namedTaskUnread` set); any
   * status of the agent applied later clears it (applyStatus-5.lua).
   */
  namedTaskUnread?: true;
  /**
   * The ordered channel the observation came on: the id of one stream (a SubscribeToTask, or the rest of a streaming
   * send), whose events arrive in the order the agent wrote them. An event of the stream that wrote the row's status
   * is applied whatever its timestamp (applyStatus-5.lua "Ordered channels"); undefined (a read, a push, a send's
   * answer, our outcome): unordered, ordered against the row by the status timestamps.
   */
  stream?: string;
  /**
   * An outcome that says nothing of ours was sent (delivery `not-sent`: FAILED `AGENT_UNREACHABLE` when the agent
   * could not be reached until the step's bound), written only while the row is as the run that tried left it:
   * INTENT, no task bound, no suspects (pending or counted lost), no refused result, and its mark the run's own
   * (`sendStartedAt` as `markSending` wrote it; undefined: the row unmarked; give `expectedVersion` the version that
   * mark wrote). Else nothing is written: VERSION_CONFLICT (applyStatus-5.lua ARGV[21]). Undefined: no such check.
   */
  unsent?: { sendStartedAt?: number };
  /**
   * The delegation's Agent Card URL, when the caller read a record without a task id: a new `taskId` is then
   * bound with the change (inside applyStatus on one server, `bindTask` just before it on a Cluster) instead of
   * after the script's refusal (TASK_NOT_BOUND): one round trip less, or two.
   */
  agentCardUrl?: string;
  /**
   * With a new `taskId`: until when (ms since epoch) the delegation may stay unfinished, its attempt deadline. The
   * binding is then kept that long plus twice the retention (`Journal.bindTask`), so it never lapses while the row
   * that records the task id may still act on it. Default: now (twice the retention from the binding).
   */
  bindUntilMs?: number;
  /**
   * A lease (send or follow, `lease`) this change ends, released in the same script when `token` holds it:
   * `always` on every outcome (the send lease, with the send's answer), `finished` only when the delegation is
   * finished afterwards (the follow lease, at the stream's terminal event). Saves a release round trip. A caller
   * whose `applyStatus` throws releases it itself (the script may not have run).
   * `handover` (the send lease, with the send's answer): the lease passes to the follow token `to` for
   * `durationMs` with a claim, as `takeFollow` would take it, when the change is applied and leaves the row
   * unfinished and not parked (`StatusChangeResult.followLease`); else it is released as with `always`. With
   * `checkAt` (ms since epoch) the handover also moves the delegation's next check in the unfinished index there,
   * as the follow's own `scheduleCheck` beside its stream would (one server only: `FollowLease.checkScheduled`).
   */
  endsLease?: { token: string; when: 'always' | 'finished' } | { token: string; when: 'handover'; to: string; durationMs: number; checkAt?: number };
  /**
   * The row as the caller holds it: a record the journal handed out (a read, or an earlier change's `record`). When
   * the row is still at its version, the script replies with the change only and `record` is this one with the
   * change merged in: the same record as a read of the row after it. Anything else (a copy, an older version) gets
   * the whole row back. Only a cost: the result is the same either way.
   */
  held?: DelegationRecord;
}

/** A follow lease handed over by a status change (`endsLease: handover`): its holder token and the fencing token it claimed. */
export interface FollowLease {
  token: string;
  fence: number;
  /** The handover also moved the delegation's next check (`endsLease.checkAt`, one server): the follow need not. */
  checkScheduled?: boolean;
}

/** The workflow fields the router needs (cancel wanted?), as applyStatus-5.lua read them. */
export interface WorkflowFlags {
  state: WorkflowState;
  cancelRequested: boolean;
  /** Set when a step failed for good (the reasons). */
  stopping: boolean;
}

/** The workflow row and its delegation ids as a delegation's finishing transition read them (what its settle decides from). */
export interface WorkflowAtFinish {
  record: WorkflowRecord;
  delegationIds: string[];
}

/**
 * What `applyStatus` did. Applied: the row as written (`record`, no read needed after it) and, when the
 * state changed, the workflow's flags (`workflow`, to an unfinished state) or the workflow row and its
 * delegation ids as the script read them (`finishedWorkflow`, to a finished state).
 */
export type StatusChangeResult =
  | {
      applied: true;
      version: number;
      record?: DelegationRecord;
      workflow?: WorkflowFlags;
      finishedWorkflow?: WorkflowAtFinish;
      /** The follow lease this change's `endsLease: handover` passed on: its token and fencing token (`takeFollow`'s). */
      followLease?: FollowLease;
      /** See `ApplyStatusOutcome.leftOut`: set only when the change carried a Task's artifacts. */
      leftOut?: string[];
      /**
       * See `ApplyStatusOutcome.rewritten`: the held artifacts an unfinished Task's list wrote over with other content
       * (a stale snapshot's older copy, or a newer one: only a full read tells). Set only for an unfinished Task's list.
       */
      rewritten?: string[];
    }
  | {
      applied: false;
      reason: 'finished' | 'stale' | 'regress' | 'duplicate';
      /**
       * The ids of the artifacts the row held that the change's Task's list leaves out, read in the same script (set
       * only when the change carried a Task's artifacts and the row was unfinished).
       */
      leftOut?: string[];
    };

/** The typed row, or undefined when it does not parse (the caller reads it again). */
function parseOrUndefined(hash: Record<string, string>): DelegationRecord | undefined {
  try {
    return parseDelegationHash(hash);
  } catch {
    return undefined;
  }
}

/**
 * The typed row after an applied change: the whole row parsed, or the change merged into the row the caller held
 * (`held`, at the version the script found); undefined when it does not parse (the caller reads it again).
 */
function rowAfter(outcome: Extract<ApplyStatusOutcome, { applied: true }>, held: DelegationRecord | undefined): DelegationRecord | undefined {
  if (outcome.whole) {
    const parsed = outcome.row.delegationId ? parseOrUndefined(outcome.row) : undefined;
    return parsed && rememberStoredRow(parsed, outcome.row);
  }
  return held && changedRow(held, outcome.row);
}

/** An applied change as `StatusChangeResult`: the typed row (when it parses), the workflow's flags or the workflow at finish. */
function appliedResult(outcome: Extract<ApplyStatusOutcome, { applied: true }>, held: DelegationRecord | undefined, followLease?: FollowLease): StatusChangeResult {
  const row = rowAfter(outcome, held);
  const parsed = row && asHeldRow(row);
  const workflow = outcome.flags ? { state: outcome.flags[0] as WorkflowState, cancelRequested: outcome.flags[1] === '1', stopping: Boolean(outcome.flags[2]) } : undefined;
  const finishedWorkflow = outcome.finished ? workflowAtFinish(outcome.finished.workflow, outcome.finished.delegationIds) : undefined;
  return {
    applied: true,
    version: outcome.version,
    ...(parsed ? { record: parsed } : {}),
    ...(workflow ? { workflow } : {}),
    ...(finishedWorkflow ? { finishedWorkflow } : {}),
    ...(followLease ? { followLease } : {}),
    ...(outcome.leftOut ? { leftOut: outcome.leftOut } : {}),
    ...(outcome.rewritten ? { rewritten: outcome.rewritten } : {}),
  };
}

/** The workflow as the finishing transition read it; undefined when gone or unreadable (the settle reads it then). */
function workflowAtFinish(hash: Record<string, string>, delegationIds: string[]): WorkflowAtFinish | undefined {
  if (!hash.workflowId) return undefined;
  try {
    return { record: rememberStoredRow(parseWorkflowHash(hash), hash), delegationIds };
  } catch {
    return undefined;
  }
}

/**
 * How long a task id stays bound (ms, a PX: a positive safe integer; 0: kept, as records are with retention 0): until
 * `untilMs` (ms since epoch, the attempt deadline: the row may act on its task until then; default `nowMs`), then
 * twice `retentionMs`, the retention of a finished workflow. An attempt deadline has no upper bound
 * (`DA2A_ATTEMPT_DEADLINE_MS`, a step's `attemptDeadlineMs`), so neither has the binding but the largest safe integer
 * (about 285,000 years: Redis takes it, and it is written in digits); an unreadable deadline (NaN) keeps it that long
 * too, never shorter than its attempt. Before, a year was the most: an attempt with a deadline further off lost its
 * binding while it ran. A fraction of a ms is rounded up.
 */
export function taskBindingTtlMs(retentionMs: number, nowMs: number, untilMs: number = nowMs): number {
  if (!(retentionMs > 0)) return 0;
  const ahead = Number.isNaN(untilMs - nowMs) ? Number.MAX_SAFE_INTEGER : Math.max(0, untilMs - nowMs);
  return Math.min(Number.MAX_SAFE_INTEGER, Math.ceil(retentionMs * 2 + ahead));
}

/** Journal methods that apply what an agent reported (or our own outcome) to a delegation. */
export class JournalStatus extends JournalDelegations {
  /**
   * Applies an observed status or a local outcome, forward only (see applyStatus-5.lua).
   * A new task id is bound to this delegation (`bindTask`'s rule): in the same script on one server, first on a
   * Cluster (the owner key lives in another slot).
   * @throws JournalError FENCE_LOST, VERSION_CONFLICT, TASK_MISMATCH, TASK_BOUND_ELSEWHERE, DELEGATION_MISSING
   */
  async applyStatus(ref: DelegationRef, change: StatusChange): Promise<StatusChangeResult> {
    change = this.withinLimits(change);
    const binding = await this.bindingFor(ref, change);
    return this.statusResult(ref, change, await this.applyStatusOnce(ref, change, binding));
  }

  /**
   * How `change` binds a new task id. The caller saw no task id on the row: a new one is bound with the change (the
   * script would ask for it, TASK_NOT_BOUND): in the script on one server, here first on a Cluster.
   */
  private async bindingFor(ref: DelegationRef, change: StatusChange): Promise<TaskBinding> {
    if (change.taskId === undefined || change.agentCardUrl === undefined) return 'unbound';
    if (this.redis.isCluster) {
      await this.bindTask(ref, change.agentCardUrl, change.taskId, change.bindUntilMs);
      return 'bound';
    }
    return { key: this.keys.taskOwner(change.agentCardUrl, change.taskId), ttlMs: taskBindingTtlMs(this.retentionMs, this.now(), change.bindUntilMs), owner: indexMember(ref.workflowId, ref.delegationId) };
  }

  /** What applyStatus-5.lua's `outcome` for `change` means; binds a task id the script asked for and runs it again. */
  protected async statusResult(ref: DelegationRef, change: StatusChange, outcome: ApplyStatusOutcome): Promise<StatusChangeResult> {
    if (isRefused(outcome) && outcome.refused === 'TASK_BOUND_ELSEWHERE') await this.refuseBoundElsewhere(ref, change.taskId!, outcome.detail);
    if (isRefused(outcome) && outcome.refused === 'TASK_NOT_BOUND') {
      // A new task id: bind it to this delegation first (at most one delegation per task id).
      await this.bindTask(ref, outcome.detail, change.taskId!, change.bindUntilMs);
      outcome = await this.applyStatusOnce(ref, change, 'bound');
    }
    // A finished workflow's delegations live in its compacted record: nothing more applies to them.
    if (isRefused(outcome) && outcome.refused === 'DELEGATION_MISSING' && (await this.isCompacted(ref.workflowId))) return { applied: false, reason: 'finished' };
    const decided = unlessRefused(outcome, ref, 'applyStatus');
    if (!decided.applied) return decided;
    // A new question moves its workflow to the top of the list (the updated index, search-index.ts): one ZADD on
    // this rarer path, where every status script would pay one on the happy path.
    if (decided.row.state !== undefined && PARKED_STATES.has(decided.row.state as JournalState)) {
      await this.redis.zadd(this.keys.updated(), 'GT', Number(decided.row.updatedAt) || this.now(), ref.workflowId);
    }
    // A finished delegation stays in the unfinished index until its workflow has
    // decided what comes next (`removeFromIndex`), so a crash in between is retried.
    const handedTo =
      change.endsLease?.when === 'handover' && decided.followFence !== undefined
        ? { token: change.endsLease.to, fence: decided.followFence, checkScheduled: change.endsLease.checkAt !== undefined && !this.redis.isCluster }
        : undefined;
    return appliedResult(decided, change.held, handedTo);
  }

  /**
   * `change` within the journal's limits on what an agent sends, the one bound of every status write (applyStatus,
   * applyArtifactThenStatus, finishStep): its status message, and a Message answer's message in its result, within
   * `statusMessageBytes` (`boundedStatusMessage`, `boundedResult`: an excerpt that says it was cut; the row's
   * question, status message and the workflow's question history all come from it). A Message answer is the step's
   * whole result, so one that had to be cut ends the attempt AMBIGUOUS with LIMIT_EXCEEDED, its excerpt kept for the
   * person (`resultWithinLimit`), never COMPLETED with part of its result. So does a COMPLETED task whose cut status
   * message is its result, no artifacts on the row after the change (`overLimitIfResult`, decided in applyStatus-5.lua
   * where the row's artifacts are read: a stream's artifacts came in earlier scripts; overstatus35). A snapshot whose artifacts carry more than `artifactBytesPerDelegation` bytes ends the attempt instead,
   * nothing of the artifacts stored (RT5), with a permanent LIMIT_EXCEEDED error: AMBIGUOUS (a person decides: the
   * agent may have done the work, so the step is not re-delegated blind, field case A31), whatever state the agent
   * reported: a task ended FAILED, REJECTED or CANCELED that carries artifacts is effect unknown (`effectOf`), and
   * artifacts over the limit are artifacts we could not keep (before: FAILED, re-delegable, so an unsuccessful task
   * with an over-limit artifact went to a second agent while one with a small artifact went to a person).
   */
  protected withinLimits(change: StatusChange): StatusChange {
    if (change.statusMessage) {
      const statusMessage = boundedStatusMessage(change.statusMessage, this.statusMessageBytes);
      if (statusMessage !== change.statusMessage) change = { ...change, statusMessage, ...statusMessageOverLimit(change.state, statusMessage, this.statusMessageBytes) };
    }
    if (change.result !== undefined) change = resultWithinLimit(change, this.statusMessageBytes);
    return this.withinArtifactLimit(change);
  }

  /**
   * The artifact half of `withinLimits`: the Task's list within `artifactBytesPerDelegation` bytes and
   * `artifactsPerDelegation` distinct ids (a list longer than that is one script over all of it, holding Redis for every
   * other delegation: attack35, 30,000 empty artifacts in a 1 MB Task held it about a second per snapshot).
   */
  private withinArtifactLimit(change: StatusChange): StatusChange {
    if (!change.artifacts) return change;
    const bytes = change.artifacts.reduce((sum, artifact) => sum + artifactByteSize(artifact), 0);
    const count = change.artifacts.length > this.artifactsPerDelegation ? new Set(change.artifacts.map((artifact) => artifact.artifactId)).size : 0;
    if (bytes <= this.artifactBytesPerDelegation && count <= this.artifactsPerDelegation) return change;
    const overCount = bytes <= this.artifactBytesPerDelegation;
    const message = overCount
      ? `the task lists ${count} artifacts, over the limit of ${this.artifactsPerDelegation} a delegation may show`
      : `artifacts of this delegation would reach ${bytes} bytes, over the limit of ${this.artifactBytesPerDelegation}`;
    const agentSaysNotDone = change.state === 'FAILED' || change.state === 'REJECTED' || change.state === 'CANCELED';
    const said = agentSaysNotDone ? ` (the agent ended the task ${change.state} with them)` : '';
    return {
      fence: change.fence,
      expectedVersion: change.expectedVersion,
      mode: 'outcome',
      state: 'AMBIGUOUS',
      taskId: change.taskId,
      contextId: change.contextId,
      agentCardUrl: change.agentCardUrl,
      ...(change.bindUntilMs !== undefined ? { bindUntilMs: change.bindUntilMs } : {}),
      endsLease: change.endsLease,
      held: change.held,
      error: { code: 'LIMIT_EXCEEDED', message: `${message}${said}`, retryable: false, delivery: 'received', limit: overCount ? 'artifactsPerDelegation' : 'artifactBytesPerDelegation' },
    };
  }

  protected applyStatusOnce(ref: DelegationRef, change: StatusChange, binding: TaskBinding): Promise<ApplyStatusOutcome> {
    const { keys, input } = this.statusCall(ref, change, binding);
    return this.call(applyStatusScript, keys, input);
  }

  /** applyStatus-5.lua's keys and input for `change`. */
  private statusCall(ref: DelegationRef, change: StatusChange, binding: TaskBinding) {
    const [row, artifacts] = this.delegationKeys(ref);
    // The index is another Cluster slot: a handover's check is written by the script on one server only.
    const checkHere = !this.redis.isCluster && change.endsLease?.when === 'handover' && change.endsLease.checkAt !== undefined;
    const keys = {
      delegation: row,
      artifacts,
      lease: this.keys.followLease(ref.workflowId, ref.delegationId),
      taskOwner: typeof binding === 'object' ? binding.key : row,
      index: checkHere ? this.keys.unfinished() : row,
    };
    // A copy holding suspects names no version: clearSuspects-1.lua may have deleted them without a bump, and a change
    // reply only sets fields (applyStatus-5.lua FIELDS_UNVERSIONED); the whole row comes back instead (rare: a refused push named a task).
    const held = change.held?.suspects === undefined ? heldVersion(change.held) : undefined;
    return { keys, input: { change, nowMs: this.now(), binding, checkHere, heldVersion: held, artifactBytesPerDelegation: this.artifactBytesPerDelegation, artifactsPerDelegation: this.artifactsPerDelegation } };
  }

  /**
   * Binds `taskId` (of the agent at `agentCardUrl`) to this delegation, kept until `untilMs` (ms since epoch, the
   * attempt deadline; default now) and then as long as a finished workflow (`taskBindingTtlMs`).
   * @throws JournalError TASK_BOUND_ELSEWHERE when another delegation holds it; that refusal is journaled
   *   on this delegation as a protocol error and the delegation is handed to the reconciler (due now).
   */
  async bindTask(ref: DelegationRef, agentCardUrl: string, taskId: string, untilMs?: number): Promise<void> {
    const owner = indexMember(ref.workflowId, ref.delegationId);
    const ttlMs = taskBindingTtlMs(this.retentionMs, this.now(), untilMs);
    // One command (no script): SET … NX GET binds a free task id and answers the holder of a bound one.
    const key = this.keys.taskOwner(agentCardUrl, taskId);
    const holder = ttlMs > 0 ? await this.redis.call('SET', key, owner, 'NX', 'GET', 'PX', ttlMs) : await this.redis.call('SET', key, owner, 'NX', 'GET');
    if (holder === null || holder === owner) return;
    await this.refuseBoundElsewhere(ref, taskId, String(holder));
  }

  /** A task id bound to another delegation: journaled on this one as a protocol error, then TASK_BOUND_ELSEWHERE. */
  private async refuseBoundElsewhere(ref: DelegationRef, taskId: string, holder: string): Promise<never> {
    await this.noteProtocolError(ref, {
      code: 'TASK_BOUND_ELSEWHERE',
      message: `the agent named task ${taskId}, which belongs to delegation ${holder}`,
      retryable: false,
    });
    throw new JournalError('TASK_BOUND_ELSEWHERE', ref, 'applyStatus');
  }

  /**
   * Keeps `taskId`, a task a refused push showed holding our message, among the delegation's pending suspects for the
   * reconciler to read (noteSuspect-1.lua): at most `SUSPECTS_PENDING_MAX` wait, the oldest unread kept. One that cannot
   * be kept is counted as evidence lost (`suspectsLost`): `over-cap` (that many already wait) or `too-long` (an id over
   * `SUSPECT_TASK_ID_MAX` characters, never sent to Redis). A finished row keeps them too (its finished-row reconcile
   * reads them: a holder is a DUPLICATE_TASK, `noteDuplicateTask`; lost ones are told, `noteSuspectsUnchecked`).
   * 'missing': nothing kept (no row: gone, or its finished workflow compacted).
   */
  async noteSuspect(ref: DelegationRef, taskId: string): Promise<'kept' | 'pending' | 'over-cap' | 'too-long' | 'missing'> {
    if (taskId === '') throw new RangeError('noteSuspect: a task id of at least 1 character');
    const tooLong = taskId.length > SUSPECT_TASK_ID_MAX;
    const noted = await this.call(noteSuspectScript, { delegation: this.delegationKeys(ref)[0] }, { taskId: tooLong ? '' : taskId, cap: SUSPECTS_PENDING_MAX });
    if (noted === 'lost') return tooLong ? 'too-long' : 'over-cap';
    return typeof noted === 'string' ? noted : 'missing';
  }

  /**
   * Which of `refs` keep suspect evidence a reconcile must read or decide on (`keepsSuspects`, suspects.ts: suspects
   * pending or counted lost), read as the record reads the two fields. One HMGET each, sent together (auto-pipelining
   * on the journal's connection); a missing row keeps none.
   * @returns per ref, in order: true when its row keeps suspects
   */
  async keepSuspects(refs: readonly DelegationRef[]): Promise<boolean[]> {
    if (refs.length === 0) return [];
    const fields = await Promise.all(refs.map((ref) => this.redis.hmget(this.delegationKeys(ref)[0], 'suspects', 'suspectsLost')));
    return fields.map(([suspects, lost]) => keepsSuspects({ suspects: suspects || undefined, suspectsLost: lost ? Number(lost) : 0 }));
  }

  /**
   * The delegation's pending suspects (noteSuspect-1.lua), oldest first, at most `SUSPECTS_PENDING_MAX`; none when the
   * row or the field is gone, or the field is not a list of task ids (`PendingSuspectsSchema`; `clearSuspects` drops it).
   */
  async pendingSuspects(ref: DelegationRef): Promise<string[]> {
    const raw = await this.redis.hget(this.delegationKeys(ref)[0], 'suspects');
    if (raw === null) return [];
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch {
      return [];
    }
    const ids = PendingSuspectsSchema.safeParse(parsed);
    return ids.success ? ids.data.filter((id) => id !== '' && id.length <= SUSPECT_TASK_ID_MAX).slice(0, SUSPECTS_PENDING_MAX) : [];
  }

  /**
   * Ends one round of suspect reads (clearSuspects-1.lua, each id compare-and-set: a suspect noted meanwhile stays):
   * `read` (read to a conclusion, or our own task) removed; `unread` (the read failed and may succeed later) kept, the
   * round counted, and counted lost after `rounds` rounds in a row; `unreadable` (an answer we cannot accept) counted
   * lost. `at` (ms, default the journal's clock): when the round ended, kept with a counted round
   * (`suspectReadRoundAt`: the next read waits for the backoff from it). Returns what is left: pending ids, suspects
   * lost so far, failed rounds in a row. `claim`: the token the round was claimed with (`claimSuspectRound`; '' when
   * none), whose claim the same script releases if it is still this one.
   */
  async clearSuspects(ref: DelegationRef, round: { read?: readonly string[]; unread?: readonly string[]; unreadable?: readonly string[] }, rounds = 1, at = this.now(), claim = ''): Promise<SuspectsLeft> {
    const input = { rounds, at, claim, read: round.read ?? [], unread: round.unread ?? [], unreadable: round.unreadable ?? [] };
    return this.call(clearSuspectsScript, { delegation: this.delegationKeys(ref)[0] }, input);
  }

  /**
   * Claims the next round of suspect reads of a row before its first GetTask (claimSuspectRound-1.lua), compare-and-set
   * on the round fields the claimer decided from (`seen`: failed rounds, the last one's end, an expired claim it takes
   * over): the claim holds `durationMs` from `now` (ms), or until the round's `clearSuspects` with `token`. A job that
   * sees it in the row does not read (workers policy.ts `suspectReadTurn`). `finished` (default false): the claimer
   * reads a finished row's suspects (finished-suspects.ts); else a row finished meanwhile is not claimed.
   * @returns `claimed`; `finished` (row gone, or finished and `finished` false); `moved` with the row's round fields now
   */
  async claimSuspectRound(ref: DelegationRef, claim: { token: string; now: number; durationMs: number; seen: SuspectRoundFields; finished?: boolean }): Promise<SuspectRoundClaim> {
    return this.call(claimSuspectRoundScript, { delegation: this.delegationKeys(ref)[0] }, claim);
  }

  /**
   * Notes on a finished delegation that another task of the agent holds our message too (noteDuplicateTask-1.lua):
   * `protocolError` with code DUPLICATE_TASK and the two task ids (`ours` undefined: the row finished without a task of
   * ours, so the other task is the only one the agent made for our message), the finished state, result and error
   * unchanged, an earlier protocol error kept (`earlierProtocolErrors`); and a `duplicate-task` entry in the workflow's
   * history naming both tasks (what the views show a person). `record`: the finished row (its step and state go into
   * the entry). Returns `noted`, `already noted` (the row's latest protocol error is this note: a retried read; nothing
   * written), or undefined when the row is not finished (nothing written: the task-read row decides there) or missing.
   */
  async noteDuplicateTask(record: DelegationRef & Partial<Pick<DelegationRecord, 'step' | 'state'>>, taskIds: readonly [ours: string | undefined, other: string]): Promise<'noted' | 'already noted' | undefined> {
    const [ours, other] = taskIds.map((id) => id?.slice(0, 128));
    const message =
      ours === undefined
        ? `task ${other} holds our message (read after this attempt finished without a task of ours): the agent got it and may have done the work`
        : `task ${other} holds our message too (read after task ${ours} finished): the agent may have done the work twice`;
    const error: RecordedError = { code: 'DUPLICATE_TASK', message, retryable: false, delivery: 'received' };
    const nowMs = this.now();
    const entry: HistoryEntryInput = { kind: 'duplicate-task', ...finishedAttemptEntry(record, ours, nowMs), otherTaskId: other! };
    const noted = await this.call(noteDuplicateTaskScript, { delegation: this.delegationKeys(record)[0] }, { error, nowMs, history: historyArgument(entry) });
    return noted === 'noted' || noted === 'already noted' ? noted : undefined;
  }

  /**
   * Tells a person, on a finished delegation, that `lost` suspects (tasks refused pushes showed holding our message)
   * could not be read to a conclusion (noteSuspectsUnchecked-1.lua): the agent may have done the work twice and it
   * could not be checked. Writes a `duplicate-unchecked` entry in the workflow's history (`record`: the finished row;
   * its step, state and task go into the entry), state and outcome unchanged. Returns `noted`, `already noted` (a person
   * was told of this many already: a retried job; nothing written), or undefined when the row is not finished (the
   * reconciler's suspects-unread gives it to a person) or missing.
   * @throws RangeError when `lost` is not a positive integer
   */
  async noteSuspectsUnchecked(record: DelegationRef & Partial<Pick<DelegationRecord, 'step' | 'state' | 'taskId'>>, lost: number): Promise<'noted' | 'already noted' | undefined> {
    if (!Number.isInteger(lost) || lost < 1) throw new RangeError('noteSuspectsUnchecked: at least 1 suspect lost');
    const nowMs = this.now();
    const entry: HistoryEntryInput = { kind: 'duplicate-unchecked', ...finishedAttemptEntry(record, record.taskId?.slice(0, 128), nowMs), lost };
    const noted = await this.call(noteSuspectsUncheckedScript, { delegation: this.delegationKeys(record)[0] }, { lost, nowMs, history: historyArgument(entry) });
    return noted === 'noted' || noted === 'already noted' ? noted : undefined;
  }

  /**
   * Journals a protocol error an agent caused (state unchanged, see noteProtocolError-1.lua) and
   * hands the delegation to the reconciler (due now). Returns false when the delegation is finished or missing.
   */
  async noteProtocolError(ref: DelegationRef, error: RecordedError): Promise<boolean> {
    const noted = await this.call(noteProtocolErrorScript, { delegation: this.delegationKeys(ref)[0] }, { error, nowMs: this.now() });
    if (noted === 'journaled') await this.scheduleCheck(ref, this.now());
    return noted === 'journaled';
  }

  /**
   * Applies one artifact update (append / replace / seal, see applyArtifact-2.lua). The delegation's
   * artifact bytes (artifactByteSize, summed over chunks and pushes) stay within `artifactBytesPerDelegation`, and the
   * artifacts it shows (distinct ids, the row's `artifactCount`) within `artifactsPerDelegation`.
   * @returns 'applied', 'sealed' (dropped after the seal) or 'finished'.
   * @throws JournalError FENCE_LOST, DELEGATION_MISSING; ARTIFACT_LIMIT when this update would pass the
   *   limit: nothing was stored and the attempt ended AMBIGUOUS (LIMIT_EXCEEDED: a person decides, A31).
   */
  async applyArtifact(ref: DelegationRef, fence: number | undefined, update: ArtifactUpdate): Promise<ArtifactOutcome> {
    const [delegation, artifacts] = this.delegationKeys(ref);
    return this.artifactResult(ref, await this.call(applyArtifactScript, { delegation, artifacts }, this.artifactInput(fence, update)));
  }

  /**
   * `applyArtifact`, then `applyStatus` with `change`, in one script and one round trip
   * (`applyArtifactThenStatus`, scripts.ts): for a stream's artifact update and the status update that arrived with
   * it. The outcome is what the two calls one after the other would give; when the artifact update is refused
   * (FENCE_LOST, ARTIFACT_LIMIT, missing) the status change does not run and that refusal is thrown, as
   * `applyArtifact` would. `change` must be fenced like the artifact update and bind no task id (a stream's event
   * for a row that has its task id; one that binds goes through `applyStatus`).
   * @throws JournalError as `applyArtifact`, then as `applyStatus`
   */
  async applyArtifactThenStatus(ref: DelegationRef, fence: number | undefined, update: ArtifactUpdate, change: StatusChange): Promise<{ artifact: ArtifactOutcome; status: StatusChangeResult }> {
    if (change.agentCardUrl !== undefined) throw new TypeError('applyArtifactThenStatus: a change that binds a task id goes through applyStatus');
    change = this.withinLimits(change);
    const { keys, input } = this.statusCall(ref, change, 'unbound');
    const { artifact: artifactReply, status: statusReply } = await this.call(applyArtifactThenStatusScript, keys, { artifact: this.artifactInput(fence, update), status: input });
    const artifact = await this.artifactResult(ref, artifactReply);
    // The artifact update found the delegation gone with its finished workflow (compacted): the composed script stopped
    // there, so the change runs on its own (it finds the same, and gives back the lease it ends, as one by one).
    if (statusReply === undefined) return { artifact, status: await this.statusResult(ref, change, await this.applyStatusOnce(ref, change, 'unbound')) };
    return { artifact, status: await this.statusResult(ref, change, statusReply) };
  }

  /** applyArtifact-2.lua's input for `update`. */
  protected artifactInput(fence: number | undefined, update: ArtifactUpdate) {
    return { fence, update, nowMs: this.now(), artifactBytesPerDelegation: this.artifactBytesPerDelegation, artifactsPerDelegation: this.artifactsPerDelegation };
  }

  /** What applyArtifact-2.lua's decoded reply means. */
  protected async artifactResult(ref: DelegationRef, outcome: ArtifactOutcome | Refused): Promise<ArtifactOutcome> {
    if (isRefused(outcome) && outcome.refused === 'DELEGATION_MISSING' && (await this.isCompacted(ref.workflowId))) return 'finished';
    return unlessRefused(outcome, ref, 'applyArtifact');
  }
}
