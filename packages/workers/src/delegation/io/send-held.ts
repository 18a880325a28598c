/**
 * A SendMessage that the agent may hold until the work is done (field case V2:
 * agents that ignore `returnImmediately`, spec §3.2.2). The request may last up
 * to the attempt's deadline; meanwhile, from `requestTimeoutMs` after it left,
 * the agent is searched for our messageId (`search.ts`, spacing doubling up to
 * `slowPollMs`). A task found that is provably ours ends the wait: its id is
 * journaled at once and our side of the held request is dropped, so a held send
 * occupies its send slot only until the agent shows the task. An agent that
 * cannot list tasks holds the slot until it answers or the attempt's deadline
 * (docs/agents.md "Agents that hold the send").
 */
import { A2AError, type A2ATransport, type SendMessageRequest, type SendMessageResponse, type Task } from '@durable-a2a/a2a';
import type { DelegationRecord } from '@durable-a2a/shared';
import { FINISHED_ABORT_REASON, type WorkerContext } from '../../context.ts';
import { findTaskByMessageId, holdsMessage } from './search.ts';

/**
 * The send's outcome: the agent's answer, or what a search found while the send was held: our task, or our message in
 * several tasks (`several`, every id: the agent got it more than once; a person decides, as the reconciler's search row).
 */
export type HeldSendResult = { kind: 'answer'; response: SendMessageResponse } | HeldSearchHit;

/** What a search while the send is held ends the wait with (see `HeldSendResult`). */
export type HeldSearchHit = { kind: 'found'; task: Task; complete: boolean } | { kind: 'several'; taskIds: string[] };

/** Searches at most this many times while one send is held (then waits for the answer or the deadline). */
const MAX_SEARCHES_WHILE_HELD = 20;

/**
 * Sends `request` and, while the answer is held, searches for our task (see the module header).
 * `stop`: aborts the request from outside (the fleet closing while the send waits outside its job).
 * Rejects with the send's error (never with a search error: those only end the searching).
 */
export async function sendWhileSearching(
  ctx: WorkerContext,
  record: DelegationRecord,
  transport: A2ATransport,
  request: SendMessageRequest,
  timeoutMs: number,
  stop?: AbortSignal,
): Promise<HeldSendResult> {
  const send = new AbortController();
  // Taken off in `finally`: `addEventListener`'s `signal` option would cost a weak reference and a finalizer per send.
  const onStop = () => send.abort(stop?.reason);
  stop?.addEventListener('abort', onStop, { once: true });
  const answer = transport.sendMessage(request, { timeoutMs, signal: send.signal }).then((response): HeldSendResult => ({ kind: 'answer', response }));
  // The searching starts `requestTimeoutMs` after the send left: most answers come first, and then nothing but this
  // timer was made for it (no controller, no listener, no abort to dispatch).
  let searching: AbortController | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const found = new Promise<HeldSendResult>((resolve) => {
    timer = setTimeout(() => {
      searching = new AbortController();
      resolve(searchWhileHeld(ctx, record, transport, searching.signal).then((hit) => hit ?? answer));
    }, ctx.options.requestTimeoutMs);
  });
  try {
    const result = await Promise.race([answer, found]);
    if (result.kind !== 'answer') {
      send.abort();
      answer.catch(() => undefined);
    }
    return result;
  } finally {
    clearTimeout(timer);
    searching?.abort(FINISHED_ABORT_REASON);
    stop?.removeEventListener('abort', onStop);
  }
}

/**
 * Resolves with our task (`complete`: read in full, not a summary) once a search finds it, or with `several` once a
 * search shows our message in more than one task (searching again changes nothing: a person decides); undefined when
 * searching stops (aborted, unsupported, capped at 20 searches). Called once the send has waited (a held SendMessage after
 * `requestTimeoutMs`, a silent send stream after `streamQuietMs`): searches at once, then after twice as long each
 * time, starting from `requestTimeoutMs` (at most `max(slowPollMs, requestTimeoutMs)`). A task found is ours when it
 * holds our messageId, in whatever context (`holdsMessage`, the reconciler's rule). A search that fails (an agent
 * error, retryable or not: a malformed list is an answer the next search may not repeat) is a miss: the next one
 * follows at its time; the cap bounds them.
 */
export async function searchWhileHeld(ctx: WorkerContext, record: DelegationRecord, transport: A2ATransport, stop: AbortSignal): Promise<HeldSearchHit | undefined> {
  let delayMs = ctx.options.requestTimeoutMs;
  for (let search = 0; search < MAX_SEARCHES_WHILE_HELD; search++) {
    if (search > 0) {
      delayMs = Math.min(delayMs * 2, Math.max(ctx.options.slowPollMs, ctx.options.requestTimeoutMs));
      if (!(await sleep(delayMs, stop))) return undefined;
    }
    try {
      const result = await findTaskByMessageId(transport, record, { marginMs: ctx.options.searchMarginMs, maxListTasksCalls: ctx.options.maxListTasksCalls, now: ctx.options.now });
      if (stop.aborted || result.kind === 'unsupported') return undefined;
      // Several tasks holding our message: a person decides (the reconciler's search row), searching again changes nothing.
      if (result.kind === 'several') return { kind: 'several', taskIds: result.taskIds };
      if (result.kind === 'found' && holdsMessage(result.task, record.messageId)) return { kind: 'found', task: result.task, complete: result.complete };
    } catch (error) {
      if (!(error instanceof A2AError)) return undefined;
    }
  }
  return undefined;
}

/** Waits `ms`; false when `signal` aborted first. */
function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
