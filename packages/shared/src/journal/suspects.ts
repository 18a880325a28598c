/**
 * The two readings of a delegation row's suspect evidence (tasks refused pushes showed holding our message,
 * noteSuspect-1.lua and clearSuspects-1.lua), each written once for TypeScript here and once for Lua in
 * `lua/includes/suspects.lua` (the same rule; test/journal/suspects-predicate.test.ts checks both agree on every
 * combination of the two fields).
 */
import type { DelegationRecord } from './record.ts';

/** The two row fields the readings look at, as the record holds them. */
export type SuspectFields = Pick<DelegationRecord, 'suspects' | 'suspectsLost'>;

/**
 * Whether suspects wait to be read (the row's `suspects` field, a JSON list of task ids, present and not empty).
 * What a FINISHED row's settle waits for (settle.ts, finish-step.ts, finishStep-5.lua) and what a reconcile of it
 * reads: only pending ids can still be read. Evidence counted lost (`suspectsLost`) is never read again and the
 * count never goes down, so waiting on it would hold the workflow for ever; on a finished row its state stands and
 * the reconciler's round says it for a person (finished-suspects.ts), on an unfinished row it is a person at once
 * (`keepsSuspects`, `afterSuspectReads`).
 */
export function suspectsPending(record: Pick<SuspectFields, 'suspects'>): boolean {
  return record.suspects !== undefined && record.suspects !== '';
}

/**
 * Whether the row keeps suspect evidence a reconcile must read or decide on: suspects pending (`suspectsPending`),
 * or counted lost (`suspectsLost` above 0: not kept, or never read to a conclusion; a person decides). What the
 * reconciler tests before its lease check, the follow-lease renewal asks a read for (renewFollow-2.lua), and the
 * start-up sweep reads (`Journal.keepSuspects`).
 */
export function keepsSuspects(record: SuspectFields): boolean {
  return suspectsPending(record) || record.suspectsLost > 0;
}

/**
 * Whether a FINISHED row's lost suspect evidence still has to be told to a person (finished-suspects.ts): more lost
 * (`suspectsLost`) than a person was told of (`suspectsLostTold`, noteSuspectsUnchecked-1.lua), and the row is not
 * AMBIGUOUS (a person's already: attention.needed). With nothing pending either, a reconcile of the finished row has
 * nothing to read or tell: its read round runs once per finding, not on every later reconcile.
 */
export function lostUntold(record: Pick<DelegationRecord, 'state' | 'suspectsLost' | 'suspectsLostTold'>): boolean {
  return record.state !== 'AMBIGUOUS' && record.suspectsLost > record.suspectsLostTold;
}

/**
 * A row's round of suspect reads as its schedule reads it: failed rounds in a row and when the last ended (ms,
 * clearSuspects-1.lua), and the round in flight, if any: its claimer's token and until when (ms) its claim holds
 * (claimSuspectRound-1.lua; released by the round's end, taken over past that time).
 */
export interface SuspectRoundFields {
  suspectReadRounds: number;
  suspectReadRoundAt?: number | undefined;
  suspectRoundBy?: string | undefined;
  suspectRoundUntil?: number | undefined;
}
