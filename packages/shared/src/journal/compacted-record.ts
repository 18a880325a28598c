/**
 * A finished workflow's compacted record (docs/concepts.md "Retention and storage"). When a workflow enters
 * COMPLETED, FAILED, COMPENSATED or CANCELED with every delegation final and its record fits in
 * `COMPACTED_RECORD_LAYOUT.maxBytes` (artifacts included; else its hashes stay), updateWorkflow-4.lua
 * replaces its hashes and its delegation list with one JSON string at `JournalKeys.finished`
 * (same hash tag, same retention; push tokens also in the hash `JournalKeys.finishedPushTokens`):
 *
 *   {"workflow": {<workflow fields>}, "delegations": [{<delegation fields>, "art": {<artifact fields>}}, …], "history": [<entry>, …]}
 *
 * history (history.ts) only when the workflow has one: its list's entry texts as they were, byte for byte;
 * delegations in creation order, fields under the names of `COMPACTED_RECORD_LAYOUT.names` (others
 * under their own name), in the order of `COMPACTED_RECORD_LAYOUT.order` (so the worker can build the same
 * text: compacted-record-text.ts). Fields holding JSON (message, statusMessage, definition, …) are embedded as
 * JSON, digit strings as numbers (times as ms after the workflow's createdAt), every other value as
 * the hash's string. Left out: empty values,
 * counters and flags at '0', operational fields (owner, progress-rule and not-found
 * bookkeeping, artifact byte counts and seals), and what the record implies, which
 * reading restores: the workflowId (it is in the key) and the tenant (its id says it, tenant.ts); a delegation's id when it is `<step>.<attempt>`, createdAt when equal to the
 * workflow's, updatedAt when equal to finishedAt, statusTimestampMs (parsed from statusTimestamp),
 * agentCardUrl when it is its step's agent, kind 'step'. The value "=" stands for the record's own
 * value: the definition's workflowId, requestedContextId equal to contextId, a statusMessage's
 * contextId and taskId equal to the delegation's, a message's `metadata.durableA2a` stamp (workflowId,
 * step, attempt). A
 * JSON text is only marked if it held no "=" string before; one that did is kept as a string (the
 * reader restores marks only inside embedded JSON), so a mark is never an agent's value. A mark
 * replaces a member (`"key":value` after `{` or `,`), never text inside a string or a key.
 * Reading turns the record back into the hashes, so the journal's zod parsers (`parseWorkflowHash`,
 * `DelegationRecordSchema`, `parseArtifacts`) give the same typed records as before compaction.
 */
import { z } from 'zod';
import { parseAgentTimestamp } from './clock.ts';
import { FINISHED_STATES, JOURNAL_STATES } from './states.ts';
import { tenantOfWorkflowId } from './tenant.ts';

