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

/** JSON text whose value `schema` parses, required. */
export function requiredJson<T extends z.ZodType>(schema: T) {
  const read: JsonRead = Object.assign(
    (hash: Hash, key: string) => {
      const parsed = schema.safeParse(JSON.parse(text(hash, key)));
      if (!parsed.success) throw NOT_AS_IT_STANDS;
      return parsed.data;
    },
    { schema },
  );
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
  const read: JsonRead = Object.assign(
    (hash: Hash, key: string) => {
      const value = optional(hash, key);
      if (!value) return undefined;
      const parsed = schema.safeParse(JSON.parse(value));
      if (!parsed.success) throw NOT_AS_IT_STANDS;
      return parsed.data as z.infer<T>;
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
