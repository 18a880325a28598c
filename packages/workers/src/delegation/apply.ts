/**
 * The delegation core's one executor: `apply(observation) → journal transition → next`. Every adapter that talks to
 * an agent (`io/`) and every piece of process machinery (`runs/`) hands what it observed to `apply`; nothing else in
 * the workers calls the journal's transitions, settles, parks or hands a follow lease over. `apply`:
 *   1. asks the table (`core/transitions.ts`) for the step: `{ write?, next }`;
 *   2. performs the write with the guard the row names (the run's fence, the version read, or none), the lease it
 *      ends (a follow lease given back by the finishing change, a send lease ended or handed over to a local
 *      follow: only the executor knows whether `next` continues in this process), and counts it;
 *   3. performs `next`: exactly one per step. `route` and `progress` are resolved from the row as written
 *      (`core/policy.ts` routeOf, progressNext); `read-once` and `search` ask `io/` and apply what it observed,
 *      so a chain of steps is bounded by the table (a full read never asks for another read).
 * The workflow's decision closes held intents through this module too (`closeHeldIntent`, passed to it as a port:
 * the decision runs below the executor, apply → settle → advance). docs/delegation-core.md describes the table and
 * where a new behaviour goes.
 */
import { createHash } from 'node:crypto';
import { answerFault, isRuntimeFault, isTerminalTaskState, type StreamResponse, type TaskState, type TaskStatusUpdateEvent } from '@durable-a2a/a2a';
import {
  JournalError,
  applyStreamResponse,
  applyStreamResponsePair,
  applyTask,
  applyTaskFinishing,
  applyTerminalFinishing,
  enqueueCancel,
  enqueueFollow,
  enqueueReconcile,
  enqueueSend,
  enqueueSendTry,
  isAwaitingAnswer,
  isFinished,
  journalStateOf,
  statusErrorOf,
  withRefusal,
  type ArtifactThenStatus,
  type DelegationRecord,
  type DelegationRef,
  type DelegationView,
  type FollowLease,
  type ObservationResult,
  type OneStepFinish,
  type QuestionExpiry,
  type StatusChange,
  type StatusChangeResult,
  type WorkflowAtFinish,
  type WorkflowFlags,
  type RunMark,
} from '@durable-a2a/shared';
import type { WorkerContext } from '../context.ts';
import { notifyQuestionExpired, notifyQuestionOpened } from '../notify/question.ts';
import { requestWorkflowCancel } from '../workflow/cancel.ts';
import type { FollowPlan, Next, NextKind } from './core/next.ts';
import { unprocessedAnswer, type HeldBack, type Observation } from './core/observation.ts';
import { jitteredCheckTime, mayWantCancel, progressNext, questionOpen, routeOf } from './core/policy.ts';
import { transition, type Guard, type Step, type Write } from './core/transitions.ts';
import { handleAuthRequired } from './auth.ts';
import { oneStepFinish } from './finish-step.ts';
import { readTask, unacceptableOf } from './io/read.ts';
import { searchForMessage } from './io/search.ts';
import { park } from './park.ts';
import { scheduleQuestionMoment } from './question-schedule.ts';
import { attemptDeadlineAt } from './attempt-step.ts';
import { registerPushConfig, wantsPushRegistration } from './push-registration.ts';
import { afterOneStepFinish, settle } from './settle.ts';

type Log = WorkerContext['logger'];

/**
 * The follow lease a stream (or a read in its place) holds: the status change that leaves the row finished
 * releases it in the same script (`StatusChange.endsLease`). `ending()` is called just before such a change is
 * issued; its `ended()` once the change left the row finished, so the holder stops renewing it.
 */
export interface StreamLease {
  ending(): { endsLease: NonNullable<StatusChange['endsLease']>; ended(): void };
}

/** The send lease a send run holds while it waits for the answer: the answer's transition ends it (or hands it to a local follow). */
export interface SendLease {
  token: string;
  /** Gives it back on a path without a transition that ends it; never rejects. */
  release(): Promise<unknown>;
}

/** Where an observation applies and what the caller holds (all optional). */
export interface Scope {
  /** The run's fencing token: writes whose row says `guard: 'fence'` compare with it. */
  fence?: number;
  /** The send run's own mark (`markSending`): a marked try noted unreachable clears it only while the row is as it left it. */
  mark?: RunMark;
  /** The follow lease this run holds (a stream, a slow poll). */
  lease?: StreamLease;
  /** The send lease this run holds (a SendMessage answer). */
  sendLease?: SendLease;
  /** A follow lease an earlier transition handed over for a local follow: passed to it, or given back. */
  followLease?: FollowLease;
  /** The reply's 'sending' lease token (`mark-reply`). */
  replyToken?: string;
  /** The run's logger (job and ids bound). */
  log?: Log;
  /** Metrics label of the transitions this run applies (`stream`, `get-task`, `send`, `reconcile`, …). */
  source?: string;
  /** The send job's place among its tenant's sends (`JobRun.place`): a next try (`send-later`) is added there again. */
  place?: number;
}

