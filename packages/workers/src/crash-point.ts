/**
 * Fault injection for tests and the demo (`DA2A_CRASH_AT`, `DA2A_STALL_AT`): at a named point of the
 * delegation flow, block the event loop or SIGKILL this process; and an observation of each point for in-process tests
 * (`onCrashPoint`). Off unless configured.
 */
import type { Logger } from '@durable-a2a/shared';
import type { CrashPoint, WorkerContext } from './context.ts';
import type { CompiledFleetOptions } from './options.ts';

/** The hook of a fleet with no fault configured (every production fleet): it does nothing. */
export const NO_FAULT: WorkerContext['crashPoint'] = () => undefined;

/**
 * The fault hook: tells `onCrashPoint` (tests: an observation at a point), then stalls or SIGKILLs this process at the
 * configured point (tests and demo only); `NO_FAULT` when none of `onCrashPoint`, `stallAt` and `crashAt` is
 * configured, so the points on every delegation's path cost a call and nothing else.
 */
export function crashPointHook(options: CompiledFleetOptions, logger: Logger): WorkerContext['crashPoint'] {
  if (options.stallAt === undefined && options.crashAt === undefined && options.onCrashPoint === undefined) return NO_FAULT;
  const observe = options.onCrashPoint;
  return (point: CrashPoint, step?: string) => {
    observe?.(point, step);
    const hits = (configured: string | undefined) => configured === point || (step !== undefined && configured === `${point}@${step}`);
    if (hits(options.stallAt?.point)) {
      logger.warn({ crashPoint: point, ms: options.stallAt!.ms }, 'stall point reached: blocking the event loop (fault injection)');
      const until = Date.now() + options.stallAt!.ms;
      while (Date.now() < until) {
        // Busy wait on purpose: nothing else in this process may run (no lock renewal).
      }
    }
    if (hits(options.crashAt)) {
      logger.fatal({ crashPoint: point }, 'crash point reached: killing this process (fault injection)');
      process.kill(process.pid, 'SIGKILL');
    }
  };
}
