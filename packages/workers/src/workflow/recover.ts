/**
 * Reconciliation of a workflow itself (index entry `<workflowId>|*`): a lost
 * compensate job is enqueued again, a workflow waiting for a person is looked
 * at rarely, and any other one is decided again from the journal (crash
 * window 6: exactly one next intent), or, when no version it decides from
 * moved since its last "wait" here, waits again (`wait-memory.ts`).
 */
import { enqueueCompensate } from '@durable-a2a/shared';
import type { WorkerContext } from '../context.ts';
import { closeHeldIntent } from '../delegation/apply.ts';
import { advanceWorkflow } from './advance.ts';
import { waitsAgain } from './wait-memory.ts';
import { emitAttentionIfMissing } from '../notify/workflow.ts';

/** How long a workflow waiting for a person waits between looks, ms (its `attention.needed` emitted). */
export const ATTENTION_LOOK_MS = 3_600_000;

/** Re-checks one workflow; returns a short outcome for logs and metrics. */
export async function reconcileWorkflow(ctx: WorkerContext, workflowId: string): Promise<string> {
  // Nothing moved since this process last decided "wait" for it (the workflow's and every row's version): the same
  // decision, without reading and parsing the rows (`wait-memory.ts`). Otherwise the full read below.
  if (await waitsAgain(ctx, workflowId)) return 'workflow-wait-unchanged';
  const workflow = await ctx.journal.getWorkflow(workflowId);
  if (workflow?.state === 'COMPENSATING') {
    // Its compensate job may have been lost (a crash right after the state change): the
    // processor works from the journal, so one more job is harmless.
    await enqueueCompensate(ctx.queues, workflowId, { recoverAt: ctx.options.now() });
    return 'workflow-compensating';
  }
  if (workflow?.state === 'NEEDS_ATTENTION') {
    // Waiting for a person: its `attention.needed` emitted if it never was (a crash or a failed enqueue after the
    // write), then looked at again rarely (within a reconcile interval while the event is still to be emitted).
    const emitted = await emitAttentionIfMissing(ctx, workflowId, workflow);
    await lookAgainLater(ctx, workflowId, workflow.version, ctx.options.now() + (emitted ? ATTENTION_LOOK_MS : ctx.options.reconcileIntervalMs));
    return 'workflow-needs-attention';
  }
  // A workflow waiting for a decision (e.g. its first step's intent is not written yet). Its first round decides from
  // the row just read (the decision's write is compare-and-set on that version): one HGETALL of the workflow, not two.
  const decision = await advanceWorkflow(ctx, workflowId, closeHeldIntent, workflow ? { record: workflow } : undefined);
  return `workflow-${decision.kind}`;
}

/**
 * Moves a workflow's `*` entry to `atMs` (ms since epoch), decided from the row read at `readVersion`, then reads the
 * version again: a person's resolution written meanwhile (a new version, its entry put at once) must not wait until
 * `atMs` behind this look's move, so the entry goes back to now. Whatever the order of the two writers, the entry ends
 * due now when the row changed: the resolution's add comes after this move, or its version is seen by the read after.
 */
export async function lookAgainLater(ctx: WorkerContext, workflowId: string, readVersion: number, atMs: number): Promise<void> {
  const ref = { workflowId, delegationId: '*' };
  await ctx.journal.scheduleCheck(ref, atMs);
  const current = await ctx.journal.getWorkflow(workflowId);
  if (current?.version !== readVersion) await ctx.journal.scheduleCheck(ref, ctx.options.now());
}