/** What `apply` did. */
export interface Applied {
  /** The next that was performed last (`continue`: the stream that brought the observation keeps being read). */
  next: NextKind;
  /** The row as the step's write left it (when the script returned it). */
  record?: DelegationRecord;
  /** Set when a stream event named another task: nothing of it was applied (the stream is a protocol error). */
  foreignTaskId?: string;
  /** What the events' write returned (stream events, push). */
  events?: ObservationResult[];
}

/**
 * Applies one observation to a delegation (see the module header). `record`: the row as the caller last read or
 * wrote it. Throws journal errors (FENCE_LOST, VERSION_CONFLICT, Redis down) and nothing an agent caused: a fault of
 * the runtime while applying an answer (`isRuntimeFault`) is applied as that answer's failure (`unprocessedAnswer`).
 */
export async function apply(ctx: WorkerContext, record: DelegationRecord, observation: Observation, scope: Scope = {}): Promise<Applied> {
  let step: Step;
  let written: Written;
  try {
    step = transition(record, observation, ctx.policy);
    written = await writeStep(ctx, record, step, scope, observation);
  } catch (error) {
    // The agent's answer could not be processed (a stack overflow encoding it for the journal, a shape the code did
    // not foresee): it arrived, so its failure is applied as an observation (delivery received), never thrown with the
    // answer's delivery unrecorded (the reconciler would read "maybe sent" + an empty search as absence and resend).
    const unprocessed = isRuntimeFault(error) ? unprocessedAnswer(observation, unacceptableOf(answerFault(error, `the ${observation.kind} answer`, ctx.options.limits.jsonDepth))) : undefined;
    if (unprocessed) {
      (scope.log ?? ctx.logger).warn({ ...refOf(record), err: error, observation: observation.kind }, 'an answer could not be processed; applied as an unusable answer');
      return apply(ctx, (await ctx.journal.getDelegation(refOf(record))) ?? record, unprocessed, scope);
    }
    // The write bound a task the journal binds to another delegation (refused, journaled as a protocol error): the
    // `task-bound-elsewhere` row decides from the row as it is now.
    if (!(error instanceof JournalError && error.code === 'TASK_BOUND_ELSEWHERE') || observation.kind === 'task-bound-elsewhere') throw error;
    const current = await ctx.journal.getDelegation(refOf(record));
    if (!current) throw error;
    const reason = current.protocolError?.code === 'TASK_BOUND_ELSEWHERE' ? current.protocolError.message : 'the agent named a task that belongs to another delegation';
    return apply(ctx, current, { kind: 'task-bound-elsewhere', reason }, scope);
  }
  if (written.applied && isAdoption(step, observation)) ctx.metrics.adoptions.inc();
  if (step.warning) (scope.log ?? ctx.logger).warn({ ...refOf(record), taskId: record.taskId, reason: step.warning }, 'a result kept from a partial view');
  // A side duty once the task is bound: the push config is checked (and created) before the next step runs, so a
  // Delete at the end (settle) never overtakes it in this process; the row handed on carries what it journaled.
  const current = written.record ?? record;
  const registered = wantsPushRegistration(ctx, current) ? await registerPushConfig(ctx, current, scope.log) : undefined;
  if (registered && written.record) return performNext(ctx, record, step.next, scope, { ...written, record: { ...written.record, ...registered } }, observation);
  return performNext(ctx, registered ? { ...record, ...registered } : record, step.next, scope, written, observation);
}

/**
 * True when the step bound a task we did not learn from our own SendMessage's answer: one found by our messageId
 * (the reconciler's search, a search while the agent held the send) or read in full after such a search. Counted
 * once, here, only when the write applied (two reconcilers finding the same task adopt it once).
 */
function isAdoption(step: Step, observation: Observation): boolean {
  const write = step.write;
  if (write === undefined || Array.isArray(write)) return false;
  const single = write as Exclude<Step['write'], undefined | readonly unknown[]>;
  if (single.kind !== 'snapshot' || !single.bindAgent) return false;
  return observation.kind === 'search-result' || observation.kind === 'task-read' || (observation.kind === 'send-answered' && observation.via === 'search-while-held');
}

/** Applies `observation` to the delegation `ref` as it is in the journal now (read first); `missing` when it is gone. */
export async function applyToRef(ctx: WorkerContext, ref: DelegationRef, observation: Observation, scope: Scope = {}): Promise<Applied | 'missing'> {
  const record = await ctx.journal.getDelegation(ref);
  if (!record) {
    await ctx.journal.removeFromIndex(ref);
    return 'missing';
  }
  return apply(ctx, record, observation, scope);
}

/**
 * Closes a held intent whose step will now never run (the workflow failed, was canceled or compensates): the
 * `workflow-stopped` observation, CANCELED `NEVER_SENT` compare-and-set on the version read; nothing follows (the
 * decision calling it is the settle). The workflow's decision (`workflow/advance.ts`) takes it as its port
 * `CloseHeldIntent`, matched by shape: a type import of advance.ts here would let dependency-cruiser report the short
 * type-only loop instead of a real cycle through it (it names one cycle per import).
 */
