/**
 * The journal scripts' shared vocabulary, written once in TypeScript: the refusal codes every script returns (one
 * meaning per code across all scripts, the BullMQ `error-code.ts` pattern) and the state sets. `luaPrelude` turns
 * both into the Lua text a script includes (`--- @include "prelude"`, scripts.ts), so no script keeps a copy of
 * its own; the generated text is part of each script's digest, so a change here is a new script version.
 */
import { FINISHED_STATES, FINISHED_WORKFLOW_STATES, JOURNAL_STATE_RANK, PARKED_STATES } from './states.ts';

/**
 * Every negative code a journal script returns, and its one meaning. Scripts return them by name (`CODE.FENCE_LOST`
 * in Lua); `defineScript` decoders turn them back into these names. Positive and zero replies are each script's own
 * (its header says what they mean).
 */
export const SCRIPT_CODES = {
  /** The row the script changes is not there: the delegation's (or, for the workflow scripts, the workflow's). */
  DELEGATION_MISSING: -1,
  /** The caller's fencing token is not the row's: another run claimed the delegation. Stop writing. */
  FENCE_LOST: -2,
  /** The caller's expected version is not the row's: it decided from an older read. */
  VERSION_CONFLICT: -3,
  /** The row's state does not allow this move (not INTENT, not parked, a finished workflow). */
  WRONG_STATE: -4,
  /** The agent named a task id other than the one the delegation is bound to. */
  TASK_MISMATCH: -5,
  /** A SendMessage may already have left (sendStartedAt is set): only the reconciler decides. */
  MAY_HAVE_SENT: -6,
  /** The task id is bound to another delegation (the detail names it); nothing was written. */
  TASK_BOUND_ELSEWHERE: -7,
  /** The delegation's artifacts would pass `artifactBytesPerDelegation`: nothing stored, the attempt ended. */
  ARTIFACT_LIMIT: -8,
  /** A new task id is not bound yet: bind it (`bindTask`) and call again (the detail is the Agent Card URL). Never thrown. */
  TASK_NOT_BOUND: -9,
  /** The tenant has its quota of unfinished workflows (`TenantQuota.maxInFlight`): nothing was created. */
  QUOTA_IN_FLIGHT: -10,
  /** The tenant has its quota of kept workflows (`TenantQuota.maxStored`): nothing was created. */
  QUOTA_STORED: -11,
  /** The reply's messageId is in the workflow's answer index with other content (recordReply-2.lua): nothing written. */
  REPLY_CONFLICT: -12,
  /** The workflow's answer index holds its most answers (`ANSWERS_PER_WORKFLOW_MAX`): the answer was not journaled. */
  ANSWER_LIMIT: -13,
} as const;

/** A refusal's name (`SCRIPT_CODES`). */
export type ScriptCode = keyof typeof SCRIPT_CODES;

const CODE_NAMES = new Map<number, ScriptCode>(Object.entries(SCRIPT_CODES).map(([name, code]) => [code, name as ScriptCode]));

/**
 * The name of a script's negative reply code.
 * @throws Error for a code that is not in `SCRIPT_CODES` (a script and this table disagree: a bug, never data)
 */
export function scriptCodeName(code: number, script: string): ScriptCode {
  const name = CODE_NAMES.get(code);
  if (!name) throw new Error(`${script}: unknown journal script code ${code}`);
  return name;
}

/** `names` as a Lua set constructor (`{ NAME = true, … }`); names are plain identifiers (state names). */
function luaSet(names: Iterable<string>): string {
  return `{ ${[...names].map((name) => `${name} = true`).join(', ')} }`;
}

/**
 * The Lua prelude every script that needs codes or states includes: `CODE` (name → negative code), `FINISHED`,
 * `PARKED`, `FINISHED_WORKFLOW` (sets of state names) and `RANK` (journal state → rank, forward only). `uses`: whether
 * the rest of the script names a table, or a code (`CODE.<name>`), default every one. A script builds its tables on
 * every call (about 230 redis-server instructions an entry, 1 µs for all five), so it gets only those it names, and
 * `CODE` only the codes it names.
 */
export function luaPrelude(uses: (name: string) => boolean = () => true): string {
  const codes = Object.entries(SCRIPT_CODES)
    .filter(([name]) => uses(`CODE.${name}`))
    .map(([name, code]) => `${name} = ${code}`);
  const ranks = Object.entries(JOURNAL_STATE_RANK).map(([state, rank]) => `${state} = ${rank}`);
  const tables: [string, string][] = [
    ['CODE', `{ ${codes.join(', ')} }`],
    ['FINISHED', luaSet(FINISHED_STATES)],
    ['PARKED', luaSet(PARKED_STATES)],
    ['FINISHED_WORKFLOW', luaSet(FINISHED_WORKFLOW_STATES)],
    ['RANK', `{ ${ranks.join(', ')} }`],
  ];
  return [
    '-- Generated at load from journal/script-codes.ts and journal/states.ts (scripts.ts): the one copy of these tables.',
    ...tables.filter(([name]) => uses(name)).map(([name, value]) => `local ${name} = ${value}`),
  ].join('\n');
}
