/**
 * Typed access to the journal. Every state change is one Lua script in `lua/` (named
 * `<verb>-<key count>.lua`, registered under a versioned name so two releases can run side by side
 * during a deploy, see scripts.ts); nothing here read-modify-writes a row from TypeScript.
 *
 * `Journal` is composed of one layer per concern, each in its own module:
 * - core.ts: connection, keys, options, script caller, replica wait
 * - unfinished-index.ts: the reconciler's unfinished index (scheduleCheck, dueDelegations, …)
 * - workflows.ts: workflow rows (createWorkflow, createIntent, updateWorkflow, reads)
 * - delegations.ts: delegation reads and send-side transitions (claim, markSending, releaseForResend, …)
 * - status.ts: status and artifact changes (applyStatus, applyArtifact, bindTask, noteProtocolError)
 * - finish-step.ts: a one-step workflow's terminal status and its finishing settle in one script (finishStep)
 * - replies.ts: replies to questions (recordReply, markReply, takeReplySend), the answer index (findAnswer) and their
 *   expiry (expireQuestion)
 * - coordination.ts: one-time marks, the follow lease, the fleet-wide rate limit
 * - notifications.ts: outbound notification events and how far each got
 */
import { JournalNotifications } from './notifications.ts';

/** Journal over one Redis connection (standalone or Cluster): `new Journal(redis, options?)`. */
export class Journal extends JournalNotifications {}

export { JournalError } from './errors.ts';
export type { DelegationRef, JournalOptions } from './core.ts';
export { questionKeyOf, asksQuestion, type ArtifactOutcome, type ArtifactUpdate, type SuspectsLeft, type SuspectRoundClaim, type StatusChange, type StatusChangeResult, type FollowLease, type WorkflowAtFinish, type WorkflowFlags } from './status.ts';
export { countUnfinishedByState, STATE_SAMPLE_LIMIT } from './unfinished-index.ts';
export { FrontPushConfigSchema, NOTIFICATION_STAGES, type FrontPushConfig, type NotificationEntry, type NotificationStage } from './notifications.ts';
export { ANSWERS_PER_WORKFLOW_MAX, sameAnswerParts, type QuestionExpiry, type RecordedReply } from './replies.ts';
export type { FinishStepResult, OneStepFinish } from './finish-step.ts';
