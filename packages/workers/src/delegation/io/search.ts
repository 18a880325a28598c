/**
 * Finds the task an agent created for our messageId when the crash came
 * between "sent" and "recorded". A2A has no messageId filter (spec §3.1.4), so
 * we list the tasks of our context (no time bound: the agent's clock need not
 * agree with ours), or, when the agent refuses or ignores the context filter,
 * tasks since just before the record was created, widened before concluding;
 * then read each candidate's full history (never a small historyLength: R14).
 * A search that may conclude "absent" (a resend, LOST) lists by time too when our
 * context shows nothing: an agent that put our message in a context of its own
 * (R16) honours the filter on a context it never used (redteam21).
 * Pagination is distrusted (R15): a repeated token or page stops the scan,
 * calls are capped, a page is held to the size we asked for (`PAGE_SIZE`), a second pass restricted to tasks updated since the
 * scan began catches a task that moved pages while we read, and a last pass
 * that lists fewer tasks than its own `totalSize` proves no absence (redteam21).
 */
import {
  A2AError,
  InvalidParamsError,
  MethodNotFoundError,
  ProtocolError,
  UnsupportedOperationError,
  historyHolds,
  isRetryable,
  operationUnsupportedProven,
  taskNotFoundProven,
  type A2ATransport,
  type ListTasksRequest,
  type Task,
} from '@durable-a2a/a2a';
import type { DelegationRecord } from '@durable-a2a/shared';
import type { WorkerContext } from '../../context.ts';
import type { Observation, Ownership, SearchFinding, SearchPurpose, Unacceptable } from '../core/observation.ts';
import { attemptDeadlineAt } from '../attempt-step.ts';
import { namedTask } from '../core/policy.ts';
import { codeOf, limitOf } from './read.ts';

/**
 * What a search returned; `complete`: the task was read with its artifacts (GetTask, or ListTasks with includeArtifacts),
 * not a summary; `by`: what proves the found task ours: our messageId in its history, or (no task holds it) the only
 * task in the context we sent, read in full (`soleTaskInOurContext`).
 */
export type SearchResult =
  | { kind: 'found'; task: Task; complete: boolean; by: 'message-id' | 'context' }
  /**
   * More than one task holds our messageId (the agent got our message twice: a layer below us replayed it, or a
   * resend after a search that missed the first task): the work may have been done more than once, and which task is
   * ours no answer can tell. `taskIds` in the order seen, each once.
   */
  | { kind: 'several'; taskIds: string[] }
  /**
   * No task holds our message; `inconclusive` when a candidate may (too short a history to tell, in the context we
   * sent, or our messageId on an agent's message: `quotesMessage`).
   */
  | { kind: 'not-found'; inconclusive: boolean; contextRefused: boolean; candidates: string[]; paginationBroken: boolean }
  /**
   * The agent cannot list tasks: an A2A 0.3 binding (no ListTasks), or the agent's own MethodNotFoundError or
   * UnsupportedOperationError on the first ListTasks (`operationUnsupportedProven`; a bare status is a failed search).
   */
  | { kind: 'unsupported' };

export interface SearchOptions {
  marginMs: number;
  maxListTasksCalls: number;
  now: () => number;
  /** Ask ListTasks for artifacts (a read of the task's outcome, not only its identity). Default false. */
  includeArtifacts?: boolean;
  /** Read each listed candidate in full with GetTask when none holds our message. Default true. */
  readCandidates?: boolean;
  /**
   * When our context shows no task (none holding our message, none in the context we sent), list by time too before
   * concluding "not found": an empty listing of our context proves nothing at an agent that put our message in a
   * context of its own (field case R16: the agent's context is authoritative for its task), and a "not found" that
   * resends or ends LOST would have the work done twice (redteam21). Default false (a miss that decides nothing).
   */
  beyondContext?: boolean;
}

/**
 * Whether `task` holds our message (`messageId`) in its history, as a message of ours (any role but the agent's): what
 * proves a found task ours, whatever context the agent put it in (an agent may ignore our contextId and choose its
 * own). The reconciler's search and the search while a send is held (`send-held.ts`) both judge by it. Our messageId
 * on an agent's message only (a reply built by copying our message, a quote) is `quotesMessage`, not a holder.
 */
export const holdsMessage = (task: Task, messageId: string): boolean => historyHolds(task.history, messageId);
/**
 * Our messageId in `task`'s history on an agent's message only: the agent knew our message (so it was delivered), but
 * this task is not shown to hold it. Never a holder (never adopted by messageId, never a second holder: `several`),
 * and never a proven absence either: the search is inconclusive (a person, never a resend).
 */
