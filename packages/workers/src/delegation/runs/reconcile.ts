/**
 * Reconciliation of one delegation (the reconcile queue's per-delegation job):
 * it never trusts the journal's last state and is safe to repeat any number of
 * times, from any worker; writes are compare-and-set on the version it read.
 *   no taskId, never sent  → send it (again)
 *   no taskId, maybe sent  → find by messageId (`search.ts`) → adopt | resend same messageId | AMBIGUOUS
 *                            (before the send settled: adopt when found, else wait)
 *   parked                 → its question's life first (expired: `question-life.ts`; a reminder), then GetTask:
 *                            keep the question, or move on
 *   running                → reattach (follow); a refusal means terminal (one GetTask)
 *   TaskNotFound           → the `task-not-found` row (LOST only over a window)
 *   a record that does not parse → skipped (reported), checked again a reconcile interval later
 * What the agent says is an observation (`io/read.ts`, `io/search.ts`) applied by `apply.ts`.
 */
import { isRetryable } from '@durable-a2a/a2a';
import {
  CorruptRecordError,
  JournalError,
  enqueueReconcile,
  enqueueSend,
  isFinished,
  isParked,
  keepsSuspects,
  lazyChildLogger,
  lostUntold,
  suspectsPending,
  type DelegationRecord,
  type DelegationRef,
} from '@durable-a2a/shared';
import type { WorkerContext } from '../../context.ts';
import { jitteredCheckTime, suspectReadAt } from '../core/policy.ts';
import { withReconcileSlot } from './reconcile-slot.ts';
import { reconcileSuspects } from './suspect-reads.ts';
import { emitUncheckedIfMissing, readFinishedRowSuspects } from './finished-suspects.ts';
import { advanceWorkflow } from '../../workflow/advance.ts';
import { reconcileWorkflow } from '../../workflow/recover.ts';
import { apply, closeHeldIntent } from '../apply.ts';
import { readTask } from '../io/read.ts';
import { searchForMessage } from '../io/search.ts';
import { HANDLER_PREFIX } from './handler.ts';
import { isSendRunToken } from '../io/send-errors.ts';
import { enforceAttemptDeadline } from '../deadline.ts';
import { checkQuestionLife } from '../question-life.ts';

/** Spread (ms) of the checks after a follow lease runs out: the records of one dead worker do not all come due at once. */
const LEASE_JITTER_MS = 500;

/** How one reconcile run was asked for. */
export interface ReconcileCheck {
  /** This is the check enqueued for when a follow lease runs out (see `leaseHeld`). Default false. */
  afterLease?: boolean;
  /**
   * The worker that held this delegation's lease died (its liveness key gone; the dead-worker sweep ended the lease):
   * a send it made that may still be in flight is looked for at once, and adopted if found. Default false.
   */
  holderDied?: boolean;
  /**
   * A batch (`reconcile-batch.ts`) moves the index entries of its held leases and enqueues the checks at their ends
   * for its whole batch together (one ZADD, a delayed job per group of lease ends): a held lease is handed here with
   * the time it ends and the index entry's next check (ms since epoch) instead of a ZADD and a delayed job of its own.
   */
  onLeaseHeld?: (ref: DelegationRef, leaseEndsAt: number, checkAt: number) => void;
  /**
   * A task a refused push showed holding our message (the push route's suspect, `ReconcileJob.suspectTaskId`, the first
   * of its second): read by GetTask first with the suspects pending in the journal, whoever follows the row
   * (`reconcileSuspects`); on a row not yet bound, once more when its send settles. Any reconcile reads the pending ones.
   */
  suspectTaskId?: string;
}

/**
 * Reconciles one delegation (or, for delegationId `*`, its workflow) from what the agent says now.
 * A concurrent write or an unreachable agent schedules another check instead of failing.
 */