/** What updateWorkflow-4.lua needs to compact (in its text: `compactedRecordLayoutLua`); one table for the writer and the reader. */
export const COMPACTED_RECORD_LAYOUT = {
  /** Stored name of a field (the record stays for the retention period, so short names pay). */
  names: {
    workflowId: 'id',
    delegationId: 'did',
    state: 'state',
    definition: 'def',
    version: 'v',
    createdAt: 'at',
    updatedAt: 'upd',
    finishedAt: 'end',
    step: 'step',
    kind: 'kind',
    attempt: 'try',
    agentCardUrl: 'card',
    agentInterface: 'iface',
    messageId: 'mid',
    message: 'msg',
    requestedContextId: 'askCtx',
    contextId: 'ctx',
    taskId: 'task',
    statusTimestamp: 'ts',
    statusMessage: 'smsg',
    result: 'res',
    error: 'err',
    sendCount: 'sends',
    resendCount: 'resends',
    failure: 'fail',
    artifacts: 'art',
  } as Record<string, string>,
  /** Fields whose value is JSON text (embedded as JSON). */
  json: ['definition', 'stopping', 'failure', 'attention', 'retryApproved', 'abandonedCompensations', 'agentInterface', 'question', 'statusMessage', 'message', 'result', 'error', 'protocolError', 'earlierProtocolErrors', 'refusedResult', 'replyMessage', 'evidence'],
  /**
   * Not kept once it finished: bookkeeping of a running workflow (the push token is kept: a late push is still answered
   * 204), and `tenant`, which the workflow id says (tenant.ts; reading restores it).
   */
  operational: [
    'tenant',
    'owner', 'notFoundCount', 'firstNotFoundAt', 'sendStartedAt', 'replySendToken', 'replySendUntil',
    'questionSeq', 'artifactBytes', 'artifactCount', 'noProgressMark', 'noProgressSince', 'noProgressCount', 'noProgressLast', 'noProgressUnacceptable',
    'unreachableSince', 'nextTryAt', 'historyBytes', 'slotWaitUntil', 'suspects', 'suspectsOverCap', 'suspectsLost', 'suspectsLostTold', 'suspectReadRounds',
    'suspectReadRoundAt', 'suspectRoundBy', 'suspectRoundUntil', 'askedKeys', 'clockFloorMs', 'namedTaskUnread', 'statusStream',
  ],
  /** Times (ms) stored as a number of ms after the workflow's createdAt (a string is the hash's own text). */
  times: ['createdAt', 'updatedAt', 'finishedAt', 'verifiedAt', 'statusTimestampMs', 'replySendUntil'],
  /** Counters and flags whose '0' reads as absent. */
  zeroIsAbsent: ['sendCount', 'resendCount', 'unreachableCount', 'unsentTries', 'provenAbsentSends', 'protocolErrorCount', 'verifyAttempts', 'contextRefused', 'push', 'held', 'namedTaskUnread'],
  /** A workflow is compacted only when its record stays within this many bytes, artifacts included (1 MiB; one key stays small). */
  maxBytes: 1024 * 1024,
  /** A workflow is compacted only when every delegation is in one of these states (else its hashes expire as they are). */
  finalDelegation: JOURNAL_STATES.filter((state) => FINISHED_STATES.has(state)),
  /**
   * The rows' fields in the order their members are written (sorted by name; fields outside it follow in table
   * order, and the worker builds no text for a row holding one: compacted-record-text.ts). A fixed order makes the
   * text a function of the rows' values, so the worker's text and the script's are the same bytes.
   */
  order: [
    // The delegation row (record.ts DelegationRecordSchema).
    'workflowId', 'delegationId', 'step', 'kind', 'attempt', 'agentCardUrl', 'agentInterface', 'messageId', 'requestedContextId',
    'contextId', 'contextRefused', 'taskId', 'state', 'statusTimestamp', 'statusTimestampMs', 'question', 'statusMessage', 'message',
    'result', 'error', 'protocolError', 'protocolErrorCount', 'earlierProtocolErrors', 'refusedResult', 'push', 'held', 'pushToken', 'pushConfigId', 'pushConfigState',
    'createdAt', 'updatedAt', 'sendStartedAt', 'priority', 'sendCount', 'resendCount', 'unreachableCount', 'unsentTries', 'provenAbsentSends',
    'unreachableSince', 'nextTryAt', 'slotWaitUntil', 'version', 'fence', 'owner', 'notFoundCount', 'firstNotFoundAt', 'noProgressMark',
    'noProgressSince', 'noProgressCount', 'noProgressLast', 'noProgressUnacceptable', 'finishedAt', 'replyMessageId', 'replyMessage',
    'replyState', 'replySendToken', 'replySendUntil', 'replyError', 'replyForQuestion', 'replyBy', 'questionKey', 'questionAskedAt', 'questionWordsAfter',
    'questionExpired', 'questionExpiredAt', 'questionExpiry', 'questionSeq', 'effect', 'evidence', 'verifiedAt', 'verifyAttempts',
    'artifactBytes', 'artifactCount', 'suspects', 'suspectsOverCap', 'suspectsLost', 'suspectsLostTold', 'suspectReadRounds', 'suspectReadRoundAt', 'suspectRoundBy',
    'suspectRoundUntil', 'askedKeys', 'clockFloorMs', 'namedTaskUnread', 'statusStream',
    // The workflow row (workflow-record.ts).
    'tenant', 'definition', 'cancelRequested', 'stopping', 'failure', 'attention', 'retryApproved', 'abandonedCompensations',
    'historyDropped', 'historyBytes',
  ].sort(),
};

/**
 * The layout as a Lua table constructor, which scripts.ts writes into updateWorkflow-4.lua's text: `names` as is,
 * `order` as a list, `label` (field -> quoted stored name) for every field of `order`, every other list as a set (name -> true), `maxBytes` a number. Built into the text rather than passed as JSON, it costs
 * the finishing call no decode, and the script's digest changes with it.
 * @throws Error when a name is not a plain identifier (it is written into Lua source unquoted of escapes)
 */
