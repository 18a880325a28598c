/**
 * Liveness that means something (field case R23): a worker whose blocking
 * fetch stopped coming back after a Redis outage is reported unhealthy, not
 * kept alive by a PING on a shared connection. We time every return of the
 * Worker's fetch (`waitForJob` when idle, `moveToActive` when busy); a worker
 * whose every slot is busy does not fetch and counts as live.
 */
import type { Worker } from 'bullmq';

export interface QueueHealth {
  queue: string;
  live: boolean;
  /** Milliseconds since the last fetch returned. */
  sinceLastFetchMs: number;
  activeJobs: number;
  concurrency: number;
}

export interface FetchProgress {
  /** Records that a job started / finished (busy slots). */
  jobStarted(): void;
  jobFinished(): void;
  health(): QueueHealth;
}

type Patchable = { waitForJob: (...args: unknown[]) => Promise<unknown>; moveToActive: (...args: unknown[]) => Promise<unknown> };

/**
 * Watches one BullMQ Worker's fetch loop. `staleAfterMs` should exceed the
 * longest blocking wait (BullMQ's drainDelay, 5 s by default) by a margin.
 */
export function watchFetchProgress(worker: Worker, queue: string, concurrency: number, staleAfterMs: number, now: () => number = Date.now): FetchProgress {
  let lastFetchAt = now();
  let activeJobs = 0;
  const patchable = worker as unknown as Patchable;
  for (const method of ['waitForJob', 'moveToActive'] as const) {
    const original = patchable[method].bind(worker);
    // Only a fetch that came back from Redis counts: errors during an outage are not progress.
    patchable[method] = async (...args: unknown[]) => {
      const result = await original(...args);
      lastFetchAt = now();
      return result;
    };
  }
  return {
    jobStarted: () => void activeJobs++,
    jobFinished: () => void activeJobs--,
    health() {
      const sinceLastFetchMs = now() - lastFetchAt;
      const saturated = activeJobs >= concurrency;
      return { queue, live: saturated || !worker.isRunning() || sinceLastFetchMs < staleAfterMs, sinceLastFetchMs, activeJobs, concurrency };
    },
  };
}