export async function closeHeldIntent(ctx: WorkerContext, record: DelegationRecord): Promise<void> {
  await apply(ctx, record, { kind: 'workflow-stopped' });
}

// ---------------------------------------------------------------------------------------------------------------
// Next

async function performNext(ctx: WorkerContext, record: DelegationRecord, next: Next, scope: Scope, written: Written, observation: Observation): Promise<Applied> {
  const ref = refOf(record);
  const log = scope.log ?? ctx.logger;
  const done = (kind: NextKind, extra: Partial<Applied> = {}): Applied => ({ next: kind, ...(written.record ? { record: written.record } : {}), ...(written.events ? { events: written.events } : {}), ...extra });
  // A follow lease handed over by this write (or an earlier one) goes to the follow `route` starts, or back.
  const followLease = written.followLease ?? scope.followLease;
  if (written.settled && written.record) {
    // The write finished the one-step workflow too: what is left of the settle, whatever the table's next was.
    await giveBack(ctx, ref, followLease);
    await afterOneStepFinish(ctx, written.record, written.settled.finish, written.settled.removedFromIndex);
    return done('settle');
  }
  switch (next.kind) {
    case 'continue':
      return continueStream(ctx, record, scope, written, done);
    case 'route':
      if (written.defaultAnswerRefused) return refusedDefaultAnswer(ctx, ref, scope, followLease);
      if (written.unsentRefused) return performNext(ctx, record, { kind: 'ask-reconciler' }, scope, written, observation);
      return done(await routeRow(ctx, ref, written.applied ? written.record : undefined, next.plan ?? {}, written, followLease, record));
    case 'progress':
      return done(await progress(ctx, record, scope, written, next));
    case 'settle':
      await giveBack(ctx, ref, followLease);
      await settle(ctx, ref, closeHeldIntent, isFinished(record.state) ? record : undefined);
      return done('settle');
    case 'park':
      await giveBack(ctx, ref, followLease);
      return done(await parkRow(ctx, written.record ?? record, scope, record));
    case 'follow':
      // A delayed follow moves the reconciler's next check past its delay (it is not a lost delegation meanwhile).
      if ((next.plan.delayMs ?? 0) > 0) await ctx.journal.scheduleCheck(ref, ctx.options.now() + next.plan.delayMs! + ctx.options.reconcileIntervalMs);
      return done(await follow(ctx, ref, next.plan, written.record ?? record, followLease));
    case 'slow-poll':
      await giveBack(ctx, ref, followLease);
      await ctx.journal.scheduleCheck(ref, ctx.options.now() + next.delayMs + ctx.options.reconcileIntervalMs);
      return done(await routeRow(ctx, ref, written.record ?? record, { resubscription: next.resubscription, delayMs: next.delayMs }, written, undefined, record));
    case 'read-once': {
      await giveBack(ctx, ref, followLease);
      const current = written.record ?? record;
      // A read that decides about a stream's held-back finished status is part of that stream's follow (its fence).
      const cycle = next.taskId === undefined && current.taskId !== undefined && (cycleOf(observation) || next.heldBack !== undefined);
      const observed = await readTask(ctx, current, { why: next.why, ...(next.taskId ? { taskId: next.taskId } : {}), ...(next.refused ? { refused: next.refused } : {}), ...(next.afterLiveStream ? { afterLiveStream: true } : {}), ...(next.foundAgain ? { foundAgain: true } : {}), cycle, ...(scope.log ? { log: scope.log } : {}) });
      return apply(ctx, current, withHeldBack(observed, next.heldBack), readScope(scope));
    }
    case 'search': {
      await giveBack(ctx, ref, followLease);
      const current = written.record ?? record;
      const observed = await searchForMessage(ctx, current, next.purpose, next.why);
      return apply(ctx, current, withHeldBack(observed, next.heldBack), readScope(scope));
    }
    case 'ask-reconciler': {
      await giveBack(ctx, ref, followLease);
      const dueAt = next.dueAt ?? ctx.options.now();
      await ctx.journal.scheduleCheck(ref, dueAt);
      await enqueueReconcile(ctx.queues, ref, { dueAt, now: ctx.options.now() });
      return done('ask-reconciler');
    }
    case 'resend':
      await enqueueSend(ctx.queues, ref, record.resendCount + 1, undefined, next.delayMs ?? 0, { priority: record.priority });
      log.info({ ...ref, contextRefused: next.contextRefused }, 'our message was proven absent at the agent; resending with the same messageId');
      return done('resend');
    case 'needs-person': {
      // Guarded by the run's fence, else by the version the step started from when the step wrote nothing; evidence
      // that holds whoever wrote since (`anyRow`) only by the row's being unfinished.
      // (After a note of a refused result, the version the note left when it was the only write since the read.)
      const guard = next.anyRow ? {} : scope.fence !== undefined ? { fence: scope.fence } : written === NOTHING_WRITTEN ? { expectedVersion: record.version } : written.noteVersion !== undefined ? { expectedVersion: written.noteVersion } : {};
      return done(await needsPerson(ctx, record, next, scope, guard, followLease));
    }
    case 'cancel':
      await giveBack(ctx, ref, followLease);
      await enqueueCancel(ctx.queues, ref, { by: 'late', at: ctx.options.now() });
      return done('cancel');
    case 'cancel-workflow':
      // Not when the question was answered first (the expiry was refused); then the row is routed as it is now
      // (a canceled workflow's row gets its CancelTask there).
      if (written.expiry !== 'answered') await requestWorkflowCancel(ctx, ref.workflowId, next.why);
      return done(await routeRow(ctx, ref, undefined, {}, NOTHING_WRITTEN, followLease, record));
    case 'send-later':
      // Written by this run (else another run owns the row): the reconciler's check moves past the try, then the try.
      await giveBack(ctx, ref, followLease);
      if (!written.applied) return done('nothing');
      await ctx.journal.scheduleCheck(ref, next.atMs + ctx.options.sendSettleMs);
      await enqueueSendTry(ctx.queues, ref, record.resendCount, next.atMs, Math.max(0, next.atMs - ctx.options.now()), { priority: record.priority, place: scope.place });
      return done('send-later');
    case 'check-later':
      await giveBack(ctx, ref, followLease);
      await ctx.journal.scheduleCheck(ref, next.atMs);
      return done('check-later');
    case 'retry':
    case 'nothing':
      await giveBack(ctx, ref, followLease);
      return done(next.kind);
  }
}

