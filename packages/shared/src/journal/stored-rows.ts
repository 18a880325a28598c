/**
 * The row each typed record was parsed from, when the journal read it whole (HGETALL, or a transition's reply of
 * the row as written): a finishing workflow's settle builds the compacted record's text from them
 * (compacted-record-text.ts) instead of updateWorkflow-4.lua reading them again. Held weakly by the record object:
 * nothing outlives the record, and a record built any other way has none.
 */
import type { StoredRow } from './compacted-record-text.ts';

const rows = new WeakMap<object, StoredRow>();

/** Remembers `row` as the row `record` was parsed from; returns `record`. */
export function rememberStoredRow<T extends object>(record: T, row: StoredRow): T {
  rows.set(record, row);
  return record;
}

/** The row `record` was parsed from, when the journal read it whole; else undefined. */
export function storedRowOf(record: object): StoredRow | undefined {
  return rows.get(record);
}
