/**
 * The kinds of field a delegation hash holds, each defined once with both of its readings: the zod schema
 * `DelegationRecordSchema` (record.ts) is built from, and the fast reading `parseDelegationHash` (record-parse.ts)
 * applies to the same field. `readingOf(schema)` gives a field's fast reading from its schema, so the record's fields,
 * their order and their kinds are written once, in record.ts.
 *
 * A fast reading returns the value zod's gives when the hash holds the field as it stands (a string, or absent) and
 * throws `NOT_AS_IT_STANDS` otherwise (a missing required field, a value outside an enum, JSON its schema refuses):
 * the caller then parses with zod, which gives the value or the error.
 */
import { z } from 'zod';

/** A hash as read (HGETALL, a script's flat reply made into an object, or a compacted record's restored fields). */
export type Hash = Readonly<Record<string, unknown>>;

/** How one field is read from the hash (a wrong shape throws NOT_AS_IT_STANDS). */
export type Read = (hash: Hash, key: string) => unknown;

/** A JSON field's reading, with the schema its value must pass (the compacted record's embedded values use it). */
export type JsonRead = Read & { schema: z.ZodType };

/** Thrown inside the fast path only: the row takes the zod path. */
export const NOT_AS_IT_STANDS = Symbol('not-as-it-stands');

const READINGS = new WeakMap<z.ZodType, Read>();

/** `schema` with `read` as its fast reading. */
function kind<T extends z.ZodType>(schema: T, read: Read): T {
  READINGS.set(schema, read);
  return schema;
}

/** The fast reading of a field whose schema one of this module's kinds made; undefined for any other schema. */
export function readingOf(schema: z.ZodType): Read | undefined {
  return READINGS.get(schema);
}

/** A field zod's object reads as `z.string()`; anything else takes the zod path. */
function text(hash: Hash, key: string): string {
  const value = hash[key];
  if (typeof value !== 'string') throw NOT_AS_IT_STANDS;
  return value;
}

/** An optional string field: undefined or a string. */
export function optional(hash: Hash, key: string): string | undefined {
  const value = hash[key];
  if (value !== undefined && typeof value !== 'string') throw NOT_AS_IT_STANDS;
  return value;
}

/** An optional enum field. */
function member(hash: Hash, key: string, allowed: ReadonlySet<string>): string | undefined {
  const value = optional(hash, key);
  if (value !== undefined && !allowed.has(value)) throw NOT_AS_IT_STANDS;
  return value;
}

/** A string, required. */
export const requiredText = kind(z.string(), text);

/** A number written as text, required (ms, counts, versions). */
export const requiredNumber = kind(z.string().transform(Number), (hash, key) => Number(text(hash, key)));

/** Optional text: empty or absent → undefined. */
export const optionalText = kind(
  z
    .string()
    .optional()
    .transform((value) => (value ? value : undefined)),
  (hash, key) => optional(hash, key) || undefined,
);

/** '1' → true; anything else, empty or absent → false. */
export const flag = kind(
  z
    .string()
    .optional()
    .transform((value) => (value ? value : undefined))
    .transform((value) => value === '1'),
  (hash, key) => optional(hash, key) === '1',
);

/** A count written as text: empty or absent → 0. */
export const count = kind(
  z
    .string()
    .optional()
    .transform((value) => (value ? Number(value) : 0)),
  (hash, key) => {
    const value = optional(hash, key);
    return value ? Number(value) : 0;
  },
);

/** A number written as text (ms, mostly): empty or absent → undefined. */
export const optionalMs = kind(
  z
    .string()
    .optional()
    .transform((value) => (value ? Number(value) : undefined)),
  (hash, key) => {
    const value = optional(hash, key);
    return value ? Number(value) : undefined;
  },
);

