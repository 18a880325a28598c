/**
 * The progress rule (issue 12, kind 4 "No livelock"), in one place. Progress is
 * a change in what the delegation shows (`progressMark`: state, task id,
 * question, status message parts, artifacts, reply, result); a status
 * timestamp alone, a re-read of the same task or a keep-alive is not progress.
 * Every follow cycle ends
 * here with what it observed (a stream's end, a refused or broken stream, a
 * GetTask answer or error); `journal.noteNoProgress` keeps the run of cycles
 * that brought nothing new (`noProgressSince`, `noProgressCount`,
 * `noProgressLast` on the record). Then:
 *   progress                                  → follow again at once (backoff reset)
 *   nothing new, backoff window below its cap → resubscribe after full-jitter backoff (exponent = count)
 *   backoff at its cap, or `slowPollAfterMs`  → slow polling: one GetTask every `slowPollMs`, no stream
 *   nothing new for `noProgressWindowMs`      → AMBIGUOUS (workflow NEEDS_ATTENTION) with the evidence
 * With the defaults (slowPollMs 60_000) a delegation makes at most one agent
 * call per minute after its first minute without progress.
 */
import { createHash } from 'node:crypto';
import { isFinished, type DelegationRecord, type DelegationRef, type DelegationView, type WorkflowAtFinish } from '@durable-a2a/shared';
import type { WorkerContext } from '../context.ts';
import { fullJitterDelayMs } from './backoff.ts';
import { shouldPark } from './park.ts';
import { routeDelegation } from './route.ts';

/** What a follow cycle observed, for the evidence (e.g. "stream ended", "GetTask -32603"). */
export interface Observation {
  /** Short text, e.g. `GetTask WORKING`, `stream: STREAM_QUIET`, `GetTask failed: UNKNOWN_WIRE_VALUE`. */
  what: string;
  /** Set when the observation was a protocol error (an answer we could not understand or prove ours). */
  protocolErrorCode?: string;
}

/** What the rule decided for one delegation. */
export type ProgressStep = 'following' | 'resubscribing' | 'slow-polling' | 'needs-attention' | 'finished' | 'missing';

/**
 * True when a follow job should only read (GetTask), not stream: it was enqueued by this rule after
 * `resubscription` observations without progress, and the run has lasted `slowPollAfterMs` or its
 * backoff window reached the cap.
 */
export function isSlowPolling(record: DelegationRecord, resubscription: number, options: WorkerContext['options']): boolean {
  if (resubscription === 0 || record.noProgressSince === undefined) return false;
  return options.now() - record.noProgressSince >= options.slowPollAfterMs || backoffAtCap(resubscription, options);
}

/** A digest of what a delegation shows (see the module header). */
export function progressMark(view: DelegationView): string {
  const shown = [view.state, view.taskId, view.questionKey, view.statusMessage?.parts, view.artifacts, view.replyState, view.replyMessageId, view.result];
  return createHash('sha256').update(JSON.stringify(shown)).digest('base64url');
}

const backoffAtCap = (count: number, options: WorkerContext['options']) =>
  count > 0 && options.followBackoff.baseMs * 2 ** Math.min(count, 30) >= options.followBackoff.capMs;

/**
 * Applies the rule after one follow cycle (see the module header): reads the record, notes the observation
 * in the journal and routes the delegation (follow, backoff, slow poll, or AMBIGUOUS with evidence).
 * `known`: the row as the observation wrote it; `finishedWorkflow`: the workflow as the transition that finished
 * it read it (its settle reads nothing more).
 * @throws JournalError DELEGATION_MISSING only if the row vanished between the read and the note.
 */
export async function afterObservation(
  ctx: WorkerContext,
  ref: DelegationRef,
  observation: Observation,
  fence?: number,
  known?: DelegationRecord,
  finishedWorkflow?: WorkflowAtFinish,
): Promise<ProgressStep> {
  // A row the observation just finished (or parked) is routed as written: no read, no progress to note.
  if (known && (isFinished(known.state) || shouldPark(known))) return (await routeDelegation(ctx, ref, { known, finishedWorkflow })) === 'missing' ? 'missing' : 'finished';
  const record = await ctx.journal.getDelegationView(ref);
  if (!record) return (await routeDelegation(ctx, ref)) === 'missing' ? 'missing' : 'finished';
  if (isFinished(record.state) || shouldPark(record)) return (await routeDelegation(ctx, ref, { known: record })) === 'missing' ? 'missing' : 'finished';
  const { count, since } = await ctx.journal.noteNoProgress(ref, progressMark(record), observation.what);
  const routed = async (plan: Parameters<typeof routeDelegation>[2]): Promise<ProgressStep> => {
    const route = await routeDelegation(ctx, ref, { known: record, ...plan });
    return route === 'following' || route === 'resubscribing' ? (count === 0 ? 'following' : 'resubscribing') : route === 'missing' ? 'missing' : 'finished';
  };
  if (count === 0) return routed({ resubscription: 0, delayMs: fullJitterDelayMs(0, ctx.options.followBackoff) });
  const elapsedMs = ctx.options.now() - since;
  if (elapsedMs >= ctx.options.noProgressWindowMs) return needsAttention(ctx, record, { count, since, elapsedMs, observation }, fence);
  if (elapsedMs >= ctx.options.slowPollAfterMs || backoffAtCap(count, ctx.options)) {
    // Slow polling: one GetTask per `slowPollMs` (follow.ts reads instead of streaming); the reconciler stays away meanwhile.
    const delayMs = Math.floor(ctx.options.slowPollMs * (1 + Math.random() / 4));
    await ctx.journal.scheduleCheck(ref, ctx.options.now() + delayMs + ctx.options.reconcileIntervalMs);
    const step = await routed({ resubscription: count, delayMs });
    return step === 'resubscribing' ? 'slow-polling' : step;
  }
  const delayMs = fullJitterDelayMs(count, ctx.options.followBackoff);
  await ctx.journal.scheduleCheck(ref, ctx.options.now() + delayMs + ctx.options.reconcileIntervalMs);
  return routed({ resubscription: count, delayMs });
}

interface Evidence {
  count: number;
  since: number;
  elapsedMs: number;
  observation: Observation;
}

/** Journals the delegation AMBIGUOUS (the workflow then needs a person) with what was observed, how often, since when. */
async function needsAttention(ctx: WorkerContext, record: DelegationRecord, evidence: Evidence, fence: number | undefined): Promise<ProgressStep> {
  const { count, since, elapsedMs, observation } = evidence;
  const code = observation.protocolErrorCode ? 'PROTOCOL_ERROR' : 'NO_PROGRESS';
  const message =
    `no progress for ${elapsedMs} ms (since ${new Date(since).toISOString()}): ${count + 1} observations of task ${record.taskId} brought nothing new; ` +
    `last: ${observation.what}${observation.protocolErrorCode ? ` (protocol error ${observation.protocolErrorCode})` : ''}; state ${record.state}`;
  await ctx.journal.applyStatus(record, { fence, mode: 'outcome', state: 'AMBIGUOUS', error: { code, message, retryable: false } });
  ctx.logger.error({ workflowId: record.workflowId, delegationId: record.delegationId, count, since, last: observation.what }, 'no progress: needs attention');
  await routeDelegation(ctx, record);
  return 'needs-attention';
}

