/**
 * Every number and verdict of the delegation core, once: backoff with full jitter and cap, the progress rule, the
 * not-found window, deadline arithmetic, "proves nothing was created" (the resend rule), and how a row is routed
 * after a write. The clock and randomness are injected (`Policy.now`, `Policy.random`), so each verdict is a pure
 * function and the table test (`transitions.test.ts`) needs no Redis and no timers.
 */
import { isAwaitingAnswer, isFinished, isParked, keepsSuspects } from '@durable-a2a/shared/pure';
import type { DelegationRecord, RecordedError, SuspectRoundFields } from '@durable-a2a/shared';
import type { FollowPlan, Next } from './next.ts';
import type { SearchFinding, UnreachableBounds } from './observation.ts';
import type { OutcomeCode } from './outcomes.ts';
import type { RecordedErrorCode } from '@durable-a2a/shared';

/** Exponential backoff windows (ms): the first window and the largest. */
export interface BackoffOptions {
  /** First window in ms. */
  baseMs: number;
  /** Largest window in ms. */
  capMs: number;
}

/** The numbers the table reads (from the fleet's compiled options, `policyOf`), with the clock and randomness. */
export interface Policy {
  /** Epoch ms. */
  now(): number;
  /** Uniform in [0, 1). */
  random(): number;
  followBackoff: BackoffOptions;
  /** Tries of a send whose agent cannot be reached (full jitter; the exponent is the attempt's unreachable tries). */
  unreachableBackoff: BackoffOptions;
  /** A run without progress this long (ms) switches from resubscribing to slow polling. */
  slowPollAfterMs: number;
  /** One GetTask per this many ms while slow polling. */
  slowPollMs: number;
  /** A run without progress this long (ms) ends the attempt AMBIGUOUS (`NO_PROGRESS`). */
  noProgressWindowMs: number;
  /** Consecutive follow cycles that each ended on an answer we cannot accept before a person is asked (bounded calls). */
  unacceptableAnswerLimit: number;
  reconcileIntervalMs: number;
  /** TaskNotFound answers (and the window they must span, ms) before LOST. */
  notFoundThreshold: number;
  notFoundWindowMs: number;
  /** SendMessage attempts (same messageId) before a send that created nothing fails. */
  sendAttempts: number;
  /** How long after the mark a send may still be in flight (the reconciler waits that long). */
  sendSettleMs: number;
}

/**
 * Re-reads of a full read that is older than the stream's COMPLETED status update it should complete (the agent's
 * store updated after the event was sent: GetTask still answers WORKING): at most this many more GetTask calls,
 * then the stream's status stands alone (terminal states never regress).
 */
export const STALE_READ_REREADS = 2;

/** Delay before re-read `index` (0-based) of a stale full read, ms: full jitter over 250 ms × 4^index (≤ 250, ≤ 1,000). */
export function staleReadDelayMs(index: number, policy: Pick<Policy, 'random'>): number {
  return Math.round(policy.random() * 250 * 4 ** index);
}

/** The fleet's options as a `Policy` (the real clock and Math.random unless the options inject a clock). */
export function policyOf(options: Omit<Policy, 'random' | 'unacceptableAnswerLimit'> & { unacceptableAnswerLimit?: number }, random: () => number = Math.random): Policy {
  return {
    now: options.now,
    random,
    followBackoff: options.followBackoff,
    unreachableBackoff: options.unreachableBackoff,
    slowPollAfterMs: options.slowPollAfterMs,
    slowPollMs: options.slowPollMs,
    noProgressWindowMs: options.noProgressWindowMs,
    unacceptableAnswerLimit: options.unacceptableAnswerLimit ?? UNACCEPTABLE_ANSWER_LIMIT,
    reconcileIntervalMs: options.reconcileIntervalMs,
    notFoundThreshold: options.notFoundThreshold,
    notFoundWindowMs: options.notFoundWindowMs,
    sendAttempts: options.sendAttempts,
    sendSettleMs: options.sendSettleMs,
  };
}

/** Default of `Policy.unacceptableAnswerLimit`: three follow cycles in a row that each end on an answer we cannot accept. */
export const UNACCEPTABLE_ANSWER_LIMIT = 3;

