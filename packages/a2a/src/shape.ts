/**
 * Lenient reading of answer shapes at the edge (docs/a2a-edge.md "Shapes (V1, V4)"; field cases V1, V4).
 * A2A 1.0 wraps events as `{task}` | `{message}` | `{statusUpdate}` | `{artifactUpdate}`
 * (spec §5.5 StreamResponse); 0.3 sends the object itself tagged with `kind`
 * (spec v0.3.0 §6); agents in the wild also send the object with neither (VoltAgent:
 * a Task without `kind`). When the members leave no doubt, the shape is read as
 * what it is: `id` + `status` is a Task, `taskId` + `status` a status update,
 * `taskId` + `artifact` an artifact update, `messageId` + `parts`/`role` a Message.
 * Anything else is left as it is, for the schema to refuse.
 */
import { z } from 'zod';
import { jsonNameOf } from './proto-names.ts';

/** The four kinds of object an A2A answer, stream event or push body can carry. */
export type EventKind = 'task' | 'message' | 'status-update' | 'artifact-update';

/** The 1.0 StreamResponse member for each kind. */
export const MEMBER_OF_KIND: Readonly<Record<EventKind, string>> = {
  task: 'task',
  message: 'message',
  'status-update': 'statusUpdate',
  'artifact-update': 'artifactUpdate',
};
const KIND_OF_MEMBER = new Map(Object.entries(MEMBER_OF_KIND).map(([kind, member]) => [member, kind as EventKind]));

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** The kind of a bare (unwrapped) object: its `kind` tag when it is one we know, else from its members. */
export function eventKindOf(value: unknown): EventKind | undefined {
  if (!isObject(value)) return undefined;
  if (typeof value.kind === 'string' && Object.hasOwn(MEMBER_OF_KIND, value.kind)) return value.kind as EventKind;
  if (typeof value.taskId === 'string' && isObject(value.artifact)) return 'artifact-update';
  if (typeof value.taskId === 'string' && isObject(value.status)) return 'status-update';
  if (typeof value.id === 'string' && isObject(value.status)) return 'task';
  if (typeof value.messageId === 'string' && (Array.isArray(value.parts) || 'role' in value)) return 'message';
  return undefined;
}

/**
 * `{member: inner}` when `value` is a 1.0 wrapper with exactly one known member, under its JSON name or its ProtoJSON
 * proto field name (`status_update`, `artifact_update`; `proto-names.ts`).
 */
function wrappedMember(value: unknown): { kind: EventKind; inner: Record<string, unknown>; key: string } | undefined {
  if (!isObject(value)) return undefined;
  const members = Object.keys(value).filter((key) => KIND_OF_MEMBER.has(jsonNameOf(key)) && isObject(value[key]));
  if (members.length !== 1) return undefined;
  return { kind: KIND_OF_MEMBER.get(jsonNameOf(members[0]!))!, inner: value[members[0]!] as Record<string, unknown>, key: members[0]! };
}

/** For 1.0 schemas: a bare or `kind`-tagged object → the 1.0 wrapper; a wrapper stays as it is (its member under its JSON name). */
export function toWrappedResponse(value: unknown): unknown {
  const wrapped = wrappedMember(value);
  if (wrapped) return wrapped.key === MEMBER_OF_KIND[wrapped.kind] ? value : { [MEMBER_OF_KIND[wrapped.kind]]: wrapped.inner };
  const kind = eventKindOf(value);
  return kind === undefined ? value : { [MEMBER_OF_KIND[kind]]: value };
}

/** For 0.3 schemas: a 1.0 wrapper or an untagged object → the bare object with its `kind`. */
export function toKindTagged(value: unknown): unknown {
  if (!isObject(value)) return value;
  const wrapped = wrappedMember(value);
  if (wrapped && !('kind' in value)) return { ...wrapped.inner, kind: eventKindOf(wrapped.inner) ?? wrapped.kind };
  const kind = eventKindOf(value);
  return kind === undefined || value.kind === kind ? value : { ...value, kind };
}

/** A bare Task for GetTask / CancelTask results: unwraps `{task: {...}}` if an agent sent that. */
export function toBareTask(value: unknown): unknown {
  const wrapped = wrappedMember(value);
  return wrapped?.kind === 'task' ? wrapped.inner : value;
}

