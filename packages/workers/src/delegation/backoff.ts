/**
 * Exponential backoff with full jitter ("Exponential Backoff And Jitter", AWS
 * Architecture Blog): delay = random(0, min(cap, base * 2^attempt)). Full
 * jitter spreads a fleet's reconnections after an agent restart instead of
 * synchronizing them.
 */
export interface BackoffOptions {
  /** First window in ms. */
  baseMs: number;
  /** Largest window in ms. */
  capMs: number;
}

/** Delay in ms before retry number `attempt` (0-based). `random` is injectable for tests. */
export function fullJitterDelayMs(attempt: number, options: BackoffOptions, random: () => number = Math.random): number {
  const window = Math.min(options.capMs, options.baseMs * 2 ** Math.min(attempt, 30));
  return Math.floor(random() * window);
}

/** A time `intervalMs` from now, spread over [0.5, 1.5) × interval so per-record checks do not line up. */
export function jitteredCheckTime(nowMs: number, intervalMs: number, random: () => number = Math.random): number {
  return nowMs + Math.floor(intervalMs * (0.5 + random()));
}
