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
  return out as DelegationRecord;
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
 * Undefined when a changed field does not parse as it stands (the caller reads the row again).
 */
export function mergeDelegationChange(held: DelegationRecord, change: Readonly<Record<string, string>>): DelegationRecord | undefined {
  const before = held as unknown as Readonly<Record<string, unknown>>;
  const out: Record<string, unknown> = {};
  try {
    for (const [key, read] of FIELDS) {
      if (key in change) {
        if (read !== secret) out[key] = read(change, key);
      } else if (key in before) out[key] = before[key];
    }
  } catch {
    return undefined;
  }
  return out as DelegationRecord;
}