/**
 * Delay in ms before retry number `attempt` (0-based), full jitter ("Exponential Backoff And Jitter", AWS
 * Architecture Blog): random(0, min(cap, base × 2^attempt)). Spreads a fleet's reconnections after an agent restart.
 */
export function fullJitterDelayMs(attempt: number, options: BackoffOptions, random: () => number = Math.random): number {
  const window = Math.min(options.capMs, options.baseMs * 2 ** Math.min(attempt, 30));
  return Math.floor(random() * window);
}

/** A time `intervalMs` from `nowMs`, spread over [0.5, 1.5) × interval so per-record checks do not line up. */
export function jitteredCheckTime(nowMs: number, intervalMs: number, random: () => number = Math.random): number {
  return nowMs + Math.floor(intervalMs * (0.5 + random()));
}

/** True when the backoff window for `count` reached its cap. */
export const backoffAtCap = (count: number, backoff: BackoffOptions): boolean => count > 0 && backoff.baseMs * 2 ** Math.min(count, 30) >= backoff.capMs;

/** Reminders of one question at most (a step's `question.remindEveryMs`): a person is told, not flooded. */
export const MAX_QUESTION_REMINDERS = 10;

/** The moments of an open question's life (a step's `question`), all ms since epoch. */
export interface QuestionMoments {
  /** When it expires (`askedAt + expiresAfterMs`); undefined: it waits until the attempt deadline. */
  expiresAt?: number;
  /** The latest reminder due by now (1-based `number`), if any: reminders due earlier and missed are not sent late. */
  dueReminder?: number;
  /** The next moment after now (a reminder or the expiry); undefined: none left. */
  nextAt?: number;
}

/**
 * The moments of a question asked at `askedAt` under `policy` (`question` of the step), seen at `now`: reminder `n`
 * is due at `askedAt + n × remindEveryMs` for n = 1..MAX_QUESTION_REMINDERS, only before the expiry.
 */
export function questionMoments(askedAt: number, policy: { expiresAfterMs?: number; remindEveryMs?: number }, now: number): QuestionMoments {
  const expiresAt = policy.expiresAfterMs === undefined ? undefined : askedAt + policy.expiresAfterMs;
  const moments: QuestionMoments = expiresAt === undefined ? {} : { expiresAt };
  const candidates: number[] = expiresAt !== undefined && expiresAt > now ? [expiresAt] : [];
  if (policy.remindEveryMs !== undefined) {
    const every = policy.remindEveryMs;
    const last = Math.min(MAX_QUESTION_REMINDERS, expiresAt === undefined ? Infinity : Math.ceil((expiresAt - askedAt) / every) - 1);
    const due = Math.min(last, Math.floor((now - askedAt) / every));
    if (due >= 1) moments.dueReminder = due;
    if (due + 1 <= last) candidates.push(askedAt + (Math.max(due, 0) + 1) * every);
  }
  if (candidates.length > 0) moments.nextAt = Math.min(...candidates);
  return moments;
}

/**
 * Is a question open? A parked delegation whose question has no reply yet, or whose reply is not delivered:
 * it is not followed (a person may take hours; the reply job re-follows). The one definition.
 */
export function questionOpen(record: Pick<DelegationRecord, 'state' | 'questionKey' | 'replyForQuestion' | 'replyState' | 'questionExpired'>): boolean {
  if (!isParked(record.state)) return false;
  return isAwaitingAnswer(record) || record.replyState !== 'sent';
}

/**
 * How a row is routed after a write, from the row alone: finished → settle; CancelTask wanted → cancel; a question
 * open → park; otherwise follow with `plan`. `cancelWanted` is the one fact that needs a read (the workflow's flags).
 */
export function routeOf(record: DelegationRecord, plan: FollowPlan, cancelWanted: boolean): Next {
  if (isFinished(record.state)) return { kind: 'settle' };
  if (cancelWanted) return { kind: 'cancel' };
  if (questionOpen(record)) return { kind: 'park' };
  return { kind: 'follow', plan };
}

/** True when the router must ask whether CancelTask is wanted (a running step with a task, not told otherwise). */
export const mayWantCancel = (record: DelegationRecord, plan: FollowPlan): boolean =>
  plan.cancelIfRequested !== false && record.kind === 'step' && record.taskId !== undefined && !isFinished(record.state);