/**
 * An expiry whose default answer was journaled refused (the answer index is full: expireQuestion-2.lua): the row read
 * back gets the `reply-refused` observation, whose row hands an expired question's refused answer to a person (as
 * `checkQuestionLife` does after a crash before it).
 */
async function refusedDefaultAnswer(ctx: WorkerContext, ref: DelegationRef, scope: Scope, followLease: FollowLease | undefined): Promise<Applied> {
  await giveBack(ctx, ref, followLease);
  const current = await ctx.journal.getDelegation(ref);
  if (!current?.replyMessageId) return { next: 'nothing' };
  return apply(ctx, current, { kind: 'reply-refused', replyMessageId: current.replyMessageId, message: current.replyError ?? '' }, { ...(scope.log ? { log: scope.log } : {}), source: 'question' });
}

/** A read's or search's observation carrying the stream's held-back finished status it decides about (when there is one). */
function withHeldBack(observed: Observation, heldBack: HeldBack | undefined): Observation {
  if (!heldBack) return observed;
  return observed.kind === 'task-read' || observed.kind === 'read-failed' || observed.kind === 'task-not-found' || observed.kind === 'search-result' ? { ...observed, heldBack } : observed;
}

/** Whether a read made for this observation is part of a follow cycle (the progress rule applies). */
const cycleOf = (observation: Observation): boolean =>
  observation.kind === 'stream-ended' || observation.kind === 'stream-failed' || observation.kind === 'task-read' || observation.kind === 'read-failed' || observation.kind === 'task-not-found' || observation.kind === 'search-result';

/** A read or search made by a step keeps the run's fence and follow lease, not a send lease or handed-over lease. */
const readScope = (scope: Scope): Scope => ({
  ...(scope.fence !== undefined ? { fence: scope.fence } : {}),
  ...(scope.lease ? { lease: scope.lease } : {}),
  ...(scope.log ? { log: scope.log } : {}),
  source: 'get-task',
});

/** The row after stream events (or a streaming send's first answer): settle, park, or keep reading. */
async function continueStream(ctx: WorkerContext, record: DelegationRecord, scope: Scope, written: Written, done: (kind: NextKind, extra?: Partial<Applied>) => Applied): Promise<Applied> {
  const ref = refOf(record);
  if (written.foreignTaskId) return done('continue', { foreignTaskId: written.foreignTaskId });
  if (written.finished) {
    // A finished row takes no more events (a resent final Task, late artifacts: spec §11.7): settle now, as written.
    const known = written.record && isFinished(written.record.state) ? written.record : undefined;
    await giveBack(ctx, ref, written.followLease);
    await settle(ctx, ref, closeHeldIntent, known, known ? written.finishedWorkflow : undefined);
    return done('settle');
  }
  if (written.followLease) await giveBack(ctx, ref, written.followLease);
  if (written.applied && written.state === 'TASK_STATE_AUTH_REQUIRED') {
    // Keep the stream open (the agent may resume on its own); the handler runs beside it. A new question's next
    // moment (a reminder, its expiry) goes on a job of its own: the stream keeps the reconciler's check away.
    const current = written.record ?? (await ctx.journal.getDelegation(ref));
    if (current) void authThen(ctx, current, scope).catch((error: unknown) => (scope.log ?? ctx.logger).warn({ err: error }, 'auth handler failed'));
    if (current && current.questionKey !== record.questionKey) await scheduleQuestionMoment(ctx, current);
    return done('continue');
  }
  if (written.state === 'TASK_STATE_INPUT_REQUIRED') {
    const current = await ctx.journal.getDelegation(ref);
    if (current && questionOpen(current)) return done(await parkRow(ctx, current, scope, record), { record: current });
  }
  return done('continue');
}

