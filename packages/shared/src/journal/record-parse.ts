/**
 * `parseDelegationHash`: the same typed record as `DelegationRecordSchema.parse`, built field by field
 * (the zod object parse of a ~50-field row cost ~40 µs, several times per delegation). The
 * JSON fields keep their zod schemas. Anything the fast path does not accept as it stands (a missing
 * field, a value outside an enum, unreadable JSON) goes to `DelegationRecordSchema.parse`, so a corrupt
 * row throws exactly the ZodError it threw before; packages/shared/test/record-parse.test.ts holds the two equal.
 */
import type { z } from 'zod';
import { DelegationRecordSchema, type DelegationRecord } from './record.ts';
import { NOT_AS_IT_STANDS, optional, readingOf, type Hash, type JsonRead, type Read } from './record-fields.ts';

/** Checked (a string or absent) and never returned: the secret push token, which `DelegationRecordSchema` drops. */
const secret = 'secret';

/** DelegationRecordSchema's fields in its order, each with its kind's fast reading (record-fields.ts). */
const FIELDS: readonly (readonly [string, Read | typeof secret])[] = Object.entries(DelegationRecordSchema.in.shape).map(([key, schema]) => {
  if (key === 'pushToken') return [key, secret] as const;
  const read = readingOf(schema as z.ZodType);
  if (!read) throw new Error(`record-parse: the field ${key} of DelegationRecordSchema is of no kind record-fields.ts defines`);
  return [key, read] as const;
});

/**
 * A JSON field as a compacted record holds it (compacted-record-read.ts): embedded, an object or an array already
 * parsed, checked by the field's schema as it is; anything else read as the hash's text.
 */
const embedded =
  (schema: z.ZodType, asText: Read): Read =>
  (hash, key) => {
    const value = hash[key];
    if (typeof value !== 'object' || value === null) return asText(hash, key);
    const parsed = schema.safeParse(value);
    if (!parsed.success) throw NOT_AS_IT_STANDS;
    return parsed.data;
  };

/** `FIELDS` with every JSON field also read embedded. */
const EMBEDDED_FIELDS: readonly (readonly [string, Read | typeof secret])[] = FIELDS.map(([key, read]) => {
  if (read !== secret && 'schema' in read) return [key, embedded((read as JsonRead).schema, read)] as const;
  return [key, read] as const;
});

function fastParse(hash: Hash, fields = FIELDS): DelegationRecord {
  const out: Record<string, unknown> = {};
  for (const [key, read] of fields) {
    if (read === secret) optional(hash, key);
    // zod's object output rule: a key whose value is undefined is kept only when the input had it.
    else {
      const value = read(hash, key);
      if (value !== undefined || key in hash) out[key] = value;
    }
  }
  return fastObject(out);
}

/**
 * `built` (a record made by keyed stores: V8 makes it a dictionary object once that adds more properties than its
 * limit for keyed stores, unless an earlier spread of the same keys made the hidden classes) copied once by a spread
 * into a fast object, the same keys in the same order: every later `record.field`, `record[key]`, `key in record`,
 * `Object.keys` and the merge's `for…in` are then shape lookups, not hash lookups (docs/performance.md, branch cpu35).
 */
function fastObject(built: Record<string, unknown>): DelegationRecord {
  return { ...built } as DelegationRecord;
}

/**
 * Parses a delegation hash (HGETALL, or a script's flat reply made into an object) into the typed
 * record `DelegationRecordSchema.parse` returns (the same keys, values and order). Throws its ZodError
 * on a corrupt row.
 */
export function parseDelegationHash(hash: Readonly<Record<string, unknown>>): DelegationRecord {
  try {
    return fastParse(hash);
  } catch {
    return DelegationRecordSchema.parse(hash);
  }
}

/**
 * `parseDelegationHash`'s record from a delegation of a compacted record, its fields restored (compacted-record-read.ts):
 * each value a string as the hash holds it, or for a JSON field its value embedded (an object or an array, checked by
 * the field's schema as it is, not as text). Undefined when a field does not read as it stands: the caller parses
 * the hash, which gives the record or the error.
 */
export function readEmbeddedDelegation(fields: Hash): DelegationRecord | undefined {
  try {
    return fastParse(fields, EMBEDDED_FIELDS);
  } catch {
    return undefined;
  }
}

/**
 * The typed record of a row after a change, from `held` (the typed record of the row at the version the change was
 * made on) and `change` (what applyStatus-5.lua's change reply carries: every field it wrote, and those written
 * elsewhere without a version bump): the same keys, values and order as `parseDelegationHash` of the whole row.
 * Undefined when a changed field does not parse as it stands (the caller reads the row again). A fast object.
 */
export function mergeDelegationChange(held: DelegationRecord, change: Readonly<Record<string, string>>): DelegationRecord | undefined {
  const before = held as unknown as Readonly<Record<string, unknown>>;
  try {
    return mergeByKeys(before, change) ?? mergeInOrder(before, change);
  } catch {
    return undefined;
  }
}

/** Each field's place in `FIELDS` by name. */
const PLACES: ReadonlyMap<string, number> = new Map(FIELDS.map(([key], place) => [key, place]));

/**
 * The merge over `held`'s own keys and the changed fields, each changed field put in at its place in the schema's
 * order (a status change writes a few fields into a row of some 15 to 40: the schema's other fields are not looked
 * at). Undefined when `held` is not as this module returns records (a key that is not a field of the schema, or keys
 * out of the schema's order): the caller merges over the schema's fields. Throws NOT_AS_IT_STANDS as the readings do.
 */
function mergeByKeys(held: Readonly<Record<string, unknown>>, change: Readonly<Record<string, string>>): DelegationRecord | undefined {
  const changed: number[] = [];
  for (const key in change) {
    const place = PLACES.get(key);
    if (place !== undefined && FIELDS[place]![1] !== secret) changed.push(place);
  }
  if (changed.length > 1) changed.sort((a, b) => a - b);
  const out: Record<string, unknown> = {};
  let next = 0;
  let last = -1;
  const write = (place: number) => {
    const [key, read] = FIELDS[place]!;
    out[key] = (read as Read)(change, key);
  };
  for (const key in held) {
    const place = PLACES.get(key);
    if (place === undefined || place <= last) return undefined;
    last = place;
    while (next < changed.length && changed[next]! < place) write(changed[next++]!);
    if (next < changed.length && changed[next] === place) write(changed[next++]!);
    else out[key] = held[key];
  }
  while (next < changed.length) write(changed[next++]!);
  return fastObject(out);
}

/** The merge over the schema's fields in order (a changed field new to `held` takes its place), made fast once. */
function mergeInOrder(before: Readonly<Record<string, unknown>>, change: Readonly<Record<string, string>>): DelegationRecord {
  const out: Record<string, unknown> = {};
  for (const [key, read] of FIELDS) {
    if (key in change) {
      if (read !== secret) out[key] = read(change, key);
    } else if (key in before) out[key] = before[key];
  }
  return fastObject(out);
}