/** A run of follow cycles without progress as the journal counted it (`journal.noteNoProgress`). */
export interface NoProgressRun {
  /** Cycles in the run before this one (0: this cycle brought progress). */
  count: number;
  /** When the run began (epoch ms). */
  since: number;
  /** Cycles in a row (this one included) that ended on an answer we cannot accept. */
  unacceptableInRow: number;
}

/**
 * The progress rule after one follow cycle (docs/agents.md "Progress rule"): progress → follow again after a short jittered
 * delay (a live stream that showed nothing new for `slowPollAfterMs`: within the backoff's cap window); nothing new →
 * resubscribe after full-jitter backoff; backoff at its cap or `slowPollAfterMs` → slow
 * polling (one GetTask per `slowPollMs`); nothing new for `noProgressWindowMs` → AMBIGUOUS `NO_PROGRESS`. A cycle
 * that ended on an answer we cannot accept (`unacceptable`) `unacceptableAnswerLimit` times running ends the
 * attempt at once with `PROTOCOL_ERROR` (bounded calls, never the no-progress window).
 */
export function progressNext(run: NoProgressRun, observation: { what: string; unacceptable?: { code: RecordedErrorCode; outcome?: OutcomeCode } }, record: Pick<DelegationRecord, 'taskId' | 'state'>, policy: Policy): Next {
  const { count, since, unacceptableInRow } = run;
  if (observation.unacceptable && unacceptableInRow >= policy.unacceptableAnswerLimit) {
    return {
      kind: 'needs-person',
      code: observation.unacceptable.outcome ?? 'PROTOCOL_ERROR',
      message:
        observation.unacceptable.outcome === 'SEARCH_UNAVAILABLE'
          ? `${unacceptableInRow} searches for our message in a row failed (last: ${observation.what}); state ${record.state}`
          : `${unacceptableInRow} reads of ${record.taskId ? `task ${record.taskId}` : 'the task found by our messageId'} in a row ended on an answer we cannot accept (last: ${observation.unacceptable.code}; ${observation.what}); state ${record.state}`,
    };
  }
  // (count 0 after a cycle whose stream delivered events keeps the run's start: P36, the window still applies.)
  const elapsedMs = policy.now() - since;
  if (elapsedMs >= policy.noProgressWindowMs) {
    const code = observation.unacceptable ? (observation.unacceptable.outcome ?? 'PROTOCOL_ERROR') : 'NO_PROGRESS';
    return {
      kind: 'needs-person',
      code,
      message:
        `no progress for ${elapsedMs} ms (since ${new Date(since).toISOString()}): ${count + 1} observations of task ${record.taskId} brought nothing new; ` +
        `last: ${observation.what}${observation.unacceptable ? ` (protocol error ${observation.unacceptable.code})` : ''}; state ${record.state}`,
    };
  }
  if (count === 0) {
    // A cycle that brought progress starts a fresh run (elapsed 0): follow again at once. A live stream that showed
    // nothing new keeps the run's start (P36): past `slowPollAfterMs` of that, an agent that recycles its stream
    // after every update is resubscribed within the backoff's cap window (full jitter), not at once, so its
    // follow rate stays bounded; it is still followed on streams (never slow-polled) until the no-progress window.
    const attempt = elapsedMs >= policy.slowPollAfterMs ? Number.POSITIVE_INFINITY : 0;
    return { kind: 'follow', plan: { resubscription: 0, delayMs: fullJitterDelayMs(attempt, policy.followBackoff, policy.random) } };
  }
  if (elapsedMs >= policy.slowPollAfterMs || backoffAtCap(count, policy.followBackoff)) {
    return { kind: 'slow-poll', resubscription: count, delayMs: Math.floor(policy.slowPollMs * (1 + policy.random() / 4)) };
  }
  return { kind: 'follow', plan: { resubscription: count, delayMs: fullJitterDelayMs(count, policy.followBackoff, policy.random) } };
}

/**
 * True when a follow job should only read (GetTask), not stream: it was enqueued by the progress rule after
 * `resubscription` cycles without progress, and the run has lasted `slowPollAfterMs` or its backoff reached the cap.
 */
