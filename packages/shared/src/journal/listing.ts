/**
 * Read-only listings for people: workflow summaries (newest first) and the
 * open questions across workflows. Nothing here writes.
 *
 * Open questions come from the unfinished index (a parked delegation is never
 * finished), so finding them costs one read per unfinished delegation, not
 * per workflow ever run. The workflow list is a search (search.ts `listWorkflowSummaries`)
 * through the updated index: a page costs the rows it reads, whatever the number of workflows.
 *
 * A record that does not parse is left out and named (`corrupt`), never a failed listing.
 *
 * Paging is by keyset (the cursor names the last row's sort key), so rows
 * changing between two pages never repeat a row and never skip one that did
 * not move.
 */
import { isStepStopped, type Attention } from './workflow-record.ts';
import { MessageSchema } from '@durable-a2a/a2a/pure';
import type { Journal } from './journal.ts';
import { indexMember, parseIndexMember } from './keys.ts';
import { tenantOfWorkflowId } from './tenant.ts';

/** At most this many unfinished delegations are read for one listing of open questions. */
export const LISTING_SCAN_LIMIT = 10_000;
/** Question text is cut to this many characters in listings (the workflow view has all of it). */
const QUESTION_TEXT_LIMIT = 2_000;

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

/** A keyset cursor naming a row's sort key and id (opaque to callers: base64url). */
export const encodeListingCursor = (sortKey: number, id: string): string => Buffer.from(`${sortKey}|${id}`, 'utf8').toString('base64url');

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
  return start.length > limit && last ? { items, cursor: encodeListingCursor(key(last).sortKey, key(last).id) } : { items };
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

/** The delegation fields an open question is read from (`openQuestionOf`), in this order. */
export const OPEN_QUESTION_FIELDS = ['state', 'step', 'taskId', 'question', 'questionKey', 'replyForQuestion', 'statusTimestampMs', 'updatedAt', 'questionExpired'] as const;

/** The open question of one delegation from its OPEN_QUESTION_FIELDS, or undefined when it has none. */
export function openQuestionOf(ref: { workflowId: string; delegationId: string }, fields: readonly (string | null)[]): OpenQuestionSummary | undefined {
  const [state, step, taskId, question, questionKey, replyForQuestion, statusTimestampMs, updatedAt, questionExpired] = fields;
  if (state !== 'INPUT_REQUIRED' && state !== 'AUTH_REQUIRED') return undefined;
  // Same rule as isAwaitingAnswer: a journaled reply to this very question, or its expiry, closes it.
  if (replyForQuestion && replyForQuestion === questionKey) return undefined;
  if (questionExpired && questionExpired === questionKey) return undefined;
  return {
    workflowId: ref.workflowId,
    delegationId: ref.delegationId,
    step: step ?? '',
    state,
    ...(taskId ? { taskId } : {}),
    text: textOf(question ?? null),
    askedAtMs: Number(statusTimestampMs || updatedAt || 0),
  };
}

/** Every open question (with `tenant`, that tenant's: tenant.ts), read from the unfinished index (bounded by LISTING_SCAN_LIMIT entries). */
export async function allOpenQuestions(journal: Journal, tenant?: string): Promise<OpenQuestionSummary[]> {
  const members = await journal.redis.zrange(journal.keys.unfinished(), 0, LISTING_SCAN_LIMIT - 1);
  const refs = members.map(parseIndexMember).filter((ref) => ref.delegationId !== '*' && (tenant === undefined || tenantOfWorkflowId(ref.workflowId) === tenant));
  // The row's kind with its question fields: a stopping workflow keeps only its compensations' questions open.
  const rows = await Promise.all(refs.map((ref) => journal.redis.hmget(journal.keys.delegation(ref.workflowId, ref.delegationId), ...OPEN_QUESTION_FIELDS, 'kind')));
  return withoutStoppedSteps(
    journal,
    rows.flatMap((row, index) => {
      const question = openQuestionOf(refs[index]!, row.slice(0, OPEN_QUESTION_FIELDS.length));
      return question ? [{ question, kind: row[OPEN_QUESTION_FIELDS.length] ?? null }] : [];
    }),
  );
}

/**
 * The questions of `open` (each with its row's kind) without those of steps whose workflow is stopping (canceled, or
 * another step failed for good): they are closed, the journal refuses their answers (stepStopped.lua). A compensation's
 * question stays. One read per workflow listed, none when nothing is open.
 */
async function withoutStoppedSteps(journal: Journal, open: readonly { question: OpenQuestionSummary; kind: string | null }[]): Promise<OpenQuestionSummary[]> {
  if (open.length === 0) return [];
  const workflowIds = [...new Set(open.map(({ question }) => question.workflowId))];
  const flags = await Promise.all(workflowIds.map((id) => journal.redis.hmget(journal.keys.workflow(id), 'cancelRequested', 'stopping')));
  const flagsOf = new Map(workflowIds.map((id, index) => [id, { cancelRequested: flags[index]![0], stopping: flags[index]![1] }]));
  return open.filter(({ question, kind }) => !isStepStopped(kind, flagsOf.get(question.workflowId))).map(({ question }) => question);
}

/** Open questions across workflows (with `tenant`, that tenant's only: tenant.ts), newest first, paged (limit 1..500). */
export async function listOpenQuestions(journal: Journal, options: { cursor?: string; limit: number; tenant?: string }): Promise<Page<OpenQuestionSummary>> {
  const open = await allOpenQuestions(journal, options.tenant);
  return pageByKeyset(open, (row) => ({ sortKey: row.askedAtMs, id: `${row.workflowId}|${row.delegationId}` }), options.limit, options.cursor);
}

/** A workflow listed as corrupt: its id and the key of the record that does not parse. */
export interface CorruptListing {
  workflowId: string;
  key: string;
  code: 'CORRUPT_RECORD';
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
