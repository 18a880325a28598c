/**
 * The journal's Lua scripts: one per transition, in `lua/<verb>-<key count>.lua`, each declared once with
 * `defineScript` (named keys, an encoder of typed input into ARGV, a decoder of the reply into a typed result), run
 * by their SHA1 (EVALSHA; on NOSCRIPT, a fresh or failed-over server, once with EVAL, which caches it there). Two
 * releases can run side by side during a deploy: each runs its own scripts' texts by their own digests.
 * A script's text is its file with its includes (`--- @include "<name>"`: `lua/includes/<name>.lua`, or the
 * generated `prelude` of codes and state sets, script-codes.ts) and its load-time values written in, without the
 * top-level functions it never calls (lua-unused.ts: each would be a closure made on every call).
 * The scripts are not defined as ioredis commands: an auto-pipelined client copies every defined command
 * onto the pipeline of each batch it sends, a cost on every call.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { Cluster, type Redis } from 'ioredis';
import { compactedRecordAssemblyLua, compactedRecordLayoutLua } from './compacted-record.ts';
import { createLayoutLua } from './create-layout.ts';
import { historyLimitsLua } from './history.ts';
import { withoutUnusedFunctions } from './lua-unused.ts';
import { luaPrelude, scriptCodeName, type ScriptCode } from './script-codes.ts';

const LUA_DIRECTORY = new URL('./lua/', import.meta.url);

/** Each script file's verb and key count (the `-N.lua` suffix), read once. */
const KEY_COUNTS: ReadonlyMap<string, number> = new Map(
  readdirSync(LUA_DIRECTORY)
    .map((file) => /^([A-Za-z]+)-(\d+)\.lua$/.exec(file))
    .filter((match): match is RegExpExecArray => match !== null)
    .map((match) => [match[1]!, Number(match[2])]),
);

/**
 * Scripts composed at load from two files (`composedLua`): the first runs, then the second unless the first
 * refused. `applyArtifactThenStatus`: a stream's artifact update and the status update that came with it, one round
 * trip instead of two. Its digest is that of the composed text, so it changes whenever either part does.
 * `between`: Lua run after the first with its reply (`firstReply`) and the second's ARGV (`secondArgv`) in scope.
 * Here: an applied artifact update bumped the row's version, so the version the caller holds (applyStatus-5.lua
 * ARGV[15]) moves with it (the update's other fields, 'artifactBytes' and 'updatedAt', are no field of the typed record
 * or written again by the status change).
 */
const COMPOSED: Readonly<Record<string, { parts: readonly [string, string]; between: string }>> = {
  applyArtifactThenStatus: {
    parts: ['applyArtifact', 'applyStatus'],
    between: "if firstReply[1] == 1 and secondArgv[15] ~= '' then secondArgv[15] = tostring(tonumber(secondArgv[15]) + 1) end",
  },
  // The same pair ending a one-step workflow (finish-step.ts): the text's version already counts the artifact
  // update's bump; a sealed or refused update leaves the row a version short, so the finish writes nothing.
  applyArtifactThenFinishStep: { parts: ['applyArtifact', 'finishStep'], between: '' },
};

/**
 * Values written into a script's text at load: each marker (`{} --[[NAME]]`, a valid empty table until then)
 * becomes a Lua value built from TypeScript, so one table serves the script and its reader, and the script's
 * digest changes with it. `COMPACTED_RECORD_LAYOUT`: the compacted record's layout (compacted-record.ts), a constant
 * the finishing call would otherwise decode from JSON on every call; `COMPACTED_RECORD_ASSEMBLY` the part of it a
 * finishing call with the caller's record text reads. `HISTORY_LIMITS`: a workflow
 * history's bounds (history.ts), for lua/includes/history.lua.
 */
const WRITTEN_AT_LOAD: Readonly<Record<string, () => string>> = {
  COMPACTED_RECORD_LAYOUT: compactedRecordLayoutLua,
  COMPACTED_RECORD_ASSEMBLY: compactedRecordAssemblyLua,
  HISTORY_LIMITS: historyLimitsLua,
};

/**
 * Generated includes (any other include is a file in `lua/includes/`): a marker line here, replaced once the whole
 * text is known (`fileText`), as the prelude holds only the tables the script names. `createLayout`: the created rows'
 * field names (create-layout.ts).
 */
const GENERATED_INCLUDES: Readonly<Record<string, (rest: string) => string>> = {
  prelude: (rest) => luaPrelude((name) => new RegExp(`\\b${name.replace('.', '\\.')}\\b`).test(rest)),
  createLayout: () => createLayoutLua(),
};
const GENERATED = /^--\[\[GENERATED ([A-Za-z]+)\]\]$/gm;

