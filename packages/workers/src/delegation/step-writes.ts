/**
 * A step's journal writes, the first half of the executor (`apply.ts`): each `Write` the table (`core/transitions.ts`)
 * names, performed with the guard its row names (the run's fence, the version read, or none) and the lease it ends
 * (a follow lease given back by the finishing change, a send lease ended or handed over to a local follow), and
 * counted. What the writes left (`Written`) is what `apply.ts` performs the step's next from. Only apply.ts calls it.
 */
import { isTerminalTaskState, type StreamResponse, type TaskState, type TaskStatusUpdateEvent } from '@durable-a2a/a2a';
import {
  JournalError,
  applyStreamResponse,
  applyStreamResponsePair,
  applyTask,
  applyTaskFinishing,
  applyTerminalFinishing,
  isFinished,
  journalStateOf,
  statusErrorOf,
  type ArtifactThenStatus,
  type DelegationRecord,
  type DelegationRef,
  type FollowLease,
  type ObservationResult,
  type OneStepFinish,
  type QuestionExpiry,
  type StatusChange,
  type StatusChangeResult,
  type WorkflowAtFinish,
  type WorkflowFlags,
} from '@durable-a2a/shared';
import type { WorkerContext } from '../context.ts';
import { notifyQuestionExpired } from '../notify/question.ts';
import type { Scope } from './apply.ts';
import type { Observation } from './core/observation.ts';
import { jitteredCheckTime } from './core/policy.ts';
import type { Guard, Step, Write } from './core/transitions.ts';
import { oneStepFinish } from './finish-step.ts';

type Log = WorkerContext['logger'];

/** What a step's write left: the row, the workflow's flags, the lease handed over, whether the row is finished. */
export interface Written {
  applied: boolean;
  record?: DelegationRecord;
  version?: number;
  workflow?: WorkflowFlags;
  finishedWorkflow?: WorkflowAtFinish;
  followLease?: FollowLease;
  /** The row is finished after the write (it applied a finished state, or found the row finished). */
  finished: boolean;
  /** The state the write applied (events: the last status's). */
  state?: TaskState;
  events?: ObservationResult[];
  foreignTaskId?: string;
  /** What an `expire-question` write found (expireQuestion-1.lua). */
  expiry?: QuestionExpiry['outcome'];
  /** The write finished the one-step workflow too (`finish-step.ts`): what is left of the settle is `afterOneStepFinish`. */
  settled?: { finish: OneStepFinish; removedFromIndex: boolean };
}

/** What a step left when it applied no change of the row's state (no write, or only a note); `apply.ts` tells it by identity. */
export const NOTHING_WRITTEN: Written = { applied: false, finished: false };

/**
 * Performs a step's writes in order. A send lease the scope holds is ended by the answer's transition; when no write
 * ended it (a foreign answer: only a note), it is given back here, before the next step (the reconciler must not wait).
 */
export async function writeStep(ctx: WorkerContext, record: DelegationRecord, step: Step, scope: Scope, observation: Observation): Promise<Written> {
  const writes: readonly Write[] = step.write === undefined ? [] : isWriteList(step.write) ? step.write : [step.write];
  const sendLease = { ended: false };
  let written = NOTHING_WRITTEN;
  try {
    for (const write of writes) {
      // A question answered first ends the step's writes (its outcome must not follow); after the mark, the next
      // write is guarded by the version the mark left.
      if (written.expiry === 'answered') break;
      const current = write.kind === 'snapshot' && written.record ? written.record : written.expiry && written.version !== undefined ? { ...record, version: written.version } : record;
      written = await writeOne(ctx, current, write, scope, observation, sendLease);
    }
  } finally {
    if (scope.sendLease && !sendLease.ended) await scope.sendLease.release();
  }
  return written;
}

const isWriteList = (write: Write | readonly [Write, Write]): write is readonly [Write, Write] => Array.isArray(write);