/**
 * The agent's auth handler for an AUTH_REQUIRED row (spec §7.6), then what it found: its rounds used up (P33) is
 * the `auth-exhausted` observation, applied here. Returns that observation's next kind, or undefined.
 */
async function authThen(ctx: WorkerContext, record: DelegationRecord, scope: Scope): Promise<NextKind | undefined> {
  const handled = await handleAuthRequired(ctx, record);
  if (handled.kind !== 'exhausted') return undefined;
  return (await apply(ctx, record, { kind: 'auth-exhausted', rounds: handled.rounds, challenge: handled.challenge }, { ...(scope.log ? { log: scope.log } : {}), source: 'auth' })).next;
}

/**
 * Parks a row on its open question, its auth handler first (which may end the attempt with a person: P33).
 * `before`: the row as the observation found it; when it was already parked on the same question, this is a
 * re-read (`park` logs the question once, not every poll).
 */
async function parkRow(ctx: WorkerContext, record: DelegationRecord, scope: Scope, before: DelegationRecord | undefined): Promise<NextKind> {
  const ended = await authThen(ctx, record, scope);
  if (ended) return ended;
  await park(ctx, record, before === undefined || before.state !== record.state || before.questionKey !== record.questionKey);
  return 'park';
}

/** Gives back a follow lease nobody will use (a failed release only lets it run out: `lockDurationMs`). */
async function giveBack(ctx: WorkerContext, ref: DelegationRef, lease: FollowLease | undefined): Promise<void> {
  if (lease) await ctx.journal.lease(ref, 'release', lease.token).catch(() => undefined);
}

/**
 * Routes a row from what it shows (`routeOf`): settle, CancelTask, park, or follow. `known`: the row as the write
 * left it (else it is read now); `followLease`: a lease handed over for a local follow, passed on or given back;
 * `before`: the row as the observation found it (a park of a question already parked is not logged again).
 */
async function routeRow(
  ctx: WorkerContext,
  ref: DelegationRef,
  known: DelegationRecord | undefined,
  plan: FollowPlan,
  written: Written,
  followLease: FollowLease | undefined,
  before?: DelegationRecord,
): Promise<NextKind> {
  const record = known ?? (await ctx.journal.getDelegation(ref));
  if (!record) {
    await giveBack(ctx, ref, followLease);
    await ctx.journal.removeFromIndex(ref);
    return 'nothing';
  }
  const cancelWanted = mayWantCancel(record, plan) && (await wantsCancel(ctx, ref, known ? written.workflow : undefined));
  const next = routeOf(record, plan, cancelWanted);
  switch (next.kind) {
    case 'settle':
      await giveBack(ctx, ref, followLease);
      await settle(ctx, ref, closeHeldIntent, record, known ? written.finishedWorkflow : undefined);
      return 'settle';
    case 'cancel':
      // Canceled while this task was being found or sent: CancelTask it now (at most once per interval).
      await giveBack(ctx, ref, followLease);
      await enqueueCancel(ctx.queues, ref, { by: 'late', at: ctx.options.now() });
      return 'cancel';
    case 'park':
      await giveBack(ctx, ref, followLease);
      return parkRow(ctx, record, {}, before);
    default:
      return follow(ctx, ref, plan, record, followLease);
  }
}

/**
 * Subscribes after `plan.delayMs`; `again` for any but the first (rate-limited fleet-wide). Without delay the follow
 * runs in this process when it has a free local follow slot (`runs/follow-local.ts`; `known` saves its read; a
 * handed-over `followLease` saves its takeFollow), else (and after a delay) a follow job.
 */
async function follow(ctx: WorkerContext, ref: DelegationRef, plan: FollowPlan, known: DelegationRecord | undefined, followLease: FollowLease | undefined): Promise<NextKind> {
  const { resubscription = 0, delayMs = 0, again = true } = plan;
  const target = { workflowId: ref.workflowId, delegationId: ref.delegationId };
  if (delayMs === 0 && ctx.followHere?.(target, { resubscription, again, ...(known && !isFinished(known.state) ? { known } : {}), ...(followLease ? { lease: followLease } : {}) })) return 'follow';
  await giveBack(ctx, ref, followLease);
  await enqueueFollow(ctx.queues, ref, { resubscription, again, delayMs, at: ctx.options.now() });
  return 'follow';
}

/**
 * True when the user canceled the (still running) workflow, or it is stopping after a step failed for good, and no
 * CancelTask went out for this delegation within the last reconcile interval. Compensations are never canceled.
 */
