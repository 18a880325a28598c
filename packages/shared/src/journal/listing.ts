/**
 * Read-only listings for people: workflow summaries (newest first) and the
 * open questions across workflows. Nothing here writes.
 *
 * Open questions come from the unfinished index (a parked delegation is never
 * finished), so finding them costs one read per unfinished delegation, not
 * per workflow ever run. The workflow list reads the workflow id set; it is
 * bounded by LISTING_SCAN_LIMIT workflows (the journal's retention keeps the
 * set small; a sorted index by updatedAt would lift the bound, see README).
 *
 * A record that does not parse is left out and named (`corrupt`), never a failed listing.
 *
 * Paging is by keyset (the cursor names the last row's sort key), so rows
 * changing between two pages never repeat a row and never skip one that did
 * not move.
 */
import { z } from 'zod';
import { type Attention, StoredMs, parseAttention } from './workflow-record.ts';
import { WORKFLOW_STATES } from './states.ts';
import { CorruptRecordError } from './corrupt.ts';
import { MessageSchema } from '../a2a/schema.ts';
import type { Journal } from './journal.ts';
import { indexMember, parseIndexMember } from './keys.ts';

/** At most this many workflows (or unfinished delegations) are read for one listing. */
export const LISTING_SCAN_LIMIT = 10_000;
/** Question text is cut to this many characters in listings (the workflow view has all of it). */
const QUESTION_TEXT_LIMIT = 2_000;
const WAITING_WORKFLOW_STATES = new Set(['NEEDS_ATTENTION']);

/** One open question: a parked delegation (INPUT_REQUIRED / AUTH_REQUIRED) whose question has no journaled reply. */
export interface OpenQuestionSummary {
  workflowId: string;
  step: string;
  delegationId: string;
  state: 'INPUT_REQUIRED' | 'AUTH_REQUIRED';
  taskId?: string;
  /** The question's text parts joined (cut to 2,000 characters). */
  text: string;
  /** When the agent asked (ms since epoch): its status timestamp, else the row's updatedAt. */
  askedAtMs: number;
}

/** A workflow row for lists: enough to filter, sort and link. */
export interface WorkflowSummary {
  workflowId: string;
  state: string;
  createdAt: number;
  updatedAt: number;
  openQuestions: number;
  /** INPUT_REQUIRED / AUTH_REQUIRED when a question is open, NEEDS_ATTENTION when a person must decide. */
  waitingFor?: 'INPUT_REQUIRED' | 'AUTH_REQUIRED' | 'NEEDS_ATTENTION';
  /** Why a person is needed (NEEDS_ATTENTION). */
  /** Why a person must decide (NEEDS_ATTENTION): one shape, as in the workflow view. */
  attention?: Attention;
}

export interface Page<T> {
  items: T[];
  /** Pass back to get the next page; absent on the last page. */
  cursor?: string;
}

/** Filter of `listWorkflowSummaries`: a workflow state, a question state, and/or only those waiting for a person. */
export interface WorkflowFilter {
  state?: string;
  waiting?: boolean;
}

const encodeCursor = (sortKey: number, id: string) => Buffer.from(`${sortKey}|${id}`, 'utf8').toString('base64url');

/** Decodes a keyset cursor; undefined when malformed (the caller answers 400). */
export function decodeListingCursor(cursor: string): { sortKey: number; id: string } | undefined {
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  const match = /^(\d{1,16})\|(.{1,300})$/.exec(text);
  return match ? { sortKey: Number(match[1]), id: match[2]! } : undefined;
}

/** Newest first (sortKey descending), then id ascending; the page of `limit` rows after `cursor`. Sorts `rows` in place. */
export function pageByKeyset<T>(rows: T[], key: (row: T) => { sortKey: number; id: string }, limit: number, cursor?: string): Page<T> {
  const sorted = rows.sort((a, b) => key(b).sortKey - key(a).sortKey || key(a).id.localeCompare(key(b).id));
  const after = cursor ? decodeListingCursor(cursor) : undefined;
  const start = after
    ? sorted.filter((row) => {
        const { sortKey, id } = key(row);
        return sortKey < after.sortKey || (sortKey === after.sortKey && id.localeCompare(after.id) > 0);
      })
    : sorted;
  const items = start.slice(0, limit);
  const last = items.at(-1);
  return start.length > limit && last ? { items, cursor: encodeCursor(key(last).sortKey, key(last).id) } : { items };
}