/** The journal options of a row's guard. */
function guardOf(guard: Guard, record: DelegationRecord, scope: Scope): { fence?: number; expectedVersion?: number } {
  if (guard === 'fence') return scope.fence !== undefined ? { fence: scope.fence } : {};
  if (guard === 'version') return { expectedVersion: record.version };
  return {};
}

async function writeOne(ctx: WorkerContext, record: DelegationRecord, write: Write, scope: Scope, observation: Observation, sendLease: { ended: boolean }): Promise<Written> {
  const ref = refOf(record);
  switch (write.kind) {
    case 'snapshot': {
      const state = write.task.status.state;
      if (isTerminalTaskState(state)) ctx.crashPoint('follow.after-terminal-seen', record.step);
      const options = { ...guardOf(write.guard, record, scope), snapshot: true, held: record, ...(write.bindAgent ? { agentCardUrl: record.agentCardUrl } : {}) };
      // A finished Task ending a one-step workflow (a follow's, not a send's answer): the status and the settle in one call.
      const finish = isTerminalTaskState(state) && !write.bindAgent && observation.kind !== 'send-answered' ? oneStepFinish(ctx, record, journalStateOf(state), statusErrorOf(write.task.status)) : undefined;
      let settled: Written['settled'];
      const result = await withEndingLease(
        ctx,
        ref,
        scope,
        observation,
        sendLease,
        async (endsLease) => {
          const taskOptions = { ...options, ...(endsLease ? { endsLease } : {}) };
          if (!finish) return applyTask(ctx.journal, ref, write.task, taskOptions);
          ctx.crashPoint('follow.before-finish-step', record.step);
          const written = await applyTaskFinishing(ctx.journal, ref, write.task, taskOptions, finish);
          if (written.finished) ctx.crashPoint('follow.after-finish-step', record.step);
          if (written.finished) settled = { finish, removedFromIndex: written.finished.removedFromIndex };
          return written.status;
        },
        state,
      );
      countChange(ctx, result, state, scope.source ?? 'get-task', record);
      return { ...writtenOf(result, state), ...(settled ? { settled } : {}) };
    }
    case 'outcome': {
      const change: StatusChange = {
        ...guardOf(write.guard, record, scope),
        mode: 'outcome',
        state: write.state,
        held: record,
        ...(write.error ? { error: write.error } : {}),
        ...(write.result !== undefined ? { result: write.result } : {}),
        ...(write.contextId ? { contextId: write.contextId } : {}),
      };
      const result = await withEndingLease(ctx, ref, scope, observation, sendLease, (endsLease) => ctx.journal.applyStatus(ref, { ...change, ...(endsLease ? { endsLease } : {}) }), undefined);
      if (result.applied) ctx.metrics.transitions.inc({ state: write.state, source: scope.source ?? 'outcome', agent: ctx.metrics.agentLabels.of(record.agentCardUrl) });
      return { ...writtenOf(result, undefined), finished: isFinished(write.state) && (result.applied || result.reason === 'finished') };
    }
    case 'events':
      return writeEvents(ctx, record, write.responses, scope);
    case 'note-send-error': {
      const current = await ctx.journal.getDelegation(ref);
      if (current?.state !== 'INTENT') return NOTHING_WRITTEN;
      // Never downgrade: once an answer arrived for this messageId, it stays `received`.
      const delivery = current.error?.delivery === 'received' ? 'received' : write.error.delivery;
      const result = await ctx.journal
        .applyStatus(ref, { expectedVersion: current.version, mode: 'outcome', state: 'INTENT', held: current, error: { ...write.error, ...(delivery ? { delivery } : {}) } })
        .catch(() => undefined);
      return result ? writtenOf(result, undefined) : NOTHING_WRITTEN;
    }
    case 'note-unreachable': {
      // Only the send run that tried writes it (its fence); a run fenced out meanwhile writes nothing and stops.
      if (scope.fence === undefined) return NOTHING_WRITTEN;
      const input = { error: write.error, nextTryAt: write.nextTryAt, marked: write.marked };
      const noted = await ctx.journal.noteUnreachable(ref, scope.fence, input).catch((error: unknown) => {
        if (error instanceof JournalError && error.code !== 'DELEGATION_MISSING') return undefined;
        throw error;
      });
      return noted ? { applied: true, finished: false, version: noted.version } : NOTHING_WRITTEN;
    }
    case 'note-slot-wait': {
      // Only the send run that asked writes it (its fence); a run fenced out meanwhile writes nothing and stops.
      if (scope.fence === undefined) return NOTHING_WRITTEN;
      const noted = await ctx.journal.noteSlotWait(ref, scope.fence, write.nextTryAt).catch((error: unknown) => {
        if (error instanceof JournalError && error.code !== 'DELEGATION_MISSING') return undefined;
        throw error;
      });
      return noted ? { applied: true, finished: false, version: noted.version } : NOTHING_WRITTEN;
    }
    case 'note-protocol-error':
      await ctx.journal.noteProtocolError(ref, write.error);
      (scope.log ?? ctx.logger).warn({ ...ref, code: write.error.code, detail: write.error.message }, 'an answer we cannot apply; journaled as a protocol error');
      return NOTHING_WRITTEN;
    case 'note-not-found': {
      const { count } = await ctx.journal.noteNotFound(ref);
      (scope.log ?? ctx.logger).warn({ ...ref, count, call: observation.kind === 'task-not-found' ? observation.call : undefined }, 'the agent says it has no such task');
      return NOTHING_WRITTEN;
    }
    case 'release-for-resend': {
      // A send run (it holds the fence) releases the row as its own mark left it; anyone else from the row it decided on.
      let expectedVersion = record.version;
      if (scope.fence !== undefined) {
        const current = await ctx.journal.getDelegation(ref);
        if (!current || current.fence !== scope.fence) return NOTHING_WRITTEN;
        expectedVersion = current.version;
      }
      await ctx.journal.releaseForResend(ref, expectedVersion, write.contextRefused, write.agentInterface);
      return NOTHING_WRITTEN;
    }
    case 'mark-reply':
      await ctx.journal.markReply(ref, scope.fence ?? 0, write.replyMessageId, write.replyState, write.reason, scope.replyToken ? { token: scope.replyToken } : {});
      if (write.replyState === 'refused') (scope.log ?? ctx.logger).warn({ ...ref, reason: write.reason }, 'the agent refused the reply; the question is open again');
      return NOTHING_WRITTEN;
    case 'expire-question': {
      const reply = write.action === 'answer' ? { reply: { messageId: write.reply.messageId, message: { parts: [{ text: write.reply.text }] } } } : {};
      const expiry = await ctx.journal.expireQuestion(ref, { questionKey: write.questionKey, action: write.action, nowMs: ctx.options.now(), ...reply });
      const log = scope.log ?? ctx.logger;
      if (expiry.outcome === 'expired') {
        ctx.metrics.questionsExpired.inc({ action: write.action });
        log.warn({ ...ref, action: write.action, ...(write.action === 'answer' ? { replyMessageId: write.reply.messageId } : {}) }, 'a question expired unanswered');
        await notifyQuestionExpired(ctx, record, write.questionKey, write.action);
      } else if (expiry.outcome === 'answered') log.info({ ...ref }, 'the question was answered before it expired');
      return { applied: expiry.outcome !== 'answered', finished: false, version: expiry.version, expiry: expiry.outcome };
    }
    case 'record-effect': {
      if (await ctx.journal.recordEffect(ref, write.effect, write.evidence, record.step)) {
        ctx.metrics.verifications.inc({ effect: write.effect });
        (scope.log ?? ctx.logger).info({ ...ref, effect: write.effect, evidence: write.evidence }, 'effect verified');
      }
      return NOTHING_WRITTEN;
    }
  }
}

