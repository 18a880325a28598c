/**
 * The compacted record's text (compacted-record.ts), built by the worker from the rows it already read, byte for
 * byte what lua/includes/compaction.lua `compact` builds from the same rows, so updateWorkflow-4.lua only checks
 * that those rows are still current and swaps the keys (no row read into Lua, no encoding there). Each function
 * below mirrors the Lua function of the same name; a change to one is a change to both
 * (test/journal/compacted-text.test.ts holds them equal on random workflows).
 *
 * Built only for what the worker can build exactly, else undefined (the script then compacts as before): every
 * field of every row is in `COMPACTED_RECORD_LAYOUT.order`, every delegation is final, the definition decodes the
 * same in cjson and JSON.parse, and time offsets are safe integers. Artifacts and the history list are not here:
 * the script appends them (they change only with a delegation's version, which it checks).
 */
import { COMPACTED_RECORD_LAYOUT } from './compacted-record.ts';

/** A hash as HGETALL returns it (field → value). */
export type StoredRow = Readonly<Record<string, string>>;

/** The text of a finished workflow's record, in parts, and what each delegation's text was built from. */
export interface CompactedRecordText {
  /** The workflow object's text (`"workflow":` member). */
  workflow: string;
  /** In the delegation list's order: the id, the row it was built from, and the delegation object's text without artifacts. */
  delegations: { id: string; row: StoredRow; text: string }[];
}

