/**
 * Timers for delays of any length. Node fires a `setTimeout` whose delay does not fit a signed 32-bit integer (more
 * than `MAX_TIMER_DELAY_MS`, about 24.8 days) after 1 ms, with a TimeoutOverflowWarning; a step's attempt deadline, and
 * with it a held send's request or a silent stream's wait, or a caller's `waitFor` timeout, may be a month.
 * `setLongTimeout` waits the whole delay, in hops of at most `MAX_TIMER_DELAY_MS`. No well-kept library does this
 * (`long-timeout` was last published in 2016), and the behaviour is these few lines.
 */

/** The longest delay Node's timers keep, ms (2^31 − 1, about 24.8 days). */
export const MAX_TIMER_DELAY_MS = 2_147_483_647;

/** A timer started by `setLongTimeout`. */
export interface LongTimeout {
  /** Stops the timer; the callback does not run. Safe to call more than once, and after it ran. */
  clear(): void;
}

/**
 * Runs `callback` once after `delayMs` (ms; below 0 or NaN: as soon as Node's timers allow, as `setTimeout` does;
 * Infinity: never). `unref`: the timer keeps no process alive (default false, as `setTimeout`).
 */
export function setLongTimeout(callback: () => void, delayMs: number, options: { unref?: boolean } = {}): LongTimeout {
  let left = delayMs > 0 ? delayMs : 0;
  let timer: NodeJS.Timeout;
  const arm = (): void => {
    const hop = Math.min(left, MAX_TIMER_DELAY_MS);
    left -= hop;
    timer = setTimeout(left > 0 ? arm : callback, hop);
    if (options.unref) timer.unref();
  };
  arm();
  return { clear: () => clearTimeout(timer) };
}