/**
 * Runs a status change with the lease it ends: the follow lease of a stream or read (`finished`: given back when the
 * row is finished after it), or, for a send's answer, the send lease (`always`, or `handover` to a local follow
 * that can start now). A change that throws gives both tokens' leases back (the script may not have run).
 */
async function withEndingLease(
  ctx: WorkerContext,
  ref: DelegationRef,
  scope: Scope,
  observation: Observation,
  sendLeaseState: { ended: boolean },
  change: (endsLease: StatusChange['endsLease']) => Promise<StatusChangeResult>,
  observed: TaskState | undefined,
): Promise<StatusChangeResult> {
  if (scope.sendLease && observation.kind === 'send-answered' && !sendLeaseState.ended) {
    const sendLease = scope.sendLease;
    // Ended by this change (or, if it throws, released below): not released again after the step.
    sendLeaseState.ended = true;
    const followToken = ctx.localFollowToken?.();
    const endsLease: StatusChange['endsLease'] = followToken
      ? { token: sendLease.token, when: 'handover', to: followToken, durationMs: ctx.options.lockDurationMs, checkAt: jitteredCheckTime(ctx.options.now(), ctx.options.reconcileIntervalMs) }
      : { token: sendLease.token, when: 'always' };
    try {
      return await change(endsLease);
    } catch (error) {
      await sendLease.release();
      if (followToken) await ctx.journal.lease(ref, 'release', followToken).catch(() => undefined);
      throw error;
    }
  }
  const ending = scope.lease?.ending();
  const result = await change(ending?.endsLease);
  if (ending && leftFinished(result, observed)) ending.ended();
  return result;
}