const quotesMessage = (task: Task, messageId: string): boolean => !holdsMessage(task, messageId) && (task.history?.some((message) => message.messageId === messageId) ?? false);
/** A history without any user message cannot prove the task is not ours. */
const tooShortToTell = (task: Task) => !task.history?.some((message) => message.role === 'ROLE_USER');
/**
 * A task in the context we sent (a fresh one per delegation, `requestedContextId`) was created by our message, whatever
 * its history says (an agent may store our message under an id of its own): it proves delivery, so the search can
 * never conclude "not found" and resend (the work would be done twice).
 */
const inOurContext = (task: Task, record: DelegationRecord): boolean =>
  !record.contextRefused && Boolean(record.requestedContextId) && task.contextId === record.requestedContextId;

/**
 * The task our context proves ours when none holds our messageId: the only task the agent listed or read in the context
 * we sent, read in full (GetTask, same id, same context), as `answerContentProof` proves an answer ours by that context.
 * Nothing when the context proves nothing (refused, or ignored by the agent's filter: it may not keep contexts apart),
 * when the listing may be incomplete (pagination broken or capped: another task of our context may be unseen), when
 * more than one task is in our context (which one our message created is for a person to decide), or when the read
 * holds no user message at all (a trimmed history, field case R14: a person decides).
 */
function soleTaskInOurContext(scan: Scan, reads: ReadonlyMap<string, Task>, record: DelegationRecord): Task | undefined {
  if (!scan.contextHonoured() || scan.incomplete()) return undefined;
  const ids = new Set([...scan.candidates.values(), ...reads.values()].filter((task) => inOurContext(task, record)).map((task) => task.id));
  if (ids.size !== 1) return undefined;
  const [id] = ids;
  const read = reads.get(id!);
  return read && read.id === id && inOurContext(read, record) && !tooShortToTell(read) ? read : undefined;
}

/**
 * Searches the agent for the task holding `record.messageId`. Throws transport errors other than "unsupported"; a
 * candidate whose full read fails is thrown only when no other candidate read holds our message.
 */
export async function findTaskByMessageId(transport: A2ATransport, record: DelegationRecord, options: SearchOptions): Promise<SearchResult> {
  const scan = new Scan(transport, record, options);
  try {
    const lookFurther = () => options.beyondContext === true && ![...scan.candidates.values()].some((task) => inOurContext(task, record));
    const found = await searchPasses((since) => scan.pass(since), record.createdAt, options.now(), options.marginMs, () => scan.byContext(), lookFurther);
    if (scan.holders.size > 1) return { kind: 'several', taskIds: [...scan.holders.keys()] };
    // A listed task is a summary unless artifacts were asked for (spec §3.1.4: includeArtifacts defaults to false).
    if (found) return { kind: 'found', task: found, complete: options.includeArtifacts === true, by: 'message-id' };
  } catch (error) {
    if (error instanceof SearchUnsupported) return { kind: 'unsupported' };
    throw error;
  }
  let inconclusive = false;
  const reads = new Map<string, Task>();
  const holders = new Map<string, Task>();
  let unread: A2AError | undefined;
  for (const candidate of options.readCandidates === false ? [] : scan.candidates.values()) {
    // ListTasks may trim history; read each candidate in full, every one: a second holder is a task done twice.
    let task: Task;
    try {
      task = await transport.getTask({ id: candidate.id });
    } catch (error) {
      // A candidate that cannot be read (gone since the listing: -32001, a 5xx, a drop) proves nothing either way:
      // it does not undo a holder read in full (the search for a second one is best effort, as a failing later page);
      // with no holder read, the search failed (rethrown below). Only a task the agent says is gone (its binding's
      // TaskNotFoundError, `taskNotFoundProven`; a bare 404 or NOT_FOUND may be a proxy's) lets the reads go on: after
      // a transport failure each further read could wait out its timeout on an agent gone down.
      if (!(error instanceof A2AError)) throw error;
      unread ??= error;
      if (taskNotFoundProven(error)) continue;
      break;
    }
    if (task.id !== candidate.id) {
      // A read of another task than asked (hostile37: GetTask(T1) answered T2 holding our message, T2 adopted, T1 in
      // our context left running unseen) is no read of the candidate, and no proof the task it names is the one our
      // message created: the search failed (a person), as for any unusable answer; the reads stop, as after a drop.
      unread = new ProtocolError(`GetTask of listed task ${namedTask(candidate.id)} answered task ${namedTask(task.id)}: a read of another task than asked proves nothing of either`);
      break;
    }
    reads.set(candidate.id, task);
    if (holdsMessage(task, record.messageId)) {
      holders.set(task.id, task);
      continue;
    }
    if (tooShortToTell(task) || inOurContext(task, record) || quotesMessage(task, record.messageId)) inconclusive = true;
  }
  if (holders.size > 1) return { kind: 'several', taskIds: [...holders.keys()] };
  const [held] = holders.values();
  if (held) return { kind: 'found', task: held, complete: true, by: 'message-id' };
  if (unread) throw unread;
  const sole = soleTaskInOurContext(scan, reads, record);
  if (sole) return { kind: 'found', task: sole, complete: true, by: 'context' };
  // Candidates not read in full (a read search) still prove delivery when they are in our context.
  if ([...scan.candidates.values()].some((candidate) => inOurContext(candidate, record) || quotesMessage(candidate, record.messageId))) inconclusive = true;
  return { kind: 'not-found', inconclusive, contextRefused: scan.contextRefused, candidates: [...scan.candidates.keys()], paginationBroken: scan.incomplete() };
}

