/**
 * The journal's Lua scripts: one per transition, in `lua/<verb>-<key count>.lua`, run by their SHA1
 * (EVALSHA; on NOSCRIPT, a fresh or failed-over server, once with EVAL, which caches it there). Two
 * releases can run side by side during a deploy: each runs its own scripts' texts by their own digests.
 * The scripts are not defined as ioredis commands: an auto-pipelined client copies every defined command
 * onto the pipeline of each batch it sends (issue 16).
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Cluster, type Redis } from 'ioredis';
import { compactedRecordLayoutLua } from './compacted-record.ts';

/** Each script's name and key count. */
const SCRIPTS = {
  createWorkflow: 4,
  createIntent: 3,
  claim: 1,
  markSending: 2,
  applyStatus: 5,
  applyArtifact: 2,
  releaseForResend: 1,
  noteNotFound: 1,
  noteNoProgress: 1,
  recordReply: 1,
  markReply: 1,
  updateWorkflow: 3,
  lease: 1,
  takeFollow: 2,
  recordEffect: 1,
  releaseHold: 1,
  takeToken: 1,
  noteProtocolError: 1,
  notePushConfig: 1,
} as const;
/**
 * Scripts composed at load from two of the above (`composedLua`): the first runs, then the second unless the first
 * refused. `applyArtifactThenStatus`: a stream's artifact update and the status update that came with it, one round
 * trip instead of two (issue 16). Its digest is that of the composed text, so it changes whenever either part does.
 */
const COMPOSED = {
  applyArtifactThenStatus: ['applyArtifact', 'applyStatus'],
} as const satisfies Record<string, readonly [keyof typeof SCRIPTS, keyof typeof SCRIPTS]>;

/**
 * Text written into a script's file text at load: each marker (`{} --[[NAME]]`, a valid empty table until then)
 * becomes a Lua value built from TypeScript, so one table serves the script and its reader, and the script's
 * digest changes with it. `updateWorkflow`: the compacted record's layout (compacted-record.ts), a constant the
 * finishing call would otherwise decode from JSON on every call (issue 16).
 */
const WRITTEN_AT_LOAD: Partial<Record<keyof typeof SCRIPTS, Record<string, () => string>>> = {
  updateWorkflow: { COMPACTED_RECORD_LAYOUT: compactedRecordLayoutLua },
};

/** A journal script's verb (its file is `lua/<verb>-<key count>.lua`), or a composed script's name. */
export type ScriptName = keyof typeof SCRIPTS | keyof typeof COMPOSED;

/** Runs one journal script with its keys and arguments; resolves to the script's reply. */
export type ScriptCaller = (name: ScriptName, keys: string[], args: (string | number)[]) => Promise<unknown>;

/** A script's text and digest, read once per process. */
interface LoadedScript {
  lua: string;
  sha: string;
}
const loaded = new Map<ScriptName, LoadedScript>();

/**
 * A script file's text with `WRITTEN_AT_LOAD` applied.
 * @throws Error when the file is missing, or a marker is not in it (a renamed marker fails at start, not at its first call)
 */
function fileText(name: keyof typeof SCRIPTS): string {
  let text = readFileSync(new URL(`./lua/${name}-${SCRIPTS[name]}.lua`, import.meta.url), 'utf8');
  for (const [marker, value] of Object.entries(WRITTEN_AT_LOAD[name] ?? {})) {
    const placeholder = `{} --[[${marker}]]`;
    if (!text.includes(placeholder)) throw new Error(`${name}-${SCRIPTS[name]}.lua: no '${placeholder}' to write ${marker} into`);
    text = text.replace(placeholder, () => value());
  }
  return text;
}

function script(name: ScriptName): LoadedScript {
  let found = loaded.get(name);
  if (!found) {
    const lua = name in COMPOSED ? composedLua(...COMPOSED[name as keyof typeof COMPOSED]) : fileText(name as keyof typeof SCRIPTS);
    found = { lua, sha: createHash('sha1').update(lua).digest('hex') };
    loaded.set(name, found);
  }
  return found;
}

/**
 * Two scripts as one: each file's text becomes the body of a local function whose parameters shadow KEYS and ARGV
 * (the scripts declare only locals, so their texts run unchanged inside). Both get the composed script's KEYS (the
 * first uses a prefix of the second's: they must agree on those keys). ARGV[1] is how many of the following ARGV
 * are the first's; the rest are the second's. Replies `{first's reply}` when that reply is a refusal (a table whose
 * first element is a negative code: nothing more runs), else `{first's reply, second's reply}`.
 */
function composedLua(first: keyof typeof SCRIPTS, second: keyof typeof SCRIPTS): string {
  return [
    `-- ${first}-${SCRIPTS[first]}.lua, then ${second}-${SCRIPTS[second]}.lua unless the first refused (scripts.ts composedLua).`,
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
    'return { firstReply, second(KEYS, secondArgv) }',
    '',
  ].join('\n');
}

/** Every journal script's name, composed ones included (tools that tell scripts apart by digest). */
export function scriptNames(): ScriptName[] {
  return [...Object.keys(SCRIPTS), ...Object.keys(COMPOSED)] as ScriptName[];
}

/** A journal script's SHA1 digest as EVALSHA names it (tools and tests that count script calls). */
export function scriptSha(name: ScriptName): string {
  return script(name).sha;
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

/** Reads every script once (a missing or unreadable file fails here, at start) and returns the caller for `redis`. */
export function scriptCaller(redis: Redis | Cluster): ScriptCaller {
  for (const name of scriptNames()) script(name);
  return (name, keys, args) => runScript(redis, name, keys, args);
}

/** One call of a script in a batch: its keys and arguments. */
export interface ScriptCall {
  keys: string[];
  args: (string | number)[];
}

/**
 * Runs one script many times with one round trip: a pipeline on a standalone Redis (one socket write);
 * on a Cluster the calls go out at once, each to its own slot. Replies in call order; a call the server
 * answered NOSCRIPT runs again with EVAL.
 * @throws the first call's error, if any failed.
 */
export async function callScriptMany(redis: Redis | Cluster, name: ScriptName, calls: readonly ScriptCall[]): Promise<unknown[]> {
  if (calls.length === 0) return [];
  if (redis instanceof Cluster) return Promise.all(calls.map(({ keys, args }) => runScript(redis, name, keys, args)));
  const { lua, sha } = script(name);
  const pipeline = redis.pipeline();
  for (const { keys, args } of calls) pipeline.evalsha(sha, keys.length, ...keys, ...args);
  const replies = (await pipeline.exec()) ?? [];
  return Promise.all(
    replies.map(async ([error, reply], index) => {
      if (!error) return reply;
      if (!isNoScript(error)) throw error;
      const { keys, args } = calls[index]!;
      return redis.eval(lua, keys.length, ...keys, ...args);
    }),
  );
}
