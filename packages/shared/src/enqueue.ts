/**
 * One enqueue helper per logical act. Each owns its BullMQ job-id rule (so
 * the same act enqueued twice in the same occasion is one job) and takes job
 * data typed by its queue's schema, so a wrong shape fails at compile time.
 * Job ids are deterministic, but a removed or finished job no longer
 * deduplicates: every processor looks at the journal first (style rule 4), and
 * ids that may recur carry an occasion (a time, a version, a bucket).
 */
import type { z } from 'zod';
import {
  jobId,
  type CompensateJobSchema,
  type FollowJobSchema,
  type NotifyJobSchema,
  type QueueName,
  type ReconcileJobSchema,
  type SendJobSchema,
  type VerifyJobSchema,
} from './queues.ts';
import { tenantOfWorkflowId } from './journal/tenant.ts';

/** The part of a BullMQ `Queue` the helpers use (the producer and the workers pass their queues). */
export interface JobQueue<Data> {
  add(
    name: string,
    data: Data,
    options?: {
      jobId?: string;
      delay?: number;
      removeOnComplete?: boolean;
      priority?: number;
      attempts?: number;
      backoff?: { type: 'exponential'; delay: number; jitter: number };
      /** A message send's place among its tenant's, taken already (the send queue's `FairSendQueue` takes one otherwise). */
      place?: number;
      /** A next try's place, its job's: kept unless from before the send order's last rebase (`FairSendQueue.add`). */
      keptPlace?: number;
    },
  ): Promise<unknown>;
}

/**
 * A queue that is also asked about one job by id (BullMQ `Queue`): its state (`completed`, `failed`, `delayed`,
 * `active`, `waiting`, `waiting-children`, `prioritized` or `unknown`) and its removal (1 removed, 0 locked: it runs).
 */
export interface JobQueueById<Data> extends JobQueue<Data> {
  getJobState(jobId: string): Promise<string>;
  remove(jobId: string): Promise<number>;
}

/** Queues by name, each typed by its job data. */
export interface TypedQueues {
  send: JobQueue<z.input<typeof SendJobSchema>>;
  follow: JobQueue<z.input<typeof FollowJobSchema>>;
  reconcile: JobQueueById<z.input<typeof ReconcileJobSchema>>;
  verify: JobQueue<z.input<typeof VerifyJobSchema>>;
  compensate: JobQueue<z.input<typeof CompensateJobSchema>>;
  notify: JobQueue<z.input<typeof NotifyJobSchema>>;
}
type Needs<Name extends QueueName> = Pick<TypedQueues, Name>;

interface Ref {
  workflowId: string;
  delegationId: string;
}
const refOf = ({ workflowId, delegationId }: Ref): Ref => ({ workflowId, delegationId });
/** A send job's ref: the delegation and its workflow's tenant (its id says it: journal/tenant.ts). */
const sendRefOf = (ref: Ref) => ({ ...refOf(ref), tenant: tenantOfWorkflowId(ref.workflowId) });
/** `placement` with the workflow's tenant unless it names one: every message send is placed among its tenant's. */
const withTenant = (ref: Ref, placement: SendPlacement): SendPlacement => ({ ...placement, tenant: placement.tenant ?? tenantOfWorkflowId(ref.workflowId) });

/**
 * Where a message send goes in the send queue's order (`send-priority.ts`): the delegation's `priority` (1 to 10,
 * default 5: the record's, so re-sends and next tries keep it) and its `tenant` (default `default`); `place`: its place
 * among the tenant's sends when the caller took it already (`SendOrder.place`), else the send queue takes one.
 */
export interface SendPlacement {
  priority?: number | undefined;
  tenant?: string | undefined;
  place?: number | undefined;
}
const placementData = (placement: SendPlacement) => ({
  ...(placement.priority !== undefined ? { priority: placement.priority } : {}),
  ...(placement.tenant !== undefined ? { tenant: placement.tenant } : {}),
});

/**
 * Sends a delegation's journaled message. One job per send number (`resendCount`); `requeuedAt` (ms)
 * when the reconciler re-enqueues a send whose job was lost (the old id may still be kept).
 */
