/**
 * Finds the task an agent created for our messageId when the crash came
 * between "sent" and "recorded". A2A has no messageId filter (spec §3.1.4), so
 * we list tasks in our context since just before the record was created, then
 * read each candidate's full history (never a small historyLength: R14).
 * Pagination is distrusted (R15): a repeated token or page stops the scan,
 * calls are capped, and a second pass restricted to tasks updated since the
 * scan began catches a task that moved pages while we read.
 */
import {
  InvalidParamsError,
  MethodNotFoundError,
  UnsupportedOperationError,
  type A2ATransport,
  type DelegationRecord,
  type ListTasksRequest,
  type Task,
} from '@durable-a2a/shared';

export type SearchResult =
  | { kind: 'found'; task: Task }
  /** No task holds our message; `inconclusive` when a candidate's history was too short to tell. */
  | { kind: 'not-found'; inconclusive: boolean; contextRefused: boolean; candidates: string[]; paginationBroken: boolean }
  /** The agent cannot list tasks (0.3, or no ListTasks support). */
  | { kind: 'unsupported' };

export interface SearchOptions {
  marginMs: number;
  maxListTasksCalls: number;
  now: () => number;
}

const holdsMessage = (task: Task, messageId: string) => task.history?.some((message) => message.messageId === messageId) ?? false;
/** A history without any user message cannot prove the task is not ours. */
const tooShortToTell = (task: Task) => !task.history?.some((message) => message.role === 'ROLE_USER');

/** Searches the agent for the task holding `record.messageId`. Throws transport errors other than "unsupported". */
export async function findTaskByMessageId(transport: A2ATransport, record: DelegationRecord, options: SearchOptions): Promise<SearchResult> {
  const scanStart = options.now();
  let calls = 0;
  let paginationBroken = false;
  let contextRefused = record.contextRefused;
  const candidates = new Map<string, Task>();

  const pass = async (since: number): Promise<Task | undefined> => {
    const seenTokens = new Set<string>();
    const seenPages = new Set<string>();
    let pageToken: string | undefined;
    for (;;) {
      if (calls >= options.maxListTasksCalls) {
        paginationBroken = true;
        return undefined;
      }
      const request: ListTasksRequest = { statusTimestampAfter: new Date(since).toISOString(), pageSize: 50 };
      if (!contextRefused && record.requestedContextId) request.contextId = record.requestedContextId;
      if (pageToken) request.pageToken = pageToken;
      calls++;
      let page;
      try {
        page = await transport.listTasks(request);
      } catch (error) {
        if ((error instanceof MethodNotFoundError || error instanceof UnsupportedOperationError) && calls === 1) throw new SearchUnsupported();
        // The agent refused our contextId: search by time alone.
        if (error instanceof InvalidParamsError && request.contextId && !pageToken) {
          contextRefused = true;
          continue;
        }
        throw error;
      }
      for (const task of page.tasks) {
        if (holdsMessage(task, record.messageId)) return task;
        candidates.set(task.id, task);
      }
      const pageKey = page.tasks.map((task) => task.id).join(',');
      const next = page.nextPageToken;
      if (!next) return undefined;
      if (seenTokens.has(next) || (pageKey && seenPages.has(pageKey))) {
        paginationBroken = true;
        return undefined;
      }
      seenTokens.add(next);
      if (pageKey) seenPages.add(pageKey);
      pageToken = next;
    }
  };

  try {
    const found = (await pass(record.createdAt - options.marginMs)) ?? (await pass(scanStart - options.marginMs));
    if (found) return { kind: 'found', task: found };
  } catch (error) {
    if (error instanceof SearchUnsupported) return { kind: 'unsupported' };
    throw error;
  }
  let inconclusive = false;
  for (const candidate of candidates.values()) {
    // ListTasks may trim history; read each candidate in full.
    const task = await transport.getTask({ id: candidate.id });
    if (holdsMessage(task, record.messageId)) return { kind: 'found', task };
    if (tooShortToTell(task)) inconclusive = true;
  }
  return { kind: 'not-found', inconclusive, contextRefused, candidates: [...candidates.keys()], paginationBroken };
}

class SearchUnsupported extends Error {}
