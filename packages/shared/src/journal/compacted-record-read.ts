/**
 * A finished workflow's typed records read straight from its compacted record (compacted-record.ts): the record's
 * JSON is read as it stands, each embedded JSON value checked by its field's schema as it is, instead of being turned
 * back into hashes of strings (`parseCompactedWorkflow`) that `parseWorkflowHash` and `parseDelegationHash` then parse
 * again. The same records, keys in the same order (test/journal/compacted-read.test.ts holds the two equal on random
 * finished workflows and on corrupt records). What it does not read as it stands (a value of an unexpected type, a
 * name that is not the field's stored name, an older release's `retry:` fields, a mark with nothing to restore, a
 * `-0`, anything corrupt) it leaves to the hash path, which gives the records or the error it always gave.
 */
import type { Artifact } from '@durable-a2a/a2a/pure';
import { parseAgentTimestamp } from './clock.ts';
import { COMPACTED_RECORD_LAYOUT, MARK, fullName, restoreMark } from './compacted-record.ts';
import { readEmbeddedDelegation } from './record-parse.ts';
import type { DelegationView } from './record.ts';
import { readWorkflowFields, type WorkflowRecord } from './workflow-record.ts';

/** A finished workflow's typed records: its row, its delegations (artifacts included) in creation order, its history entries as stored. */
export interface CompactedRecords {
  workflow: WorkflowRecord;
  delegations: DelegationView[];
  history: unknown[];
}

/** Thrown inside: the record takes the hash path. */
const DECLINED = Symbol('declined');
const times: ReadonlySet<string> = new Set(COMPACTED_RECORD_LAYOUT.times);
const storedNames: Readonly<Record<string, string>> = COMPACTED_RECORD_LAYOUT.names;
const CREATED_AT = storedNames.createdAt ?? 'createdAt';
/**
 * A JSON `-0` (`-0`, `-0.00`, `-0e5`, … as a member or an item): the hash path's text of an embedded value turns it
 * into `0`, a value read as it stands keeps it. No writer of the journal writes one; a record holding one (or a
 * string that looks like one) declines.
 */
const NEGATIVE_ZERO = /[:,[]\s*-0(?:\.0+)?(?:[eE][+-]?\d+)?\s*[,\]}]/;

/** A JSON object as JSON.parse returns it (the hash path's `FieldsSchema`). */
const isFields = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value) && Object.getPrototypeOf(value) === Object.prototype;

/**
 * The records of workflow `workflowId` from its compacted record's `text`, or undefined when the record does not read
 * as it stands (then `parseCompactedWorkflow` reads it, or throws on a corrupt record). Never throws.
 */
export function readCompactedRecords(workflowId: string, text: string): CompactedRecords | undefined {
  if (NEGATIVE_ZERO.test(text)) return undefined;
  try {
    return read(workflowId, JSON.parse(text) as unknown);
  } catch {
    return undefined;
  }
}

/**
 * A stored object's fields under their field names, numbers as the hash's text (times as ms after `since`); `art`
 * (artifacts) left out. Declines a name that is not its field's stored name (two names of one field) and `__proto__`.
 */
function fieldsOf(stored: Record<string, unknown>, since: number | undefined): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  for (const name of Object.keys(stored)) {
    const field = fullName.get(name) ?? name;
    if (name === '__proto__' || (Object.hasOwn(storedNames, field) ? storedNames[field] : field) !== name) throw DECLINED;
    if (field === 'artifacts') continue;
    const value = stored[name];
    fields[field] = typeof value === 'number' ? String(since !== undefined && times.has(field) ? since + value : value) : value;
  }
  return fields;
}

/** Sets `fields[key]`, or removes it for undefined (the hash path leaves absent values out). */
function assign(fields: Record<string, unknown>, key: string, value: unknown): void {
  if (value === undefined) delete fields[key];
  else fields[key] = value;
}

/** True when `value` (JSON) holds `key: "="` at any depth. */
function holdsMark(value: unknown, key: string): boolean {
  if (!value || typeof value !== 'object') return false;
  if (Array.isArray(value)) return value.some((item) => holdsMark(item, key));
  return Object.entries(value).some(([name, member]) => (name === key && member === MARK) || holdsMark(member, key));
}

/** `restoreMark`, declining where the hash path's text would leave the member out (nothing to restore). */
function restoreOrDecline(value: unknown, key: string, replacement: unknown): unknown {
  if (replacement !== undefined) return restoreMark(value, key, replacement);
  if (holdsMark(value, key)) throw DECLINED;
  return value;
}

