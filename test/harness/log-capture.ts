/**
 * A logger whose lines a test keeps, to count and read them: hand `capture.logger` to a fleet or a server, then
 * filter `capture.lines`. Two sources, chosen explicitly because they count differently:
 * - `'lines'` (the default): every line pino writes, child loggers' (per job, per request) included, parsed after
 *   serializers and redaction (an `err` is pino's `{ type, message, stack }`); `rawLines` keeps each line's text
 *   as written, for assertions on what reaches a log file.
 * - `'root calls'`: only the calls made on the root logger itself, their fields as passed (an `err` stays an
 *   `Error`, so `redisErrorKind` can read it). Child loggers' lines are left out (they go nowhere), so a count of
 *   "one line per episode" counts the root's own lines only.
 */
import { Writable } from 'node:stream';
import { createLogger, type Logger } from '@durable-a2a/shared';

/** pino's levels, lowest first. */
const LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'] as const;
export type CapturedLevel = (typeof LEVELS)[number];

/** One captured line: pino's numeric `level` (30 info, 40 warn, 50 error), `msg`, and its other fields. */
export interface CapturedLine {
  level: number;
  msg: string;
  [field: string]: unknown;
}

export interface LogCaptureOptions {
  /** The lowest level kept. Default `info`. */
  level?: CapturedLevel;
  /** What is captured (see the file header). Default `'lines'`. */
  source?: 'lines' | 'root calls';
}

export interface LogCapture {
  /** The logger to pass to the code under test. */
  readonly logger: Logger;
  /** Every line captured so far, in order. */
  readonly lines: CapturedLine[];
  /** Each line's JSON text as pino wrote it (source `'lines'` only; empty for `'root calls'`). */
  readonly rawLines: string[];
  /** The lines whose `msg` is `message` (or matches it). */
  withMessage(message: string | RegExp): CapturedLine[];
  /** The lines at `level` or above. */
  atLeast(level: CapturedLevel): CapturedLine[];
}

/** A logger at `level` (default `info`) whose lines are kept; see the file header for `source`. */
export function captureLogs(options: LogCaptureOptions = {}): LogCapture {
  const level = options.level ?? 'info';
  const lines: CapturedLine[] = [];
  const rawLines: string[] = [];
  let logger: Logger;
  if ((options.source ?? 'lines') === 'lines') {
    const sink = new Writable({
      write: (chunk: Buffer, _encoding, done) => {
        for (const text of chunk.toString().split('\n').filter(Boolean)) {
          rawLines.push(text);
          lines.push(JSON.parse(text) as CapturedLine);
        }
        done();
      },
    });
    logger = createLogger({ level }, sink);
  } else {
    logger = createLogger({ level }, new Writable({ write: (_chunk, _encoding, done) => done() }));
    for (const name of LEVELS.slice(LEVELS.indexOf(level))) {
      const levelNumber = logger.levels.values[name]!;
      logger[name] = ((fields: unknown, msg?: string) => void lines.push({ ...(typeof fields === 'object' ? (fields as object) : {}), level: levelNumber, msg: msg ?? String(fields) })) as never;
    }
  }
  return {
    logger,
    lines,
    rawLines,
    withMessage: (message) => lines.filter((line) => (typeof message === 'string' ? line.msg === message : message.test(line.msg))),
    atLeast: (least) => lines.filter((line) => line.level >= logger.levels.values[least]!),
  };
}