export function isSlowPolling(record: Pick<DelegationRecord, 'noProgressSince'>, resubscription: number, policy: Pick<Policy, 'now' | 'slowPollAfterMs' | 'followBackoff'>): boolean {
  if (resubscription === 0 || record.noProgressSince === undefined) return false;
  return policy.now() - record.noProgressSince >= policy.slowPollAfterMs || backoffAtCap(resubscription, policy.followBackoff);
}

/**
 * TaskNotFound for a task we had (field case R13: in-memory stores forget on restart, replicas disagree): one
 * answer decides nothing. `ask-later` until `notFoundThreshold` answers spanning `notFoundWindowMs`, then
 * `check-list` (is our message visible in ListTasks at all?). Counts as the journal will hold them after this answer.
 */
export function notFoundVerdict(record: Pick<DelegationRecord, 'notFoundCount' | 'firstNotFoundAt'>, policy: Policy): { verdict: 'ask-later'; atMs: number; count: number } | { verdict: 'check-list'; count: number; spanMs: number } {
  const now = policy.now();
  const count = record.notFoundCount + 1;
  const first = record.firstNotFoundAt ?? now;
  if (count < policy.notFoundThreshold || now - first < policy.notFoundWindowMs) {
    return { verdict: 'ask-later', atMs: now + Math.ceil(policy.notFoundWindowMs / policy.notFoundThreshold), count };
  }
  return { verdict: 'check-list', count, spanMs: now - first };
}

/**
 * What the reconciler does with a maybe-sent message a search did not find: resend it (same messageId), end the
 * attempt FAILED with the agent's own error, or a person decides (`reason`). The one rule for resending (V5, crash
 * window 1): an unreadable answer arrived (`delivery: received`): never. The agent answered an error and a
 * conclusive search does not find our message: the error created nothing, so a retryable one is resent and a
 * permanent one ends the attempt. Otherwise only when the search proves the message absent, or the agent cannot
 * list tasks but deduplicates by messageId. `proven`: the search proved our message absent; false for the
 * deduplicating agent's resend, which is safe at THAT agent only (it may hold our message and be doing the work):
 * never a FAILED that hands the step to another agent (attack36: sendAttempts spent, or the deadline passed, was
 * FAILED and the step booked again at a second agent).
 */
export type UnfoundVerdict = { resend: true; proven: boolean } | { resend: false; fail: RecordedError } | { resend: false; reason: string };

/** At most this many task ids are named in a message for a person (an agent's listing may name thousands). */
export const NAMED_TASKS = 10;
/** Characters of one task id kept in a message for a person (an agent chooses its ids, of any length). */
export const TASK_ID_CHARS = 128;

/** One task id as a message names it: clipped at `TASK_ID_CHARS`. */
export const namedTask = (id: string): string => (id.length > TASK_ID_CHARS ? `${id.slice(0, TASK_ID_CHARS)}…` : id);

/**
 * Task ids an agent gave, as a message for a person names them: the first `NAMED_TASKS`, each clipped (`namedTask`),
 * then how many more. The journal, the API, notifications and the log line carry the message: bounded whatever the
 * agent listed (review20: 3000 listed ids of 300 characters made a 900 KB message).
 */
export function namedTasks(ids: readonly string[]): string {
  const named = ids.slice(0, NAMED_TASKS).map(namedTask).join(', ');
  return ids.length > NAMED_TASKS ? `${named} and ${ids.length - NAMED_TASKS} more` : named;
}

/** See `UnfoundVerdict`. */
export function unfoundVerdict(input: { error?: RecordedError; deduplicates: boolean; search: Exclude<SearchFinding, { kind: 'found' } | { kind: 'several' } | { kind: 'failed' }> }): UnfoundVerdict {
  const { error, deduplicates, search } = input;
  const conclusive = search.kind === 'not-found' && !search.inconclusive && !search.paginationBroken;
  if (error?.delivery === 'received' && error.answer === 'error' && conclusive) return error.retryable ? { resend: true, proven: true } : { resend: false, fail: error };
  if (error?.delivery === 'received') return { resend: false, reason: `the agent answered our message (${error.code}) but the task cannot be found by our messageId` };
  if (search.kind === 'unsupported') {
    return deduplicates ? { resend: true, proven: false } : { resend: false, reason: 'the agent cannot list tasks, so a send that may have happened cannot be checked' };
  }
  if (!conclusive) {
    const why = search.paginationBroken ? 'ListTasks pagination is broken, or its listing shows fewer tasks than it counts' : `candidate task(s) ${namedTasks(search.candidates)} have too little history`;
    return { resend: false, reason: `cannot tell whether the agent received our message: ${why}` };
  }
  return { resend: true, proven: true };
}