/** Stream (or push) events: one script for an artifact update and the status update after it, else one event. */
async function writeEvents(ctx: WorkerContext, record: DelegationRecord, responses: [StreamResponse] | [StreamResponse, StreamResponse], scope: Scope): Promise<Written> {
  const log = scope.log ?? ctx.logger;
  const last = responses[responses.length - 1]!;
  const state = stateOf(last);
  if (state && isTerminalTaskState(state)) ctx.crashPoint('follow.after-terminal-seen', record.step);
  const ending = scope.lease?.ending();
  const options = { ...(scope.fence !== undefined ? { fence: scope.fence } : {}), ...(ending ? { endsLease: ending.endsLease } : {}), held: record };
  const [first, second] = responses;
  // A terminal status ending a one-step workflow: the status and the settle in one call, when nothing moved since.
  const finish = 'statusUpdate' in last && state && isTerminalTaskState(state) ? oneStepFinish(ctx, record, journalStateOf(state), statusErrorOf(last.statusUpdate.status)) : undefined;
  let results: ObservationResult[];
  let settled: Written['settled'];
  if (finish) {
    ctx.crashPoint('follow.before-finish-step', record.step);
    const written = await applyTerminalFinishing(ctx.journal, record, responses as [{ statusUpdate: TaskStatusUpdateEvent }] | ArtifactThenStatus, options, finish);
    results = written.results;
    if (written.finished) ctx.crashPoint('follow.after-finish-step', record.step);
    if (written.finished) settled = { finish, removedFromIndex: written.finished.removedFromIndex };
  } else if (second !== undefined) results = await applyStreamResponsePair(ctx.journal, record, [first, second] as ArtifactThenStatus, options);
  else results = [await applyStreamResponse(ctx.journal, record, first, { ...options, snapshot: 'task' in first })];
  let finished: boolean;
  if (second !== undefined) {
    const [artifactResult, statusResult] = results as [ObservationResult, ObservationResult];
    noteEvent(ctx, log, record, first, artifactResult);
    if (artifactResult.artifact === 'finished') {
      // The artifact update found the row finished: the status change was refused, but its script gave the lease back.
      if (statusResult.status && leftFinished(statusResult.status, stateOf(second))) ending?.ended();
      return { applied: false, finished: true, events: results };
    }
    noteEvent(ctx, log, record, second, statusResult);
    finished = statusResult.status !== undefined && leftFinished(statusResult.status, state);
  } else {
    const result = results[0]!;
    if (result.foreignTaskId) return { applied: false, finished: false, events: results, foreignTaskId: result.foreignTaskId };
    noteEvent(ctx, log, record, first, result);
    finished = (result.status !== undefined && leftFinished(result.status, state)) || result.artifact === 'finished';
    if (result.status !== undefined && leftFinished(result.status, state)) ending?.ended();
  }
  if (second !== undefined && finished) ending?.ended();
  const status = results.at(-1)?.status;
  const applied = status?.applied === true ? status : undefined;
  return {
    applied: applied !== undefined,
    finished,
    events: results,
    ...(state ? { state } : {}),
    ...(applied?.record ? { record: applied.record } : {}),
    ...(applied?.finishedWorkflow ? { finishedWorkflow: applied.finishedWorkflow } : {}),
    ...(applied?.workflow ? { workflow: applied.workflow } : {}),
    ...(settled ? { settled } : {}),
  };
}

