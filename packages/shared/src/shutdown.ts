/**
 * Bounded shutdown for the executables (field case R30): on SIGTERM / SIGINT
 * run `close()`, but exit within `timeoutMs` whatever Redis does. When the
 * close times out, or Redis was unreachable so the close could not hand work
 * back cleanly, log one line naming what was abandoned and exit 1; otherwise
 * exit 0.
 */
import type { Logger } from './logger.ts';

export interface ShutdownOptions {
  logger: Logger;
  /** Longest close, in ms (DA2A_CLOSE_TIMEOUT_MS). */
  timeoutMs: number;
  /** What to log as `abandoned` (e.g. in-flight jobs per queue). */
  abandoned: () => unknown;
  /** True while Redis answers; a close that starts while it does not exits 1. */
  redisReachable: () => boolean;
  /** Who picks up what was abandoned, for the log line. */
  pickedUpBy: string;
  close: () => Promise<void>;
}

/** Registers SIGTERM and SIGINT handlers (once each) that close as described. */
export function exitOnSignals(options: ShutdownOptions): void {
  const { logger, timeoutMs } = options;
  let stopping = false;
  const abandon = (reason: string) => {
    logger.error({ timeoutMs, abandoned: options.abandoned() }, `${reason}: abandoned what is listed; ${options.pickedUpBy}`);
    process.exit(1);
  };
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.on(signal, () => {
      if (stopping) return;
      stopping = true;
      const redisWasReachable = options.redisReachable();
      logger.info({ signal, timeoutMs, redisReachable: redisWasReachable }, 'closing');
      // Not unref'd: a close that hangs on a dead socket must still end in this line, not a silent exit 0.
      setTimeout(() => abandon('close timed out'), timeoutMs);
      options.close().then(
        () => (redisWasReachable ? process.exit(0) : abandon('closed while Redis was unreachable')),
        (error: unknown) => {
          logger.error({ err: error }, 'close failed');
          abandon('close failed');
        },
      );
    });
  }
}