export function compactedRecordLayoutLua(): string {
  const quoted = (name: string) => {
    if (!/^[A-Za-z][A-Za-z0-9_]*$/.test(name)) throw new Error(`compacted record layout: '${name}' is not a plain field name`);
    return `'${name}'`;
  };
  const set = (names: readonly string[]) => `{ ${names.map((name) => `[${quoted(name)}] = true`).join(', ')} }`;
  const { names, json, operational, times, zeroIsAbsent, maxBytes, finalDelegation, order } = COMPACTED_RECORD_LAYOUT;
  const stored = Object.entries(names).map(([field, name]) => `[${quoted(field)}] = ${quoted(name)}`);
  // label: field -> its member name as JSON text (`"name"`), for every field of `order` (a plain name needs no escape).
  const labels = order.map((field) => `[${quoted(field)}] = '"${names[field] ?? field}"'`);
  const ordered = `{ ${order.map(quoted).join(', ')} }`;
  return `{ names = { ${stored.join(', ')} }, label = { ${labels.join(', ')} }, order = ${ordered}, json = ${set(json)}, operational = ${set(operational)}, zeroIsAbsent = ${set(zeroIsAbsent)}, times = ${set(times)}, finalDelegation = ${set(finalDelegation)}, maxBytes = ${maxBytes} }`;
}

/**
 * What updateWorkflow-4.lua's `assemble` reads of the layout (the artifacts' stored name, `maxBytes`), as a Lua table
 * constructor: the finishing call with the worker's own record text builds this instead of the whole layout.
 */
export function compactedRecordAssemblyLua(): string {
  const { names, maxBytes } = COMPACTED_RECORD_LAYOUT;
  return `{ names = { artifacts = '${names.artifacts}' }, maxBytes = ${maxBytes} }`;
}

/** A compacted workflow read back as hashes (field → string), delegations in creation order, history entries as parsed JSON (history.ts). */
export interface CompactedWorkflow {
  workflow: Record<string, string>;
  delegations: { hash: Record<string, string>; artifacts: Record<string, string> }[];
  history: unknown[];
}

/** A JSON object as JSON.parse returns it: checked, not copied (the record is read once, on every finished view). */
const FieldsSchema = z.custom<Record<string, unknown>>(
  (value) => typeof value === 'object' && value !== null && !Array.isArray(value) && Object.getPrototypeOf(value) === Object.prototype,
  'expected an object',
);
const CompactedSchema = z.object({ workflow: FieldsSchema, delegations: z.array(FieldsSchema), history: z.array(z.unknown()).optional() });
/** Stored name → field (`COMPACTED_RECORD_LAYOUT.names` reversed). */
export const fullName = new Map(Object.entries(COMPACTED_RECORD_LAYOUT.names).map(([field, name]) => [name, field]));
/** The value that stands for the record's own value (see the header). */
export const MARK = '=';

const times = new Set(COMPACTED_RECORD_LAYOUT.times);

/** Stored names and values back to hash fields and their text; times are ms after `since` (see `times`). */
function asHash(fields: Record<string, unknown>, since: number | undefined): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(fields).map(([name, value]) => {
      const field = fullName.get(name) ?? name;
      if (typeof value !== 'number') return [field, value];
      return [field, String(since !== undefined && times.has(field) ? since + value : value)];
    }),
  );
}
const asText = (value: unknown): string => (typeof value === 'string' ? value : JSON.stringify(value));

/**
 * Replaces every `key: "="` inside a JSON value by `replacement` (at most one exists: see the header), in place: the
 * value is the record's own, fresh from JSON.parse. Returns `value`.
 */
export function restoreMark(value: unknown, key: string, replacement: unknown): unknown {
  if (!value || typeof value !== 'object') return value;
  if (Array.isArray(value)) {
    for (const item of value) restoreMark(item, key, replacement);
    return value;
  }
  const members = value as Record<string, unknown>;
  for (const name of Object.keys(members)) {
    if (name === key && members[name] === MARK) members[name] = replacement;
    else restoreMark(members[name], key, replacement);
  }
  return value;
}

/** Restores what the compacted delegation left out or marked (see the header). */
function restoreDelegation(fields: Record<string, unknown>, workflow: Record<string, unknown>, stepAgents: Map<string, string>): Record<string, string> {
  const record: Record<string, unknown> = { ...fields, workflowId: workflow.workflowId, tenant: workflow.tenant };
  record.delegationId ??= `${String(record.step)}.${String(record.attempt)}`;
  record.createdAt ??= workflow.createdAt;
  const { contextId, taskId, step, attempt } = record as Record<string, string | undefined>;
  record.updatedAt ??= record.finishedAt;
  if (record.statusTimestampMs === undefined && typeof record.statusTimestamp === 'string') {
    const ms = parseAgentTimestamp(record.statusTimestamp);
    if (!Number.isNaN(ms)) record.statusTimestampMs = String(ms);
  }
  if (record.agentCardUrl === undefined && (record.kind ?? 'step') === 'step' && step) record.agentCardUrl = stepAgents.get(step);
  if (record.requestedContextId === MARK) record.requestedContextId = contextId;
  if (record.statusMessage !== undefined) record.statusMessage = restoreMark(restoreMark(record.statusMessage, 'contextId', contextId), 'taskId', taskId);
  if (record.message !== undefined) record.message = restoreMark(record.message, 'durableA2a', { workflowId: workflow.workflowId, step, attempt: Number(attempt) });
  return Object.fromEntries(Object.entries(record).filter(([, value]) => value !== undefined).map(([field, value]) => [field, asText(value)]));
}

