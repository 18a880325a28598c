/**
 * Acting on many workflows at once: cancel, resolve or retry every workflow a filter matches, one page of at most
 * BULK_LIMIT workflows per call (a cursor continues). Each workflow goes through the single-workflow call
 * (`cancelWorkflow`, `resolveAttention`), so journaling, CancelTask and idempotency are those of one workflow; a dry
 * run reads the same page and says what each call would do, writing nothing. The answer names, per workflow, what
 * was done or why not (a typed error's code).
 */
import { z } from 'zod';
import { searchWorkflows, FINISHED_WORKFLOW_STATES, type WorkflowSummary } from '@durable-a2a/shared';
import { NotFoundError, ProducerInputError, ResolutionNotAllowedError, WorkflowFinishedError, type ResolveAction } from '../errors.ts';
import { allowedResolveActions, cancelWorkflow, resolveAttention } from './cancel.ts';
import type { ActorOptions } from './reply.ts';
import { parseInput, readView, type ProducerContext } from './context.ts';
import { WorkflowFilterSchema, journalFilter, namesACriterion } from './search.ts';
import { requireWriter, scopedFilter, type ProducerScope } from '../tenancy.ts';

/** The bulk actions: `cancel`; `resolve` (with `resolution`: retry or abandon); `retry` (resolve with retry). */
export const BULK_ACTIONS = ['cancel', 'resolve', 'retry'] as const;
export type BulkAction = (typeof BULK_ACTIONS)[number];
/** At most this many workflows per bulk call (the rest: call again with the cursor). */
export const BULK_LIMIT = 500;
/** Workflows acted on at once within a call. */
const CONCURRENCY = 8;

/** A bulk call's input: the filter (at least one criterion), a dry run, the page. */
export const BulkInputSchema = z.strictObject({
  filter: WorkflowFilterSchema.refine(namesACriterion, 'name at least one criterion: a bulk action never acts on every workflow by omission'),
  dryRun: z.boolean().default(false).describe('list what would change, change nothing'),
  resolution: z.enum(['retry', 'abandon']).optional().describe('resolve only (required there): the decision'),
  cursor: z.string().max(600).optional().describe('from the previous answer: continue after its last workflow'),
  limit: z.number().int().min(1).max(BULK_LIMIT).default(100).describe(`workflows per call, at most ${BULK_LIMIT}`),
});
export type BulkInput = z.input<typeof BulkInputSchema>;

/** What happened to one workflow: `done` (dry run: `would`), or `skipped` with the code of why not. */
export interface BulkItem {
  workflowId: string;
  /** The workflow's state when the call read it. */
  state: string;
  outcome: 'done' | 'would' | 'skipped';
  /** Why skipped: WORKFLOW_FINISHED, NOT_WAITING (resolve/retry: not in NEEDS_ATTENTION), RESOLUTION_NOT_ALLOWED, NOT_FOUND. */
  code?: string;
  detail?: string;
  /** resolve/retry: the workflow's state after the decision. */
  resultState?: string;
  /** RESOLUTION_NOT_ALLOWED: what a person may decide instead. */
  allowedActions?: ResolveAction[];
}

/** A bulk call's answer: per workflow what was done or why not, and the cursor of the next page when there is one. */
export interface BulkResult {
  action: BulkAction;
  dryRun: boolean;
  items: BulkItem[];
  cursor?: string;
}

const FINISHED = new Set<string>(FINISHED_WORKFLOW_STATES);
const skipped = (summary: WorkflowSummary, code: string, detail: string, extra: Partial<BulkItem> = {}): BulkItem => ({ workflowId: summary.workflowId, state: summary.state, outcome: 'skipped', code, detail, ...extra });

