/**
 * The terminal status of a one-step workflow's only delegation and the settle that finishes the workflow, in one
 * script and one round trip (finishStep-5.lua), where the worker decided before the call that the settle would be a
 * plain finish (a step, no verifier, no push config to end, `removesIndexWithFinish`, a decision of 'complete' or
 * 'fail' with nothing held). The compacted record's text is built here before the call, from the rows the worker
 * holds and the values the status change would write (`terminalRow`); the script writes only when every row is as
 * the text says. Otherwise it writes nothing and the change goes through `applyStatus` here, the settle after it as
 * before (the caller's two calls).
 */
import { storedArtifact } from '@durable-a2a/a2a/pure';
import { parseAgentTimestamp } from './clock.ts';
import type { DelegationRef } from './core.ts';
import { withArtifactsText, type StoredRow } from './compacted-record-text.ts';
import { changedRow, heldVersion } from './held-rows.ts';
import { indexMember } from './keys.ts';
import { encodeRecordedError, type DelegationRecord } from './record.ts';
import { arrayReply, defineScript, integerReply, stringReply, ScriptReplyError } from './scripts.ts';
import { FINISHED_STATES, type WorkflowState } from './states.ts';
import { JournalStatus, type StatusChange, type StatusChangeResult } from './status.ts';
import { applyArtifactScript, type ArtifactOutcome, type ArtifactUpdate, type ApplyArtifactInput } from './status-scripts.ts';
import { storedRowOf } from './stored-rows.ts';
import { suspectsPending } from './suspects.ts';
import { encodeWorkflowPatch, type WorkflowPatch, type WorkflowRecord } from './workflow-record.ts';
import { recordTextArguments } from './workflows.ts';

/** What the settle would write: the workflow as the worker holds it (a read) and the finishing decision's change. */
export interface OneStepFinish {
  /** The workflow row as the journal handed it out (its stored row remembered), RUNNING, at the version the decision read. */
  workflow: WorkflowRecord;
  /** The decision's change: a finished state (and the failure's reasons). */
  patch: WorkflowPatch & { state: WorkflowState };
}

/**
 * What `finishStep` did: `finished` (the delegation and its workflow are finished and compacted, the index entries
 * dropped; `record`: the delegation as the status change left it; `removedFromIndex`: its own entry was there, so
 * this caller observes its duration), or not (`status`: what `applyStatus` of the change did; the caller settles as
 * without this call). `artifact`: the artifact update's outcome when one came with the status.
 */
export type FinishStepResult =
  | { finished: true; record: DelegationRecord; removedFromIndex: boolean; artifact?: ArtifactOutcome }
  | { finished: false; status: StatusChangeResult; artifact?: ArtifactOutcome };

/**
 * finishStep-5.lua's input (see its header): `artifacts` 'given' (a snapshot's) or 'add' (one update added to a row
 * without artifacts) when `recordText`'s delegation text holds them (`withArtifactsText`), 'stored' when the script
 * reads them.
 */
interface FinishStepInput {
  fence: number | undefined;
  leaseToken: string;
  nowMs: number;
  retentionMs: number;
  state: WorkflowState;
  workflowVersion: number;
  members: readonly [string, string];
  artifacts: 'stored' | 'given' | 'add';
  recordText: readonly string[];
}

const finishStepArguments = (input: FinishStepInput): (string | number)[] => [
  input.fence ?? '',
  input.leaseToken,
  input.nowMs,
  input.retentionMs,
  // The compacted record on the change channel (one server only, as `updateWorkflow` publishes it there).
  '1',
  input.state,
  input.workflowVersion,
  ...input.members,
  input.artifacts === 'stored' ? '' : input.artifacts,
  ...input.recordText,
];

/** finishStep-5.lua's reply: done (and whether the delegation's index entry was there), or nothing written. */
type FinishStepOutcome = { done: true; removed: boolean } | { done: false; reason: 'changed' | 'large' };

function decodeFinishStep(reply: unknown, script: string): FinishStepOutcome {
  const [code, detail] = arrayReply(reply, script);
  if (integerReply(code, script) === 1) return { done: true, removed: integerReply(detail, script) > 0 };
  const reason = stringReply(detail, script);
  if (reason !== 'changed' && reason !== 'large') throw new ScriptReplyError(script, reply);
  return { done: false, reason };
}

const FINISH_STEP_KEYS = ['delegation', 'artifacts', 'lease', 'index', 'updated'] as const;

/** finishStep-5.lua: the terminal status and the finishing settle of a one-step workflow, or nothing. */
const finishStepScript = defineScript({ name: 'finishStep', keys: FINISH_STEP_KEYS, encode: finishStepArguments, decode: decodeFinishStep });

/** applyArtifact-2.lua, then finishStep-5.lua unless the artifact update was refused (scripts.ts `COMPOSED`). */
const applyArtifactThenFinishStepScript = defineScript({
  name: 'applyArtifactThenFinishStep',
  keys: FINISH_STEP_KEYS,
  encode: (input: { artifact: ApplyArtifactInput; finish: FinishStepInput }) => {
    const first = applyArtifactScript.encode(input.artifact);
    return [first.length, ...first, ...finishStepArguments(input.finish)];
  },
  decode: (reply, script) => {
    const [artifact, finish] = arrayReply(reply, script);
    return { artifact: applyArtifactScript.decode(artifact, script), ...(finish === undefined ? {} : { finish: decodeFinishStep(finish, script) }) };
  },
});