/** A journal script's verb (its file is `lua/<verb>-<key count>.lua`), or a composed script's name. */
export type ScriptName = string;

/** A script's text and digest, built once per process. */
interface LoadedScript {
  lua: string;
  sha: string;
}
const loaded = new Map<ScriptName, LoadedScript>();

const INCLUDE = /^--- @include "([A-Za-z]+)"[^\n]*$/gm;
const MARKER = /\{\} --\[\[([A-Z_]+)\]\]/g;

/** `text` with its includes expanded in place, each at most once per script (`seen`), recursively. */
function withIncludes(text: string, seen: Set<string>, from: string): string {
  return text.replace(INCLUDE, (_line, name: string) => {
    if (seen.has(name)) return `-- @include "${name}": already included`;
    seen.add(name);
    if (GENERATED_INCLUDES[name]) return `--[[GENERATED ${name}]]`;
    let included: string;
    try {
      included = readFileSync(new URL(`includes/${name}.lua`, LUA_DIRECTORY), 'utf8');
    } catch (error) {
      throw new Error(`${from}: no include '${name}' (lua/includes/${name}.lua)`, { cause: error });
    }
    return withIncludes(included.replace(/\n$/, ''), seen, `includes/${name}.lua`);
  });
}

/**
 * A script file's text with its includes and load-time values.
 * @throws Error when the file or an include is missing, or a marker names no known value (fails at start, not at a call)
 */
function fileText(name: string): string {
  if (!KEY_COUNTS.has(name)) throw new Error(`no journal script '${name}' (lua/<verb>-<key count>.lua)`);
  const file = `${name}-${KEY_COUNTS.get(name)}.lua`;
  const expanded = withIncludes(readFileSync(new URL(file, LUA_DIRECTORY), 'utf8'), new Set(), file);
  // Unused functions out first: the prelude then holds only the tables the code left over names.
  const used = withoutUnusedFunctions(expanded);
  const text = used.replace(GENERATED, (line, name: string) => GENERATED_INCLUDES[name]!(used.replace(line, '')));
  return text.replace(MARKER, (_marker, marker: string) => {
    const value = WRITTEN_AT_LOAD[marker];
    if (!value) throw new Error(`${file}: no value to write into '{} --[[${marker}]]'`);
    return value();
  });
}

function script(name: ScriptName): LoadedScript {
  let found = loaded.get(name);
  if (!found) {
    const composed = COMPOSED[name];
    const lua = composed ? composedLua(...composed.parts, composed.between) : fileText(name);
    found = { lua, sha: createHash('sha1').update(lua).digest('hex') };
    loaded.set(name, found);
  }
  return found;
}

/**
 * Two scripts as one: each file's text becomes the body of a local function whose parameters shadow KEYS and ARGV
 * (the scripts declare only locals, so their texts run unchanged inside). Both get the composed script's KEYS (the
 * first uses a prefix of the second's: they must agree on those keys). ARGV[1] is how many of the following ARGV
 * are the first's; the rest are the second's, which `between` may change after the first ran. Replies `{first's reply}` when that reply is a refusal (a table whose
 * first element is a negative code: nothing more runs), else `{first's reply, second's reply}`.
 */
function composedLua(first: string, second: string, between: string): string {
  return [
    `-- ${first}-${KEY_COUNTS.get(first)}.lua, then ${second}-${KEY_COUNTS.get(second)}.lua unless the first refused (scripts.ts composedLua).`,
    'local firstCount = tonumber(ARGV[1])',
    'local firstArgv, secondArgv = {}, {}',
    'for i = 2, firstCount + 1 do firstArgv[#firstArgv + 1] = ARGV[i] end',
    'for i = firstCount + 2, #ARGV do secondArgv[#secondArgv + 1] = ARGV[i] end',
    'local function first(KEYS, ARGV)',
    fileText(first),
    'end',
    'local function second(KEYS, ARGV)',
    fileText(second),
    'end',
    'local firstReply = first(KEYS, firstArgv)',
    "if type(firstReply) == 'table' and (tonumber(firstReply[1]) or 0) < 0 then return { firstReply } end",
    between,
    'return { firstReply, second(KEYS, secondArgv) }',
    '',
  ].join('\n');
}

/** Every journal script's name, composed ones included (tools that tell scripts apart by digest). */
export function scriptNames(): ScriptName[] {
  return [...KEY_COUNTS.keys(), ...Object.keys(COMPOSED)];
}

/** A journal script's SHA1 digest as EVALSHA names it (tools and tests that count script calls). */
export function scriptSha(name: ScriptName): string {
  return script(name).sha;
}