export async function enqueueSend(queues: Needs<'send'>, ref: Ref, resendCount: number, requeuedAt?: number, delayMs = 0, placement: SendPlacement = {}): Promise<void> {
  const id = requeuedAt === undefined ? jobId('send', ref.workflowId, ref.delegationId, resendCount) : jobId('send', ref.workflowId, ref.delegationId, resendCount, requeuedAt);
  await queues.send.add('send', { ...refOf(ref), kind: 'message', ...placementData(withTenant(ref, placement)) }, { jobId: id, ...(delayMs > 0 ? { delay: delayMs } : {}), ...(placement.place !== undefined ? { place: placement.place } : {}) });
}

/**
 * The next try of a send that found its agent unreachable or every slot taken (nothing was sent), after `delayMs`:
 * one job per try of each send number (`resendCount`), the try identified by its journaled time (`tryAt`, ms since
 * epoch). `placement.place`: the place the send's job had (`placeOfSendPriority`), kept, so a waiting send is not
 * counted again among its tenant's (the clock's place instead when it is from before the send order's last rebase:
 * `FairSendQueue.add` `keptPlace`); without it the send queue takes a new one.
 */
export async function enqueueSendTry(queues: Needs<'send'>, ref: Ref, resendCount: number, tryAt: number, delayMs: number, placement: SendPlacement = {}): Promise<void> {
  const id = jobId('send', ref.workflowId, ref.delegationId, resendCount, 'try', tryAt);
  await queues.send.add('send', { ...refOf(ref), kind: 'message', ...placementData(withTenant(ref, placement)) }, { jobId: id, ...(delayMs > 0 ? { delay: delayMs } : {}), ...(placement.place !== undefined ? { keptPlace: placement.place } : {}) });
}

/** Sends a journaled reply (one job per reply messageId; `requeuedAt` when a stuck one is enqueued again). */
export async function enqueueReply(queues: Needs<'send'>, ref: Ref, replyMessageId: string, requeuedAt?: number): Promise<void> {
  const parts = requeuedAt === undefined ? [replyMessageId] : [replyMessageId, requeuedAt];
  await queues.send.add('send', { ...sendRefOf(ref), kind: 'reply' }, { jobId: jobId('reply', ref.workflowId, ref.delegationId, ...parts) });
}

/**
 * Why a CancelTask goes out: a user's cancel request (`request`: the workflow version that request wrote, so
 * the same request added twice is one job, and a later request is a job of its own even while an earlier
 * one's failed job is kept), the workflow is stopping (once per reconcile-interval `bucket`), or a running
 * task was found after the cancel (`at`, ms).
 */
export type CancelOccasion = { by: 'user'; request: number } | { by: 'stop'; bucket: number } | { by: 'late'; at: number };

/** CancelTask on a delegation's task (spec §3.1.5). */
export async function enqueueCancel(queues: Needs<'send'>, ref: Ref, occasion: CancelOccasion): Promise<void> {
  const suffix = occasion.by === 'user' ? ['user', occasion.request] : occasion.by === 'stop' ? ['stop', occasion.bucket] : [occasion.at];
  await queues.send.add('send', { ...sendRefOf(ref), kind: 'cancel' }, { jobId: jobId('cancel', ref.workflowId, ref.delegationId, ...suffix) });
}

/** A subscription: `resubscription` is the backoff exponent, `again` false only for the first of new work. */
export interface SubscriptionPlan {
  resubscription: number;
  again: boolean;
  delayMs: number;
  /** Now, in ms (part of the job id: a delegation is followed many times). */
  at: number;
  /** The resubscription rate-limit slot is already reserved (the job waits `delayMs` for it, then runs). Default false. */
  slotTaken?: boolean;
}

/** SubscribeToTask for a delegation (spec §3.1.6). */
export async function enqueueFollow(queues: Needs<'follow'>, ref: Ref, plan: SubscriptionPlan): Promise<void> {
  const id = jobId('follow', ref.workflowId, ref.delegationId, plan.resubscription, plan.at);
  const data = { ...refOf(ref), resubscription: plan.resubscription, again: plan.again, ...(plan.slotTaken ? { slotTaken: true } : {}) };
  await queues.follow.add('follow', data, { jobId: id, delay: plan.delayMs });
}