export async function reconcileDelegation(ctx: WorkerContext, ref: DelegationRef, jobId: string | undefined, check: ReconcileCheck = {}): Promise<string> {
  try {
    const outcome = ref.delegationId === '*' ? await reconcileWorkflow(ctx, ref.workflowId) : await reconcileOne(ctx, ref, jobId, check);
    ctx.metrics.reconcileRuns.inc({ outcome });
    return outcome;
  } catch (error) {
    if (error instanceof CorruptRecordError) {
      // Reported where it was parsed (metric, one log line per key). The record stays for a person to inspect;
      // it is looked at again a reconcile interval later, never retried in a loop and never the batch's failure.
      await ctx.journal.scheduleCheck(ref, jitteredCheckTime(ctx.options.now(), ctx.options.reconcileIntervalMs));
      ctx.metrics.reconcileRuns.inc({ outcome: 'corrupt' });
      return 'corrupt';
    }
    if (error instanceof JournalError && error.code === 'VERSION_CONFLICT') {
      // Someone wrote newer information while we read: check again soon.
      await ctx.journal.scheduleCheck(ref, ctx.options.now() + 1_000);
      ctx.metrics.reconcileRuns.inc({ outcome: 'conflict' });
      return 'conflict';
    }
    if (isRetryable(error)) {
      await ctx.journal.scheduleCheck(ref, jitteredCheckTime(ctx.options.now(), ctx.options.reconcileIntervalMs));
      ctx.logger.warn({ err: error, ...ref }, 'agent unreachable during reconciliation; will retry');
      ctx.metrics.reconcileRuns.inc({ outcome: 'unreachable' });
      return 'unreachable';
    }
    throw error;
  }
}

async function reconcileOne(ctx: WorkerContext, ref: DelegationRef, jobId: string | undefined, check: ReconcileCheck): Promise<string> {
  const record = await ctx.journal.getDelegation(ref);
  if (!record) {
    await ctx.journal.removeFromIndex(ref);
    return 'expired';
  }
  // Built on its first line only: most runs log nothing (a held lease, a reattach at warn level), and pino's child
  // serializes and redacts its bindings when made (1.5 % of a fresh worker's CPU reattaching 10,000 streams).
  const log = lazyChildLogger(ctx.logger, { queue: 'reconcile', ...ref, step: record.step, messageId: record.messageId, taskId: record.taskId, jobId });
  if (isFinished(record.state)) {
    // Suspects noted before it finished are read before its workflow decides (settle.ts waits for them), whether or
    // not it finished bound to a task of ours (an INTENT row keeps them too, and may finish at its deadline); so are
    // those a push named after it finished; and suspects lost are told to a person (finished-suspects.ts), once: a
    // finished row whose lost ones were noted as told has nothing left to read, only their event if it never left.
    let row = record;
    if (suspectsPending(record) || lostUntold(record)) {
      const pending = await readFinishedRowSuspects(ctx, record, record.taskId, jobId, log);
      if (pending !== undefined) return pending;
      const current = await ctx.journal.getDelegation(ref);
      if (!current) return 'expired';
      row = current;
    }
    // Lost suspects a person was told of are told by their event too: emitted when it was never journaled (a crash or
    // a failed enqueue after the note). Until it is enqueued the row is not settled, and is looked at again.
    if (!(await emitUncheckedIfMissing(ctx, row))) {
      const at = jitteredCheckTime(ctx.options.now(), ctx.options.reconcileIntervalMs);
      await ctx.journal.scheduleCheck(ref, at);
      await enqueueReconcile(ctx.queues, ref, { dueAt: at, now: ctx.options.now() });
      return 'notify-pending';
    }
    await apply(ctx, row, { kind: 'row-checked' }, { source: 'reconcile' });
    return 'settled';
  }
  if (await enforceAttemptDeadline(ctx, record, log)) return 'deadline-exceeded';
  if (await checkQuestionLife(ctx, record, log)) return 'question-expired';
  // Suspects: tasks refused pushes showed holding our message, pending in the journal (or lost), or named by the job.
  const suspects = check.suspectTaskId !== undefined || keepsSuspects(record);
  if (record.state === 'INTENT') {
    // A push showed our message in a task while ours is not bound yet (our send's answer not journaled): nothing to
    // compare it with now. Its read waits until our task is bound (`suspectReadAt`: while the send may be in flight,
    // then after this run's decision), when the answer, an adoption or a resend has bound our task.
    if (suspects) {
      const at = suspectReadAt(record, await ctx.journal.followLeaseRemainingMs(ref), ctx.policy);
      if (at !== undefined) await enqueueReconcile(ctx.queues, ref, { suspect: check.suspectTaskId, at, now: ctx.options.now() });
    }
    return reconcileIntent(ctx, record, log, check.holderDied === true);
  }
  if (suspects && record.taskId !== undefined) {
    // Before the lease: a stream following our task (the usual case when an agent pushes) reads only ours.
    const decided = await reconcileSuspects(ctx, record, record.taskId, check.suspectTaskId, jobId, log);
    if (decided !== undefined) return decided;
  }
  const leaseMs = await ctx.journal.followLeaseRemainingMs(ref);
  if (leaseMs > 0) return leaseHeld(ctx, ref, leaseMs, check);
  // Parked: re-read (the agent may have moved on). Otherwise reattach: the subscription's
  // first event is the authoritative snapshot, and a refusal means terminal (one GetTask).
  if (isParked(record.state)) return withReconcileSlot(ctx, record, () => rereadTask(ctx, record, log));
  // Within a no-progress run the progress rule's count carries over: a slow-polled delegation is read, not resubscribed.
  await apply(ctx, record, { kind: 'follow-deferred', delayMs: 0, resubscription: record.noProgressSince === undefined ? 0 : record.noProgressCount, reason: 'reattach' }, { source: 'reconcile' });
  // One line when a task nobody followed is taken up again; a slow-polled one comes back every poll (debug).
  if (record.noProgressSince === undefined) log.info({ state: record.state }, 'reattached: nobody was following this task; following it again');
  else log.debug({ state: record.state }, 'slow poll: reading the task again');
  return 'reattached';
}

