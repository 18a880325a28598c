/**
 * One pino factory with every default in one object. Secrets are redacted
 * wherever they appear in a log line (tokens, credentials, Authorization).
 */
import { pino, type Logger, type LoggerOptions } from 'pino';

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

/** Creates the root logger (JSON lines on stdout). `level: 'silent'` for tests. */
export function createLogger(options: LoggerOptions = {}): Logger {
  return pino({ ...defaultLoggerOptions, ...options });
}