/**
 * Why one delegation is reconciled: it is due at `dueAt` (delayed until then), its follow lease runs out at
 * `leaseEndsAt` (delayed until then; job data `afterLease`), the sweep found it due (one job per `bucket`,
 * removed on completion; `later`: after every job without it, BullMQ priority 1), a push moved it (`push`: when, ms), or a
 * push reported its completion without the result (`pushedCompletion`: the pushed status timestamp, ms; 0 when it
 * has none): the same completion pushed again while its read waits is one job, not one GetTask per push; or a push
 * about another task showed a message of ours in that task, or suspects wait in the journal (`suspect`: that task, the
 * first of its second, or undefined: one the journal could not keep, or more left to read; the job reads the suspects
 * the journal keeps pending, `Journal.noteSuspect`, by GetTask before anything else): one job per delegation per second
 * of `at` (ms), delayed to that second's end, so every such push of the same second is that one job (a flood of
 * foreign pushes is at most `SUSPECT_READS_PER_JOB` GetTask calls a second).
 */
export type ReconcileOccasion =
  | { dueAt: number; now: number }
  | { leaseEndsAt: number; now: number }
  | { sweep: string | number; later?: boolean }
  | { push: number }
  | { pushedCompletion: number }
  | { suspect: string | undefined; at: number; now: number };

/**
 * The id and due time (ms) of the suspect read job of `ref` asked for at `at` (ms): one job per delegation per second
 * of `at`, due at that second's end (`ReconcileOccasion` `suspect`). A suspect read job compares its own id with the
 * one its row's schedule names (suspect-reads.ts).
 */
export function suspectReadJob(ref: Ref, at: number): { id: string; dueAt: number } {
  const dueAt = Math.floor(at / 1000) * 1000 + 1000;
  return { id: jobId('reconcile', ref.workflowId, ref.delegationId, 'suspect', dueAt), dueAt };
}

/**
 * Whether `id` (a reconcile job's id; undefined: not a queued job) is a suspect read job of `ref`
 * (`suspectReadJob`'s id for some second): the only jobs that read a row's suspects, so that reads of a flood of
 * pushes stay one job a second; any other reconcile of the row asks for the job of its second instead.
 */
export function isSuspectReadJob(ref: Ref, id: string | undefined): boolean {
  const prefix = jobId('reconcile', ref.workflowId, ref.delegationId, 'suspect', '');
  return id !== undefined && id.startsWith(prefix) && /^\d+$/.test(id.slice(prefix.length));
}

/** Reconciles one delegation. */
export async function enqueueReconcile(queues: Needs<'reconcile'>, ref: Ref, occasion: ReconcileOccasion): Promise<void> {
  const data = refOf(ref);
  if ('dueAt' in occasion) {
    const options = { jobId: jobId('reconcile', ref.workflowId, ref.delegationId, occasion.dueAt), delay: Math.max(0, occasion.dueAt - occasion.now) };
    await queues.reconcile.add('delegation', data, options);
  } else if ('leaseEndsAt' in occasion) {
    const options = { jobId: jobId('reconcile', ref.workflowId, ref.delegationId, 'lease', occasion.leaseEndsAt), delay: Math.max(0, occasion.leaseEndsAt - occasion.now) };
    await queues.reconcile.add('delegation', { ...data, afterLease: true }, options);
  } else if ('sweep' in occasion) {
    const options = { jobId: jobId('reconcile', ref.workflowId, ref.delegationId, 'sweep', occasion.sweep), removeOnComplete: true };
    await queues.reconcile.add('delegation', data, occasion.later ? { ...options, priority: 1 } : options);
  } else if ('suspect' in occasion) {
    // Delayed to the end of its second, so it is still waiting (and deduplicates) while that second's pushes arrive.
    const { id, dueAt } = suspectReadJob(ref, occasion.at);
    const options = { jobId: id, delay: Math.max(0, dueAt - occasion.now) };
    if (dueAt <= occasion.now) await clearSpentSuspectJob(queues, id);
    await queues.reconcile.add('delegation', occasion.suspect === undefined ? data : { ...data, suspectTaskId: occasion.suspect }, options);
  } else if ('push' in occasion) {
    await queues.reconcile.add('delegation', data, { jobId: jobId('reconcile', ref.workflowId, ref.delegationId, 'push', occasion.push) });
  } else {
    await queues.reconcile.add('delegation', data, { jobId: jobId('reconcile', ref.workflowId, ref.delegationId, 'pushed-completion', occasion.pushedCompletion) });
  }
}