/**
 * Someone holds the stream, or held it before a crash: look again right after the lease runs out (in
 * `leaseMs`), in the index and with a delayed reconcile job (a dead holder's delegation is reattached when
 * its lease ends, not a reconcile interval later). A live holder renews: that job (`afterLease`) finds the
 * lease held again and only moves the next check, so a followed delegation never chains jobs. Also used by
 * a follow that finds the lease taken (`follow.ts`).
 */
export async function leaseHeld(ctx: WorkerContext, ref: DelegationRef, leaseMs: number, check: ReconcileCheck = {}): Promise<string> {
  const now = ctx.options.now();
  const checkAt = now + leaseMs + Math.floor(Math.random() * LEASE_JITTER_MS);
  if (check.onLeaseHeld) {
    check.onLeaseHeld(ref, now + leaseMs, checkAt);
    return 'followed';
  }
  await ctx.journal.scheduleCheck(ref, checkAt);
  if (!check.afterLease) await enqueueReconcile(ctx.queues, ref, { leaseEndsAt: checkAt, now });
  return 'followed';
}

/**
 * No taskId yet: never sent (send it), maybe sent (search, then adopt / resend / AMBIGUOUS). `holderDied`: its sender
 * died (`ReconcileCheck`): before the send settles, a search that finds it adopts it.
 */
