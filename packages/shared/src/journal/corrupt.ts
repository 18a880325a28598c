/**
 * Records that do not parse. A reader over many records (listings, summaries, the agent registry, the
 * reconciler's batches) skips such a record and reports it; a read of that one record throws
 * `CorruptRecordError`, which the API answers as the typed problem `CORRUPT_RECORD` naming the key. One bad
 * record never stops a listing or a worker: it stays in Redis untouched for a person to inspect or delete
 * (nothing here repairs or removes it).
 */
import type { Logger } from 'pino';
import { LRUCache } from 'lru-cache';
import type { Counter } from 'prom-client';

/** What kind of record failed to parse (the `kind` label of `durable_a2a_corrupt_records_total`). */
export type CorruptRecordKind = 'workflow' | 'delegation' | 'agent' | 'notification' | 'push config';

/** A stored record did not parse (not JSON, wrong types, truncated, missing fields). `cause` keeps the parser's error. */
export class CorruptRecordError extends Error {
  override readonly name = 'CorruptRecordError';
  readonly code = 'CORRUPT_RECORD';
  constructor(
    readonly kind: CorruptRecordKind,
    /** The Redis key holding the record (a hash field is named after `#`: `<prefix>:agents#<card URL>`). */
    readonly key: string,
    options: { cause: unknown },
  ) {
    super(`corrupt ${kind} record at ${key}: it does not parse`, options);
  }
}

/** Runs `parse`; anything it throws becomes a `CorruptRecordError` for `key` (cause kept). */
export function parseRecordAt<T>(kind: CorruptRecordKind, key: string, parse: () => T): T {
  try {
    return parse();
  } catch (error) {
    if (error instanceof CorruptRecordError) throw error;
    throw new CorruptRecordError(kind, key, { cause: error });
  }
}

/** Called once per corrupt record a reader skipped (or a single read refused). */
export type CorruptRecordHandler = (error: CorruptRecordError) => void;

/** Keys a process remembers as already logged: past this the oldest may be logged again (memory stays bounded). */
export const LOGGED_CORRUPT_KEYS = 10_000;

/**
 * The handler of a process: every report counts in `counter` (labelled by kind); the first report of each key
 * is logged at error with the key and the parser's message (at most `LOGGED_CORRUPT_KEYS` keys remembered).
 */
export function corruptRecordReporter(options: { logger: Pick<Logger, 'error'>; counter: Counter<'kind'> }): CorruptRecordHandler {
  const logged = new LRUCache<string, true>({ max: LOGGED_CORRUPT_KEYS });
  return (error) => {
    options.counter.inc({ kind: error.kind });
    if (logged.has(error.key)) return;
    logged.set(error.key, true);
    const cause = error.cause instanceof Error ? error.cause.message.slice(0, 500) : String(error.cause).slice(0, 500);
    options.logger.error({ code: error.code, kind: error.kind, key: error.key, cause }, 'corrupt record skipped; it stays in Redis for a person to inspect or delete');
  };
}

/** `read`'s value, or undefined when it threw CorruptRecordError (already reported where it was parsed); anything else rethrown. */
export async function skipCorrupt<T>(read: Promise<T>): Promise<T | undefined> {
  try {
    return await read;
  } catch (error) {
    if (error instanceof CorruptRecordError) return undefined;
    throw error;
  }
}