/** The deadline of an attempt (epoch ms): `createdAt` + the step's `attemptDeadlineMs`, else the fleet's. */
export const attemptDeadlineOf = (createdAt: number, fleetDeadlineMs: number, stepDeadlineMs: number | undefined): number => createdAt + (stepDeadlineMs ?? fleetDeadlineMs);

/**
 * SendMessages of this attempt before the current mark (if any) that may have reached the agent: the marks it counted
 * (`sendCount`, a mark given back uncounted) less the marked tries journaled as never having left (`unreachableCount`
 * less the unmarked ones, `unsentTries`), less the sends a search proved absent (`provenAbsentSends`, written by a
 * proven release, covering every send before it) and less the current mark. More than 0 on an unbound row: a send of
 * ours left and the row was released for a resend (releaseForResend-1.lua clears the mark) on a search that proves
 * nothing (a deduplicating agent that cannot list tasks, attack36), so the agent may hold our message: the attempt
 * deadline and the unreachable give-up are a person then, never a re-delegable FAILED (before: FAILED
 * AGENT_UNREACHABLE "nothing was sent", the step booked again at a second agent). After a proven release those sends
 * are known absent: FAILED stays right (release37: before, a person was asked needlessly and the saga stalled).
 */
export const earlierSendsMayHaveLeft = (record: Pick<DelegationRecord, 'sendStartedAt' | 'sendCount' | 'unreachableCount' | 'unsentTries' | 'provenAbsentSends'>): number =>
  record.sendCount - (record.sendStartedAt !== undefined ? 1 : 0) - (record.unreachableCount - record.unsentTries) - record.provenAbsentSends;

/**
 * Whether a row with no task of ours bound keeps evidence that the agent may hold our message though no mark says a
 * send is in flight: suspects (tasks refused pushes showed holding it, pending or counted lost), a refused result (an
 * answer about our message we could not accept), or an earlier SendMessage that may have left (`earlierSendsMayHaveLeft`:
 * a row released for a resend on a search that may prove nothing). Such a row is never closed as "nothing was sent"
 * on any path: not FAILED at its deadline, not CANCELED as never sent when the workflow is canceled (attack37: the
 * cancel read the mark alone, CANCELED "canceled before it was sent", and the compensation of a step the agent may
 * have done was skipped), not verified `absent` without its verifier. A person decides (`deadlineWithEvidence`).
 */
export const unboundEvidence = (record: Pick<DelegationRecord, 'taskId' | 'refusedResult' | 'sendStartedAt' | 'sendCount' | 'unreachableCount' | 'unsentTries' | 'provenAbsentSends' | 'suspects' | 'suspectsLost'>): boolean =>
  record.taskId === undefined && (keepsSuspects(record) || record.refusedResult !== undefined || earlierSendsMayHaveLeft(record) > 0);

/**
 * True when our own journal proves that nothing of ours reached the agent: no mark (`sendStartedAt`), no task bound, and
 * no evidence of an earlier send (`unboundEvidence`). The one "nothing was sent" reading (a cancel closing the row
 * locally, the verify run's finding `absent` without asking its verifier).
 */
export const provenUnsent = (record: Parameters<typeof unboundEvidence>[0]): boolean => record.sendStartedAt === undefined && !unboundEvidence(record);

/**
 * An INTENT whose SendMessage may have left: marked (`sendStartedAt`), never abandoned blind (the reconciler's search
 * decides: adopt, resend, FAILED on a proven absence, a person). The row's `error` is not read: markSending-2.lua
 * leaves the error an earlier try noted, so a `not-sent` there may be the try before this mark (attack36: a try
 * refused with ECONNREFUSED, the next one marked and taken by the agent; the deadline read the earlier `not-sent`,
 * wrote FAILED DEADLINE_EXCEEDED over the mark, and the step went to a second agent). A try that proves nothing left
 * clears its own mark (noteUnreachable-1.lua, giveBackMark-1.lua); any other costs one search.
 */