function read(workflowId: string, record: unknown): CompactedRecords {
  if (!isFields(record) || !isFields(record.workflow) || !Array.isArray(record.delegations)) throw DECLINED;
  const { history = [] } = record;
  if (!Array.isArray(history)) throw DECLINED;
  const createdAt = record.workflow[CREATED_AT];
  if (createdAt !== undefined && typeof createdAt !== 'number' && typeof createdAt !== 'string') throw DECLINED;
  const since = typeof createdAt === 'number' ? createdAt : undefined;
  const workflow = fieldsOf(record.workflow, since);
  if (createdAt !== undefined) workflow.createdAt = String(createdAt);
  workflow.workflowId = workflowId;
  const definition = restoreMark(workflow.definition, 'workflowId', workflowId);
  // A definition that held a "=" of its own is stored as its text.
  const definitionText = typeof definition === 'string' ? definition : JSON.stringify(definition);
  const definitionValue: unknown = typeof definition === 'string' ? JSON.parse(definition) : definition;
  if (!isFields(definitionValue)) throw DECLINED;
  const stepAgents = stepAgentsOf(definitionValue);
  const delegations = record.delegations.map((stored): DelegationView => {
    if (!isFields(stored)) throw DECLINED;
    const fields = restoreDelegation(fieldsOf(stored, since), workflowId, workflow.createdAt, stepAgents);
    const typed = readEmbeddedDelegation(fields) as DelegationView | undefined;
    if (!typed) throw DECLINED;
    typed.artifacts = artifactsOf(stored[storedNames.artifacts ?? 'artifacts']);
    return typed;
  });
  const typedWorkflow = readWorkflowFields(workflow, definitionText);
  if (!typedWorkflow) throw DECLINED;
  return { workflow: typedWorkflow, delegations, history };
}

/** Step name → fixed `agent`, as the hash path's `stepAgentsOf` reads them (a step by skill leaves the others'). */
function stepAgentsOf(definition: Record<string, unknown>): Map<string, string> {
  const agents = new Map<string, string>();
  if (!Array.isArray(definition.steps)) return agents;
  for (const step of definition.steps as unknown[]) {
    if (typeof step !== 'object' || step === null || Array.isArray(step)) continue;
    const { name, agent } = step as { name?: unknown; agent?: unknown };
    if (typeof name === 'string' && typeof agent === 'string') agents.set(name, agent);
  }
  return agents;
}

/** What the compacted delegation left out or marked, restored as the hash path's `restoreDelegation` does; `fields` is changed. */
function restoreDelegation(fields: Record<string, unknown>, workflowId: string, workflowCreatedAt: unknown, stepAgents: Map<string, string>): Record<string, unknown> {
  fields.workflowId = workflowId;
  fields.delegationId ??= `${String(fields.step)}.${String(fields.attempt)}`;
  if (fields.createdAt === undefined || fields.createdAt === null) assign(fields, 'createdAt', workflowCreatedAt);
  const { contextId, taskId, step, attempt } = fields;
  if (fields.updatedAt === undefined || fields.updatedAt === null) assign(fields, 'updatedAt', fields.finishedAt);
  if (fields.statusTimestampMs === undefined && typeof fields.statusTimestamp === 'string') {
    const ms = parseAgentTimestamp(fields.statusTimestamp);
    if (!Number.isNaN(ms)) fields.statusTimestampMs = String(ms);
  }
  if (fields.agentCardUrl === undefined && (fields.kind ?? 'step') === 'step' && step) assign(fields, 'agentCardUrl', stepAgents.get(step as string));
  if (fields.requestedContextId === MARK) assign(fields, 'requestedContextId', contextId);
  if (fields.statusMessage !== undefined) fields.statusMessage = restoreOrDecline(restoreOrDecline(fields.statusMessage, 'contextId', contextId), 'taskId', taskId);
  if (fields.message !== undefined) {
    // The stamp's text in the hash path: an attempt that is not a plain number, or no step, would not come back as it is.
    const number = Number(attempt);
    const stamp = typeof step === 'string' && Number.isFinite(number) && !Object.is(number, -0) ? { workflowId, step, attempt: number } : undefined;
    fields.message = restoreOrDecline(fields.message, 'durableA2a', stamp);
  }
  return fields;
}

/** The hash path's `parseArtifacts` of the record's `art` object, its values read as they stand. */
function artifactsOf(stored: unknown): Artifact[] {
  if (stored === undefined || stored === null) return [];
  if (!isFields(stored)) throw DECLINED;
  const order = new Map<string, number>();
  for (const field of Object.keys(stored)) {
    if (!field.startsWith('order:')) continue;
    const value = stored[field];
    if (typeof value !== 'number' && typeof value !== 'string') throw DECLINED;
    order.set(field.slice('order:'.length), Number(value));
  }
  return [...order.keys()]
    .sort((a, b) => order.get(a)! - order.get(b)!)
    .map((artifactId) => {
      const meta = jsonOf(stored[`meta:${artifactId}`], {}) as Omit<Artifact, 'artifactId' | 'parts'>;
      const parts = jsonOf(stored[`parts:${artifactId}`], []) as Artifact['parts'];
      return { artifactId, ...meta, parts };
    });
}

/** An artifact field's JSON value as the hash path's `JSON.parse(text ?? absent)` gives it: text parsed, an embedded object as it is. */
function jsonOf(value: unknown, absent: unknown): unknown {
  if (value === undefined) return absent;
  if (typeof value === 'string') return JSON.parse(value);
  return typeof value === 'object' ? value : JSON.parse(JSON.stringify(value));
}