/** Metrics and warnings of one applied event. */
function noteEvent(ctx: WorkerContext, log: Log, record: DelegationRecord, response: StreamResponse, result: ObservationResult): void {
  const state = stateOf(response);
  if (result.contextAnomaly) log.warn({ contextId: result.contextAnomaly, recorded: record.contextId }, 'event names another context (kept by taskId)');
  if (result.artifact === 'sealed') log.warn({ artifactId: 'artifactUpdate' in response ? response.artifactUpdate.artifact.artifactId : undefined }, 'artifact update after lastChunk dropped (agent bug)');
  if (result.status?.applied === false) ctx.metrics.staleObservations.inc({ reason: result.status.reason });
  if (result.status?.applied && state) ctx.metrics.transitions.inc({ state, source: 'stream', agent: ctx.metrics.agentLabels.of(record.agentCardUrl) });
}

const stateOf = (response: StreamResponse): TaskState | undefined =>
  'task' in response ? response.task.status.state : 'statusUpdate' in response ? response.statusUpdate.status.state : undefined;

/**
 * Whether a status change left the row finished: it applied a finished state, or found the row finished. The row as
 * written decides, not the state observed: a snapshot over the artifact limit ends FAILED (LIMIT_EXCEEDED) whatever
 * state it reported. Exactly when applyStatus-5.lua gives an `endsLease: finished` lease back.
 */
function leftFinished(result: StatusChangeResult, observed: TaskState | undefined): boolean {
  if (!result.applied) return result.reason === 'finished';
  return result.record ? isFinished(result.record.state) : observed !== undefined && isTerminalTaskState(observed);
}

function countChange(ctx: WorkerContext, result: StatusChangeResult, state: TaskState, source: string, record: DelegationRecord): void {
  if (result.applied) ctx.metrics.transitions.inc({ state, source, agent: ctx.metrics.agentLabels.of(record.agentCardUrl) });
  else ctx.metrics.staleObservations.inc({ reason: result.reason });
}

/** What a status change left, as `Written` (`state`: the state it applied, when the step knows it). */
export function writtenOf(result: StatusChangeResult, state: TaskState | undefined): Written {
  if (!result.applied) return { applied: false, finished: result.reason === 'finished' };
  return {
    applied: true,
    version: result.version,
    finished: leftFinished(result, state),
    ...(state ? { state } : {}),
    ...(result.record ? { record: result.record } : {}),
    ...(result.workflow ? { workflow: result.workflow } : {}),
    ...(result.finishedWorkflow ? { finishedWorkflow: result.finishedWorkflow } : {}),
    ...(result.followLease ? { followLease: result.followLease } : {}),
  };
}

/** The delegation's ref alone (a record carries many more fields). */
export const refOf = (record: DelegationRef): DelegationRef => ({ workflowId: record.workflowId, delegationId: record.delegationId });
