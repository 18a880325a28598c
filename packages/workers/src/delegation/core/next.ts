/**
 * What happens after an observation's write: exactly one `Next` per step (`transitions.ts`), performed by
 * `delegation/apply.ts` and nowhere else. `route` and `progress` are resolved from the row as the write left it
 * (`routeOf`, `progressNext` in `policy.ts`), so a finished row always settles and a question always parks,
 * whichever observation wrote them.
 */
import type { HeldBack, SearchPurpose, Unacceptable } from './observation.ts';
import type { OutcomeCode } from './outcomes.ts';
import type { RecordedErrorCode } from '@durable-a2a/shared';

/** How a delegation that is still running is followed again. */
export interface FollowPlan {
  /** Consecutive resubscriptions without progress (the backoff exponent). Default 0. */
  resubscription?: number;
  /** Delay before subscribing, ms. Default 0. */
  delayMs?: number;
  /** False for the first subscription of new work (not rate-limited fleet-wide). Default true. */
  again?: boolean;
  /** False when CancelTask was just sent for this task (no second one). Default true. */
  cancelIfRequested?: boolean;
}

/** The one thing that happens after a step's write (see the module header). */
export type Next =
  /** Decide from the row as written: settle when finished, cancel when wanted, park on a question, else follow. */
  | { kind: 'route'; plan?: FollowPlan }
  /**
   * Note the follow cycle (`journal.noteNoProgress`), then the progress rule (`progressNext`) decides. `live`: the
   * cycle's stream delivered events before it ended (P36: a fresh run, whatever the events showed).
   */
  | { kind: 'progress'; what: string; unacceptable?: { code: RecordedErrorCode; outcome?: OutcomeCode }; live?: boolean }
  /** Settle a finished row (verify, then the workflow decides). */
  | { kind: 'settle' }
  /** Park on the open question (no stream). */
  | { kind: 'park' }
  /** Subscribe again (here, when a local follow slot is free and there is no delay; else a follow job). */
  | { kind: 'follow'; plan: FollowPlan }
  /** One GetTask instead of a stream (the progress rule's slow polling), after `delayMs`. */
  | { kind: 'slow-poll'; resubscription: number; delayMs: number }
  /**
   * Read the task once (GetTask) now; `taskId` when it is not yet the row's (a found task is read in full before it
   * is adopted); `refused`: the stream event we refused (over a limit) that the read must make up for; `afterLiveStream`:
   * the stream before it delivered events (P36); `heldBack`: the stream's finished status this full read decides about
   * (the read's observation carries it to the table); `foundAgain`: the check before LOST found the task the agent
   * denied, as a summary of a finished task: a denial of this read is the agent's second word against its listing.
   */
  | { kind: 'read-once'; why: string; taskId?: string; refused?: Unacceptable; afterLiveStream?: boolean; heldBack?: HeldBack; foundAgain?: boolean }
  /** Search for our messageId now; `heldBack` as for `read-once` (ListTasks with artifacts where GetTask was unusable). */
  | { kind: 'search'; purpose: SearchPurpose; why: string; heldBack?: HeldBack }
  /** Leave a maybe-sent INTENT to the reconciler, once the send has settled (`dueAt`, ms since epoch; undefined: now). */
  | { kind: 'ask-reconciler'; dueAt?: number }
  /** Resend with the same messageId (the journal releases the send first), after `delayMs` (default 0). */
  | { kind: 'resend'; contextRefused: boolean; delayMs?: number }
  /**
   * Journal the attempt AMBIGUOUS with `code` (the workflow then needs a person), then settle. `anyRow`: the evidence
   * holds whatever was written since it was observed (our messageId in several tasks), so the write is guarded by
   * nothing but the row's being unfinished (no fence, no version): a run that bound one of the tasks meanwhile cannot
   * make it unseen.
   */
  | { kind: 'needs-person'; code: OutcomeCode; message: string; limit?: string; delivery?: 'not-sent' | 'maybe' | 'received'; anyRow?: true }
  /** Enqueue CancelTask for the task (the user canceled the workflow while this task was found or sent). */
  | { kind: 'cancel' }
  /**
   * Cancel the workflow as a person's cancel does (cancel requested, CancelTask to its running attempts, then
   * compensation), unless it is already canceled or finished; then route the row. `why`: for the log line.
   */
  | { kind: 'cancel-workflow'; why: string }
  /** Look again at `atMs` (the unfinished index's next check); nothing else now. */
  | { kind: 'check-later'; atMs: number }
  /**
   * The agent could not be reached and nothing was sent: the next try of the same message at `atMs` (ms since
   * epoch; the wait's backoff, `core/policy.ts` unreachableVerdict), the reconciler's check moved past it.
   */
  | { kind: 'send-later'; atMs: number }
  /** The job fails and BullMQ runs it again (a send that never left for a reason other than the agent, within its attempts). */
  | { kind: 'retry' }
  /** The stream that brought the observation keeps being read. */
  | { kind: 'continue' }
  /** Nothing more (another worker owns the delegation, or nothing changed that needs an act). */
  | { kind: 'nothing' };

/** The kind names of `Next`. */
export type NextKind = Next['kind'];
