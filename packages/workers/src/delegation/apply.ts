/**
 * The delegation core's one executor: `apply(observation) → journal transition → next`. Every adapter that talks to
 * an agent (`io/`) and every piece of process machinery (`runs/`) hands what it observed to `apply`; nothing else in
 * the workers calls the journal's transitions, settles, parks or hands a follow lease over. `apply`:
 *   1. asks the table (`core/transitions.ts`) for the step: `{ write?, next }`;
 *   2. performs the write with the guard the row names (the run's fence, the version read, or none), the lease it
 *      ends (a follow lease given back by the finishing change, a send lease ended or handed over to a local
 *      follow: only the executor knows whether `next` continues in this process), and counts it (`step-writes.ts`);
 *   3. performs `next`: exactly one per step. `route` and `progress` are resolved from the row as written
 *      (`core/policy.ts` routeOf, progressNext); `read-once` and `search` ask `io/` and apply what it observed,
 *      so a chain of steps is bounded by the table (a full read never asks for another read).
 * The workflow's decision closes held intents through this module too (`closeHeldIntent`, passed to it as a port:
 * the decision runs below the executor, apply → settle → advance). docs/delegation-core.md describes the table and
 * where a new behaviour goes.
 */
import { createHash } from 'node:crypto';
import {
  enqueueCancel,
  enqueueFollow,
  enqueueReconcile,
  enqueueSend,
  enqueueSendTry,
  isFinished,
  type DelegationRecord,
  type DelegationRef,
  type DelegationView,
  type FollowLease,
  type ObservationResult,
  type StatusChange,
  type WorkflowFlags,
} from '@durable-a2a/shared';
import type { WorkerContext } from '../context.ts';
import { requestWorkflowCancel } from '../workflow/cancel.ts';
import type { FollowPlan, Next, NextKind } from './core/next.ts';
import type { HeldBack, Observation } from './core/observation.ts';
import { mayWantCancel, progressNext, questionOpen, routeOf } from './core/policy.ts';
import { transition, type Step } from './core/transitions.ts';
import { handleAuthRequired } from './auth.ts';
import { readTask } from './io/read.ts';
import { searchForMessage } from './io/search.ts';
import { park } from './park.ts';
import { registerPushConfig, wantsPushRegistration } from './push-registration.ts';
import { afterOneStepFinish, settle } from './settle.ts';
import { NOTHING_WRITTEN, refOf, writeStep, writtenOf, type Written } from './step-writes.ts';

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
 * wrote it. Throws journal errors (FENCE_LOST, VERSION_CONFLICT, Redis down) and nothing an agent caused.
 */
export async function apply(ctx: WorkerContext, record: DelegationRecord, observation: Observation, scope: Scope = {}): Promise<Applied> {
  const step = transition(record, observation, ctx.policy);
  const written = await writeStep(ctx, record, step, scope, observation);
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
      const observed = await readTask(ctx, current, { why: next.why, ...(next.taskId ? { taskId: next.taskId } : {}), ...(next.refused ? { refused: next.refused } : {}), ...(next.afterLiveStream ? { afterLiveStream: true } : {}), cycle, ...(scope.log ? { log: scope.log } : {}) });
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
    case 'needs-person':
      // Guarded by the run's fence, else by the version the step started from when the step wrote nothing.
      return done(await needsPerson(ctx, record, next, scope, scope.fence !== undefined ? { fence: scope.fence } : written === NOTHING_WRITTEN ? { expectedVersion: record.version } : {}, followLease));
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
      await enqueueSendTry(ctx.queues, ref, record.resendCount, next.atMs, Math.max(0, next.atMs - ctx.options.now()), { priority: record.priority });
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
    // Keep the stream open (the agent may resume on its own); the handler runs beside it.
    const current = written.record ?? (await ctx.journal.getDelegation(ref));
    if (current) void authThen(ctx, current, scope).catch((error: unknown) => (scope.log ?? ctx.logger).warn({ err: error }, 'auth handler failed'));
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