export const mayHaveReachedAgent = (record: Pick<DelegationRecord, 'state' | 'sendStartedAt'>): boolean => record.state === 'INTENT' && record.sendStartedAt !== undefined;

/**
 * When to read the task a refused push named (`suspectTaskId`) on a row not yet bound (INTENT): nothing to compare it
 * with until our task is bound, so the read waits while the send may still be in flight: until it settles
 * (`sendStartedAt + sendSettleMs`), and while a send lease is still held (`heldMs`: an agent holding our SendMessage
 * past its settle time, V2; review21: the read was dropped then, the answer bound T1 and T2 went unseen). Settled and
 * not held, the reconcile run decides now (adopt what the search finds, resend, a person) and the read follows it, on
 * a grid of `sendSettleMs` (at least a second) so that every suspect of the row meets in one job (review21: the read
 * was dropped, the search listed nothing, our message was resent into T3 and T2 went unseen). Undefined for a row
 * never sent (no mark, no resend): the agent cannot hold our message. Always after `now` when defined; the chain ends
 * when the row is bound (the read) or finished.
 */
export function suspectReadAt(record: Pick<DelegationRecord, 'sendStartedAt' | 'resendCount'>, heldMs: number, policy: Pick<Policy, 'now' | 'sendSettleMs'>): number | undefined {
  if (record.sendStartedAt === undefined && record.resendCount === 0) return undefined;
  const now = policy.now();
  const inFlightUntil = Math.max(record.sendStartedAt === undefined ? 0 : record.sendStartedAt + policy.sendSettleMs, now + Math.max(0, heldMs));
  if (inFlightUntil > now) return inFlightUntil;
  const grid = Math.max(1_000, policy.sendSettleMs);
  return (Math.floor(now / grid) + 1) * grid;
}

/**
 * The suspects one reconcile job reads by GetTask, oldest first, on a row bound to `boundTaskId`: the delegation's
 * pending suspects (`Journal.pendingSuspects`, oldest first) and the one the job names (the first of its second; a job
 * an older producer enqueued names the only one), each once, never our own task, at most `cap`
 * (`SUSPECT_READS_PER_JOB`: the GetTask calls of one job; the rest wait for the next job). `ours`: pending ids that
 * are our own task (pushed before it was bound), to clear.
 */
export function suspectsToRead(pending: readonly string[], named: string | undefined, boundTaskId: string | undefined, cap: number): { read: string[]; ours: string[] } {
  const read: string[] = [];
  for (const id of named === undefined ? pending : [...pending, named]) {
    if (id !== boundTaskId && !read.includes(id) && read.length < cap) read.push(id);
  }
  return { read, ours: pending.filter((id) => id === boundTaskId) };
}

/**
 * What one GetTask of a suspect concluded: it holds our message (`several-holders`: the row is AMBIGUOUS, decided),
 * it does not (`suspect-not-holding`: the agent's own read, or its TaskNotFound), the read failed and may succeed
 * later (`suspect-unread`: a drop, HTTP 5xx, a timeout: kept for another round), or it cannot be read (`suspect-unreadable`:
 * an answer we cannot accept: evidence lost).
 */
export type SuspectRead = 'several-holders' | 'suspect-not-holding' | 'suspect-unread' | 'suspect-unreadable';

/** One round of suspect reads as `Journal.clearSuspects` takes it (`readUntilDecided`'s reads, and our own task's ids). */
export function suspectRound(reads: ReadonlyMap<string, SuspectRead>, ours: readonly string[]): { read: string[]; unread: string[]; unreadable: string[] } {
  const of = (kind: SuspectRead) => [...reads].filter(([, read]) => read === kind).map(([id]) => id);
  return { read: [...ours, ...of('suspect-not-holding'), ...of('several-holders')], unread: of('suspect-unread'), unreadable: of('suspect-unreadable') };
}

/**
 * What the reconciler does once a round of suspect reads found no holder, from what the journal says is left
 * (`Journal.clearSuspects`): evidence lost (`lost`: suspects not kept, or never read to a conclusion) is a person at
 * once, whatever still waits (never silently dropped; waiting for a flood to drain could wait for ever); suspects still
 * pending are read by a later job: after `retry`'s backoff when the last round could not read some (`rounds` in a
 * row: `retryDelayMs` doubling, the reconcile job's own backoff), else the next second; none: nothing more.
 */
