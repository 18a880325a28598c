/**
 * A stream's status writes that wait (`workingWriteDelayMs`, default 250 ms; 0: every event is written as it comes):
 * a WORKING (or SUBMITTED) that moves nothing else (`core/working-write.ts` `mayWait`) is held for that long and
 * written only if no later observation of the same stream makes it moot (`whenNextArrives`): a finished status
 * replaces it (the row goes SUBMITTED → COMPLETED in one transition), an artifact update leaves it waiting, anything
 * else writes it first. When the window ends it is written; when the run ends it is written unless the stream
 * stopped (then it was written first, or made moot). A crash loses it: only the row's state name is late (the next
 * follower's first snapshot, or the reconciler's read, writes the task's state; nothing decides from WORKING).
 *
 * One observation at a time (the timer's write included), so the journal sees the stream's order. A timer's write
 * that stops the stream (it found the row finished: settled there) or throws is handed to the stream's next
 * observation, as the write of that event would have been. One timer per run at most, cleared when the write is
 * taken, and never keeping the process alive.
 */
import { isFinished, type DelegationRecord } from '@durable-a2a/shared';
import type { WorkerContext } from '../../context.ts';
import type { Observation } from '../core/observation.ts';
import { mayWait, whenNextArrives } from '../core/working-write.ts';
import type { SinkResult, StreamSink } from '../io/stream.ts';

/** A run's sink that also tells the row as its last write left it. */
export type RowSink = StreamSink & { row(): DelegationRecord };

/** A stream run's sink with waiting writes (`holdWorkingWrites`). */
export interface WaitingWrites {
  /** The sink the stream reads into. */
  sink: StreamSink;
  /**
   * Ends the hold when the run ends: a write still waiting is written, unless the stream stopped (its last step
   * settled, parked or routed the row); the timer is cleared. Never rejects (a failed write is logged: the next
   * follower's snapshot writes the state).
   */
  end(): Promise<void>;
}

/** Starts the wait of a held write: calls `done` after `ms`; the function returned cancels it. */
export type WaitTimer = (done: () => void, ms: number) => () => void;

/** `WaitTimer` on Node's clock; the timer never keeps the process alive (a write lost at exit is a crash's loss). */
export const nodeWaitTimer: WaitTimer = (done, ms) => {
  const timer = setTimeout(done, ms);
  timer.unref();
  return () => clearTimeout(timer);
};

/** How `holdWorkingWrites` holds: the window (ms; 0 = never), the run's logger, the timer (tests drive their own). */
export interface HoldOptions {
  delayMs: number;
  log: WorkerContext['logger'];
  timer?: WaitTimer;
}

/** Wraps `sink` so that status writes that may wait do (see the module header); `delayMs` 0 returns it as it is. */
export function holdWorkingWrites(sink: RowSink, { delayMs, log, timer = nodeWaitTimer }: HoldOptions): WaitingWrites {
  if (delayMs === 0) return { sink, end: async () => undefined };
  let waiting: { observation: Observation; cancel: () => void } | undefined;
  let queue: Promise<unknown> = Promise.resolve();
  // What stopped the stream (a step that did not `continue`), and a timer's write that threw: both for the next observation.
  let stopped: SinkResult | undefined;
  let failed: { error: unknown } | undefined;
  const serial = <T>(work: () => Promise<T>): Promise<T> => {
    const run = queue.then(work);
    queue = run.catch(() => undefined);
    return run;
  };
  const take = (): Observation | undefined => {
    const held = waiting;
    waiting = undefined;
    held?.cancel();
    return held?.observation;
  };
  const write = async (observation: Observation): Promise<SinkResult> => {
    const result = await sink(observation);
    if (result.next !== 'continue') stopped = { next: result.next };
    return result;
  };
  const onTimer = (): void => {
    void serial(async () => {
      const observation = take();
      if (!observation || stopped || failed) return;
      try {
        await write(observation);
      } catch (error) {
        failed = { error };
        log.warn({ err: error }, 'a held status write failed; the stream\'s next observation gets the error');
      }
    });
  };
  const hold = (observation: Observation): SinkResult => {
    waiting = { observation, cancel: timer(onTimer, delayMs) };
    return { next: 'continue' };
  };
  const wrapped: StreamSink = (observation) =>
    serial(async () => {
      if (failed) {
        const { error } = failed;
        failed = undefined;
        throw error;
      }
      if (stopped) return stopped;
      let dropped: Observation | undefined;
      if (waiting) {
        const move = whenNextArrives(sink.row(), observation);
        if (move === 'flush') {
          const first = await write(take()!);
          if (first.next !== 'continue') return first;
        } else if (move === 'drop') dropped = take();
      }
      if (mayWait(sink.row(), observation)) return hold(observation);
      const result = await write(observation);
      // A finished status that did not finish the row (not expected: it outranks both waiting states): written after it.
      if (dropped && result.next === 'continue' && !isFinished(sink.row().state)) {
        const after = await write(dropped);
        if (after.next !== 'continue') return after;
      }
      return result;
    });
  return {
    sink: wrapped,
    async end() {
      await serial(async () => {
        const observation = take();
        if (!observation || stopped || failed) return;
        await write(observation).catch((error: unknown) => log.warn({ err: error }, 'a held status write failed as the stream ended; the next follower\'s snapshot writes the state'));
      });
    },
  };
}
