/**
 * Awaiting a workflow's result without polling. The journal publishes on
 * `<prefix>:{wf:<id>}:changed` when a workflow changes state (updateWorkflow)
 * and when a delegation opens a question (applyStatus). A waiter subscribes
 * first, then reads the journal back, and reads again on every message: a
 * change between the read and the subscription cannot be missed, and a lost
 * message (a reconnect) only costs a read, since reconnecting counts as one. A workflow this process created while
 * the subscriber's pattern was confirmed needs no first read: what its channel published since is kept for its wait
 * (`WorkflowChangeSubscriber.watchCreation`).
 */
import { z } from 'zod';
import { MAX_TIMER_DELAY_MS, setLongTimeout, type LongTimeout } from '@durable-a2a/a2a';
import { type Journal, WorkflowChangeSubscriber, workflowChangeChannel, workflowChangePattern } from '@durable-a2a/shared';

export { WorkflowChangeSubscriber, workflowChangeChannel, workflowChangePattern };
import type { WorkflowView } from './view.ts';

/** States `waitFor` resolves on: the workflow is finished or waits for a person. */
export const SETTLED_WORKFLOW_STATES: readonly string[] = ['COMPLETED', 'COMPENSATED', 'FAILED', 'CANCELED', 'NEEDS_ATTENTION'];

/** Options of `producer.waitFor`. */
export interface WaitForOptions {
  /** Give up after this long (ms): rejects with WaitTimeoutError carrying the last view. Default: no limit. */
  timeoutMs?: number;
  /** Abort the wait: rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Also resolve as soon as the workflow has an open question (INPUT_REQUIRED / AUTH_REQUIRED). Default false. */
  untilQuestion?: boolean;
}

/** `waitFor` ran out of time. `view` is the last view read (still RUNNING or COMPENSATING). */
export class WaitTimeoutError extends Error {
  override readonly name = 'WaitTimeoutError';
  readonly code = 'WAIT_TIMEOUT';
  constructor(
    message: string,
    readonly view: WorkflowView,
  ) {
    super(message);
  }
}

/** True when `waitFor` resolves on this view. */
export function isSettled(view: WorkflowView, untilQuestion = false): boolean {
  return SETTLED_WORKFLOW_STATES.includes(view.state) || (untilQuestion && view.openQuestions.length > 0);
}

/** Why a wait stopped before its workflow settled. */
type Stopped = 'timeout' | 'aborted';

/**
 * One `waitFor`'s events: changes heard (`wake`, given to the subscriber), its deadline and its signal. Whoever awaits
 * `next()` or `until()` is woken by the event; the deadline's timer and the signal's listener are this object's own
 * (`setTimeout`'s argument, `handleEvent`), so a wait makes one closure (`wake`) and one promise per pause.
 */
class WaitEvents {
  /** A change was heard since the last read. */
  changed = false;
  /** What the last change heard published (undefined: read the journal). */
  published: string | undefined;
  stopped: Stopped | undefined;
  #woken: (() => void) | undefined;
  #timer: NodeJS.Timeout | undefined;
  #longTimer: LongTimeout | undefined;
  readonly #signal: AbortSignal | undefined;

  constructor(options: WaitForOptions) {
    const { timeoutMs, signal } = options;
    // A caller may wait longer than Node's timer range (about 24.8 days).
    if (timeoutMs !== undefined && timeoutMs <= MAX_TIMER_DELAY_MS) this.#timer = setTimeout(stopAtDeadline, timeoutMs, this);
    else if (timeoutMs !== undefined) this.#longTimer = setLongTimeout(() => this.stop('timeout'), timeoutMs);
    this.#signal = signal;
    signal?.addEventListener('abort', this, { once: true });
  }

  /** The subscriber's callback: a change (or a replacement connection) was heard. */
  readonly wake = (message?: string): void => {
    this.changed = true;
    this.published = message;
    this.#woken?.();
  };

  stop(why: Stopped): void {
    this.stopped ??= why;
    this.#woken?.();
  }

  /** The signal's 'abort' (EventListener object). */
  handleEvent(): void {
    this.stop('aborted');
  }