async function wantsCancel(ctx: WorkerContext, ref: DelegationRef, known: WorkflowFlags | undefined): Promise<boolean> {
  const workflow = known ?? (await ctx.journal.getWorkflow(ref.workflowId));
  if (!workflow || (!workflow.cancelRequested && !workflow.stopping) || workflow.state !== 'RUNNING') return false;
  return ctx.journal.markOnce(ref, 'cancel-sent', ctx.workerId, ctx.options.reconcileIntervalMs);
}

/** A digest of what a delegation shows (the progress rule's mark: state, task, question, status message, artifacts, reply, result). */
export function progressMark(view: DelegationView): string {
  const shown = [view.state, view.taskId, view.questionKey, view.statusMessage?.parts, view.artifacts, view.replyState, view.replyMessageId, view.result];
  return createHash('sha256').update(JSON.stringify(shown)).digest('base64url');
}

/**
 * The progress rule after one follow cycle (`core/policy.ts` progressNext): a row the cycle finished or parked is
 * routed as written; otherwise the cycle is noted (`noteNoProgress`) and the rule decides.
 */
async function progress(ctx: WorkerContext, record: DelegationRecord, scope: Scope, written: Written, next: Extract<Next, { kind: 'progress' }>): Promise<NextKind> {
  const ref = refOf(record);
  if (written.record && (isFinished(written.record.state) || questionOpen(written.record))) return routeRow(ctx, ref, written.record, {}, written, undefined, record);
  const view = await ctx.journal.getDelegationView(ref);
  if (!view) return routeRow(ctx, ref, undefined, {}, NOTHING_WRITTEN, undefined, record);
  if (isFinished(view.state) || questionOpen(view)) return routeRow(ctx, ref, view, {}, NOTHING_WRITTEN, undefined, record);
  const run = await ctx.journal.noteNoProgress(ref, progressMark(view), next.what, next.unacceptable !== undefined, next.live === true);
  const verdict = progressNext(run, next, view, ctx.policy);
  switch (verdict.kind) {
    case 'needs-person':
      (scope.log ?? ctx.logger).error({ ...ref, count: run.count, since: run.since, last: next.what }, 'no progress: needs attention');
      return needsPerson(ctx, view, verdict, scope, scope.fence !== undefined ? { fence: scope.fence } : {}, undefined);
    case 'slow-poll':
      // Slow polling: one GetTask per `slowPollMs` (the follow reads instead of streaming); the reconciler stays away meanwhile.
      await ctx.journal.scheduleCheck(ref, ctx.options.now() + verdict.delayMs + ctx.options.reconcileIntervalMs);
      return routeRow(ctx, ref, view, { resubscription: verdict.resubscription, delayMs: verdict.delayMs }, NOTHING_WRITTEN, undefined, record);
    case 'follow': {
      const { resubscription = 0, delayMs = 0 } = verdict.plan;
      if (resubscription > 0) await ctx.journal.scheduleCheck(ref, ctx.options.now() + delayMs + ctx.options.reconcileIntervalMs);
      return routeRow(ctx, ref, view, verdict.plan, NOTHING_WRITTEN, undefined, record);
    }
    default:
      return routeRow(ctx, ref, view, {}, NOTHING_WRITTEN, undefined, record);
  }
}

/** Journals the attempt AMBIGUOUS with the code and evidence (the workflow then needs a person), then routes it (settle). */
async function needsPerson(
  ctx: WorkerContext,
  record: DelegationRecord,
  next: Extract<Next, { kind: 'needs-person' }>,
  scope: Scope,
  guard: { fence?: number; expectedVersion?: number },
  followLease: FollowLease | undefined,
): Promise<NextKind> {
  const ref = refOf(record);
  await giveBack(ctx, ref, followLease);
  const error = { code: next.code, message: next.message, retryable: false, ...(next.limit ? { limit: next.limit } : {}), ...(next.delivery ? { delivery: next.delivery } : {}) };
  const result = await ctx.journal.applyStatus(ref, { ...guard, mode: 'outcome', state: 'AMBIGUOUS', error, held: record });
  if (result.applied) ctx.metrics.transitions.inc({ state: 'AMBIGUOUS', source: scope.source ?? 'outcome', agent: ctx.metrics.agentLabels.of(record.agentCardUrl) });
  (scope.log ?? ctx.logger).error({ ...ref, code: next.code, reason: next.message }, 'marked AMBIGUOUS: a person must decide');
  return routeRow(ctx, ref, result.applied ? result.record : undefined, {}, writtenOf(result, undefined), undefined);
}

