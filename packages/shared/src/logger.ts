/**
 * One pino factory with every default in one object. Secrets are redacted
 * wherever they appear in a log line (tokens, credentials, Authorization).
 */
import { pino, type Logger, type LoggerOptions } from 'pino';
import { redisErrorKind } from './redis-errors.ts';

export type { Logger };

/** Paths pino removes from every log line. */
export const REDACTED_PATHS = [
  'token',
  'pushToken',
  'credentials',
  'authorization',
  'headers.authorization',
  'headers["x-a2a-notification-token"]',
  '*.token',
  '*.pushToken',
  '*.credentials',
  '*.authorization',
  '*.headers.authorization',
  'config.token',
  'config.authentication.credentials',
];

export const defaultLoggerOptions: LoggerOptions = {
  level: 'info',
  base: { service: 'durable-a2a' },
  redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
  timestamp: pino.stdTimeFunctions.isoTime,
};

/** Creates the root logger (JSON lines on stdout, or on `destination`). `level: 'silent'` for tests. */
export function createLogger(options: LoggerOptions = {}, destination?: pino.DestinationStream): Logger {
  return destination ? pino({ ...defaultLoggerOptions, ...options }, destination) : pino({ ...defaultLoggerOptions, ...options });
}

const ignoreLine = (): void => undefined;

/**
 * `logger.child(bindings)`, created on the first line logged at an enabled level (pino copies its
 * serializers and redaction per child, a cost per job even when nothing is logged). The lines
 * are those of the eager child; `bindings` is read once, at that first line. A disabled level's
 * method is a no-op without creating the child.
 */
export function lazyChildLogger(logger: Logger, bindings: Record<string, unknown>): Logger {
  let child: Logger | undefined;
  return new Proxy({} as Logger, {
    get(_target, key) {
      if (child === undefined && typeof key === 'string' && key in logger.levels.values && !logger.isLevelEnabled(key)) return ignoreLine;
      child ??= logger.child(bindings);
      const value: unknown = Reflect.get(child, key, child);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(child) : value;
    },
  });
}

/** Anything that emits ioredis connection events (a Redis, a Cluster, a BullMQ Queue or Worker). */
interface ConnectionEvents {
  on(event: 'error', listener: (error: Error) => void): unknown;
  on(event: 'ready', listener: () => void): unknown;
}

/** Default for `logRedisConnectionState`: while Redis stays down, one reminder per this many ms. */
export const REDIS_DOWN_REMINDER_MS = 30_000;

/**
 * Turns a Redis outage into state-change log lines instead of one dump per
 * failed command: `Redis unreachable` on the first error, a reminder every
 * `reminderMs` while it lasts, `Redis reachable again` on the next `ready`.
 * Also registers the `error` listeners that keep ioredis from printing
 * "Unhandled error event" and BullMQ objects from throwing. `extra` (BullMQ
 * Queues and Workers) only get a listener: their errors count as the same outage.
 */
export function logRedisConnectionState(
  logger: Logger,
  client: ConnectionEvents,
  extra: readonly { on(event: 'error', listener: (error: Error) => void): unknown }[] = [],
  reminderMs: number = REDIS_DOWN_REMINDER_MS,
  now: () => number = Date.now,
): void {
  let downSince: number | undefined;
  let lastLineAt = 0;
  const onError = (error: Error) => {
    const at = now();
    if (downSince === undefined) {
      downSince = at;
      lastLineAt = at;
      logger.warn({ redis: 'down', reason: error.message }, 'Redis unreachable; retrying');
      logger.debug({ err: error }, 'Redis connection error');
    } else if (at - lastLineAt >= reminderMs) {
      lastLineAt = at;
      logger.warn({ redis: 'down', downForMs: at - downSince, reason: error.message }, 'Redis still unreachable; retrying');
    }
  };
  client.on('error', onError);
  for (const emitter of extra) {
    emitter.on('error', (error: Error) => {
      const kind = redisErrorKind(error);
      if (kind === 'unreachable' || downSince !== undefined) onError(error);
      // Refused or redirected while up: the command's caller gets it (a 503, a backed-off worker), not a line per error.
      else if (kind !== 'other') logger.debug({ err: error, kind }, 'queue error: Redis refusing or moving');
      else logger.error({ err: error }, 'queue error');
    });
  }
  client.on('ready', () => {
    if (downSince === undefined) return;
    logger.info({ redis: 'up', downForMs: now() - downSince }, 'Redis reachable again');
    downSince = undefined;
  });
}
