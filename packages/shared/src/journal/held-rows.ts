/**
 * The delegation records the journal handed out as a row read or written at their `version` (a read, or a status
 * change's result). Only such a record may name its version to applyStatus-5.lua (the change reply is merged into
 * it): a copy made elsewhere (`{ ...record, version }`) is not one, and gets the whole row back.
 */
import type { DelegationRecord } from './record.ts';
import type { DelegationRef } from './core.ts';
import { mergeDelegationChange } from './record-parse.ts';
import { rememberStoredRow, storedRowOf } from './stored-rows.ts';

const rows = new WeakSet<DelegationRecord>();

/** Marks `record` as the row at its version, as the journal read or wrote it; returns it. */
export function asHeldRow<T extends DelegationRecord>(record: T): T {
  rows.add(record);
  return record;
}

/** The version `record` holds the row at, when the journal handed it out as such; else undefined. */
export function heldVersion(record: DelegationRef | DelegationRecord | undefined): number | undefined {
  return record !== undefined && rows.has(record as DelegationRecord) ? (record as DelegationRecord).version : undefined;
}

/**
 * The typed record of the row after a change made on the version `held` holds: `change` (the fields a script wrote,
 * and those written elsewhere without a version bump that it returns) merged into `held`, with the stored row it
 * was parsed from moved along (the settle builds the compacted record's text from it: stored-rows.ts). Not marked
 * as held: the caller does, once it knows the change was made on `held`'s version. Undefined when a changed field
 * does not parse (the caller reads the row again).
 */
export function changedRow(held: DelegationRecord, change: Readonly<Record<string, string>>): DelegationRecord | undefined {
  const merged = mergeDelegationChange(held, change);
  // The change only sets fields: the stored row with the change's values is the row as written.
  const stored = storedRowOf(held);
  return merged && stored ? rememberStoredRow(merged, { ...stored, ...change }) : merged;
}