/** A dry run's verdict for one workflow: what the real call would answer, from the same rules, without writing. */
async function wouldDo(context: ProducerContext, summary: WorkflowSummary, resolution: ResolveAction | undefined): Promise<BulkItem> {
  if (!resolution) {
    return FINISHED.has(summary.state) ? skipped(summary, 'WORKFLOW_FINISHED', `already ${summary.state}`) : { workflowId: summary.workflowId, state: summary.state, outcome: 'would' };
  }
  if (summary.state !== 'NEEDS_ATTENTION') return skipped(summary, 'NOT_WAITING', `${summary.state}, not waiting for a person`);
  const allowed = allowedResolveActions(await readView(context, summary.workflowId));
  return allowed.includes(resolution)
    ? { workflowId: summary.workflowId, state: summary.state, outcome: 'would' }
    : skipped(summary, 'RESOLUTION_NOT_ALLOWED', `${resolution} is not allowed for ${summary.attention?.code ?? 'this attention'}`, { allowedActions: allowed });
}

/** The real call for one workflow; a typed refusal becomes `skipped` with its code, anything else is thrown. */
async function act(context: ProducerContext, summary: WorkflowSummary, resolution: ResolveAction | undefined, actor: ActorOptions): Promise<BulkItem> {
  try {
    if (!resolution) {
      await cancelWorkflow(context, summary.workflowId, actor);
      return { workflowId: summary.workflowId, state: summary.state, outcome: 'done' };
    }
    if (summary.state !== 'NEEDS_ATTENTION') return skipped(summary, 'NOT_WAITING', `${summary.state}, not waiting for a person`);
    const { state } = await resolveAttention(context, summary.workflowId, resolution, actor);
    return { workflowId: summary.workflowId, state: summary.state, outcome: 'done', resultState: state };
  } catch (error) {
    if (error instanceof ResolutionNotAllowedError) return skipped(summary, error.code, error.message, { allowedActions: [...error.allowedActions] });
    if (error instanceof WorkflowFinishedError || error instanceof NotFoundError) return skipped(summary, error.code, error.message);
    throw error;
  }
}

/**
 * `Producer.bulk`: `action` on one page of the workflows `filter` matches among those `scope` sees (`limit` ≤ 500), each through the
 * single-workflow call (`actor`: who acts, kept in each workflow's history); with `dryRun` nothing is written. Continue with the answer's `cursor`.
 * @throws ProducerInputError (an empty filter, `resolve` without `resolution`), ForbiddenError (a viewer, unless dry run), Redis errors (what was done before
 *   stays done: calling again skips it, e.g. WORKFLOW_FINISHED, or repeats a harmless CancelTask)
 */
export async function bulkAct(context: ProducerContext, scope: ProducerScope, action: BulkAction, input: BulkInput, actor: ActorOptions = {}): Promise<BulkResult> {
  const parsed = parseInput(BulkInputSchema, input);
  if (action === 'resolve' && !parsed.resolution) throw new ProducerInputError('resolve needs a resolution: retry or abandon', 'resolution');
  if (!parsed.dryRun) requireWriter(scope, `bulk ${action}`);
  const resolution: ResolveAction | undefined = action === 'retry' ? 'retry' : action === 'resolve' ? parsed.resolution : undefined;
  // Only the workflows the scope sees are candidates: another tenant's are never read, let alone acted on.
  const filter = scopedFilter(scope, journalFilter(parsed.filter));
  const page = filter ? await searchWorkflows(context.journal, filter, { cursor: parsed.cursor, limit: parsed.limit }) : { items: [] as WorkflowSummary[], cursor: undefined };
  const items: BulkItem[] = [];
  for (let start = 0; start < page.items.length; start += CONCURRENCY) {
    const chunk = page.items.slice(start, start + CONCURRENCY);
    items.push(...(await Promise.all(chunk.map((summary) => (parsed.dryRun ? wouldDo(context, summary, resolution) : act(context, summary, resolution, actor))))));
  }
  return { action, dryRun: parsed.dryRun, items, ...(page.cursor ? { cursor: page.cursor } : {}) };
}