export function afterSuspectReads(left: { pending: number; lost: number; rounds: number }, now: number, retryDelayMs: number): { kind: 'person'; lost: number } | { kind: 'read-again'; at: number } | { kind: 'done' } {
  if (left.lost > 0) return { kind: 'person', lost: left.lost };
  if (left.pending === 0) return { kind: 'done' };
  return { kind: 'read-again', at: suspectRetryAt({ suspectReadRounds: left.rounds, suspectReadRoundAt: now }, retryDelayMs) ?? now };
}

/**
 * When the pending suspects of a row may be read again after `suspectReadRounds` rounds in a row that could not read
 * some, the last ended at `suspectReadRoundAt` (ms, clearSuspects-1.lua): `retryDelayMs` doubling from that time (the
 * reconcile job's own backoff). Undefined when no failed round is counted (read at once). The one schedule every
 * asker keeps: the ender of a round (`afterSuspectReads`), a renewal tick or a follow run starting on the row
 * (lease-renewal.ts), and a suspect read job that finds itself early (suspect-reads.ts): each asks for its job at
 * this time, so all of them are one job (`enqueueReconcile`'s id, per second of `at`).
 */
export function suspectRetryAt(row: { suspectReadRounds: number; suspectReadRoundAt?: number | undefined }, retryDelayMs: number): number | undefined {
  if (row.suspectReadRounds <= 0 || row.suspectReadRoundAt === undefined) return undefined;
  return row.suspectReadRoundAt + retryDelayMs * 2 ** (row.suspectReadRounds - 1);
}

/** A job's turn at a row's suspects (`suspectReadTurn`): read them now, or leave them to a job due at `at` (ms). */
export type SuspectReadTurn = { kind: 'read' } | { kind: 'wait'; at: number };

/** Who asks to read a row's suspects (`suspectReadTurn`). */
export interface SuspectAsker {
  /** The asking job's id (undefined: not a queued job). */
  jobId: string | undefined;
  /** The id of the suspect read job due at a time (ms): `suspectReadJob(ref, at).id`. */
  scheduled: (at: number) => string;
  /** The row's suspects counted lost (`suspectsLost`): above 0, a person decides at once (no backoff). */
  lost: number;
  /** Now (ms). */
  now: number;
}

/**
 * Whether a job reads the row's suspects now: the one schedule every asker keeps (a suspect read job, a renewal
 * tick's or a follow run's, a lease or sweep reconcile). A round in flight (claimed, claimSuspectRound-1.lua, its
 * claim not yet expired) is not read over: wait for the claim's end (its ender asks for the next read itself; this
 * job's own at the claim's end only looks again). After failed rounds (`suspectRetryAt`), unless some are lost (a
 * person decides at once), nothing reads before the backoff's end, not even a job naming a suspect a push just
 * showed (it is pending in the row: the next round reads it; a job that ran again, stalled under load, names it too):
 * then only the job the round's ender asked for
 * reads (`scheduled(retryAt)`), any other waits for that time (asking for that same job); but a claim past its time is
 * a round that never ended (its worker died, and with it maybe that job): any job takes it over once the backoff
 * allows. Pure; `suspect-reads.ts` claims the round compare-and-set on the fields it decided from before any GetTask,
 * so two jobs never read one round.
 */
export function suspectReadTurn(row: SuspectRoundFields, asker: SuspectAsker, retryDelayMs: number): SuspectReadTurn {
  const claimed = row.suspectRoundBy !== undefined;
  const until = row.suspectRoundUntil ?? 0;
  if (claimed && until > asker.now) return { kind: 'wait', at: until };
  const retryAt = asker.lost === 0 ? suspectRetryAt(row, retryDelayMs) : undefined;
  if (retryAt === undefined) return { kind: 'read' };
  if (claimed ? asker.now < retryAt : asker.jobId !== asker.scheduled(retryAt)) return { kind: 'wait', at: retryAt };
  return { kind: 'read' };
}

