/**
 * The reconciler's cheap check of a running workflow (packages/workers/src/workflow/wait-memory.ts) decides "wait"
 * again when the workflow row's version, its delegation list's length and every delegation row's version are the
 * ones its last "wait" was decided at. That holds only if no journal change of a field the decision reads
 * (`decide`'s inputs: the workflow's definition, state, stop flags and retry approvals; each attempt's state, task,
 * error, effect, artifacts, hold, step, agent) leaves every version where it was. Held here over every journal
 * script as loaded (includes expanded): a script that writes such a field, or writes fields it does not name (a
 * field list built at run time), bumps a `version` in the same script. The scripts that write neither are listed
 * with what they write, so a new script is looked at. And no journal module writes a row outside a script.
 */
import { readdirSync, readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { scriptNames, scriptText } from '../src/journal/scripts.ts';

/** Hash fields `decide` reads, through `advanceWorkflow`'s `toAttempt` and the workflow row (workflow and delegation rows alike). */
const DECISION_FIELDS = new Set([
  ...['definition', 'state', 'cancelRequested', 'stopping', 'retryApproved', 'workflowId'], // the workflow row
  ...['delegationId', 'step', 'kind', 'attempt', 'agentCardUrl', 'taskId', 'contextId', 'error', 'effect', 'artifactCount', 'held'], // each delegation row
]);
/** An older release's retry approvals (`retry:<delegationId>`, workflow-record.ts), also a decision input. */
const isDecisionField = (field: string) => DECISION_FIELDS.has(field) || field.startsWith('retry:');

/** Hash writes: the command and where its field names start among the arguments after the key, and their stride. */
const HASH_WRITES: Record<string, { first: number; stride: number }> = {
  HSET: { first: 0, stride: 2 },
  HMSET: { first: 0, stride: 2 },
  HSETNX: { first: 0, stride: 2 },
  HINCRBY: { first: 0, stride: 99 },
  HINCRBYFLOAT: { first: 0, stride: 99 },
  HDEL: { first: 0, stride: 1 },
};

/**
 * Scripts that write fields named at run time without a version bump, none of them into a workflow or delegation row:
 * what they write. Each names no decision field either.
 */
const RUN_TIME_FIELDS_ELSEWHERE: Record<string, string> = {
  finishStep: "the one-step finish compacts the workflow: its rows are deleted (the check reads them missing); its run-time HSET is the push index (`base .. ':push'`)",
  recordAgentCall: "an agent's health hash (field: the agent's card URL)",
  recordNotification: "a workflow's notifications hash (field: the event's id)",
  sendOrder: "the send order's clock hash (field: a tenant's place)",
  writeFrontPushConfig: "a task's push configs hash (field: the config's id)",
};

/** Scripts that write hash fields, all named, none a decision field, without a version bump. */
const WRITE_NO_DECISION_FIELD: string[] = [
  'agentFlow', // an agent's flow hash (pausedUntil, nextSend, nextResubscribe)
  'claim', // a delegation's fence and owner
  'claimSuspectRound', // a delegation's suspect round (suspectRoundBy, suspectRoundUntil)
  'clearSuspects', // a delegation's suspects and their read rounds
  'noteNoProgress', // a delegation's no-progress run (noProgress… fields)
  'noteNotFound', // a delegation's TaskNotFound count and first time
  'notePushConfig', // a delegation's push config state
  'noteSuspect', // a delegation's suspects
  'rebaseSendOrder', // the send order's clock hash
  'takeFollow', // a delegation's fence and owner
];

/** How the first test lists a write of fields named at run time. */
const RUN_TIME = '(fields named at run time)';

/** The code of a script: comments out. */
function codeOf(text: string): string {
  return text.replace(/--\[(=*)\[[\s\S]*?\]\1\]/g, '').replace(/--[^\n]*/g, '');
}

/** Splits a call's argument text at its top-level commas. */
function splitArguments(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let quote: string | undefined;
  let start = 0;
  for (let index = 0; index < text.length; index++) {
    const char = text[index]!;
    if (quote) {
      if (char === '\\') index++;
      else if (char === quote) quote = undefined;
    } else if (char === "'" || char === '"') quote = char;
    else if (char === '(' || char === '{' || char === '[') depth++;
    else if (char === ')' || char === '}' || char === ']') depth--;
    else if (char === ',' && depth === 0) {
      parts.push(text.slice(start, index).trim());
      start = index + 1;
    }
  }
  parts.push(text.slice(start).trim());
  return parts;
}

/** Every `redis.call(...)` of `code`, as its argument texts. */
function redisCalls(code: string): string[][] {
  const calls: string[][] = [];
  for (const match of code.matchAll(/redis\.(?:p?call)\(/g)) {
    let depth = 1;
    let index = match.index + match[0].length;
    let quote: string | undefined;
    for (; index < code.length && depth > 0; index++) {
      const char = code[index]!;
      if (quote) {
        if (char === '\\') index++;
        else if (char === quote) quote = undefined;
      } else if (char === "'" || char === '"') quote = char;
      else if (char === '(') depth++;
      else if (char === ')') depth--;
    }
    calls.push(splitArguments(code.slice(match.index + match[0].length, index - 1)));
  }
  return calls;
}

const literal = (text: string): string | undefined => text.match(/^'([^']*)'$|^"([^"]*)"$/)?.slice(1).find((value) => value !== undefined);

/** What a script's hash writes touch: decision fields it names, whether any field list is built at run time, and whether it bumps a version. */
export function hashWritesOf(text: string): { decisionFields: string[]; runTimeFields: boolean; bumpsVersion: boolean; writes: boolean } {
  const code = codeOf(text);
  const decisionFields = new Set<string>();
  let runTimeFields = false;
  let writes = false;
  for (const args of redisCalls(code)) {
    const command = literal(args[0] ?? '')?.toUpperCase();
    const shape = command ? HASH_WRITES[command] : undefined;
    if (!shape) continue;
    writes = true;
    const fields = args.slice(2).filter((_, index) => index >= shape.first && (index - shape.first) % shape.stride === 0);
    for (const field of fields) {
      const name = literal(field);
      if (name === undefined) runTimeFields = true;
      else if (isDecisionField(name)) decisionFields.add(name);
    }
  }
  // A version bump: `'version'` anywhere but in a read (HGET, HMGET, HEXISTS): as a written field, or put into a
  // field list a write sends (`flat[#flat + 1] = 'version'`, `put('version', …)`).
  const reads = redisCalls(code).filter((args) => ['HGET', 'HMGET', 'HEXISTS'].includes(literal(args[0] ?? '')?.toUpperCase() ?? ''));
  let rest = code;
  for (const args of reads) for (const arg of args) rest = rest.replace(arg, '');
  return { decisionFields: [...decisionFields].sort(), runTimeFields, bumpsVersion: /'version'|"version"/.test(rest), writes };
}

describe('every journal change a decision reads moves a version the cheap check reads', () => {
  it('a script that writes a decision field, or fields named at run time, bumps a version', () => {
    const unbumped: Record<string, string[]> = {};
    const quiet: string[] = [];
    for (const name of scriptNames()) {
      const writes = hashWritesOf(scriptText(name));
      if (!writes.writes || writes.bumpsVersion) continue;
      if (writes.decisionFields.length > 0 || writes.runTimeFields) unbumped[name] = [...writes.decisionFields, ...(writes.runTimeFields ? [RUN_TIME] : [])];
      else quiet.push(name);
    }
    for (const [name, what] of Object.entries(unbumped)) {
      // Listed: fields named at run time, into another hash, and not one decision field named.
      if (name in RUN_TIME_FIELDS_ELSEWHERE && what.length === 1 && what[0] === RUN_TIME) delete unbumped[name];
    }
    expect(unbumped).toEqual({});
    expect(quiet.sort()).toEqual([...WRITE_NO_DECISION_FIELD].sort());
  });

  it('the check finds what it must (fast-check: a write of a decision field without a version bump is found, with one it is not)', () => {
    fc.assert(
      fc.property(fc.constantFrom(...DECISION_FIELDS), fc.constantFrom('HSET', 'HDEL', 'HINCRBY'), fc.boolean(), fc.boolean(), (field, command, bump, viaFlat) => {
        const value = command === 'HDEL' ? '' : ", '1'";
        const write = viaFlat ? `local flat = { '${field}' }\nredis.call('${command}', KEYS[1], unpack(flat))` : `redis.call('${command}', KEYS[1], '${field}'${value})`;
        const text = `-- a comment naming 'version'\nlocal row = redis.call('HMGET', KEYS[1], 'version', 'state')\n${write}\n${bump ? "redis.call('HINCRBY', KEYS[1], 'version', 1)" : ''}`;
        const writes = hashWritesOf(text);
        expect(writes.bumpsVersion).toBe(bump);
        expect(writes.runTimeFields || writes.decisionFields.includes(field)).toBe(true);
      }),
    );
  });

  it('no journal module writes a hash or the delegation list outside a script', () => {
    const directory = new URL('../src/journal/', import.meta.url);
    const direct = readdirSync(directory)
      .filter((file) => file.endsWith('.ts'))
      .filter((file) => /\.(hset|hmset|hsetnx|hdel|hincrby|hincrbyfloat|rpush|lpush|lrem|lset|ltrim)\(/i.test(readFileSync(new URL(file, directory), 'utf8')));
    expect(direct).toEqual([]);
  });
});
