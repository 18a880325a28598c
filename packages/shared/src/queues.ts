/**
 * Queue names and job-data schemas, shared by the producer (which enqueues)
 * and the workers (which process). Each of send, follow, reconcile, verify and
 * compensate is its own BullMQ queue, so any worker can take over any duty.
 */
import { z } from 'zod';
import { ID_PATTERN, SUSPECT_READS_PER_JOB, SUSPECT_TASK_ID_MAX, SUSPECTS_PENDING_MAX } from './journal/keys.ts';
import { WORKFLOW_ID_PATTERN } from './journal/tenant.ts';
import { NotificationEventSchema } from './notify/event.ts';

export const QUEUE_NAMES = {
  send: 'send',
  follow: 'follow',
  reconcile: 'reconcile',
  verify: 'verify',
  compensate: 'compensate',
  notify: 'notify',
} as const;
export type QueueName = keyof typeof QUEUE_NAMES;
export const ALL_QUEUES = Object.values(QUEUE_NAMES);

const Id = z.string().regex(ID_PATTERN);
/** A stored workflow id (a tenant's own, `<tenant>~<id>`, or the default tenant's). */
const WorkflowId = z.string().regex(WORKFLOW_ID_PATTERN);

/** send: deliver the journaled message, the journaled reply, or a CancelTask, for one delegation. */
export const SendJobSchema = z.object({
  workflowId: WorkflowId,
  delegationId: Id,
  kind: z.enum(['message', 'reply', 'cancel']).default('message'),
  /** The delegation's priority (1 lowest to 10 highest, `send-priority.ts`); absent: 5. Orders message sends only. */
  priority: z.number().int().min(1).max(10).optional(),
  /** The work's tenant: message sends are shared fairly between tenants (`send-priority.ts`); absent: `default`. */
  tenant: z.string().min(1).max(64).default('default'),
});
export type SendJob = z.infer<typeof SendJobSchema>;

/**
 * follow: subscribe to a delegation's task. `resubscription` counts consecutive resubscriptions
 * without progress (backoff exponent); `again` marks any subscription after the first (after a drop,
 * a clean close, or a reattach), which the fleet-wide resubscription rate limit applies to.
 */
export const FollowJobSchema = z.object({
  workflowId: WorkflowId,
  delegationId: Id,
  resubscription: z.number().int().min(0).default(0),
  again: z.boolean().default(false),
  /** The job already waited for its reserved slot of the resubscription rate limit. */
  slotTaken: z.boolean().default(false),
});
export type FollowJob = z.infer<typeof FollowJobSchema>;

/** Index entries one reconcile batch job may carry (the sweeps split larger pages). */
export const RECONCILE_BATCH_MAX = 1_000;

/** Dead workers one sweep job ends the leases of (one pass over the unfinished index for all of them). */
export const DEAD_WORKERS_PER_SWEEP = 16;

export { SUSPECT_READS_PER_JOB, SUSPECT_TASK_ID_MAX, SUSPECTS_PENDING_MAX };

/** reconcile: the fixed-id sweep (no ids), one delegation, or a batch of them (`refs`). */
export const ReconcileJobSchema = z.object({
  workflowId: WorkflowId.optional(),
  /** A delegation id, or `*` for the workflow itself (decide what comes next). */
  delegationId: z.union([Id, z.literal('*')]).optional(),
  /** A batch: each entry reconciled as its own job would be, a bounded number at a time. */
  refs: z
    .array(z.object({ workflowId: WorkflowId, delegationId: z.union([Id, z.literal('*')]) }))
    .min(1)
    .max(RECONCILE_BATCH_MAX)
    .optional(),
  /** The start-up sweep checks every unfinished delegation, not only due ones. */
  all: z.boolean().optional(),
  /** A check right after a follow lease runs out: a lease renewed meanwhile only moves the next check (no further job). */
  afterLease: z.boolean().optional(),
  /** A batch whose leases a dead worker held (the dead-worker sweep ended them): its sends may be looked for early. */
  holderDied: z.boolean().optional(),
  /**
   * Times a batch of workflow entries was moved to delayed so far while its worker opened reattached streams (the
   * workers' `batchWaitMs`): the wait's bound counted in waits, not read off the enqueuing process's clock. Default 0.
   */
  openingWaits: z.number().int().nonnegative().optional(),
  /**
   * A task the agent pushed about that is not the delegation's own and whose pushed body showed a message of ours (our
   * messageId or our reply's, in its history, status message or a pushed Message; the push was refused): the
   * reconciler reads it from the agent (GetTask) before anything else, and a read that shows our message in its
   * history is the agent holding it twice (AMBIGUOUS, both ids). Never trusted from the push alone. Every reconcile of
   * the delegation reads the suspects pending in the journal; a job naming one only makes sure it comes soon.
   */
  suspectTaskId: z.string().min(1).max(SUSPECT_TASK_ID_MAX).optional(),
  /** Workers found dead (their liveness keys gone): end their leases in the unfinished index and reconcile those records now. */
  deadWorkers: z.array(z.string().min(1).max(300)).min(1).max(DEAD_WORKERS_PER_SWEEP).optional(),
});
export type ReconcileJob = z.infer<typeof ReconcileJobSchema>;