const layout = COMPACTED_RECORD_LAYOUT;
const known = new Set(layout.order);
const json = new Set(layout.json);
const operational = new Set(layout.operational);
const times = new Set(layout.times);
const zeroIsAbsent = new Set(layout.zeroIsAbsent);
const finalDelegation = new Set<string>(layout.finalDelegation);
const label = new Map(layout.order.map((field) => [field, `"${layout.names[field] ?? field}"`]));
/** cjson's escapes of single characters (lua_cjson char2escape): control characters, '"', '\' and DEL; '/' is kept plain. */
const ESCAPES: Record<string, string> = { '"': '\\"', '\\': '\\\\', '\b': '\\b', '\t': '\\t', '\n': '\\n', '\f': '\\f', '\r': '\\r' };
const NEEDS_ESCAPE = /[\u0000-\u001f"\\\u007f]/g;
const DIGITS = /^[0-9]+$/;
const NUMBER = /^[1-9][0-9]*$/;
/** A \u escape of a UTF-16 surrogate, which cjson refuses to decode (JSON.parse takes it). */
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;

/** Lua `text`: cjson.encode of a string with '\/' back to '/'. */
export function text(value: string): string {
  return `"${value.replace(NEEDS_ESCAPE, (character) => ESCAPES[character] ?? `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`)}"`;
}

/** Lua `replaceMember`: the first `from` that starts a member (after '{' or ','), replaced by `to`. */
function replaceMember(value: string, from: string, to: string): string {
  let start = 0;
  for (;;) {
    const first = value.indexOf(from, start);
    if (first < 0) return value;
    const before = value[first - 1];
    if (before === '{' || before === ',') return value.slice(0, first) + to + value.slice(first + from.length);
    start = first + 1;
  }
}

const markable = (value: string | undefined): value is string => value !== undefined && value !== '' && !value.includes('"="');

function plainFields(fields: Readonly<Record<string, string | undefined>>, names: readonly string[]): Set<string> {
  return new Set(names.filter((name) => fields[name] !== undefined && fields[name] !== '' && !markable(fields[name])));
}

/** Thrown inside: the worker cannot build this text exactly (the script builds it). */
const DECLINED = Symbol('declined');

/** How `encodeFields` writes a field of `order`, decided once per field (no set lookups per row). */
interface FieldPlan {
  field: string;
  /** `"name":` as the record stores it. */
  label: string;
  zeroIsAbsent: boolean;
  time: boolean;
  json: boolean;
}

/** `order` without the operational fields (never written), each with its plan. */
const FIELD_PLANS: readonly FieldPlan[] = layout.order
  .filter((field) => !operational.has(field))
  .map((field) => ({ field, label: `${label.get(field)!}:`, zeroIsAbsent: zeroIsAbsent.has(field), time: times.has(field), json: json.has(field) }));

/** Lua `encodeFields`, for rows whose every field is in `order` (checked by the caller). */
function encodeFields(fields: Readonly<Record<string, string | undefined>>, since: number | undefined, plain: Set<string>): string {
  let out = '';
  for (const plan of FIELD_PLANS) {
    const value = fields[plan.field];
    if (value === undefined || value === '' || (plan.zeroIsAbsent && value === '0')) continue;
    const first = value[0];
    let encoded: string;
    if (since !== undefined && plan.time && value.length <= 15 && DIGITS.test(value)) {
      const offset = Number(value) - since;
      if (!Number.isSafeInteger(offset)) throw DECLINED;
      encoded = String(offset);
    } else if (plan.json && (first === '{' || first === '[') && !plain.has(plan.field)) encoded = value;
    else if (value.length <= 15 && NUMBER.test(value)) encoded = value;
    else encoded = text(value);
    out += out === '' ? `${plan.label}${encoded}` : `,${plan.label}${encoded}`;
  }
  return `{${out}}`;
}

/**
 * Lua `slimDelegation`: leaves out (sets to undefined, which `encodeFields` skips: a `delete` would turn `d` into a
 * slow dictionary object) or marks what the rest of the record implies; `d` is changed.
 */
function slimDelegation(d: Record<string, string | undefined>, workflow: StoredRow, stepAgents: Map<string, string>, workflowId: string): Set<string> {
  const plain = plainFields(d, ['statusMessage', 'message']);
  d.workflowId = undefined;
  if (d.delegationId === `${d.step ?? ''}.${d.attempt ?? ''}`) d.delegationId = undefined;
  if (d.createdAt === workflow.createdAt) d.createdAt = undefined;
  if (d.updatedAt === d.finishedAt) d.updatedAt = undefined;
  if ((d.statusTimestamp ?? '') !== '') d.statusTimestampMs = undefined;
  if ((d.kind ?? 'step') === 'step' && stepAgents.get(d.step as string) === d.agentCardUrl) d.agentCardUrl = undefined;
  if (d.kind === 'step') d.kind = undefined;
  if (d.requestedContextId !== undefined && d.requestedContextId === d.contextId) d.requestedContextId = '=';
  if (markable(d.statusMessage)) {
    if ((d.contextId ?? '') !== '') d.statusMessage = replaceMember(d.statusMessage, `"contextId":${text(d.contextId!)}`, '"contextId":"="');
    if ((d.taskId ?? '') !== '') d.statusMessage = replaceMember(d.statusMessage, `"taskId":${text(d.taskId!)}`, '"taskId":"="');
  }
  if (markable(d.message) && d.attempt !== undefined) {
    const stamp = `{"workflowId":${text(workflowId)},"step":${text(d.step ?? '')},"attempt":${d.attempt}}`;
    d.message = replaceMember(d.message, `"durableA2a":${stamp}`, '"durableA2a":"="');
  }
  return plain;
}

/** How deep a JSON value nests (cjson refuses to decode past 1000). */
function depthOf(value: unknown, limit: number): number {
  if (value === null || typeof value !== 'object') return 0;
  if (limit <= 0) return 1;
  let deepest = 0;
  for (const item of Object.values(value)) deepest = Math.max(deepest, depthOf(item, limit - 1));
  return deepest + 1;
}

/** Step name → fixed agent, as `compact` reads them with cjson (a definition cjson would decode differently declines). */
function stepAgentsOf(definitionText: string | undefined): Map<string, string> {
  const agents = new Map<string, string>();
  if (definitionText === undefined || definitionText === '') return agents;
  if (SURROGATE_ESCAPE.test(definitionText)) throw DECLINED;
  let definition: unknown;
  try {
    definition = JSON.parse(definitionText);
  } catch {
    throw DECLINED; // cjson takes some texts JSON.parse refuses (hexadecimal numbers, inf, nan)
  }
  if (depthOf(definition, 900) >= 900) throw DECLINED;
  const steps = definition !== null && typeof definition === 'object' ? (definition as { steps?: unknown }).steps : undefined;
  if (!Array.isArray(steps)) return agents;
  for (const step of steps) {
    const { name, agent } = (step !== null && typeof step === 'object' ? step : {}) as { name?: unknown; agent?: unknown };
    if (typeof name === 'string' && typeof agent === 'string') agents.set(name, agent);
  }
  return agents;
}

const onlyKnownFields = (row: StoredRow) => Object.keys(row).every((field) => known.has(field));

/**
 * The record text `compact` would build for workflow `workflowId` from `workflow` (its row as the finishing change
 * leaves it: the change's fields, `updatedAt` and `version` written) and its delegations' rows in list order; or
 * undefined when the worker cannot build it exactly, or the script would not compact it (a delegation not final,
 * artifacts or the record over `maxBytes`).
 */
export function compactedRecordText(workflowId: string, workflow: StoredRow, delegations: readonly { id: string; row: StoredRow }[]): CompactedRecordText | undefined {
  try {
    return build(workflowId, workflow, delegations);
  } catch (error) {
    if (error === DECLINED) return undefined;
    throw error;
  }
}

function build(workflowId: string, workflowRow: StoredRow, delegations: readonly { id: string; row: StoredRow }[]): CompactedRecordText | undefined {
  if (!onlyKnownFields(workflowRow) || !delegations.every(({ row }) => onlyKnownFields(row))) return undefined;
  const stepAgents = stepAgentsOf(workflowRow.definition);
  const since = DIGITS.test(workflowRow.createdAt ?? '') ? Number(workflowRow.createdAt) : undefined;
  let artifactBytes = 0;
  let size = 0;
  const built: CompactedRecordText['delegations'] = [];
  for (const { id, row } of delegations) {
    if (!finalDelegation.has(row.state ?? '')) return undefined;
    artifactBytes += Number(row.artifactBytes ?? '0') || 0;
    if (artifactBytes > layout.maxBytes) return undefined;
    const d: Record<string, string | undefined> = { ...row };
    const encoded = encodeFields(d, since, slimDelegation(d, workflowRow, stepAgents, workflowId));
    size += Buffer.byteLength(encoded) + 1;
    if (size > layout.maxBytes) return undefined;
    built.push({ id, row, text: encoded });
  }
  const workflow: Record<string, string | undefined> = { ...workflowRow };
  workflow.workflowId = undefined;
  const plain = plainFields(workflow, ['definition']);
  if (markable(workflow.definition)) workflow.definition = replaceMember(workflow.definition, `"workflowId":${text(workflowId)},`, '"workflowId":"=",');
  const createdAt = workflow.createdAt;
  workflow.createdAt = undefined;
  let encoded = encodeFields(workflow, since, plain);
  if (createdAt !== undefined) encoded = `{${label.get('createdAt')!}:${since !== undefined ? createdAt : text(createdAt)}${encoded.length > 2 ? ',' : ''}${encoded.slice(1)}`;
  return { workflow: encoded, delegations: built };
}

/**
 * Lua `withArtifacts` (lua/includes/compaction.lua) for artifacts the caller holds, as finishStep-5.lua would have
 * read them into the record from its arguments: `artifacts` in the Task's order (a later duplicate id wins, its order
 * the later one's), each stored as `order:<id>` (its index, or '1' when `adds`: one artifact update added to a row
 * that holds none), `meta:<id>` and `parts:<id>`; members sorted by name byte for byte (Lua compares strings as
 * bytes), a JSON value kept as it is, any other (and every order) as a string. The record whole when there is none.
 */
export function withArtifactsText(record: string, artifacts: readonly { artifactId: string; meta: string; parts: string }[], adds: boolean): string {
  const fields = new Map<string, string>();
  artifacts.forEach(({ artifactId, meta, parts }, index) => {
    fields.set(`meta:${artifactId}`, meta);
    fields.set(`parts:${artifactId}`, parts);
    fields.set(`order:${artifactId}`, adds ? '1' : String(index));
  });
  if (fields.size === 0) return record;
  // Byte for byte: each name's UTF-8 bytes made once, not twice per comparison.
  const names = [...fields.keys()]
    .map((name) => ({ name, bytes: Buffer.from(name, 'utf8') }))
    .sort((a, b) => Buffer.compare(a.bytes, b.bytes))
    .map(({ name }) => name);
  const members = names.map((name) => {
    const value = fields.get(name)!;
    const embedded = !name.startsWith('order:') && (value.startsWith('{') || value.startsWith('['));
    return `${text(name)}:${embedded ? value : text(value)}`;
  });
  return `${record.slice(0, -1)}${record.length > 2 ? ',' : ''}${text(layout.names.artifacts ?? 'artifacts')}:{${members.join(',')}}}`;
}
