/**
 * The rows a creation writes (createWorkflow-11.lua) in a fixed layout: the field names the common creation's rows
 * begin with, in their order, written into the script's text at load (`createLayoutLua`, a generated include) so the
 * names are constants of its HSET instead of arguments. Each argument costs redis-server about 1,000 instructions
 * (bench/script-ir.ts): a delegation's create sent 22 names it no longer sends. One list per row, read by both the
 * encoder (`rowArguments`) and the script: they cannot disagree. A row whose names do not begin with its layout, in
 * order, goes as field/value pairs as before; either way the hash written is the same, field order included.
 */

/** The workflow row as `createWorkflowPlaced` builds it for the producer's create: its fields, then id, tenant, version. */
export const WORKFLOW_ROW_LAYOUT = ['state', 'definition', 'createdAt', 'updatedAt', 'workflowId', 'tenant', 'version'] as const;

/** A first intent's row: `buildIntent`'s fields in its order, then the tenant `createWorkflowPlaced` adds. */
export const INTENT_ROW_LAYOUT = [
  'workflowId',
  'delegationId',
  'step',
  'kind',
  'attempt',
  'agentCardUrl',
  'messageId',
  'requestedContextId',
  'state',
  'message',
  'createdAt',
  'updatedAt',
  'version',
  'fence',
  'tenant',
] as const;

/**
 * One row's arguments for createWorkflow-11.lua: with its layout (`pairs`' names begin with `layout`'s, in order),
 * `count` is -1 - the pairs after it and `values` the layout's values, then those pairs flat; else `count` is the
 * number of pairs and `values` all of them flat.
 */
export function rowArguments(layout: readonly string[], pairs: readonly (readonly [string, string])[]): { count: number; values: string[] } {
  const fixed = pairs.length >= layout.length && layout.every((name, index) => pairs[index]![0] === name);
  if (!fixed) return { count: pairs.length, values: pairs.flat() };
  const rest = pairs.slice(layout.length);
  return { count: -1 - rest.length, values: [...pairs.slice(0, layout.length).map(([, value]) => value), ...rest.flat()] };
}

/**
 * `layout` as a Lua function writing a row: its names as constants, its values taken from ARGV[at…] into locals by one
 * `unpack` (a register move each in the call, where `ARGV[at + i]` costs an addition and a table read each), then
 * ARGV[at + n…last]'s pairs.
 */
function hsetLua(name: string, layout: readonly string[]): string {
  const locals = layout.map((_, index) => `v${index + 1}`);
  const fields = layout.map((field, index) => `'${field}', ${locals[index]}`).join(', ');
  return [
    `local function ${name}(key, at, last)`,
    `  local ${locals.join(', ')} = unpack(ARGV, at, at + ${layout.length - 1})`,
    `  return redis.call('HSET', key, ${fields}, unpack(ARGV, at + ${layout.length}, last))`,
    'end',
  ].join('\n');
}

/**
 * The generated include `createLayout` (scripts.ts): the layouts' lengths and a writer per row
 * (`hsetWorkflowRow(key, at, last)`, `hsetIntentRow(key, at, last)`).
 */
export function createLayoutLua(): string {
  return [
    '-- Generated at load from journal/create-layout.ts (scripts.ts): the created rows\' field names, constants of their HSET.',
    `local WORKFLOW_ROW_VALUES, INTENT_ROW_VALUES = ${WORKFLOW_ROW_LAYOUT.length}, ${INTENT_ROW_LAYOUT.length}`,
    hsetLua('hsetWorkflowRow', WORKFLOW_ROW_LAYOUT),
    hsetLua('hsetIntentRow', INTENT_ROW_LAYOUT),
  ].join('\n');
}