const textOf = (raw: string | null): string => {
  if (!raw) return '';
  try {
    const parsed = MessageSchema.safeParse(JSON.parse(raw));
    return parsed.success ? parsed.data.parts.map((part) => part.text ?? '').join('').slice(0, QUESTION_TEXT_LIMIT) : '';
  } catch {
    return '';
  }
};

/** Every open question, read from the unfinished index (bounded by LISTING_SCAN_LIMIT entries). */
export async function allOpenQuestions(journal: Journal): Promise<OpenQuestionSummary[]> {
  const members = await journal.redis.zrange(journal.keys.unfinished(), 0, LISTING_SCAN_LIMIT - 1);
  const refs = members.map(parseIndexMember).filter((ref) => ref.delegationId !== '*');
  const fields = ['state', 'step', 'taskId', 'question', 'questionKey', 'replyForQuestion', 'statusTimestampMs', 'updatedAt'] as const;
  const rows = await Promise.all(refs.map((ref) => journal.redis.hmget(journal.keys.delegation(ref.workflowId, ref.delegationId), ...fields)));
  const open: OpenQuestionSummary[] = [];
  rows.forEach(([state, step, taskId, question, questionKey, replyForQuestion, statusTimestampMs, updatedAt], index) => {
    if (state !== 'INPUT_REQUIRED' && state !== 'AUTH_REQUIRED') return;
    // Same rule as isAwaitingAnswer: a journaled reply to this very question closes it.
    if (replyForQuestion && replyForQuestion === questionKey) return;
    const ref = refs[index]!;
    open.push({
      workflowId: ref.workflowId,
      delegationId: ref.delegationId,
      step: step ?? '',
      state,
      ...(taskId ? { taskId } : {}),
      text: textOf(question ?? null),
      askedAtMs: Number(statusTimestampMs || updatedAt || 0),
    });
  });
  return open;
}

/** Open questions across workflows, newest first, paged (limit 1..500). */
export async function listOpenQuestions(journal: Journal, options: { cursor?: string; limit: number }): Promise<Page<OpenQuestionSummary>> {
  const open = await allOpenQuestions(journal);
  return pageByKeyset(open, (row) => ({ sortKey: row.askedAtMs, id: `${row.workflowId}|${row.delegationId}` }), options.limit, options.cursor);
}

async function allWorkflowIds(journal: Journal): Promise<string[]> {
  const ids: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await journal.redis.sscan(journal.keys.workflows(), cursor, 'COUNT', 1_000);
    ids.push(...batch);
    cursor = next;
  } while (cursor !== '0' && ids.length < LISTING_SCAN_LIMIT);
  return [...new Set(ids)].slice(0, LISTING_SCAN_LIMIT);
}

/** The fields of a workflow row a summary shows, as stored (a hash's text); anything else makes the row corrupt. */
const SummaryRowSchema = z.object({ state: z.enum(WORKFLOW_STATES), createdAt: StoredMs, updatedAt: StoredMs, attention: z.string().optional() });

/** A workflow listed as corrupt: its id and the key of the record that does not parse. */
export interface CorruptListing {
  workflowId: string;
  key: string;
  code: 'CORRUPT_RECORD';
}

/**
 * The summary row of one workflow: undefined when it is missing (or expired). Throws CorruptRecordError (reported
 * to the journal's handler) when its row, live or compacted, does not parse.
 */
