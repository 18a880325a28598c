/**
 * The journal's Lua scripts: one per transition, in `lua/<verb>-<key count>.lua`, registered on a
 * connection under a versioned name (`da2a_<version>_<verb>`) so two releases can run side by side
 * during a deploy.
 */
import { readFileSync } from 'node:fs';
import { Cluster, type Redis } from 'ioredis';

/** Version of the script set; bump when a script's contract changes. */
const SCRIPT_VERSION = 'v3';
/** Each script's name and key count. */
const SCRIPTS = {
  createWorkflow: 3,
  createIntent: 3,
  claim: 1,
  markSending: 2,
  applyStatus: 2,
  applyArtifact: 2,
  releaseForResend: 1,
  noteNotFound: 1,
  noteNoProgress: 1,
  recordReply: 1,
  markReply: 1,
  updateWorkflow: 2,
  lease: 1,
  takeFollow: 2,
  recordEffect: 1,
  releaseHold: 1,
  takeToken: 1,
  noteProtocolError: 1,
} as const;
/** A journal script's verb (its file is `lua/<verb>-<key count>.lua`). */
export type ScriptName = keyof typeof SCRIPTS;

/** Runs one journal script with its keys and arguments; resolves to the script's reply. */
export type ScriptCaller = (name: ScriptName, keys: string[], args: (string | number)[]) => Promise<unknown>;

const scriptSource = (name: ScriptName) =>
  readFileSync(new URL(`./lua/${name}-${SCRIPTS[name]}.lua`, import.meta.url), 'utf8');

/** Registers every script on `redis` (once per connection) and returns the caller. */
export function defineScripts(redis: Redis | Cluster): ScriptCaller {
  for (const name of Object.keys(SCRIPTS) as ScriptName[]) {
    const commandName = `da2a_${SCRIPT_VERSION}_${name}`;
    if (!(commandName in redis)) {
      redis.defineCommand(commandName, { numberOfKeys: SCRIPTS[name], lua: scriptSource(name) });
    }
  }
  return (name, keys, args) => {
    const command = (redis as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>)[`da2a_${SCRIPT_VERSION}_${name}`]!;
    return command.call(redis, ...keys, ...args);
  };
}

/** One call of a script in a batch: its keys and arguments. */
export interface ScriptCall {
  keys: string[];
  args: (string | number)[];
}

/**
 * Runs one script many times with one round trip: a pipeline on a standalone Redis (one socket write);
 * on a Cluster the calls go out at once, each to its own slot. Replies in call order.
 * @throws the first call's error, if any failed.
 */
export async function callScriptMany(redis: Redis | Cluster, name: ScriptName, calls: readonly ScriptCall[]): Promise<unknown[]> {
  const commandName = `da2a_${SCRIPT_VERSION}_${name}`;
  type Command = (...a: unknown[]) => unknown;
  if (calls.length === 0) return [];
  if (redis instanceof Cluster) {
    const command = (redis as unknown as Record<string, Command>)[commandName]!;
    return Promise.all(calls.map(({ keys, args }) => command.call(redis, ...keys, ...args)));
  }
  const pipeline = redis.pipeline();
  const command = (pipeline as unknown as Record<string, Command>)[commandName]!;
  for (const { keys, args } of calls) command.call(pipeline, ...keys, ...args);
  const replies = (await pipeline.exec()) ?? [];
  return replies.map(([error, reply]) => {
    if (error) throw error;
    return reply;
  });
}