/**
 * How long a claim on a round of suspect reads holds (ms): the round's GetTasks (`readsPerRound`, each bounded by
 * `requestTimeoutMs`), one Agent Card fetch (`cardFetchTimeoutMs`: a row without a journaled interface fetches the card
 * before its first GetTask; once fetched it is cached, and a fetch that fails ends that read without a GetTask, so a
 * read costs at most one of the two bounds but the first, which may cost both) and one `requestTimeoutMs` more for its
 * journal calls. Past it a round that never ended is taken over (`suspectReadTurn`): the bound on how long a dead
 * worker's claim holds the reads back, and the least a live round may last without a second claimer counting it twice.
 */
export function suspectRoundClaimMs(readsPerRound: number, requestTimeoutMs: number, cardFetchTimeoutMs: number): number {
  return (readsPerRound + 1) * requestTimeoutMs + cardFetchTimeoutMs;
}

/** When a read of the row's suspects asked for at `now` (ms) is due: now, or the backoff's end (`suspectRetryAt`) if later. */
export function suspectReadDueAt(row: { suspectReadRounds: number; suspectReadRoundAt?: number | undefined }, now: number, retryDelayMs: number): number {
  return Math.max(now, suspectRetryAt(row, retryDelayMs) ?? now);
}

/**
 * What the start-up sweep does with one delegation entry of the unfinished index it read (`runs/sweep.ts`):
 * `reconcile` it in a batch when its claim was this sweep's (`claimed`) and no follow run of another live worker holds
 * it (`followedByLive`); else, when its row keeps suspect evidence (`keepsSuspects`: suspects pending or counted lost,
 * `Journal.keepSuspects`), `read-suspects` (a suspect read job, `reconcile.ts` reads them before the lease): whoever
 * moved its check (a follow run that took it over, another sweep) or follows it reads only its own task (its renewal
 * tick asks for the read a tick later at most), and a push route that crashed after keeping one enqueued nothing; else `leave` it to the sweep that claimed it or to its follower.
 */
export function startupSweepVerdict(entry: { claimed: boolean; followedByLive: boolean; keepsSuspects: boolean }): 'reconcile' | 'read-suspects' | 'leave' {
  if (entry.claimed && !entry.followedByLive) return 'reconcile';
  return entry.keepsSuspects ? 'read-suspects' : 'leave';
}

/** What an attempt does after a try that could not reach its agent (`unreachableVerdict`). */
export type UnreachableVerdict = { verdict: 'wait'; nextTryAt: number } | { verdict: 'give-up'; message: string };

/**
 * Waiting for an agent that cannot be reached, when the try proves nothing was created (connection refused, DNS
 * failure, its Agent Card unavailable): a deploy or restart of the agent must not end the work. The attempt waits
 * until `giveUpAt`: the attempt deadline, or `unreachableForMs` after its first unreachable try if sooner. Before it,
 * the next try comes after full-jitter backoff (`unreachableBackoff`, exponent the tries so far), never later than
 * `giveUpAt` (the last try is at it); at or past it, `give-up` (FAILED `AGENT_UNREACHABLE`: nothing was sent, so
 * the step may go to another agent). `lastError`: the failed try's message, for the give-up's text.
 */
export function unreachableVerdict(
  record: Pick<DelegationRecord, 'unreachableCount' | 'unreachableSince'>,
  bounds: UnreachableBounds,
  lastError: string,
  policy: Pick<Policy, 'now' | 'random' | 'unreachableBackoff'>,
): UnreachableVerdict {
  const now = policy.now();
  const since = record.unreachableSince ?? now;
  const giveUpAt = Math.min(bounds.deadlineAt, bounds.unreachableForMs === undefined ? Infinity : since + bounds.unreachableForMs);
  if (now >= giveUpAt) {
    const bound = giveUpAt === bounds.deadlineAt ? 'until the attempt deadline' : `for the step's unreachableForMs (${bounds.unreachableForMs} ms)`;
    return {
      verdict: 'give-up',
      message: `the agent could not be reached ${bound}: ${record.unreachableCount + 1} tries over ${now - since} ms since ${new Date(since).toISOString()} (last: ${lastError}); nothing was sent`,
    };
  }
  const delayMs = fullJitterDelayMs(record.unreachableCount, policy.unreachableBackoff, policy.random);
  return { verdict: 'wait', nextTryAt: Math.min(now + delayMs, giveUpAt) };
}