/**
 * A suspect read job asked for once its due time passed: it should have run already. One of that id that failed all
 * its attempts (kept in the failed set: `JOB_RETENTION`, a week or 10,000 jobs) or completed without ending a round
 * (kept only under other retention) would take the place of the add, and the row's schedule names that id
 * (`suspectReadTurn` in workers policy.ts: after failed rounds only that job reads), so the suspects would wait until
 * BullMQ evicts it. Such a job is removed first, so the add is a job again. A job that waits or runs is left as it is
 * (removal refuses a running one); two readers never read one round all the same: the round's claim in the row
 * (claimSuspectRound-1.lua) is what serializes them, whatever jobs exist.
 */
async function clearSpentSuspectJob(queues: Needs<'reconcile'>, id: string): Promise<void> {
  const state = await queues.reconcile.getJobState(id);
  if (state === 'failed' || state === 'completed') await queues.reconcile.remove(id);
}

/**
 * Why a batch of index entries is reconciled in one job (`refs`, at most `RECONCILE_BATCH_MAX`): a sweep found
 * them (`sweep`: the sweep's occasion, `part`: the batch's number in it; `later`: after every job without it,
 * BullMQ priority 1), their follow leases run out by `leaseEndsAt` (delayed until then; job data
 * `afterLease`; `batch`: the id of the batch job that found them held), or a worker found at `lostAt` (ms)
 * that the leases of its streams were no longer its own (`holder`: that worker's id), or the sweep of a dead
 * workers ended their leases (`deadWorker`: the first one's id, `at`: when they were found dead, ms). Removed on completion.
 */
export type ReconcileBatchOccasion =
  | { sweep: string | number; part: number; later?: boolean }
  | { leaseEndsAt: number; now: number; batch: string }
  | { lostAt: number; holder: string; part: number }
  | { deadWorker: string; at: number; part: number };

/** Reconciles a batch of delegations (or workflow entries `*`) in one job. */
export async function enqueueReconcileBatch(queues: Needs<'reconcile'>, refs: readonly { workflowId: string; delegationId: string }[], occasion: ReconcileBatchOccasion): Promise<void> {
  const data = { refs: refs.map(refOf) };
  if ('sweep' in occasion) {
    const options = { jobId: jobId('reconcile-batch', 'sweep', occasion.sweep, occasion.part), removeOnComplete: true };
    await queues.reconcile.add('batch', data, occasion.later ? { ...options, priority: 1 } : options);
  } else if ('lostAt' in occasion) {
    await queues.reconcile.add('batch', data, { jobId: jobId('reconcile-batch', 'lost', occasion.holder, occasion.lostAt, occasion.part), removeOnComplete: true });
  } else if ('deadWorker' in occasion) {
    await queues.reconcile.add('batch', { ...data, holderDied: true }, { jobId: jobId('reconcile-batch', 'dead', occasion.deadWorker, occasion.at, occasion.part), removeOnComplete: true });
  } else {
    const options = { jobId: jobId('reconcile-batch', 'lease', occasion.batch, occasion.leaseEndsAt), delay: Math.max(0, occasion.leaseEndsAt - occasion.now), removeOnComplete: true };
    await queues.reconcile.add('batch', { ...data, afterLease: true }, options);
  }
}

/** Why a workflow is decided again outside a transition: at start (a step had no agent), after cancel or resolve (`at`, ms). */
export type DecideOccasion = { by: 'start' } | { by: 'cancel' | 'resolve'; at: number };