async function reconcileIntent(ctx: WorkerContext, record: DelegationRecord, log: WorkerContext['logger'], holderDied: boolean): Promise<string> {
  const ref = { workflowId: record.workflowId, delegationId: record.delegationId };
  if (record.held) {
    // Waiting for earlier steps: the workflow decides when to release it.
    await advanceWorkflow(ctx, record.workflowId, closeHeldIntent);
    return 'held';
  }
  if (record.sendStartedAt === undefined && ctx.options.now() - record.updatedAt < ctx.options.sendSettleMs) {
    // Just journaled (or just released): its send job is on its way; check again later.
    await ctx.journal.scheduleCheck(ref, record.updatedAt + ctx.options.sendSettleMs);
    return 'send-pending';
  }
  if (record.sendStartedAt === undefined && record.nextTryAt !== undefined && ctx.options.now() < record.nextTryAt + ctx.options.sendSettleMs) {
    // Waiting for an agent that could not be reached: its next try is a delayed send job; look again after it.
    await ctx.journal.scheduleCheck(ref, record.nextTryAt + ctx.options.sendSettleMs);
    return 'waiting-for-agent';
  }
  if (record.sendStartedAt === undefined) {
    // Not sent yet (its send job may have been lost): enqueue it again. A duplicate job is harmless:
    // the journal's fence and sendStartedAt let only one SendMessage leave.
    await enqueueSend(ctx.queues, ref, record.resendCount, ctx.options.now(), 0, { priority: record.priority });
    return 'send-enqueued';
  }
  // When its sender died (docs/recovery.md), one search now that finds our message adopts the task (never a
  // SendMessage): taken over in seconds. Once per death, so a search's call budget holds. A miss decides nothing.
  const handler = record.agentCardUrl.startsWith(HANDLER_PREFIX);
  const early = holderDied && !handler;
  const heldMs = await ctx.journal.followLeaseRemainingMs(ref);
  if (heldMs > 0) {
    // A send job still waits for the answer (an agent that holds the send, V2), or a dead sender's send lease runs
    // until its TTL (its request may still be open at the agent): nothing is sent again before it ends.
    const holder = handler ? undefined : await ctx.journal.leaseHolder(ref);
    if (holder && isSendRunToken(holder) && (early || (await senderDead(ctx, holder)))) return deadSenderHeld(ctx, record, holder, heldMs, log);
    await ctx.journal.scheduleCheck(ref, ctx.options.now() + heldMs + Math.floor(Math.random() * 1_000));
    return 'send-held';
  }
  const settlesAt = record.sendStartedAt + ctx.options.sendSettleMs;
  if (ctx.options.now() < settlesAt) {
    // The send may still be in flight: a search now could miss it, so a miss decides nothing until `settlesAt`.
    if (early) {
      const found = await withReconcileSlot(ctx, record, () => adoptIfFound(ctx, record, log));
      if (decidedEarly(found)) return found;
    }
    await ctx.journal.scheduleCheck(ref, settlesAt);
    await enqueueReconcile(ctx.queues, ref, { dueAt: settlesAt, now: ctx.options.now() });
    return 'send-in-flight';
  }
  if (record.agentCardUrl.startsWith(HANDLER_PREFIX)) {
    // Handlers are idempotent on the messageId: run it again.
    await apply(ctx, record, { kind: 'handler-interrupted' }, { source: 'reconcile' });
    return 'handler-rerun';
  }
  return withReconcileSlot(ctx, record, () => findAndDecide(ctx, record, log));
}

/**
 * Maybe sent, settled: find our message (crash window 2) and apply what the search found (the search row): found →
 * adopt (never a second SendMessage; a ListTasks summary of a finished task is read in full first, A35); proven
 * absent (or a deduplicating agent) → resend with the same messageId, within `sendAttempts`; cannot tell → AMBIGUOUS.
 */
async function findAndDecide(ctx: WorkerContext, record: DelegationRecord, log: WorkerContext['logger']): Promise<string> {
  const observed = await searchForMessage(ctx, record, 'reconcile', 'reconciling a send that may have happened');
  const applied = await apply(ctx, record, observed, { log, source: 'reconcile' });
  if (observed.kind === 'search-result' && observed.finding.kind === 'found' && observed.finding.ownership.kind === 'proven') {
    log.info({ taskId: observed.finding.task.id, state: observed.finding.task.status.state }, 'adopted the task found by our messageId');
    return 'adopted';
  }
  return applied.next === 'resend' ? 'resend' : applied.next === 'settle' ? 'settled' : applied.next;
}