/**
 * Tasks asked for per ListTasks page (spec §3.1.4 `pageSize`, 1..100). Also the most candidates one page adds: a page
 * listing more than we asked for is read for holders of our message (in memory, bounded by the answer's byte limit),
 * but only its first `PAGE_SIZE` tasks are read in full with GetTask, and the listing proves no absence (its tasks past
 * the size are unread). So a search makes at most `maxListTasksCalls` × (1 + `PAGE_SIZE`) calls whatever the agent
 * lists (hostile37: 1,000 tasks on a page of 50 made 1,000 GetTasks per search, 27,000 in 30 s).
 */
export const PAGE_SIZE = 50;

/** One search's state across its passes: calls made, what the agent refused or ignored, candidates seen. */
class Scan {
  calls = 0;
  paginationBroken = false;
  /**
   * The last pass listed fewer tasks than its own `totalSize` (the count of the tasks its filter matches, before
   * pagination): a task was left out, so the listing proves no absence (redteam21: @a2a-js/sdk's DatabaseTaskStore
   * skips a row it cannot read, and its InMemoryTaskStore answers an empty page when the cursor's task moved; both
   * still count every task). The last pass decides: a later whole pass lists every task of an earlier short one.
   */
  lastPassShort = false;
  /** A pass by our context came up short: the agent counts a task in the context we sent that it did not show (our message delivered). */
  contextShort = false;
  contextRefused: boolean;
  contextIgnored = false;
  readonly candidates = new Map<string, Task>();
  /** Every task a listing showed holding our messageId, by id (one task listed on two pages is one holder). */
  readonly holders = new Map<string, Task>();

  constructor(
    private readonly transport: A2ATransport,
    private readonly record: DelegationRecord,
    private readonly options: SearchOptions,
  ) {
    this.contextRefused = record.contextRefused;
  }

  /** The listing may have left a task out: its pagination broke (a repeated token or page, the call cap, a page over `PAGE_SIZE`), or its last pass came up short. */
  incomplete(): boolean {
    return this.paginationBroken || this.lastPassShort || this.contextShort;
  }

  /** True while our context can bound the search (not refused, not ignored by the agent). */
  byContext(): boolean {
    return this.contextHonoured();
  }

  /** True when the agent honoured the context we sent: not refused (now or on an earlier send), its filter not ignored. */
  contextHonoured(): boolean {
    return !this.contextRefused && !this.contextIgnored && Boolean(this.record.requestedContextId);
  }