/** Asks the workers to run the decider for a workflow (a reconcile job for `<workflowId>/*`). */
export async function enqueueDecide(queues: Needs<'reconcile'>, workflowId: string, occasion: DecideOccasion): Promise<void> {
  const id = occasion.by === 'start' ? jobId('reconcile', workflowId, 'start') : jobId('reconcile', workflowId, occasion.by, occasion.at);
  await queues.reconcile.add('delegation', { workflowId, delegationId: '*' }, { jobId: id });
}

/**
 * The sweep of workers found dead at `at` (ms; their liveness keys gone; at most `DEAD_WORKERS_PER_SWEEP`): one job
 * per death (forgetWorker-2.lua lets one finder enqueue it), retried by BullMQ if the sweeping worker dies too.
 * Removed on completion.
 */
export async function enqueueDeadWorkerSweep(queues: Needs<'reconcile'>, workerIds: readonly string[], at: number): Promise<void> {
  await queues.reconcile.add('dead-workers', { deadWorkers: [...workerIds] }, { jobId: jobId('dead-workers', workerIds[0]!, workerIds.length, at), removeOnComplete: true });
}

/** The sweep of unfinished delegations at fleet start-up (every one, not only due ones). */
export async function enqueueStartupSweep(queues: Needs<'reconcile'>, workerId: string, at: number): Promise<void> {
  await queues.reconcile.add('sweep', { all: true }, { jobId: jobId('startup-sweep', workerId, at) });
}

/**
 * Why a finished delegation's effect is verified: its settle asked, at most once per reconcile-interval `bucket`
 * (`floor(now / reconcileIntervalMs)`). Settles of one interval (the finishing transition, a reconcile of the
 * same row) are one job; a later settle (the reconciler finding the row still unverified) is a job of its own,
 * even while an earlier one's failed job is kept. The processor reads the journal first: a finding already
 * journaled ends the job.
 */
export interface VerifyOccasion {
  bucket: number;
}

/** Verifies a finished delegation's effect. */
export async function enqueueVerify(queues: Needs<'verify'>, ref: Ref, occasion: VerifyOccasion): Promise<void> {
  await queues.verify.add('verify', refOf(ref), { jobId: jobId('verify', ref.workflowId, ref.delegationId, occasion.bucket) });
}

/**
 * Why the compensation chain advances: the workflow entered COMPENSATING (`workflowVersion`), a
 * compensation settled (its `delegationId` and record `version`), or recovery found it waiting (`at`, ms).
 */
export type CompensateOccasion = { workflowVersion: number } | { settled: string; version: number } | { recoverAt: number };

/** Advances a workflow's compensation chain by one step. */
export async function enqueueCompensate(queues: Needs<'compensate'>, workflowId: string, occasion: CompensateOccasion): Promise<void> {
  const suffix =
    'workflowVersion' in occasion ? [occasion.workflowVersion] : 'settled' in occasion ? [occasion.settled, occasion.version] : ['recover', occasion.recoverAt];
  await queues.compensate.add('compensate', { workflowId }, { jobId: jobId('compensate', workflowId, ...suffix) });
}

/** How a notification is retried: BullMQ attempts in all, and the first backoff (ms, doubling, jittered by half). */
export interface NotifyRetry {
  attempts: number;
  backoffMs: number;
}

/**
 * Delivers a notification event to its receiver: one job per event id (the event's own stable id, so the same
 * occasion emitted twice while its job is kept is one job; once removed, the notify processor's journal check ends
 * the repeat). `retry` overrides the queue's default attempts and backoff.
 */
export async function enqueueNotification(queues: Needs<'notify'>, job: z.input<typeof NotifyJobSchema>, retry?: NotifyRetry): Promise<void> {
  const options = retry ? { attempts: retry.attempts, backoff: { type: 'exponential' as const, delay: retry.backoffMs, jitter: 0.5 } } : {};
  await queues.notify.add('notify', job, { jobId: jobId('notify', job.event.id), ...options });
}