// ---- A step's journal writes: each `Write` the table names, with its guard and the lease it ends, counted. ----
/** What a step's write left: the row, the workflow's flags, the lease handed over, whether the row is finished. */
interface Written {
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
  /** What an `expire-question` write found (expireQuestion-2.lua). */
  expiry?: QuestionExpiry['outcome'];
  /** The expiry journaled its default answer refused (the workflow's answer index is full): a person decides next. */
  defaultAnswerRefused?: boolean;
  /** The write finished the one-step workflow too (`finish-step.ts`): what is left of the settle is `afterOneStepFinish`. */
  settled?: { finish: OneStepFinish; removedFromIndex: boolean };
  /** A note of a refused result (and nothing else) was the step's write: the row's version if no other writer wrote since the read. */
  noteVersion?: number;
  /** An unsent outcome (`Write.unsent`) was refused: the row is not as the try left it, the reconciler decides. */
  unsentRefused?: true;
}

/** What a step left when it applied no change of the row's state (no write, or only a note); `apply.ts` tells it by identity. */
const NOTHING_WRITTEN: Written = { applied: false, finished: false };

/** An unsent outcome refused (`unsentGuard`): nothing written; the row goes to the reconciler (`performNext`). */
const UNSENT_REFUSED: Written = { applied: false, finished: false, unsentRefused: true };

/**
 * Performs a step's writes in order. A send lease the scope holds is ended by the answer's transition; when no write
 * ended it (a foreign answer: only a note), it is given back here, before the next step (the reconciler must not wait).
 */