  /**
   * One pass over the pages: by our context (no `since`), else by status time. Returns the first task holding our
   * message; the pass still reads to its last page (or its cap), since a second holder means the work may have been
   * done twice (`holders`).
   */
  async pass(since: number | undefined): Promise<Task | undefined> {
    const seenTokens = new Set<string>();
    const seenPages = new Set<string>();
    const first = () => this.holders.values().next().value;
    // Every task this pass listed, by id (a task listed on two pages counts once), against the pass's `totalSize` as
    // its first page gave it: a task another client creates while we page (listed before our cursor, newest first)
    // is counted by the later pages only, and is no task left out of the listing that began before it (review21b).
    const shown = new Set<string>();
    let counted: number | undefined;
    this.lastPassShort = false;
    let pageToken: string | undefined;
    for (;;) {
      if (this.calls >= this.options.maxListTasksCalls) return first() ?? this.broken();
      const byContext = since === undefined && this.byContext();
      let page: Awaited<ReturnType<Scan['list']>>;
      try {
        page = await this.list(this.request(byContext, since, pageToken), pageToken);
      } catch (error) {
        // A later page that fails does not undo a holder already seen (the search for a second one is best effort).
        if (this.holders.size > 0 && error instanceof A2AError) return first();
        throw error;
      }
      if (page === 'context-refused') {
        // A context pass has no time bound: the time-bounded passes take over (searchPasses).
        if (since === undefined) return undefined;
        continue;
      }
      if (pageToken === undefined && typeof page.totalSize === 'number') counted = page.totalSize;
      // More tasks than the page asked for: the agent does not page as asked; the excess is never read in full.
      if (page.tasks.length > PAGE_SIZE) this.paginationBroken = true;
      for (const [index, task] of page.tasks.entries()) {
        // An agent that answers other contexts does not honour the filter: search by time instead.
        if (byContext && task.contextId && task.contextId !== this.record.requestedContextId) this.contextIgnored = true;
        if (holdsMessage(task, this.record.messageId)) this.holders.set(task.id, task);
        else if (index < PAGE_SIZE) this.candidates.set(task.id, task);
        shown.add(task.id);
      }
      const pageKey = page.tasks.map((task) => task.id).join(',');
      const next = page.nextPageToken;
      if (!next) {
        this.lastPassShort = counted !== undefined && counted > shown.size;
        if (byContext && this.lastPassShort) this.contextShort = true;
        return first();
      }
      if (seenTokens.has(next) || (pageKey && seenPages.has(pageKey))) return first() ?? this.broken();
      seenTokens.add(next);
      if (pageKey) seenPages.add(pageKey);
      pageToken = next;
    }
  }

  private request(byContext: boolean, since: number | undefined, pageToken: string | undefined): ListTasksRequest {
    const request: ListTasksRequest = { pageSize: PAGE_SIZE };
    if (byContext) request.contextId = this.record.requestedContextId;
    // Clocks (R27): our context bounds the search; a time bound is only used without it.
    else if (since !== undefined) request.statusTimestampAfter = new Date(since).toISOString();
    if (pageToken) request.pageToken = pageToken;
    if (this.options.includeArtifacts) request.includeArtifacts = true;
    return request;
  }

  /** One ListTasks call; `context-refused` when the agent refused our contextId on a first page (then searched by time). */
  private async list(request: ListTasksRequest, pageToken: string | undefined) {
    this.calls++;
    try {
      return await this.transport.listTasks(request);
    } catch (error) {
      // Only the agent's own "not served" (its binding's code, `operationUnsupportedProven`) is "unsupported": a bare
      // UNIMPLEMENTED or 405 (a proxy's, a gateway's) is rethrown, a search that failed (`searchForMessage`).
      if (operationUnsupportedProven(error) && this.calls === 1) throw new SearchUnsupported();
      if (!(error instanceof InvalidParamsError && request.contextId && !pageToken)) throw error;
      this.contextRefused = true;
      return 'context-refused' as const;
    }
  }

  private broken(): undefined {
    this.paginationBroken = true;
    return undefined;
  }
}

class SearchUnsupported extends Error {}

/** How far back a time-bounded search finally widens: agents' clocks may lag ours by this much (ms). */
export const CLOCK_SKEW_WIDENING_MS = 24 * 3600 * 1000;

/**
 * Runs the passes of a search. With our context honoured, two passes without a time bound
 * (the second catches a task that moved pages while we read), and, when they show nothing in
 * our context and `lookFurther` says so, the passes by time as well (`SearchOptions.beyondContext`);
 * otherwise since just before the record, again since the scan began (tasks that moved
 * pages), and once more widened by CLOCK_SKEW_WIDENING_MS before concluding "not found",
 * so an agent whose clock lags ours is still searched (kind "clocks").
 */
async function searchPasses(
  pass: (since: number | undefined) => Promise<Task | undefined>,
  createdAt: number,
  scanStart: number,
  marginMs: number,
  byContext: () => boolean,
  lookFurther: () => boolean = () => false,
): Promise<Task | undefined> {
  if (byContext()) {
    // The second pass catches a task that moved pages while we read (R15).
    const found = (await pass(undefined)) ?? (byContext() ? await pass(undefined) : undefined);
    if (found || (byContext() && !lookFurther())) return found;
  }
  return (
    (await pass(createdAt - marginMs)) ??
    (await pass(scanStart - marginMs)) ??
    (await pass(createdAt - marginMs - CLOCK_SKEW_WIDENING_MS))
  );
}

/** How `searchForMessage` searches. */
export interface MessageSearchOptions {
  /**
   * Whether a miss decides anything (default true). False for the early search while a send may still be in flight (a
   * dead worker's sends, thousands at once): it stays within the context we sent (`SearchOptions.beyondContext`), as
   * the read by ListTasks does.
   */
  missDecides?: boolean;
}