/** True when lease holder `holder`'s worker stopped beating (its liveness key is gone); false with liveness off. */
async function senderDead(ctx: WorkerContext, holder: string): Promise<boolean> {
  return ctx.options.livenessTtlMs > 0 && !(await ctx.journal.isWorkerLive(holder.slice(0, holder.indexOf('/'))));
}

/**
 * A send lease held by a worker found dead (its liveness key gone). It is not ended: the worker may only have
 * stalled, its SendMessage still open at the agent. A search that finds our message ends it (compare-and-delete on
 * the holder read before the search) and adopts the task, so its follow starts now. A miss sends nothing: the record
 * is looked at again when the send settles (the agent may create its task by then), else when the lease runs out.
 */
async function deadSenderHeld(ctx: WorkerContext, record: DelegationRecord, holder: string, heldMs: number, log: WorkerContext['logger']): Promise<string> {
  const ref = { workflowId: record.workflowId, delegationId: record.delegationId };
  const endDeadSendLease = async () => {
    if (await ctx.journal.lease(ref, 'release', holder)) ctx.metrics.leasesTakenOver.inc();
  };
  const found = await withReconcileSlot(ctx, record, () => adoptIfFound(ctx, record, log, endDeadSendLease));
  if (decidedEarly(found)) return found;
  const now = ctx.options.now();
  const settlesAt = (record.sendStartedAt ?? now) + ctx.options.sendSettleMs;
  const nextAt = now < settlesAt ? Math.min(settlesAt, now + heldMs) : now + heldMs + Math.floor(Math.random() * 1_000);
  await ctx.journal.scheduleCheck(ref, nextAt);
  await enqueueReconcile(ctx.queues, ref, { dueAt: nextAt, now });
  return 'send-held';
}

/** An early search's outcome (`adoptIfFound`) that decided the record: nothing more to schedule. */
const decidedEarly = (outcome: string): boolean => outcome === 'adopted-early' || outcome === 'several-early';

/**
 * Maybe sent, not settled yet: applies the search only when it found our message (ownership proven: the search row
 * adopts it, reading a finished summary in full first) or found it in several tasks (the search row: a person, every
 * id named; waiting for the send to settle cannot undo a second holder); a miss or a failed search is not applied.
 * `beforeAdopting`: runs once the task is proven ours, before it is adopted (a dead sender's send lease ended).
 * @returns `adopted-early`, `several-early` (AMBIGUOUS), or `not-found` (nothing written)
 */
async function adoptIfFound(ctx: WorkerContext, record: DelegationRecord, log: WorkerContext['logger'], beforeAdopting?: () => Promise<void>): Promise<string> {
  // A miss here decides nothing: the search stays within the context we sent (no listing by time of every task).
  const observed = await searchForMessage(ctx, record, 'reconcile', 'looking for a send whose sender stopped before it settled', { missDecides: false });
  if (observed.kind !== 'search-result') return 'not-found';
  if (observed.finding.kind === 'several') {
    await apply(ctx, record, observed, { log, source: 'reconcile' });
    return 'several-early';
  }
  if (observed.finding.kind !== 'found' || observed.finding.ownership.kind !== 'proven') return 'not-found';
  await beforeAdopting?.();
  await apply(ctx, record, observed, { log, source: 'reconcile' });
  log.info({ taskId: observed.finding.task.id, state: observed.finding.task.status.state }, 'adopted the task found by our messageId before the send settled');
  return 'adopted-early';
}

/** taskId known, parked: GetTask decides: record terminal, keep the question, or reattach (the task-read row). */
async function rereadTask(ctx: WorkerContext, record: DelegationRecord, log: WorkerContext['logger']): Promise<string> {
  const observed = await readTask(ctx, record, { why: 'reconcile re-read of a parked task', cycle: false, log });
  const applied = await apply(ctx, record, observed, { log, source: 'reconcile' });
  return applied.next;
}