async function writeStep(ctx: WorkerContext, record: DelegationRecord, step: Step, scope: Scope, observation: Observation): Promise<Written> {
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

/**
 * The journal options of an outcome saying nothing of ours was sent (`Write.unsent`, applyStatus-5.lua ARGV[21]):
 * `marked`, the run's own mark (`scope.mark`: its sendStartedAt and the version it wrote); `as-read`, `record` as the
 * step read it, unmarked, under the write's version guard (a marked one refused); `refused` when the run
 * knows no mark of its own (nothing may be written, as noteUnreachable-1.lua refuses); undefined for other writes.
 */
function unsentGuard(write: Extract<Write, { kind: 'outcome' }>, record: DelegationRecord, scope: Scope): Pick<StatusChange, 'unsent' | 'expectedVersion'> | 'refused' | undefined {
  if (write.unsent === undefined) return undefined;
  if (write.unsent === 'unmarked') return { unsent: {} };
  // The row as the step read it (deadline35: the reconciler's deadline), unmarked (attack36: a marked row's SendMessage
  // may have left, the search decides); its version is the write's guard.
  if (write.unsent === 'as-read') return record.sendStartedAt === undefined ? { unsent: {} } : 'refused';
  if (!scope.mark) return 'refused';
  return { unsent: { sendStartedAt: scope.mark.sendStartedAt }, expectedVersion: scope.mark.markedVersion };
}

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
      // A first task id stays bound while the attempt may still act on it (its deadline), then as a finished record.
      const binding = write.bindAgent ? { agentCardUrl: record.agentCardUrl, bindUntilMs: await attemptDeadlineAt(ctx, record) } : {};
      // A streaming send's first event: its stream's id (an ordered channel: the follow reads the rest under it).
      const stream = observation.kind === 'send-answered' ? observation.stream : undefined;
      const options = { ...guardOf(write.guard, record, scope), snapshot: true, held: record, ...binding, ...(write.namedTaskUnread ? { namedTaskUnread: true as const } : {}), ...(stream !== undefined ? { stream } : {}) };
      // A finished Task ending a one-step workflow (a follow's, not a send's answer): the status and the settle in one call.
      const finish = isTerminalTaskState(state) && !write.bindAgent && observation.kind !== 'send-answered' ? oneStepFinish(ctx, record, journalStateOf(state), statusErrorOf(write.task.status), write.task.artifacts?.length ?? 0) : undefined;
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
      const unsent = unsentGuard(write, record, scope);
      if (unsent === 'refused') return UNSENT_REFUSED;
      const change: StatusChange = {
        ...guardOf(write.guard, record, scope),
        ...unsent,
        mode: 'outcome',
        state: write.state,
        held: record,
        ...(write.error ? { error: write.error } : {}),
        ...(write.result !== undefined ? { result: write.result } : {}),
        ...(write.contextId ? { contextId: write.contextId } : {}),
      };
      const result = await withEndingLease(ctx, ref, scope, observation, sendLease, (endsLease) => ctx.journal.applyStatus(ref, { ...change, ...(endsLease ? { endsLease } : {}) }), undefined).catch((error: unknown) => {
        // An unsent outcome refused: the row is not as the try left it (a suspect, a task, another mark): the reconciler decides.
        if (write.unsent && error instanceof JournalError && error.code === 'VERSION_CONFLICT') return undefined;
        throw error;
      });
      if (!result) return UNSENT_REFUSED;
      if (result.applied) ctx.metrics.transitions.inc({ state: write.state, source: scope.source ?? 'outcome', agent: ctx.metrics.agentLabels.of(record.agentCardUrl) });
      return { ...writtenOf(result, undefined), finished: isFinished(write.state) && (result.applied || result.reason === 'finished') };
    }
    case 'events':
      return writeEvents(ctx, record, write.responses, scope, observation.kind === 'stream-event' ? observation.stream : undefined);
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
      const input = { error: write.error, nextTryAt: write.nextTryAt, marked: write.marked, ...(scope.mark ? { mark: scope.mark } : {}) };
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
    case 'note-refused-result': {
      // Written only when a refusal happens (the happy path never pays for it); the row carried on with the field.
      const noted = await ctx.journal.noteRefusedResult(ref, write.refusal);
      (scope.log ?? ctx.logger).warn({ ...ref, limit: write.refusal.limit, artifactId: write.refusal.artifactId, detail: write.refusal.message }, 'a part of the result was refused over a limit; journaled until a full read shows the result');
      // The copy keeps the version it was read at: the script checks none, so another writer may have bumped the row
      // since (a push, a reply's mark); the next version-checked call then gets the row whole, never a change applied
      // to a copy that lacks that writer's fields. `noteVersion`: the version the row has if this note was the only
      // write since the read (a needs-person after it is guarded by it).
      if (!noted) return NOTHING_WRITTEN;
      return { applied: false, finished: false, record: { ...record, refusedResult: withRefusal(record.refusedResult, write.refusal) }, noteVersion: record.version + (noted.changed ? 1 : 0) };
    }
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
      await ctx.journal.releaseForResend(ref, expectedVersion, {
        contextRefused: write.contextRefused,
        ...(write.agentInterface ? { agentInterface: write.agentInterface } : {}),
        provenAbsent: write.provenAbsent === true,
      });
      return NOTHING_WRITTEN;
    }
    case 'mark-reply': {
      const marked = await ctx.journal.markReply(ref, scope.fence ?? 0, write.replyMessageId, write.replyState, write.reason, scope.replyToken ? { token: scope.replyToken } : {});
      if (write.replyState === 'refused' && marked) {
        // The person is asked again and told why (`question.opened`, once per refusal; a crash before it: the parked
        // row's next re-read emits it). The row as the refusal left it, read back. An expired question stays closed
        // (its default answer refused: a person decides, the `reply-refused` row's next).
        const current = await ctx.journal.getDelegation(ref);
        const reopened = current !== undefined && isAwaitingAnswer(current);
        (scope.log ?? ctx.logger).warn({ ...ref, reason: write.reason }, reopened ? 'the agent refused the reply; the question is open again' : 'the agent refused the reply; its question is closed');
        if (current) await notifyQuestionOpened(ctx, current, true);
      }
      return NOTHING_WRITTEN;
    }
    case 'expire-question': {
      const reply = write.action === 'answer' ? { reply: { messageId: write.reply.messageId, message: { parts: [{ text: write.reply.text }] } } } : {};
      const expiry = await ctx.journal.expireQuestion(ref, { questionKey: write.questionKey, action: write.action, nowMs: ctx.options.now(), ...reply });
      const log = scope.log ?? ctx.logger;
      if (expiry.outcome === 'expired') {
        ctx.metrics.questionsExpired.inc({ action: write.action });
        log.warn({ ...ref, action: write.action, ...(write.action === 'answer' ? { replyMessageId: write.reply.messageId } : {}) }, 'a question expired unanswered');
        await notifyQuestionExpired(ctx, record, write.questionKey, write.action);
      } else if (expiry.outcome === 'answered') log.info({ ...ref }, 'the question was answered before it expired');
      return { applied: expiry.outcome !== 'answered', finished: false, version: expiry.version, expiry: expiry.outcome, ...(expiry.defaultAnswerRefused ? { defaultAnswerRefused: true } : {}) };
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
async function writeEvents(ctx: WorkerContext, record: DelegationRecord, responses: [StreamResponse] | [StreamResponse, StreamResponse], scope: Scope, stream: string | undefined): Promise<Written> {
  const log = scope.log ?? ctx.logger;
  const last = responses[responses.length - 1]!;
  const state = stateOf(last);
  if (state && isTerminalTaskState(state)) ctx.crashPoint('follow.after-terminal-seen', record.step);
  const ending = scope.lease?.ending();
  // `stream`: the stream they came on, an ordered channel (undefined: a push, a held-back status written after a read).
  const options = { ...(scope.fence !== undefined ? { fence: scope.fence } : {}), ...(ending ? { endsLease: ending.endsLease } : {}), held: record, ...(stream !== undefined ? { stream } : {}) };
  const [first, second] = responses;
  // A terminal status ending a one-step workflow: the status and the settle in one call, when nothing moved since.
  const finish = 'statusUpdate' in last && state && isTerminalTaskState(state) ? oneStepFinish(ctx, record, journalStateOf(state), statusErrorOf(last.statusUpdate.status), responses.length - 1) : undefined;
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
 * written decides, not the state observed: a snapshot over the artifact limit ends AMBIGUOUS (LIMIT_EXCEEDED) whatever
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
function writtenOf(result: StatusChangeResult, state: TaskState | undefined): Written {
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
const refOf = (record: DelegationRef): DelegationRef => ({ workflowId: record.workflowId, delegationId: record.delegationId });
