/**
 * Finding workflows: the filter people and bulk actions give (zod, the one schema of the API body, the library call
 * and the CLI's `--where`), turned into the journal's search (`searchWorkflows`, through the search index).
 */
import { z } from 'zod';
import { ATTENTION_CODES, ID_PATTERN, SEARCH_METADATA_KEY, SEARCH_METADATA_LIMITS, TenantSchema, WORKFLOW_STATES, searchWorkflows, type WorkflowFilter, type Page } from '@durable-a2a/shared';
import { scopedFilter, type ProducerScope } from '../tenancy.ts';
import { parseInput, type ProducerContext } from './context.ts';
import { workflowSummaryView, type WorkflowSummaryView } from '../view.ts';

/** Workflow states, plus the two question states (workflows with such an open question). */
export const WORKFLOW_FILTER_STATES = [...WORKFLOW_STATES, 'INPUT_REQUIRED', 'AUTH_REQUIRED'] as const;

/** A metadata value a filter names: as the index holds it (text; numbers and booleans as JSON writes them). */
const MetadataValue = z
  .string()
  .min(1)
  .max(SEARCH_METADATA_LIMITS.valueChars)
  .regex(/^[^\u0000-\u001f\u007f]*$/, 'no control characters');

/** An instant: ISO 8601 with a zone (`2026-05-01T12:00:00Z`). */
const Instant = z.iso.datetime({ offset: true, error: 'an ISO 8601 date-time with a zone, e.g. 2026-05-01T12:00:00Z' });

/**
 * A workflow filter (every given criterion must hold). `metadata`: `key` → value, as indexed (search-index.ts:
 * keys of 1..64 `[A-Za-z0-9._-]`, values of 1..128 characters, at most 16 pairs); `createdAfter` inclusive,
 * `createdBefore` exclusive.
 */
export const WorkflowFilterSchema = z.strictObject({
  state: z.enum(WORKFLOW_FILTER_STATES).optional(),
  waiting: z.boolean().optional().describe('only workflows waiting for a person: an open question, or NEEDS_ATTENTION'),
  attentionCode: z.enum(ATTENTION_CODES).optional().describe('the attention code of a workflow in NEEDS_ATTENTION'),
  agent: z.url({ protocol: /^https?$/, error: 'an http(s) Agent Card URL or agent base URL' }).optional().describe("a step's fixed agent, or the agent of an unfinished workflow's recent attempt"),
  metadata: z
    .record(z.string().regex(SEARCH_METADATA_KEY, 'a metadata key of 1 to 64 letters, digits, ".", "_" or "-"'), MetadataValue)
    .refine((pairs) => Object.keys(pairs).length <= SEARCH_METADATA_LIMITS.pairs, `at most ${SEARCH_METADATA_LIMITS.pairs} pairs`)
    .optional(),
  idPrefix: z.string().regex(ID_PATTERN, 'letters, digits, ".", "_" or "-", 1 to 128 characters').optional(),
  createdAfter: Instant.optional(),
  createdBefore: Instant.optional(),
  tenant: TenantSchema.optional().describe("the workflows' tenant (operators; anyone else sees their own tenant's only)"),
});
export type WorkflowFilterInput = z.input<typeof WorkflowFilterSchema>;

/** The journal's filter of a parsed `WorkflowFilterSchema` (instants as ms since epoch). */
export function journalFilter(filter: z.output<typeof WorkflowFilterSchema>): WorkflowFilter {
  const { createdAfter, createdBefore, ...rest } = filter;
  return {
    ...rest,
    ...(createdAfter ? { createdAfterMs: Date.parse(createdAfter) } : {}),
    ...(createdBefore ? { createdBeforeMs: Date.parse(createdBefore) } : {}),
  };
}

/** True when `filter` names at least one criterion (a bulk action never acts on every workflow by omission). */
export const namesACriterion = (filter: z.output<typeof WorkflowFilterSchema>): boolean => Object.values(filter).some((value) => value !== undefined);

/**
 * `Producer.search`: one page of workflow summaries matching `filter` among those `scope` sees (`scopedFilter`; limit
 * 1..500, default 50), through the search index; a page may hold fewer rows than `limit` and still return a cursor
 * (see `searchWorkflows`).
 * @throws ProducerInputError
 */
export async function searchWorkflowSummaries(
  context: ProducerContext,
  scope: ProducerScope,
  filter: WorkflowFilterInput,
  options: { cursor?: string; limit?: number } = {},
): Promise<Page<WorkflowSummaryView>> {
  const parsed = parseInput(WorkflowFilterSchema, filter);
  const scoped = scopedFilter(scope, journalFilter(parsed));
  if (!scoped) return { items: [] };
  const { items, cursor } = await searchWorkflows(context.journal, scoped, { cursor: options.cursor, limit: Math.min(Math.max(options.limit ?? 50, 1), 500) });
  return { items: items.map(workflowSummaryView), ...(cursor ? { cursor } : {}) };
}