async function summaryRow(journal: Journal, id: string): Promise<z.output<typeof SummaryRowSchema> | undefined> {
  const fields = ['state', 'createdAt', 'updatedAt', 'attention', 'workflowId'] as const;
  const live = await journal.redis.hmget(journal.keys.workflow(id), ...fields);
  // A live row is there when it holds a state or its id (a row with its id but no state is corrupt, not gone).
  const isLive = live[0] !== null || live[4] !== null;
  const [key, row] = isLive ? [journal.keys.workflow(id), live] : [journal.keys.finished(id), await journal.finishedWorkflowRow(id).then((finished) => finished && fields.map((field) => finished[field] ?? null))];
  if (!row) return undefined;
  const [state, createdAt, updatedAt, attention] = row.map((value) => value ?? undefined);
  const parsed = SummaryRowSchema.safeParse({ state, createdAt, updatedAt, attention: attention || undefined });
  if (parsed.success) return parsed.data;
  const error = new CorruptRecordError('workflow', key, { cause: parsed.error });
  journal.reportCorrupt(error);
  throw error;
}

/**
 * Summaries of one set of workflow ids (missing or expired ones are left out). A workflow whose record does not
 * parse is left out of `summaries` and named in `corrupt` (reported once, when it was read): one bad record never
 * fails the listing.
 */
export async function workflowSummaries(journal: Journal, ids: readonly string[], open?: OpenQuestionSummary[]): Promise<{ summaries: WorkflowSummary[]; corrupt: CorruptListing[] }> {
  const questions = open ?? (await allOpenQuestions(journal));
  const byWorkflow = new Map<string, OpenQuestionSummary[]>();
  for (const question of questions) byWorkflow.set(question.workflowId, [...(byWorkflow.get(question.workflowId) ?? []), question]);
  const rows = await Promise.all(ids.map((id) => summaryRow(journal, id).catch((error: unknown) => (error instanceof CorruptRecordError ? error : Promise.reject(error)))));
  const summaries: WorkflowSummary[] = [];
  const corrupt: CorruptListing[] = [];
  rows.forEach((row, index) => {
    const workflowId = ids[index]!;
    if (row instanceof CorruptRecordError) return void corrupt.push({ workflowId, key: row.key, code: row.code });
    if (!row) return;
    const asked = byWorkflow.get(workflowId) ?? [];
    const waitingFor = WAITING_WORKFLOW_STATES.has(row.state) ? 'NEEDS_ATTENTION' : asked[0]?.state;
    summaries.push({
      workflowId,
      state: row.state,
      createdAt: row.createdAt,
      updatedAt: row.updatedAt,
      openQuestions: asked.length,
      ...(waitingFor ? { waitingFor } : {}),
      ...(row.attention ? { attention: parseAttention(row.attention) } : {}),
    });
  });
  return { summaries, corrupt };
}

/**
 * Workflow summaries, newest (updatedAt) first, paged (limit 1..500). `state` matches a workflow
 * state, or INPUT_REQUIRED / AUTH_REQUIRED for workflows with such an open question; `waiting`
 * keeps only those waiting for a person (an open question, or NEEDS_ATTENTION).
 */
export async function listWorkflowSummaries(
  journal: Journal,
  filter: WorkflowFilter,
  options: { cursor?: string; limit: number },
): Promise<Page<WorkflowSummary> & { corrupt: CorruptListing[] }> {
  const [ids, open] = await Promise.all([allWorkflowIds(journal), allOpenQuestions(journal)]);
  const listed = await workflowSummaries(journal, ids, open);
  const summaries = listed.summaries.filter(
    (summary) =>
      (filter.state === undefined || summary.state === filter.state || summary.waitingFor === filter.state ||
        (summary.openQuestions > 0 && open.some((question) => question.workflowId === summary.workflowId && question.state === filter.state))) &&
      (!filter.waiting || summary.waitingFor !== undefined),
  );
  return { ...pageByKeyset(summaries, (row) => ({ sortKey: row.updatedAt, id: row.workflowId }), options.limit, options.cursor), corrupt: listed.corrupt };
}

/** When the reconciler next looks at each delegation (ms since epoch), from the unfinished index; finished ones are absent. */
export async function nextChecks(journal: Journal, workflowId: string, delegationIds: readonly string[]): Promise<Map<string, number>> {
  const scores = await Promise.all(delegationIds.map((delegationId) => journal.redis.zscore(journal.keys.unfinished(), indexMember(workflowId, delegationId))));
  const checks = new Map<string, number>();
  scores.forEach((score, index) => {
    if (score !== null) checks.set(delegationIds[index]!, Number(score));
  });
  return checks;
}
