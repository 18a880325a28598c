/**
 * The journal's view of one workflow, parsed from its Redis hash with zod (the
 * hash is a boundary: another release may have written it), and the typed
 * patch `Journal.updateWorkflow` encodes. Nothing outside the journal reads or
 * writes the hash's fields by name.
 */
import { z } from 'zod';
import { parseDefinitionText, type WorkflowDefinition } from '../workflow.ts';
import { WORKFLOW_STATES, type WorkflowState } from './states.ts';
import { PERSON_OUTCOME_CODES } from './error-codes.ts';

/** Why a workflow waits for a person: one shape in storage and in the API. */
export const ATTENTION_CODES = [
  /** A send may have happened and cannot be proven either way. */
  'AMBIGUOUS_SEND',
  /** A step's effect could not be verified. */
  'EFFECT_UNKNOWN',
  /** A step failed after its effect happened, and it declares no compensation. */
  'EFFECT_WITHOUT_COMPENSATION',
  /** A compensation failed, or completed without undoing the effect. */
  'COMPENSATION_FAILED',
  /** The user canceled, but a step had (or may have had) an effect that no compensation can undo. */
  'CANCEL_LOST_RACE',
  /**
   * An AMBIGUOUS step attempt's own code, when it is one a person is asked under (`PERSON_OUTCOME_CODES`,
   * error-codes.ts: NO_PROGRESS, PROTOCOL_ERROR, SEARCH_UNAVAILABLE, AUTH, ADDRESS_REFUSED); a person decides.
   */
  ...PERSON_OUTCOME_CODES,
  /** Written by an older release as prose. */
  'UNSPECIFIED',
] as const;
export type AttentionCode = (typeof ATTENTION_CODES)[number];

export const AttentionSchema = z.object({
  code: z.enum(ATTENTION_CODES),
  message: z.string(),
  /** The delegation the person should look at, when there is one. */
  delegationId: z.string().optional(),
  /** What we know: the delegation's state, error and verifier evidence. */
  evidence: z.unknown().optional(),
  /**
   * The workflow version the decision to ask a person was made from: the `attention.needed` event's occasion, so the
   * reconciler can emit an event the deciding worker died before emitting. Absent on rows written before it.
   */
  fromVersion: z.number().int().nonnegative().optional(),
});
export type Attention = z.infer<typeof AttentionSchema>;

/** Older rows hold attention as prose, or as `{reason, …}` JSON: both read as one shape. */
export function parseAttention(text: string): Attention {
  try {
    const value = JSON.parse(text) as unknown;
    const parsed = AttentionSchema.safeParse(value);
    if (parsed.success) return parsed.data;
    if (value && typeof value === 'object' && 'reason' in value) {
      const { reason, delegationId, ...evidence } = value as { reason: string; delegationId?: string };
      return { code: 'COMPENSATION_FAILED', message: String(reason), delegationId, evidence };
    }
  } catch {
    // prose
  }
  return { code: 'UNSPECIFIED', message: text };
}

/** Milliseconds since epoch as a hash stores them (digits); absent reads as 0; anything else makes the row corrupt. */
export const StoredMs = z.string().regex(/^\d{1,16}$/).optional().transform((text) => Number(text ?? 0));

const stringList = z.array(z.string());
const optionalList = z
  .string()
  .optional()
  .transform((text) => (text ? stringList.parse(JSON.parse(text)) : undefined));

/** The hash's fixed fields; dynamic `retry:<delegationId>` fields (older rows) are read by `parseWorkflowHash`. */
export const WorkflowHashSchema = z.object({
  workflowId: z.string(),
  state: z.enum(WORKFLOW_STATES),
  definition: z.string().transform((text): WorkflowDefinition => parseDefinitionText(text)),
  definitionText: z.string(),
  version: z.string().transform(Number),
  createdAt: StoredMs,
  updatedAt: StoredMs,
  cancelRequested: z
    .string()
    .optional()
    .transform((value) => value === '1'),
  /** Set once a step failed for good: the reasons; no new attempts, running ones are canceled. */
  stopping: optionalList,
  failure: optionalList,
  attention: z
    .string()
    .optional()
    .transform((text) => (text ? parseAttention(text) : undefined)),
  /** AMBIGUOUS attempts a person approved to run again (`producer.resolve('retry')`). */
  retryApproved: optionalList.transform((list) => list ?? []),
  /** Failed compensations a person gave up (`producer.resolve('abandon')` on COMPENSATION_FAILED): their effect is left in place. */
  abandonedCompensations: optionalList.transform((list) => list ?? []),
  /** History entries the bounds dropped, oldest first (history.ts; lua/includes/history.lua). */
  historyDropped: z
    .string()
    .optional()
    .transform((text) => (text ? Number(text) : 0)),
});

