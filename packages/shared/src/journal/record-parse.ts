/**
 * `parseDelegationHash`: the same typed record as `DelegationRecordSchema.parse`, built field by field
 * (the zod object parse of a ~50-field row cost ~40 µs, several times per delegation). The
 * JSON fields keep their zod schemas. Anything the fast path does not accept as it stands (a missing
 * field, a value outside an enum, unreadable JSON) goes to `DelegationRecordSchema.parse`, so a corrupt
 * row throws exactly the ZodError it threw before; packages/shared/test/record-parse.test.ts holds the two equal.
 */
import { z } from 'zod';
import { MessageSchema } from '@durable-a2a/a2a/pure';
import { JOURNAL_STATES, QUESTION_EXPIRY_ACTIONS } from './states.ts';
import { AgentInterfaceRefSchema, DelegationRecordSchema, PUSH_CONFIG_STATES, OutgoingMessageSchema, RecordedErrorSchema, type DelegationRecord } from './record.ts';

const STATES: ReadonlySet<string> = new Set(JOURNAL_STATES);
const KINDS: ReadonlySet<string> = new Set(['step', 'compensation']);
const REPLY_STATES: ReadonlySet<string> = new Set(['pending', 'sending', 'sent', 'refused']);
const EFFECTS: ReadonlySet<string> = new Set(['present', 'absent', 'unknown']);
const PUSH_STATES: ReadonlySet<string> = new Set(PUSH_CONFIG_STATES);
const EXPIRY_ACTIONS: ReadonlySet<string> = new Set(QUESTION_EXPIRY_ACTIONS);
const anything = z.unknown();

/** Thrown inside the fast path only: the row takes the zod path. */
const NOT_AS_IT_STANDS = Symbol('not-as-it-stands');

type Hash = Readonly<Record<string, unknown>>;

/** A field zod's object reads as `z.string()`; anything else takes the zod path. */
function text(hash: Hash, key: string): string {
  const value = hash[key];
  if (typeof value !== 'string') throw NOT_AS_IT_STANDS;
  return value;
}

/** An optional string field: undefined or a string. */
function optional(hash: Hash, key: string): string | undefined {
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

/** `optionalJson(schema)` of record.ts: empty or absent → undefined; a schema's error takes the zod path. */
function json<T extends z.ZodType>(hash: Hash, key: string, schema: T): z.infer<T> | undefined {
  const value = optional(hash, key);
  if (!value) return undefined;
  const parsed = schema.safeParse(JSON.parse(value));
  if (!parsed.success) throw NOT_AS_IT_STANDS;
  return parsed.data as z.infer<T>;
}

/** How one field is read from the hash (a wrong shape throws NOT_AS_IT_STANDS). */
type Read = (hash: Hash, key: string) => unknown;
const required: Read = text;
const number: Read = (hash, key) => Number(text(hash, key));
const optionalText: Read = (hash, key) => optional(hash, key) || undefined;
const optionalMs: Read = (hash, key) => {
  const value = optional(hash, key);
  return value ? Number(value) : undefined;
};
const count: Read = (hash, key) => {
  const value = optional(hash, key);
  return value ? Number(value) : 0;
};
const flag: Read = (hash, key) => optional(hash, key) === '1';
/** A JSON field's reading; `schema` is kept for the compacted record's embedded values (`EMBEDDED_FIELDS`). */
const jsonOf = (schema: z.ZodType): Read & { schema: z.ZodType } => Object.assign((hash: Hash, key: string) => json(hash, key, schema), { schema });
const oneOf =
  (allowed: ReadonlySet<string>): Read =>
  (hash, key) =>
    member(hash, key, allowed);
const state: Read = (hash, key) => {
  const value = text(hash, key);
  if (!STATES.has(value)) throw NOT_AS_IT_STANDS;
  return value;
};
const message: Read = (hash, key) => {
  const parsed = OutgoingMessageSchema.safeParse(JSON.parse(text(hash, key)));
  if (!parsed.success) throw NOT_AS_IT_STANDS;
  return parsed.data;
};
/** Checked (a string or absent) and never returned: the secret push token. */
const secret = 'secret';

/** DelegationRecordSchema's fields in its order, each with its reading. */
const FIELDS: readonly (readonly [string, Read | typeof secret])[] = [
  ['workflowId', required],
  ['delegationId', required],
  ['step', required],
  ['kind', (hash, key) => member(hash, key, KINDS) ?? 'step'],
  ['attempt', number],
  ['agentCardUrl', required],
  ['agentInterface', jsonOf(AgentInterfaceRefSchema)],
  ['messageId', required],
  ['requestedContextId', optionalText],
  ['contextId', optionalText],
  ['contextRefused', flag],
  ['taskId', optionalText],
  ['state', state],
  ['statusTimestamp', optionalText],
  ['statusTimestampMs', optionalMs],
  ['question', jsonOf(MessageSchema)],
  ['statusMessage', jsonOf(MessageSchema)],
  ['message', message],
  ['result', jsonOf(anything)],
  ['error', jsonOf(RecordedErrorSchema)],
  ['protocolError', jsonOf(RecordedErrorSchema)],
  ['protocolErrorCount', count],
  ['push', flag],
  ['held', flag],
  ['pushToken', secret],
  ['pushConfigId', optionalText],
  ['pushConfigState', oneOf(PUSH_STATES)],
  ['createdAt', number],
  ['updatedAt', number],
  ['sendStartedAt', optionalMs],
  ['priority', optionalMs],
  ['sendCount', count],
  ['resendCount', count],
  ['unreachableCount', count],
  ['unsentTries', count],
  ['unreachableSince', optionalMs],
  ['nextTryAt', optionalMs],
  ['slotWaitUntil', optionalMs],
  ['version', number],
  ['fence', count],
  ['notFoundCount', count],
  ['firstNotFoundAt', optionalMs],
  ['noProgressMark', optionalText],
  ['noProgressSince', optionalMs],
  ['noProgressCount', count],
  ['noProgressLast', optionalText],
  ['finishedAt', optionalMs],
  ['replyMessageId', optionalText],
  ['replyMessage', jsonOf(OutgoingMessageSchema)],
  ['replyState', oneOf(REPLY_STATES)],
  ['replySendToken', optionalText],
  ['replySendUntil', optionalMs],
  ['replyError', optionalText],
  ['replyForQuestion', optionalText],
  ['replyBy', optionalText],
  ['questionKey', optionalText],
  ['questionAskedAt', optionalMs],
  ['questionExpired', optionalText],
  ['questionExpiredAt', optionalMs],
  ['questionExpiry', oneOf(EXPIRY_ACTIONS)],
  ['effect', oneOf(EFFECTS)],
  ['evidence', jsonOf(anything)],
  ['verifiedAt', optionalMs],
  ['verifyAttempts', count],
];

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
  if (read === message) return [key, embedded(OutgoingMessageSchema, message)] as const;
  if (read !== secret && 'schema' in read) return [key, embedded(read.schema as z.ZodType, read)] as const;
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