/**
 * The delegation row as applyStatus-5.lua would leave `stored` (the row at the version the caller holds) with the
 * stream's (or a snapshot's: its artifacts replace the stored ones) terminal `change` applied at `nowMs`, after `artifactApplied` (an artifact update in the same call: its
 * version bump; its `updatedAt` is written again by the change, its `artifactBytes` is no part of the record);
 * undefined when the script's path is not this simple one (then nothing is predicted and the two calls run). The
 * fields, values and rules mirror the script's `set`: a change of the script is a change here
 * (test/journal/finish-step.test.ts compares both with the two calls).
 */
export function terminalRow(stored: StoredRow, change: StatusChange, nowMs: number, artifactApplied: boolean): StoredRow | undefined {
  if (change.mode === 'outcome' || !FINISHED_STATES.has(change.state) || change.agentCardUrl !== undefined || (artifactApplied && change.artifacts !== undefined)) return undefined;
  if (change.expectedVersion !== undefined || (change.endsLease !== undefined && change.endsLease.when !== 'finished')) return undefined;
  const current = stored.state;
  if (current === undefined || FINISHED_STATES.has(current as never) || !stored.taskId) return undefined;
  // Suspects pending: the settle waits for their reads (finishStep-5.lua refuses too; settle.ts).
  if (suspectsPending({ suspects: stored.suspects })) return undefined;
  if (change.taskId !== undefined && change.taskId !== stored.taskId) return undefined;
  const set: Record<string, string> = { state: change.state, updatedAt: String(nowMs), notFoundCount: '0', firstNotFoundAt: '' };
  // Every finished state outranks every unfinished one: the timestamp is written, or cleared.
  const timestampMs = parseAgentTimestamp(change.statusTimestamp);
  set.statusTimestampMs = Number.isNaN(timestampMs) ? '' : String(timestampMs);
  set.statusTimestamp = Number.isNaN(timestampMs) ? '' : (change.statusTimestamp ?? '');
  if (change.contextId && !stored.contextId) set.contextId = change.contextId;
  set.question = '';
  if (change.statusMessage) set.statusMessage = JSON.stringify(change.statusMessage);
  else if (stored.statusMessage) set.statusMessage = '';
  if (change.result !== undefined) set.result = JSON.stringify(change.result);
  if (change.error) set.error = encodeRecordedError(change.error);
  if (change.artifacts) set.artifactBytes = String(change.artifacts.reduce((sum, artifact) => sum + storedArtifact(artifact).bytes, 0));
  set.finishedAt = String(nowMs);
  set.version = String((Number(stored.version) || 0) + (artifactApplied ? 2 : 1));
  return { ...stored, ...set };
}

/**
 * The fields of `row` whose text differs from `stored`'s: what the change writes. `held` already holds every other
 * field parsed from the same text, so merging only these gives the record a merge of the whole row gives, without
 * parsing the unchanged JSON fields (the message, the interface) again.
 */
function fieldsChanged(stored: StoredRow, row: StoredRow): Record<string, string> {
  const changed: Record<string, string> = {};
  for (const field in row) if (row[field] !== stored[field]) changed[field] = row[field]!;
  return changed;
}

/** Journal method for the one-step finish (see the module header). */
export class JournalFinishStep extends JournalStatus {
  /**
   * Applies the stream's terminal status `change` (after the artifact update `artifact` that came with it, when
   * given, as `applyArtifactThenStatus`) and finishes the one-step workflow as `finish` says, in one script, when
   * the rows are still those `change.held` and `finish.workflow` hold; else the change alone (`applyStatus`: its
   * result in `status`) and the caller settles as without this call. Call it only where the settle after the change
   * would be `finishWorkflow` with `finish.patch` and nothing before it (the worker's decision, made before the call).
   * `change.held` must be the record the journal handed out (its version and stored row); a follow lease the change
   * ends (`endsLease: finished`) is released as the change would release it.
   * @throws JournalError as `applyStatus` (and as `applyArtifact` with `artifact`)
   */
  async finishStep(ref: DelegationRef, change: StatusChange, finish: OneStepFinish, artifact?: { fence: number | undefined; update: ArtifactUpdate }): Promise<FinishStepResult> {
    const nowMs = this.now();
    change = this.withinLimits(change);
    // An artifact update that adds the row's first artifact goes into the finish's record from its arguments (never
    // written); any other goes first in the same script (applyArtifactThenFinishStep).
    const added = artifact && this.addsFirstArtifact(change, artifact) ? artifact.update : undefined;
    const input = this.finishInput(ref, change, finish, nowMs, artifact !== undefined, added);
    if (!input) return this.withoutFinish(ref, change, artifact);
    const keys = {
      delegation: this.keys.delegation(ref.workflowId, ref.delegationId),
      artifacts: this.keys.artifacts(ref.workflowId, ref.delegationId),
      lease: this.keys.followLease(ref.workflowId, ref.delegationId),
      index: this.keys.unfinished(),
      updated: this.keys.updated(),
    };
    let outcome: FinishStepOutcome | undefined;
    let artifactOutcome: ArtifactOutcome | undefined;
    if (artifact && !added) {
      const reply = await this.call(applyArtifactThenFinishStepScript, keys, { artifact: this.artifactInput(artifact.fence, artifact.update), finish: input.script });
      artifactOutcome = await this.artifactResult(ref, reply.artifact);
      outcome = reply.finish;
    } else outcome = await this.call(finishStepScript, keys, input.script);
    if (outcome?.done) return { finished: true, record: input.record, removedFromIndex: outcome.removed, ...(added ? { artifact: 'applied' as const } : artifactOutcome ? { artifact: artifactOutcome } : {}) };
    // Nothing written, the artifact update either: both as the two calls' first, in one call.
    if (added) return this.withoutFinish(ref, change, artifact);
    // Nothing of the change written: the change alone, as the two calls' first (an applied artifact update moved the
    // row's version past `held`: the whole row comes back).
    const status = await this.statusResult(ref, change, await this.applyStatusOnce(ref, change, 'unbound'));
    return { finished: false, status, ...(artifactOutcome ? { artifact: artifactOutcome } : {}) };
  }