/** A journal script's text as it is sent (includes and load-time values written in): tools and tests that load it. */
export function scriptText(name: ScriptName): string {
  return script(name).lua;
}

/** True for Redis's NOSCRIPT reply (the server does not hold the script: restarted, failed over, flushed). */
const isNoScript = (error: unknown): boolean => error instanceof Error && error.message.startsWith('NOSCRIPT');

/** Runs one script by its digest; on NOSCRIPT once more with its text. */
async function runScript(redis: Redis | Cluster, name: ScriptName, keys: string[], args: (string | number)[]): Promise<unknown> {
  const { lua, sha } = script(name);
  try {
    return await redis.evalsha(sha, keys.length, ...keys, ...args);
  } catch (error) {
    if (!isNoScript(error)) throw error;
    return redis.eval(lua, keys.length, ...keys, ...args);
  }
}

/** A script's refusal: its negative code by name (`SCRIPT_CODES`) and the detail it sent ('' when none). */
export interface Refused {
  readonly refused: ScriptCode;
  readonly detail: string;
}

/** True when a decoded reply is a refusal. */
export const isRefused = (result: unknown): result is Refused => typeof result === 'object' && result !== null && 'refused' in result;

/**
 * A journal script declared once: its verb, its KEYS by name (their count is the file's `-N.lua` suffix), how typed
 * input becomes ARGV, and how the reply becomes a typed result (refusals as `Refused`, by name). Call it through the
 * journal (`JournalCore.call`) or `callScriptMany`; nothing else reads a raw reply.
 */
export interface JournalScript<Key extends string, Input, Result> {
  readonly name: ScriptName;
  readonly keys: readonly Key[];
  readonly encode: (input: Input) => (string | number)[];
  /** @throws ScriptReplyError when the reply is not the shape the script's header promises */
  readonly decode: (reply: unknown, script: ScriptName) => Result;
}

/**
 * Declares a journal script (see `JournalScript`) and loads its text.
 * @throws Error when there is no `lua/<name>-<keys.length>.lua` (a wrong key count fails at import, not at a call),
 *   or for a composed script, when its keys are not the second part's
 */
export function defineScript<const Key extends string, Input, Result>(definition: {
  name: ScriptName;
  keys: readonly Key[];
  encode: (input: Input) => (string | number)[];
  decode: (reply: unknown, script: ScriptName) => Result;
}): JournalScript<Key, Input, Result> {
  const { name, keys } = definition;
  const fileName = COMPOSED[name]?.parts[1] ?? name;
  const expected = KEY_COUNTS.get(fileName);
  if (expected === undefined) throw new Error(`defineScript ${name}: no lua/${fileName}-<key count>.lua`);
  if (keys.length !== expected) throw new Error(`defineScript ${name}: ${keys.length} keys declared, its file ${fileName}-${expected}.lua takes ${expected}`);
  if (new Set(keys).size !== keys.length) throw new Error(`defineScript ${name}: a key name is declared twice`);
  script(name);
  return Object.freeze({ ...definition });
}

/** A script's reply did not have the shape its header promises (a script and its decoder disagree: a bug, never data). */
export class ScriptReplyError extends Error {
  override readonly name = 'ScriptReplyError';
  constructor(
    readonly script: ScriptName,
    readonly reply: unknown,
  ) {
    super(`${script}: unexpected reply ${JSON.stringify(reply)?.slice(0, 200)}`);
  }
}

/** `reply` as an integer. @throws ScriptReplyError */
export function integerReply(reply: unknown, script: ScriptName): number {
  if (typeof reply !== 'number' || !Number.isInteger(reply)) throw new ScriptReplyError(script, reply);
  return reply;
}

/** `reply` as an array (a Lua table reply). @throws ScriptReplyError */
export function arrayReply(reply: unknown, script: ScriptName): unknown[] {
  if (!Array.isArray(reply)) throw new ScriptReplyError(script, reply);
  return reply;
}

/** `reply` as a string. @throws ScriptReplyError */
export function stringReply(reply: unknown, script: ScriptName): string {
  if (typeof reply !== 'string') throw new ScriptReplyError(script, reply);
  return reply;
}

/** A refusal for a negative `code` (with `detail`). @throws Error for a code not in `SCRIPT_CODES` */
export function refusal(code: number, script: ScriptName, detail: unknown = ''): Refused {
  return { refused: scriptCodeName(code, script), detail: detail === undefined || detail === null ? '' : String(detail) };
}

/**
 * A decoder for scripts that reply one integer: a negative code (a refusal), else one of `outcomes` by value.
 * @throws ScriptReplyError for any other reply
 */
