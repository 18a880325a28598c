/**
 * `parseDelegationHash`: the same typed record as `DelegationRecordSchema.parse`, built field by field
 * (issue 16: the zod object parse of a ~50-field row cost ~40 µs, several times per delegation). The
 * JSON fields keep their zod schemas. Anything the fast path does not accept as it stands (a missing
 * field, a value outside an enum, unreadable JSON) goes to `DelegationRecordSchema.parse`, so a corrupt
 * row throws exactly the ZodError it threw before; test/journal-record-parse.test.ts holds the two equal.
 */
import { z } from 'zod';
import { MessageSchema } from '../a2a/schema.ts';
import { JOURNAL_STATES } from './states.ts';
import { AgentInterfaceRefSchema, DelegationRecordSchema, OutgoingMessageSchema, RecordedErrorSchema, type DelegationRecord } from './record.ts';

const STATES: ReadonlySet<string> = new Set(JOURNAL_STATES);
const KINDS: ReadonlySet<string> = new Set(['step', 'compensation']);
const REPLY_STATES: ReadonlySet<string> = new Set(['pending', 'sending', 'sent', 'refused']);
const EFFECTS: ReadonlySet<string> = new Set(['present', 'absent', 'unknown']);
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

/** zod's object output rule: a key whose value is undefined is kept only when the input had it. */
function put(out: Record<string, unknown>, hash: Hash, key: string, value: unknown): void {
  if (value !== undefined || key in hash) out[key] = value;
}

const blankless = (value: string | undefined) => (value ? value : undefined);
const count = (value: string | undefined) => (value ? Number(value) : 0);
const ms = (value: string | undefined) => (value ? Number(value) : undefined);

function fastParse(hash: Hash): DelegationRecord {
  const out: Record<string, unknown> = {};
  out.workflowId = text(hash, 'workflowId');
  out.delegationId = text(hash, 'delegationId');
  out.step = text(hash, 'step');
  out.kind = member(hash, 'kind', KINDS) ?? 'step';
  out.attempt = Number(text(hash, 'attempt'));
  out.agentCardUrl = text(hash, 'agentCardUrl');
  put(out, hash, 'agentInterface', json(hash, 'agentInterface', AgentInterfaceRefSchema));
  out.messageId = text(hash, 'messageId');
  put(out, hash, 'requestedContextId', blankless(optional(hash, 'requestedContextId')));
  put(out, hash, 'contextId', blankless(optional(hash, 'contextId')));
  out.contextRefused = optional(hash, 'contextRefused') === '1';
  put(out, hash, 'taskId', blankless(optional(hash, 'taskId')));
  const state = text(hash, 'state');
  if (!STATES.has(state)) throw NOT_AS_IT_STANDS;
  out.state = state;
  put(out, hash, 'statusTimestamp', blankless(optional(hash, 'statusTimestamp')));
  put(out, hash, 'statusTimestampMs', ms(optional(hash, 'statusTimestampMs')));
  put(out, hash, 'question', json(hash, 'question', MessageSchema));
  put(out, hash, 'statusMessage', json(hash, 'statusMessage', MessageSchema));
  const message = OutgoingMessageSchema.safeParse(JSON.parse(text(hash, 'message')));
  if (!message.success) throw NOT_AS_IT_STANDS;
  out.message = message.data;
  put(out, hash, 'result', json(hash, 'result', anything));
  put(out, hash, 'error', json(hash, 'error', RecordedErrorSchema));
  put(out, hash, 'protocolError', json(hash, 'protocolError', RecordedErrorSchema));
  out.protocolErrorCount = count(optional(hash, 'protocolErrorCount'));
  out.push = optional(hash, 'push') === '1';
  out.held = optional(hash, 'held') === '1';
  optional(hash, 'pushToken'); // read (a string or absent), never returned
  out.createdAt = Number(text(hash, 'createdAt'));
  out.updatedAt = Number(text(hash, 'updatedAt'));
  put(out, hash, 'sendStartedAt', ms(optional(hash, 'sendStartedAt')));
  out.sendCount = count(optional(hash, 'sendCount'));
  out.resendCount = count(optional(hash, 'resendCount'));
  out.version = Number(text(hash, 'version'));
  out.fence = count(optional(hash, 'fence'));
  out.notFoundCount = count(optional(hash, 'notFoundCount'));
  put(out, hash, 'firstNotFoundAt', ms(optional(hash, 'firstNotFoundAt')));
  put(out, hash, 'noProgressMark', blankless(optional(hash, 'noProgressMark')));
  put(out, hash, 'noProgressSince', ms(optional(hash, 'noProgressSince')));
  out.noProgressCount = count(optional(hash, 'noProgressCount'));
  put(out, hash, 'noProgressLast', blankless(optional(hash, 'noProgressLast')));
  put(out, hash, 'finishedAt', ms(optional(hash, 'finishedAt')));
  put(out, hash, 'replyMessageId', blankless(optional(hash, 'replyMessageId')));
  put(out, hash, 'replyMessage', json(hash, 'replyMessage', OutgoingMessageSchema));
  put(out, hash, 'replyState', member(hash, 'replyState', REPLY_STATES));
  put(out, hash, 'replySendToken', blankless(optional(hash, 'replySendToken')));
  put(out, hash, 'replySendUntil', ms(optional(hash, 'replySendUntil')));
  put(out, hash, 'replyError', blankless(optional(hash, 'replyError')));
  put(out, hash, 'replyForQuestion', blankless(optional(hash, 'replyForQuestion')));
  put(out, hash, 'questionKey', blankless(optional(hash, 'questionKey')));
  put(out, hash, 'effect', member(hash, 'effect', EFFECTS));
  put(out, hash, 'evidence', json(hash, 'evidence', anything));
  put(out, hash, 'verifiedAt', ms(optional(hash, 'verifiedAt')));
  out.verifyAttempts = count(optional(hash, 'verifyAttempts'));
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