const DefinitionStepsSchema = z.object({ steps: z.array(z.unknown()) });
const FixedAgentStepSchema = z.object({ name: z.string(), agent: z.string() });

/**
 * Step name → fixed `agent` of every step that has one, step by step as updateWorkflow-4.lua reads them:
 * a step by `skill` (no `agent`) leaves the others' entries intact.
 */
function stepAgentsOf(definition: unknown): Map<string, string> {
  const parsed = DefinitionStepsSchema.safeParse(definition);
  const steps = parsed.success ? parsed.data.steps : [];
  return new Map(steps.flatMap((step) => {
    const fixed = FixedAgentStepSchema.safeParse(step);
    return fixed.success ? [[fixed.data.name, fixed.data.agent] as const] : [];
  }));
}

/** JSON text parsed, or undefined when it is not JSON. */
function parseJsonOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Parses workflow `workflowId`'s compacted record (the `finished` key's text) back into hashes. Throws on a corrupt record. */
export function parseCompactedWorkflow(workflowId: string, text: string): CompactedWorkflow {
  const record = CompactedSchema.parse(JSON.parse(text));
  const createdAtName = COMPACTED_RECORD_LAYOUT.names.createdAt ?? 'createdAt';
  const since = typeof record.workflow[createdAtName] === 'number' ? (record.workflow[createdAtName] as number) : undefined;
  const { [createdAtName]: createdAt, ...rest } = record.workflow;
  const stored: Record<string, unknown> = { ...asHash(rest, since), ...(createdAt === undefined ? {} : { createdAt: String(createdAt) }) };
  const workflow = { ...stored, workflowId, tenant: tenantOfWorkflowId(workflowId), definition: restoreMark(stored.definition, 'workflowId', workflowId) };
  // A definition that held a "=" of its own is stored as its text (not embedded): parse it for the steps' agents too.
  const definitionValue = typeof workflow.definition === 'string' ? parseJsonOrUndefined(workflow.definition) : workflow.definition;
  const stepAgents = stepAgentsOf(definitionValue);
  return {
    workflow: Object.fromEntries(Object.entries(workflow).map(([field, value]) => [field, asText(value)])),
    delegations: record.delegations.map((fields) => {
      const { artifacts, ...delegation } = asHash(fields, since);
      return {
        hash: restoreDelegation(delegation, workflow, stepAgents),
        artifacts: Object.fromEntries(Object.entries((artifacts ?? {}) as Record<string, unknown>).map(([field, value]) => [field, asText(value)])),
      };
    }),
    history: record.history ?? [],
  };
}

/** How a compacted record's text starts (updateWorkflow-4.lua writes the workflow object first). */
const RECORD_START = '{"workflow":';

/**
 * Where the workflow object of a compacted record ends in `prefix` (a prefix of the record's text): the index
 * after its closing brace, or undefined when the prefix does not hold it whole. Lets a reader that needs only
 * the workflow row (listings, states, the definition) read a few KB instead of the whole record.
 */
export function compactedWorkflowEnd(prefix: string): number | undefined {
  if (!prefix.startsWith(`${RECORD_START}{`)) return undefined;
  let depth = 0;
  let inString = false;
  let escaped = false;
  for (let index = RECORD_START.length; index < prefix.length; index++) {
    const character = prefix[index];
    if (inString) {
      if (escaped) escaped = false;
      else if (character === '\\') escaped = true;
      else if (character === '"') inString = false;
    } else if (character === '"') inString = true;
    else if (character === '{' || character === '[') depth++;
    else if ((character === '}' || character === ']') && --depth === 0) return index + 1;
  }
  return undefined;
}

/** The workflow row (as a hash) of workflow `workflowId`'s compacted record, from a prefix holding its workflow object (`end`: `compactedWorkflowEnd`). */
export function parseCompactedWorkflowRow(workflowId: string, prefix: string, end: number): Record<string, string> {
  return parseCompactedWorkflow(workflowId, `${prefix.slice(0, end)},"delegations":[]}`).workflow;
}