/** One of `values`, required. */
export function requiredEnum<const T extends readonly string[]>(values: T) {
  const allowed: ReadonlySet<string> = new Set(values);
  return kind(z.enum(values), (hash, key) => {
    const value = text(hash, key);
    if (!allowed.has(value)) throw NOT_AS_IT_STANDS;
    return value;
  });
}

/** One of `values`, or absent (undefined). */
export function optionalEnum<const T extends readonly string[]>(values: T) {
  const allowed: ReadonlySet<string> = new Set(values);
  return kind(z.enum(values).optional(), (hash, key) => member(hash, key, allowed));
}

/** One of `values`; absent → `fallback`. */
export function enumOr<const T extends readonly string[]>(values: T, fallback: T[number]) {
  const allowed: ReadonlySet<string> = new Set(values);
  return kind(z.enum(values).default(fallback as never), (hash, key) => member(hash, key, allowed) ?? fallback);
}

/** Byte budget of the parsed JSON values one field kind keeps in-process (`keptParse`): the text as key plus its parse, about three times the text. */
const JSON_FIELD_CACHE_BYTES = 8 * 1024 * 1024;
/** Longest JSON text whose parse is kept. */
const LONGEST_KEPT_JSON = 4_096;

/**
 * The fast reading of a JSON field's text with `schema`: `schema`'s parse of `JSON.parse(text)`, NOT_AS_IT_STANDS when
 * it refuses. A text's parse depends on the text alone, so it is kept in-process (texts of at most 4,096 characters,
 * 8 MiB per field kind, the oldest out first) and handed out again: a fresh worker reads each unfinished row three
 * times (its start-up sweep's workflow entry and its own entry, then the dead-worker sweep's batch) and parsed the
 * same `message` and `agentInterface` texts with zod each time. Callers read such values, never change them (as the
 * workflow definitions `parseDefinitionText` hands out). A field of any value (`z.unknown()`: a result, evidence) is
 * parsed as JSON only, never kept: no schema to spare, and it may be large.
 */
function keptParse(schema: z.ZodType): (text: string) => unknown {
  if (schema instanceof z.ZodUnknown) return (text) => JSON.parse(text) as unknown;
  const kept = new Map<string, unknown>();
  let bytes = 0;
  return (text) => {
    const hit = kept.get(text);
    if (hit !== undefined) return hit;
    const parsed = schema.safeParse(JSON.parse(text));
    if (!parsed.success) throw NOT_AS_IT_STANDS;
    if (text.length <= LONGEST_KEPT_JSON && parsed.data !== undefined) {
      kept.set(text, parsed.data);
      bytes += text.length * 3;
      for (const [oldest] of kept) {
        if (bytes <= JSON_FIELD_CACHE_BYTES) break;
        kept.delete(oldest);
        bytes -= oldest.length * 3;
      }
    }
    return parsed.data;
  };
}

/** JSON text whose value `schema` parses, required. */
export function requiredJson<T extends z.ZodType>(schema: T) {
  const parse = keptParse(schema);
  const read: JsonRead = Object.assign((hash: Hash, key: string) => parse(text(hash, key)), { schema });
  return kind(
    z.string().transform((value, context) => {
      try {
        return schema.parse(JSON.parse(value)) as z.infer<T>;
      } catch (error) {
        context.addIssue({ code: 'custom', message: `invalid JSON field: ${String(error)}` });
        return z.NEVER;
      }
    }),
    read,
  );
}

/** JSON text whose value `schema` parses: empty or absent → undefined. */
export function optionalJson<T extends z.ZodType>(schema: T) {
  const parse = keptParse(schema);
  const read: JsonRead = Object.assign(
    (hash: Hash, key: string) => {
      const value = optional(hash, key);
      return value ? (parse(value) as z.infer<T>) : undefined;
    },
    { schema },
  );
  return kind(
    z
      .string()
      .optional()
      .transform((value) => (value ? (schema.parse(JSON.parse(value)) as z.infer<T>) : undefined)),
    read,
  );
}