export function outcomeDecoder<const Outcomes extends Readonly<Record<number, string>>>(outcomes: Outcomes): (reply: unknown, script: ScriptName) => Outcomes[keyof Outcomes] | Refused {
  return (reply, script) => {
    const code = integerReply(reply, script);
    if (code < 0) return refusal(code, script);
    const outcome = outcomes[code];
    if (outcome === undefined) throw new ScriptReplyError(script, reply);
    return outcome as Outcomes[keyof Outcomes];
  };
}

/** A decoder for scripts that reply a fencing token (>= 1) or a negative code. */
export function fenceDecoder(reply: unknown, script: ScriptName): { fence: number } | Refused {
  const fence = integerReply(reply, script);
  return fence < 0 ? refusal(fence, script) : { fence };
}

/** The keys of one call in declaration order. */
function orderedKeys<Key extends string>(names: readonly Key[], keys: Readonly<Record<Key, string>>): string[] {
  return names.map((name) => keys[name]);
}

/** Runs `script` once with `keys` (by name) and `input`; resolves to its decoded result. */
export async function callScript<Key extends string, Input, Result>(
  redis: Redis | Cluster,
  script: JournalScript<Key, Input, Result>,
  keys: Readonly<Record<Key, string>>,
  input: Input,
): Promise<Result> {
  return script.decode(await runScript(redis, script.name, orderedKeys(script.keys, keys), script.encode(input)), script.name);
}

/** The scripts each client has loaded (SCRIPT LOAD) before its first `callScriptMany` of them. */
const loadedOn = new WeakMap<Redis, Set<ScriptName>>();

/**
 * Runs one script many times with one round trip: a pipeline on a standalone Redis (one socket write);
 * on a Cluster the calls go out at once, each to its own slot. Results in call order. The first time a client sends
 * a script this way it loads it first (SCRIPT LOAD, once per client and script: `loadedOn`), so the page is not
 * answered NOSCRIPT call by call (a fresh worker's first dead-worker sweep releases a page of leases with a script
 * nobody in the fleet may have run). When the server answers NOSCRIPT all the same (restarted, flushed), the script
 * is loaded once and those calls go again by digest in one pipeline; one still answered NOSCRIPT runs with EVAL.
 * Before, each such call went again as an EVAL carrying the script's text: one per lease of the page.
 * @throws the first call's error, if any failed.
 */
export async function callScriptMany<Key extends string, Input, Result>(
  redis: Redis | Cluster,
  script: JournalScript<Key, Input, Result>,
  calls: readonly { keys: Readonly<Record<Key, string>>; input: Input }[],
): Promise<Result[]> {
  if (calls.length === 0) return [];
  if (redis instanceof Cluster) return Promise.all(calls.map(({ keys, input }) => callScript(redis, script, keys, input)));
  const { lua, sha } = loaded.get(script.name) ?? { lua: '', sha: '' };
  const raw = calls.map(({ keys, input }) => ({ keys: orderedKeys(script.keys, keys), args: script.encode(input) }));
  const sent = loadedOn.get(redis) ?? new Set<ScriptName>();
  loadedOn.set(redis, sent);
  if (!sent.has(script.name)) {
    await redis.script('LOAD', lua);
    sent.add(script.name);
  }
  const pipeline = redis.pipeline();
  for (const { keys, args } of raw) pipeline.evalsha(sha, keys.length, ...keys, ...args);
  const replies = (await pipeline.exec()) ?? [];
  const missing = replies.flatMap(([error], index) => (error && isNoScript(error) ? [index] : []));
  if (missing.length > 0) {
    await redis.script('LOAD', lua);
    const again = redis.pipeline();
    for (const index of missing) {
      const { keys, args } = raw[index]!;
      again.evalsha(sha, keys.length, ...keys, ...args);
    }
    const retried = (await again.exec()) ?? [];
    missing.forEach((index, at) => (replies[index] = retried[at] ?? [new Error('NOSCRIPT no reply'), null]));
  }
  return Promise.all(
    replies.map(async ([error, reply], index) => {
      if (!error) return script.decode(reply, script.name);
      if (!isNoScript(error)) throw error;
      const { keys, args } = raw[index]!;
      return script.decode(await redis.eval(lua, keys.length, ...keys, ...args), script.name);
    }),
  );
}

/**
 * Runs journal scripts by name with raw keys and arguments, replies undecoded: for tools that replay recorded calls
 * (bench/). The journal itself calls scripts through `defineScript` definitions.
 */
export function rawScriptCaller(redis: Redis | Cluster): (name: ScriptName, keys: string[], args: (string | number)[]) => Promise<unknown> {
  return (name, keys, args) => runScript(redis, name, keys, args);
}
