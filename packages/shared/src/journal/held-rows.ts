/**
 * The delegation records the journal handed out as a row read or written at their `version` (a read, or a status
 * change's result). Only such a record may name its version to applyStatus-5.lua (the change reply is merged into
 * it): a copy made elsewhere (`{ ...record, version }`) is not one, and gets the whole row back.
 */
import type { DelegationRecord } from './record.ts';

const rows = new WeakSet<DelegationRecord>();

/** Marks `record` as the row at its version, as the journal read or wrote it; returns it. */
export function asHeldRow<T extends DelegationRecord>(record: T): T {
  rows.add(record);
  return record;
}

/** The version `record` holds the row at, when the journal handed it out as such; else undefined. */
export function heldVersion(record: DelegationRecord | undefined): number | undefined {
  return record !== undefined && rows.has(record) ? record.version : undefined;
}
