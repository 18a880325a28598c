/**
 * ProtoJSON field names (docs/a2a-edge.md "Spellings"). A2A 1.0 JSON is ProtoJSON (spec §5.5), whose parsers accept a
 * field under its lowerCamelCase JSON name or under its original proto field name (`context_id`, `message_id`,
 * `artifact_id`, `last_chunk`, `status_update`, ...): a server built on protobuf's JSON printer with
 * `preserving_proto_field_name` sends the second. Each object schema reads its own fields under either name; a field's
 * value is left alone (a `metadata` or `data` object keeps its keys as the agent wrote them).
 */
import { z } from 'zod';

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * A JSON object kept exactly as it was given (a `metadata` object, a data part's value, ErrorInfo metadata): every own
 * key whatever its name, the object itself returned (not a copy). `z.record` copies key by key by assignment, so an own
 * `__proto__` key (JSON.parse makes one) was dropped and its value became the copy's prototype: the agent, or the
 * journal, got other content than was sent. Anything but a plain object (an array, null, a string) is refused. Its JSON
 * Schema is `{"type":"object","additionalProperties":{}}`, as the record's was.
 */
export const JsonObjectSchema = z
  .unknown()
  .refine(isObject, 'expected an object')
  .meta({ type: 'object', additionalProperties: {} }) as unknown as z.ZodType<Record<string, unknown>, Record<string, unknown>>;

/** `context_id` → `contextId`; a name without `_` followed by a lower-case letter or digit is returned as it is. */
export const jsonNameOf = (protoName: string): string => protoName.replace(/_([a-z0-9])/g, (_match, letter: string) => letter.toUpperCase());

/**
 * `value` with each key whose JSON name (`jsonNameOf`) is one of `fields` renamed to it; the others unchanged. The
 * JSON name wins when an object carries a field under both names (a printer sends one; the JSON name is the spec's).
 * Anything but an object is returned as it is.
 */
export function withJsonNames(value: unknown, fields: ReadonlySet<string>): unknown {
  if (!isObject(value)) return value;
  let renamed: Record<string, unknown> | undefined;
  for (const key of Object.keys(value)) {
    if (!key.includes('_')) continue;
    const name = jsonNameOf(key);
    if (name === key || !fields.has(name) || Object.hasOwn(value, name)) continue;
    renamed ??= { ...value };
    delete renamed[key];
    Object.defineProperty(renamed, name, { value: value[key], enumerable: true, writable: true, configurable: true });
  }
  return renamed ?? value;
}

/** `schema` reading each of its fields under its JSON name or its proto field name (`withJsonNames`). */
export function protoJsonObject<Shape extends z.ZodRawShape>(schema: z.ZodObject<Shape>) {
  const fields = new Set(Object.keys(schema.shape));
  return z.preprocess((value) => withJsonNames(value, fields), schema);
}

/** `contextId` → `context_id`: the proto field name ProtoJSON also accepts for a JSON name. */
export const protoNameOf = (jsonName: string): string => jsonName.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);

/**
 * The value of field `jsonName` of a raw (not yet parsed) object, under its JSON name or else its proto field name;
 * `undefined` for anything but an object. For checks that read an answer before its schema does (ownership proofs).
 */
export function rawField(value: unknown, jsonName: string): unknown {
  if (!isObject(value)) return undefined;
  return Object.hasOwn(value, jsonName) ? value[jsonName] : value[protoNameOf(jsonName)];
}