/**
 * A search for our messageId as an observation (`search-result`): `reconcile` resolves a maybe-sent INTENT (crash
 * window 2), `lost-check` looks once more before LOST, `read` reads our task by ListTasks (with artifacts) when
 * GetTask could not be used. Every agent failure is a `failed` finding (`retryable`: a drop or HTTP 5xx); the table
 * bounds the rounds (P32). Rethrows only journal and programming errors.
 */
export async function searchForMessage(ctx: WorkerContext, record: DelegationRecord, purpose: SearchPurpose, why: string, search: MessageSearchOptions = {}): Promise<Observation> {
  const deduplicates = ctx.options.deduplicatingAgents.has(record.agentCardUrl);
  const options: SearchOptions = {
    marginMs: ctx.options.searchMarginMs,
    maxListTasksCalls: ctx.options.maxListTasksCalls,
    now: ctx.options.now,
    ...(purpose === 'read' ? { includeArtifacts: true, readCandidates: false } : { beyondContext: search.missDecides ?? true }),
  };
  let result: SearchResult;
  try {
    const transport = await ctx.agents.transportFor(record);
    result = await findTaskByMessageId(transport, record, options);
  } catch (error) {
    // Journal and programming errors are not the agent's; every agent failure is an observation (P32: bounded rounds).
    if (!(error instanceof A2AError)) throw error;
    ctx.logger.warn({ workflowId: record.workflowId, delegationId: record.delegationId, err: error, purpose }, 'the search for our message failed');
    const unproven = unprovenUnsupported(error);
    if (unproven) return { kind: 'search-result', purpose, deduplicates, why, finding: { kind: 'failed', error: unproven, retryable: true } };
    return { kind: 'search-result', purpose, deduplicates, why, finding: { kind: 'failed', error: { code: codeOf(error), message: error.message, ...limitOf(error) }, retryable: isRetryable(error) } };
  }
  if (purpose === 'reconcile') ctx.crashPoint('reconcile.after-search', record.step);
  const finding: SearchFinding = result.kind === 'found' ? foundFinding(result, record) : result;
  const deadlineAt = purpose === 'reconcile' ? await attemptDeadlineAt(ctx, record) : undefined;
  return { kind: 'search-result', purpose, deduplicates, why, finding, ...(deadlineAt !== undefined ? { deadlineAt } : {}) };
}

/**
 * A MethodNotFoundError or UnsupportedOperationError the binding does not speak (`operationUnsupportedProven`: a bare
 * gRPC UNIMPLEMENTED, an HTTP 405 without the ErrorInfo, 405 or -32601 a proxy put in a JSON-RPC `code` over HTTP, the
 * reason over another code), as the unusable answer it is: `PROTOCOL_ERROR`, what arrived named. The search failed as
 * a proxy's 5xx fails it: one counted round (`searchFailed`: `unacceptableAnswerLimit` rounds in a row, then a person,
 * SEARCH_UNAVAILABLE), never "unsupported", which would resend to a deduplicating agent (`unfoundVerdict`: the agent
 * may hold our message, listed once the way is clear) or give a non-deduplicating one's delegation to a person at once.
 * Undefined for any other error.
 */
function unprovenUnsupported(error: A2AError): Unacceptable | undefined {
  if (!(error instanceof MethodNotFoundError || error instanceof UnsupportedOperationError) || operationUnsupportedProven(error)) return undefined;
  const status = error.grpcStatus !== undefined ? `gRPC status ${error.grpcStatus}` : error.jsonRpcCode !== undefined ? `JSON-RPC code ${error.jsonRpcCode}` : `HTTP ${error.httpStatus ?? '?'}`;
  const reason = error.reason === undefined ? 'no ErrorInfo' : `ErrorInfo reason ${error.reason}`;
  return { code: 'PROTOCOL_ERROR', message: `a "not served" the binding does not speak (${status}, ${reason}): no proof the agent cannot list tasks: ${error.message}` };
}

/**
 * A found task as a finding, with its ownership: proven by our messageId in its history (list passes and candidate
 * reads both check it), or by our context when it is the only task there (`soleTaskInOurContext`); else unknown.
 */
function foundFinding(result: Extract<SearchResult, { kind: 'found' }>, record: DelegationRecord): SearchFinding {
  const { task, complete, by } = result;
  const ownership: Ownership = holdsMessage(task, record.messageId) ? { kind: 'proven', by: 'message-id' } : by === 'context' ? { kind: 'proven', by: 'context' } : { kind: 'unknown' };
  return { kind: 'found', task, complete, ownership };
}