  /** Resolves once a change is heard or the wait stops (at once when either happened already). */
  async next(): Promise<void> {
    if (this.changed || this.stopped) return;
    await new Promise<void>((resolve) => (this.#woken = resolve));
    this.#woken = undefined;
  }

  /** `work`'s value, or why the wait stopped first (changes heard meanwhile are kept, not awaited). */
  async until<T>(work: Promise<T>): Promise<T | Stopped> {
    if (this.stopped) return this.stopped;
    try {
      return await new Promise<T | Stopped>((resolve, reject) => {
        this.#woken = () => {
          if (this.stopped) resolve(this.stopped);
        };
        work.then(resolve, reject);
      });
    } finally {
      this.#woken = undefined;
    }
  }

  close(): void {
    this.#woken = undefined;
    clearTimeout(this.#timer);
    this.#longTimer?.clear();
    this.#signal?.removeEventListener('abort', this);
  }
}

const stopAtDeadline = (events: WaitEvents): void => events.stop('timeout');

/**
 * Resolves with the workflow's view once it is settled (see SETTLED_WORKFLOW_STATES,
 * or an open question with `untilQuestion`). Rejects with NotFoundError (from
 * `read`), WaitTimeoutError, or the abort reason; `timeoutMs` and the signal also bound the subscription itself
 * (Redis unreachable: the SUBSCRIBE waits for a connection). `read` gets the last message published since the last read
 * (a finished workflow's compacted record builds the view without a read; undefined after a reconnect).
 * `connected` resolves once the journal's connection can take the first read (rejects when it cannot: that
 * error is the wait's), or returns undefined when it can now; it runs alongside the subscription, within `timeoutMs`
 * and the signal. Concurrent first waits share the subscriber's one connection attempt (WorkflowChangeSubscriber).
 * While the subscriber's pattern is confirmed and the connection ready, nothing is awaited before the first read.
 */
export async function waitForWorkflow(
  subscriber: WorkflowChangeSubscriber,
  journal: Journal,
  read: (workflowId: string, published?: string) => Promise<WorkflowView>,
  workflowId: string,
  options: WaitForOptions = {},
  connected: () => Promise<void> | undefined = () => undefined,
): Promise<WorkflowView> {
  options.signal?.throwIfAborted();
  // The deadline and the signal count from the call, the subscription included: a SUBSCRIBE waits for a connection
  // (the subscriber queues it while Redis is unreachable), and the caller's bound holds there too.
  const events = new WaitEvents(options);
  const channel = workflowChangeChannel(journal, workflowId);
  let unlisten: (() => Promise<void>) | undefined;
  let settled = false;
  try {
    const connecting = connected();
    unlisten = connecting === undefined ? subscriber.listenNow(channel, events.wake) : undefined;
    // Created by this process while the pattern was confirmed: what its channel published since (taken in the turn the
    // wait registered, so every message is either in it or heard by the wait) tells the state. Nothing published:
    // still as created, RUNNING with no question, so nothing is read before the first change.
    const creation = unlisten === undefined ? undefined : subscriber.takeCreation(channel);
    if (unlisten === undefined) {
      const listening = subscriber.listen(channel, events.wake);
      // Subscribed, and the journal's connection ready for the first read (a fresh producer's may still be connecting).
      const ready = Promise.all([listening, connecting]).then(
        ([late]) => late,
        (error: unknown) => {
          void listening.then((late) => late(), () => undefined);
          throw error;
        },
      );
      const subscribed = await events.until(ready);
      if (subscribed === 'timeout' || subscribed === 'aborted') {
        // Not subscribed in time: a subscription that comes later is given up as soon as it does.
        void ready.then((late) => late(), () => undefined);
        if (subscribed === 'aborted') throw options.signal!.reason;
        const view = await read(workflowId);
        if (isSettled(view, options.untilQuestion)) return view;
        throw new WaitTimeoutError(`${timeoutMessage(workflowId, view, options)} (not subscribed to its changes yet)`, view);
      }
      unlisten = subscribed;
    }
    let view = creation === undefined ? await firstView(journal, read, workflowId, options.untilQuestion) : creation.heard ? await read(workflowId, creation.published) : undefined;
    for (;;) {
      if (view && isSettled(view, options.untilQuestion)) {
        settled = true;
        return view;
      }
      if (!events.changed) {
        await events.next();
        // A change heard goes first; else the wait stopped.
        if (!events.changed && events.stopped === 'timeout') {
          view ??= await read(workflowId);
          throw new WaitTimeoutError(timeoutMessage(workflowId, view, options), view);
        }
        if (!events.changed) throw options.signal!.reason;
      }
      events.changed = false;
      const message = events.published;
      events.published = undefined;
      view = await read(workflowId, message);
    }
  } finally {
    events.close();
    // Settled: the view goes back at once, the UNSUBSCRIBE follows on its own (it never rejects; a later
    // SUBSCRIBE of the same channel is sent after it on the same connection). Timed out or aborted: the
    // caller gets control back only once nothing is subscribed for it.
    if (unlisten && settled) void unlisten();
    else if (unlisten) await unlisten();
  }
}

/**
 * What `waitFor` waited for and what the workflow does instead, e.g. "waited 5000 ms for workflow w1 to finish or
 * need a person; it is RUNNING, waiting for an answer to its question (reply, or waitFor with untilQuestion)".
 */
export function timeoutMessage(workflowId: string, view: WorkflowView, options: Pick<WaitForOptions, 'timeoutMs' | 'untilQuestion'>): string {
  const wanted = options.untilQuestion ? 'to finish, need a person or ask a question' : 'to finish or need a person';
  const doing = view.openQuestions.length > 0 ? ', waiting for an answer to its question (reply, or waitFor with untilQuestion)' : view.state === 'COMPENSATING' ? ', undoing the steps done' : ', its steps still working';
  return `waited ${options.timeoutMs} ms for workflow ${workflowId} ${wanted}; it is ${view.state}${doing}`;
}

/**
 * The view to start from, or undefined when the workflow is known to be still running: without
 * `untilQuestion` its state alone (one HGET) tells, and the whole view (every delegation) is read only
 * once it is settled. Rejects with NotFoundError (from `read`) when the workflow is missing.
 */
async function firstView(journal: Journal, read: (workflowId: string) => Promise<WorkflowView>, workflowId: string, untilQuestion = false): Promise<WorkflowView | undefined> {
  if (!untilQuestion) {
    const [state] = await journal.workflowStates([workflowId]);
    if (state !== undefined && !SETTLED_WORKFLOW_STATES.includes(state)) return undefined;
  }
  return read(workflowId);
}

/** Longest `GET /v1/workflows/:id?waitMs=…` long poll (ms); longer asks are capped to it. */
export const MAX_LONG_POLL_MS = 30_000;

/** Query of `GET /v1/workflows/:id`: `waitMs` (0 to MAX_LONG_POLL_MS, capped) and `untilQuestion`. */
export const LongPollQuerySchema = z.object({
  waitMs: z.coerce.number().int().min(0).transform((ms) => Math.min(ms, MAX_LONG_POLL_MS)).optional(),
  untilQuestion: z.enum(['true', 'false']).transform((flag) => flag === 'true').optional(),
});

/**
 * The long poll: waits up to `waitMs` for the workflow to settle, then returns
 * the view as it is (settled or not). `signal` ends the wait early (the client left).
 */
export async function viewAfterWaiting(
  producer: { get(id: string): Promise<WorkflowView>; waitFor(id: string, options?: WaitForOptions): Promise<WorkflowView> },
  workflowId: string,
  query: z.output<typeof LongPollQuerySchema>,
  signal?: AbortSignal,
): Promise<WorkflowView> {
  if (!query.waitMs) return producer.get(workflowId);
  try {
    return await producer.waitFor(workflowId, { timeoutMs: query.waitMs, untilQuestion: query.untilQuestion ?? false, ...(signal ? { signal } : {}) });
  } catch (error) {
    if (error instanceof WaitTimeoutError) return error.view;
    if (signal?.aborted) return producer.get(workflowId);
    throw error;
  }
}