/** A workflow row, typed. */
export type WorkflowRecord = z.output<typeof WorkflowHashSchema>;

/** A workflow's stop flags: as the record holds them, or as stored (`cancelRequested` '1'; `stopping` JSON text). */
export interface WorkflowStopFlags {
  cancelRequested?: boolean | string | null;
  stopping?: readonly string[] | string | null;
}

/**
 * Whether a workflow is stopping: a person (or a question's `onExpiry: 'cancel'`) canceled it (`cancelRequested`), or
 * a step failed for good (`stopping` holds reasons; stored text '' and '[]' hold none). Its steps' questions are
 * closed and their answers never sent; a compensation's stay open (the caller checks the row's kind). Mirrors
 * `lua/includes/stepStopped.lua`, which the journal scripts check atomically: keep the two equal. False for undefined.
 */
export function isWorkflowStopping(flags: WorkflowStopFlags | undefined): boolean {
  if (flags === undefined) return false;
  const { cancelRequested, stopping } = flags;
  if (cancelRequested === true || cancelRequested === '1') return true;
  return typeof stopping === 'string' ? stopping !== '' && stopping !== '[]' : (stopping?.length ?? 0) > 0;
}

/**
 * Whether a delegation of kind `kind` (as stored: absent is a step) is a step whose workflow is stopping
 * (`isWorkflowStopping`): its question is closed, never listed, its answer refused and never sent. A compensation's
 * never is. The TypeScript twin of `lua/includes/stepStopped.lua`: every view and listing of open questions (the
 * workflow view, GET /v1/questions, the workflow search) and the reply worker ask this one predicate.
 */
export function isStepStopped(kind: string | null | undefined, flags: WorkflowStopFlags | undefined): boolean {
  return kind !== 'compensation' && isWorkflowStopping(flags);
}

/**
 * Parses a workflow hash (HGETALL): the record `WorkflowHashSchema` gives (the same keys, values and order), read
 * field by field (`readWorkflowFields`, as a compacted record's fields are) when the row reads as it stands; anything
 * else (a corrupt row, an older release's `retry:` fields) goes through the schema, which gives the record or its
 * error (packages/shared/test/workflow-record-parse.test.ts holds the two equal). Throws a ZodError on a corrupt row.
 */
export function parseWorkflowHash(hash: Record<string, string>): WorkflowRecord {
  const read = typeof hash.definition === 'string' ? readWorkflowFields(hash, hash.definition) : undefined;
  return read ?? parseWorkflowHashBySchema(hash);
}

/**
 * `parseWorkflowHash` through `WorkflowHashSchema` alone (what it did before the field-by-field reading), with an
 * older row's `retry:<delegationId>` approvals. Throws a ZodError on a corrupt row.
 */
export function parseWorkflowHashBySchema(hash: Record<string, string>): WorkflowRecord {
  const legacyApprovals = Object.keys(hash)
    .filter((field) => field.startsWith('retry:') && hash[field] === '1')
    .map((field) => field.slice('retry:'.length));
  const record = WorkflowHashSchema.parse({ ...hash, definitionText: hash.definition });
  if (legacyApprovals.length > 0) record.retryApproved = [...new Set([...record.retryApproved, ...legacyApprovals])];
  return record;
}

/** Thrown inside `readWorkflowFields`: the row takes `parseWorkflowHash`. */
const NOT_AS_IT_STANDS = Symbol('not-as-it-stands');
const STATES: ReadonlySet<string> = new Set(WORKFLOW_STATES);
const DIGITS_MS = /^\d{1,16}$/;
type Fields = Readonly<Record<string, unknown>>;

/**
 * `parseWorkflowHash`'s record from a compacted record's workflow fields (compacted-record-read.ts): the same keys,
 * values and order. Each value is a string as the hash holds it, or for a list or `attention` its JSON embedded
 * (checked as it is); `definition` is read from `definitionText`, the definition's text. Undefined when a field does
 * not read as it stands, or the row holds an older release's `retry:` fields: the caller parses the hash, which
 * gives the record or the error.
 */
export function readWorkflowFields(fields: Fields, definitionText: string): WorkflowRecord | undefined {
  try {
    return readFields(fields, definitionText);
  } catch {
    return undefined;
  }
}