  /** `applyStatus` (or `applyArtifactThenStatus`) of the change, when the finish cannot be built here. */
  private async withoutFinish(ref: DelegationRef, change: StatusChange, artifact: { fence: number | undefined; update: ArtifactUpdate } | undefined): Promise<FinishStepResult> {
    if (!artifact) return { finished: false, status: await this.applyStatus(ref, change) };
    const both = await this.applyArtifactThenStatus(ref, artifact.fence, artifact.update, change);
    return { finished: false, status: both.status, artifact: both.artifact };
  }

  /**
   * Whether `artifact` adds the first artifact of the row `change.held` holds, as applyArtifact-2.lua would apply it:
   * the stream's fence, no artifact stored (no `artifactBytes`: every artifact write sets it), within the limit.
   */
  private addsFirstArtifact(change: StatusChange, artifact: { fence: number | undefined; update: ArtifactUpdate }): boolean {
    const stored = change.held && storedRowOf(change.held);
    return stored !== undefined && stored.artifactBytes === undefined && artifact.fence === change.fence && storedArtifact(artifact.update.artifact).bytes <= this.artifactBytesPerDelegation;
  }

  /**
   * finishStep-5.lua's input and the delegation as the change leaves it, or undefined when the text cannot be built.
   * `added`: an artifact update the script adds (`addsFirstArtifact`), read into the record from its arguments.
   */
  private finishInput(ref: DelegationRef, change: StatusChange, finish: OneStepFinish, nowMs: number, artifactApplied: boolean, added?: ArtifactUpdate): { script: FinishStepInput; record: DelegationRecord } | undefined {
    const held = change.held;
    if (!this.removesIndexWithFinish || !held || heldVersion(held) === undefined) return undefined;
    // A COMPLETED change whose status message was cut (`overLimitIfResult`): whether it is the result (no artifacts
    // after the change: AMBIGUOUS) is applyStatus-5.lua's to decide alone, with the row's artifacts; the change goes
    // alone and the caller settles after it (finishStep-5.lua predicts no state but the change's).
    if (change.overLimitIfResult) return undefined;
    const stored = storedRowOf(held);
    const workflowRow = storedRowOf(finish.workflow);
    if (!stored || !workflowRow || workflowRow.workflowId !== ref.workflowId || workflowRow.version !== String(finish.workflow.version) || finish.workflow.state !== 'RUNNING') return undefined;
    if (stored.delegationId !== ref.delegationId || stored.version !== String(held.version)) return undefined;
    const row = terminalRow(stored, change, nowMs, artifactApplied);
    if (!row) return undefined;
    const recordText = recordTextArguments(ref.workflowId, workflowRow, encodeWorkflowPatch(finish.patch), nowMs, [{ id: ref.delegationId, row }]);
    const record = recordText.length > 0 ? changedRow(held, fieldsChanged(stored, row)) : undefined;
    if (!record) return undefined;
    // The artifacts the script would read into the record from its arguments, in the delegation's text here (its last).
    const artifacts = added ? [storedArtifact(added.artifact)] : change.artifacts?.map((stored) => storedArtifact(stored));
    if (artifacts) recordText.push(withArtifactsText(recordText.pop()!, artifacts, added !== undefined));
    return {
      record,
      script: {
        artifacts: added ? 'add' : artifacts ? 'given' : 'stored',
        fence: change.fence,
        leaseToken: change.endsLease?.token ?? '',
        nowMs,
        retentionMs: this.retentionMs,
        state: finish.patch.state,
        workflowVersion: finish.workflow.version,
        members: [indexMember(ref.workflowId, ref.delegationId), indexMember(ref.workflowId, '*')],
        recordText,
      },
    };
  }
}