/** verify: run a step's verifier against the independent read path. */
export const VerifyJobSchema = z.object({ workflowId: WorkflowId, delegationId: Id });
export type VerifyJob = z.infer<typeof VerifyJobSchema>;

/** compensate: undo the workflow's verified effects, in reverse order. */
export const CompensateJobSchema = z.object({ workflowId: WorkflowId });
export type CompensateJob = z.infer<typeof CompensateJobSchema>;

/**
 * notify: deliver one notification event to one receiver (workers `notify/`). The event travels whole in the job, so
 * every retry sends the same body; `url` is the receiver chosen when the event was emitted.
 */
export const NotifyJobSchema = z.object({ event: NotificationEventSchema, url: z.url({ protocol: /^https?$/ }) });
export type NotifyJob = z.infer<typeof NotifyJobSchema>;

/** BullMQ queue prefix for a key prefix: hash-tagged so every queue script stays in one Cluster slot. */
export const queuePrefix = (prefix: string): string => `{${prefix}}`;

/**
 * Deterministic job id. BullMQ refuses `:` in custom ids; our ids never contain `|`.
 * A removed job no longer deduplicates, so processors consult the journal first.
 */
export const jobId = (...parts: (string | number)[]): string => parts.join('|');

/**
 * Default BullMQ job options per queue, used by the producer and the workers
 * alike. Every processor checks the journal first, so a job id (kept while the
 * job waits, runs or failed) never blocks work that the journal says is still
 * to do (ids that may recur carry a time).
 */
export const DEFAULT_JOB_OPTIONS = {
  send: { attempts: 6, backoff: { type: 'exponential', delay: 1_000, jitter: 0.5 } },
  follow: { attempts: 10, backoff: { type: 'exponential', delay: 1_000, jitter: 0.5 } },
  reconcile: { attempts: 3, backoff: { type: 'exponential', delay: 1_000, jitter: 0.5 } },
  verify: { attempts: 8, backoff: { type: 'exponential', delay: 2_000, jitter: 0.5 } },
  compensate: { attempts: 10, backoff: { type: 'exponential', delay: 2_000, jitter: 0.5 } },
  // A receiver down for about an hour loses nothing (2 s doubling, capped by attempts: 12 tries over ~1.1 h), then
  // the event stays in the failed set (kept a week, JOB_RETENTION) and counts in `durable_a2a_notifications_total`.
  notify: { attempts: 12, backoff: { type: 'exponential', delay: 2_000, jitter: 0.5 } },
} as const satisfies Record<QueueName, { attempts: number; backoff: { type: 'exponential'; delay: number; jitter: number } }>;

/**
 * Retention of finished jobs, in BullMQ's terms (seconds for `age`). A completed
 * job is removed at once: the journal is the record of what happened
 * (`GET /v1/workflows/:id`, the CLI), and keeping completed jobs cost about five
 * Redis commands and 2 KB per job (at 300 delegations/s a 1,000-job cap
 * kept three seconds of history anyway). Failed jobs stay a week for Bull Board.
 */
export const JOB_RETENTION = {
  removeOnComplete: true,
  removeOnFail: { age: 7 * 24 * 3600, count: 10_000 },
} as const;
