/**
 * One normalizer for the enum values agents send (docs/a2a-edge.md "Spellings (R26)"; field case R26).
 * Agents in the wild spell the same task state or role many ways: 1.0
 * `TASK_STATE_INPUT_REQUIRED`, 0.3 `input-required`, spec examples and SDKs
 * `input_required` / `INPUT_REQUIRED` / `InputRequired`, the 0.3 proto's British
 * `TASK_STATE_CANCELLED`, and ProtoJSON enum numbers (proto order, spec §5.5).
 * Every binding and version reads them through here into the 1.0 model; a value
 * none of these spellings explains is an `UnknownWireValueError` (permanent for
 * the attempt: the same agent will send the same value again).
 */
import { z } from 'zod';
import { ROLES, TASK_STATES } from './enums.ts';
import type { Role, TaskState } from './schema.ts';

/** Folded spelling (lower case, no separators, no enum prefix) → 1.0 value. */
const STATE_BY_WORD: ReadonlyMap<string, TaskState> = new Map([
  ...TASK_STATES.map((state) => [fold(state, 'taskstate'), state] as const),
  ['cancelled', 'TASK_STATE_CANCELED'],
  ['unknown', 'TASK_STATE_UNSPECIFIED'],
]);
const ROLE_BY_WORD: ReadonlyMap<string, Role> = new Map(ROLES.map((role) => [fold(role, 'role'), role] as const));

/** `TASK_STATE_INPUT_REQUIRED`, `input-required`, `Input Required` → `inputrequired` (prefix removed). */
function fold(value: string, prefix: string): string {
  const word = value.toLowerCase().replace(/[^a-z0-9]/g, '');
  return word.startsWith(prefix) && word.length > prefix.length ? word.slice(prefix.length) : word;
}

function fromWire<T>(value: unknown, byNumber: readonly T[], byWord: ReadonlyMap<string, T>, prefix: string, exact: ReadonlyMap<string, T>): T | undefined {
  if (typeof value === 'number') return Number.isInteger(value) ? byNumber[value] : undefined;
  if (typeof value !== 'string' || value.length > 64) return undefined;
  return exact.get(value) ?? byWord.get(fold(value, prefix));
}

/**
 * The spellings agents send most, as they are (the 1.0 values, `TASK_STATE_COMPLETED`, `ROLE_USER`, and the folded
 * words, 0.3's `completed`, `user`), each mapped to what the fold gives it: read without the fold's lower-casing and
 * regular expression. Any other spelling is folded.
 */
function exactSpellings<T extends string>(values: readonly T[], byWord: ReadonlyMap<string, T>, prefix: string): ReadonlyMap<string, T> {
  const exact = new Map<string, T>();
  for (const spelling of [...values, ...byWord.keys()]) {
    const value = byWord.get(fold(spelling, prefix));
    if (value !== undefined) exact.set(spelling, value);
  }
  return exact;
}
const EXACT_STATES = exactSpellings(TASK_STATES, STATE_BY_WORD, 'taskstate');
const EXACT_ROLES = exactSpellings(ROLES, ROLE_BY_WORD, 'role');

/** Any known spelling of a task state → the 1.0 value; `undefined` when none explains it. */
export const taskStateFromWire = (value: unknown): TaskState | undefined => fromWire(value, TASK_STATES, STATE_BY_WORD, 'taskstate', EXACT_STATES);

/** Any known spelling of a message role (`user`, `ROLE_AGENT`, `Agent`, 2, ...) → the 1.0 value. */
export const roleFromWire = (value: unknown): Role | undefined => fromWire(value, ROLES, ROLE_BY_WORD, 'role', EXACT_ROLES);

/** Marker on a zod issue raised for a value no spelling explains; `validateWith` turns it into `UnknownWireValueError`. */
export const UNKNOWN_WIRE_VALUE = 'unknownWireValue';

function wireEnum<T extends string>(what: string, read: (value: unknown) => T | undefined) {
  return z.union([z.string(), z.number()]).transform((value, context): T => {
    const known = read(value);
    if (known !== undefined) return known;
    context.addIssue({ code: 'custom', message: `unknown ${what} ${JSON.stringify(value).slice(0, 80)}`, params: { [UNKNOWN_WIRE_VALUE]: true } });
    return z.NEVER;
  });
}

/** A task state as agents send it (any spelling above) → 1.0 `TaskState`. */
export const WireTaskStateSchema = wireEnum<TaskState>('task state', taskStateFromWire);
/** A role as agents send it → 1.0 `Role`. */
export const WireRoleSchema = wireEnum<Role>('role', roleFromWire);