/** A 0.3 JSON-RPC part (`{kind:'file', file:{uri|bytes, mimeType, name}}`) read into a 1.0 Part; others unchanged. */
export function partToV1Shape(value: unknown): unknown {
  if (!isObject(value) || value.kind !== 'file' || !isObject(value.file)) return value;
  const { file, kind: _kind, ...rest } = value;
  const mediaType = file.mimeType ?? file.mediaType ?? rest.mediaType;
  const filename = file.name ?? rest.filename;
  return {
    ...rest,
    ...(file.uri !== undefined ? { url: file.uri } : { raw: file.bytes }),
    ...(mediaType === undefined ? {} : { mediaType }),
    ...(filename === undefined ? {} : { filename }),
  };
}

/** A 1.0 part (no `kind`) read into a 0.3 JSON-RPC part; tagged parts unchanged. */
export function partToV03Shape(value: unknown): unknown {
  if (!isObject(value) || typeof value.kind === 'string') return value;
  if (typeof value.text === 'string') return { ...value, kind: 'text' };
  if (value.data !== undefined) return { ...value, kind: 'data' };
  if (typeof value.url === 'string' || typeof value.raw === 'string') {
    const { url, raw, mediaType, filename, ...rest } = value;
    const file = { ...(url !== undefined ? { uri: url } : { bytes: raw }), ...(mediaType === undefined ? {} : { mimeType: mediaType }), ...(filename === undefined ? {} : { name: filename }) };
    return { ...rest, kind: 'file', file };
  }
  return value;
}

/** A short deterministic digest of a text (FNV-1a, 32 bits, hex): a stable id for a message salvaged from it. */
function textDigest(text: string): string {
  let hash = 0x811c9dc5;
  for (let index = 0; index < text.length; index++) {
    hash ^= text.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash.toString(16).padStart(8, '0');
}

/**
 * A37: a `status.message` that is a bare string (0.3 and 1.0 require a Message) is salvaged as an agent message
 * holding that text (its messageId derived from the text, so the same question keeps its key), marked in its
 * metadata (`durableA2a.salvaged`). Anything else passes unchanged (the schema decides; an unreadable message is
 * dropped there, never the whole answer).
 */
export function salvageStatusMessage(value: unknown, version: '1.0' | '0.3'): unknown {
  if (typeof value !== 'string') return value;
  const part = version === '0.3' ? { kind: 'text', text: value } : { text: value };
  return {
    ...(version === '0.3' ? { kind: 'message' } : {}),
    messageId: `salvaged-${textDigest(value)}`,
    role: version === '0.3' ? 'agent' : 'ROLE_AGENT',
    parts: [part],
    metadata: { durableA2a: { salvaged: 'status.message was a bare string, not a Message' } },
  };
}

/**
 * A `status.timestamp` an agent sent as a number (epoch seconds below 10^11, else epoch milliseconds) is read as
 * that instant in ISO 8601; any other non-string is dropped (informational, never the whole answer: the A37 kind).
 * A string passes unchanged.
 */
export function salvageTimestamp(value: unknown): unknown {
  if (typeof value === 'string' || value === undefined) return value;
  if (typeof value !== 'number' || !Number.isFinite(value)) return undefined;
  const date = new Date(value < 1e11 ? value * 1000 : value);
  return Number.isNaN(date.getTime()) ? undefined : date.toISOString();
}

/**
 * An informational list (a task's `history`) of the entries `entry` parses, each parsed once; an entry that does not
 * parse is dropped, never the whole answer (the A37 kind). Dropping can only lose evidence (our messageId in the
 * history), never make a task ours. Anything but an array (or absent) is refused as `z.array(entry).optional()`
 * refuses it. The output is what `z.array(entry)` gives for the readable entries alone
 * (packages/a2a/test/readable-list.test.ts holds it equal to filtering, then parsing again).
 */
export function readableList<Entry extends z.ZodType>(entry: Entry) {
  return z
    .array(z.unknown())
    .transform((entries) => {
      const readable: z.output<Entry>[] = [];
      for (const value of entries) {
        const parsed = entry.safeParse(value);
        if (parsed.success) readable.push(parsed.data);
      }
      return readable;
    })
    .optional();
}