/** A field the hash holds as text (or absent). */
function textField(fields: Fields, key: string): string | undefined {
  const value = fields[key];
  if (value !== undefined && typeof value !== 'string') throw NOT_AS_IT_STANDS;
  return value;
}

/** `StoredMs`: digits, absent reads as 0. */
function storedMsField(fields: Fields, key: string): number {
  const value = textField(fields, key);
  if (value !== undefined && !DIGITS_MS.test(value)) throw NOT_AS_IT_STANDS;
  return Number(value ?? 0);
}

/** `optionalList`: a list of strings, as JSON text or embedded; empty text or absent reads as undefined. */
function listField(fields: Fields, key: string): string[] | undefined {
  const value = fields[key];
  const parsed: unknown = typeof value === 'string' ? (value ? JSON.parse(value) : undefined) : value;
  if (parsed === undefined) return undefined;
  if (!Array.isArray(parsed) || !parsed.every((item) => typeof item === 'string')) throw NOT_AS_IT_STANDS;
  return parsed as string[];
}

/** `attention`: text as `parseAttention` reads it, or embedded in its own shape (an older shape takes the hash path). */
function attentionField(fields: Fields): Attention | undefined {
  const value = fields.attention;
  if (value === undefined || typeof value === 'string') return value ? parseAttention(value) : undefined;
  const parsed = AttentionSchema.safeParse(value);
  if (!parsed.success) throw NOT_AS_IT_STANDS;
  return parsed.data;
}

function readFields(fields: Fields, definitionText: string): WorkflowRecord {
  for (const key of Object.keys(fields)) if (key.startsWith('retry:')) throw NOT_AS_IT_STANDS;
  const workflowId = textField(fields, 'workflowId');
  const state = textField(fields, 'state');
  const version = textField(fields, 'version');
  if (workflowId === undefined || version === undefined || state === undefined || !STATES.has(state)) throw NOT_AS_IT_STANDS;
  const record = {
    workflowId,
    state,
    definition: parseDefinitionText(definitionText),
    definitionText,
    version: Number(version),
    createdAt: storedMsField(fields, 'createdAt'),
    updatedAt: storedMsField(fields, 'updatedAt'),
    cancelRequested: textField(fields, 'cancelRequested') === '1',
  } as WorkflowRecord;
  // zod's object output: a key whose value is undefined is kept only when the input had it.
  const stopping = listField(fields, 'stopping');
  if (stopping !== undefined || 'stopping' in fields) record.stopping = stopping;
  const failure = listField(fields, 'failure');
  if (failure !== undefined || 'failure' in fields) record.failure = failure;
  const attention = attentionField(fields);
  if (attention !== undefined || 'attention' in fields) record.attention = attention;
  record.retryApproved = listField(fields, 'retryApproved') ?? [];
  record.abandonedCompensations = listField(fields, 'abandonedCompensations') ?? [];
  const dropped = textField(fields, 'historyDropped');
  record.historyDropped = dropped ? Number(dropped) : 0;
  return record;
}

/** A change to a workflow row (compare-and-set in `Journal.updateWorkflow`). `null` clears a field. */
export interface WorkflowPatch {
  state?: WorkflowState;
  cancelRequested?: boolean;
  stopping?: string[];
  failure?: string[];
  attention?: Attention | null;
  /** Replaces the approved list (AMBIGUOUS step attempts, or failed compensations, a person sent back). */
  retryApproved?: string[];
  /** Replaces the list of failed compensations a person gave up. */
  abandonedCompensations?: string[];
}

/** Encodes a patch as hash fields (what updateWorkflow-4.lua writes). */
export function encodeWorkflowPatch(patch: WorkflowPatch): Record<string, string> {
  const fields: Record<string, string> = {};
  if (patch.state !== undefined) fields.state = patch.state;
  if (patch.cancelRequested !== undefined) fields.cancelRequested = patch.cancelRequested ? '1' : '';
  if (patch.stopping !== undefined) fields.stopping = JSON.stringify(patch.stopping);
  if (patch.failure !== undefined) fields.failure = JSON.stringify(patch.failure);
  if (patch.attention !== undefined) fields.attention = patch.attention ? JSON.stringify(patch.attention) : '';
  if (patch.retryApproved !== undefined) fields.retryApproved = JSON.stringify(patch.retryApproved);
  if (patch.abandonedCompensations !== undefined) fields.abandonedCompensations = JSON.stringify(patch.abandonedCompensations);
  return fields;
}
