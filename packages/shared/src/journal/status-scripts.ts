/**
 * The status and artifact scripts declared (`defineScript`): applyStatus-5.lua, applyArtifact-2.lua, the two composed
 * (`applyArtifactThenStatus`), and noteProtocolError-1.lua: how a change becomes ARGV, and what each reply means.
 */
import { createHash } from 'node:crypto';
import type { Artifact, Message } from '@durable-a2a/a2a/pure';
import { storedArtifact } from '@durable-a2a/a2a/pure';
import { encodeRecordedError, type RecordedError } from './record.ts';
import { EARLIER_PROTOCOL_ERRORS_MAX } from './keys.ts';
import type { SuspectRoundFields } from './suspects.ts';
import type { StatusChange } from './status.ts';
import { parseAgentTimestamp } from './clock.ts';
import { arrayReply, defineScript, integerReply, outcomeDecoder, refusal, ScriptReplyError, stringReply, type Refused } from './scripts.ts';

/** The longest status message id used as a question key as it is (characters); a longer one is hashed. */
export const QUESTION_KEY_MAX = 128;

const hashedKey = (id: string): string => `sha256:${createHash('sha256').update(id).digest('hex').slice(0, 40)}`;

/**
 * Whether the agent's status message id `id` is a question key as it is: at most `QUESTION_KEY_MAX` characters, no
 * '#' and not beginning with `sha256:`. Every key the journal makes holds a '#' or begins with `sha256:`
 * (`questionKeyOf`, applyStatus-5.lua), so no agent's id can name one of them.
 */
const plainId = (id: string): boolean => id.length <= QUESTION_KEY_MAX && !id.includes('#') && !id.startsWith('sha256:');

/**
 * Identifies a question: its status message's id, else `#t` and its timestamp in ms (so "…00Z" and "…00.000Z" are the
 * same question), else '' (the script then numbers it: `#seq<n>`). An id that is not plain (longer than
 * `QUESTION_KEY_MAX`: the agent's, unbounded by A2A; or holding a '#', or beginning with `sha256:`: the forms of the
 * keys we make) becomes `sha256:` and 40 hex digits of its SHA-256. The key names the question in the journal, the
 * answer link and the notifications' ids, which refuse an occasion over 256 characters. The keys the journal makes
 * itself (`#t<ms>`, `#seq<n>`, `<key>#re<n>` for a key asked again after our answer: applyStatus-5.lua) hold a '#'
 * and the hashed ones begin with `sha256:`: no agent's id reaches them (docs/people.md "Question keys").
 */
export function questionKeyOf(statusMessage: Message | undefined, statusTimestamp: string | undefined): string {
  const id = statusMessage?.messageId;
  if (id) return plainId(id) ? id : hashedKey(id);
  const ms = parseAgentTimestamp(statusTimestamp);
  return Number.isNaN(ms) ? '' : `#t${ms}`;
}

/**
 * The key the journal gave the same status before question keys had a namespace of their own (rows journaled then
 * still hold it): the id as it is up to `QUESTION_KEY_MAX` characters, else hashed; else the timestamp in ms. '' when
 * it is `questionKeyOf`'s (nothing to read in the old form).
 */
export function legacyQuestionKeyOf(statusMessage: Message | undefined, statusTimestamp: string | undefined): string {
  const id = statusMessage?.messageId;
  let legacy: string;
  if (id) legacy = id.length <= QUESTION_KEY_MAX ? id : hashedKey(id);
  else {
    const ms = parseAgentTimestamp(statusTimestamp);
    legacy = Number.isNaN(ms) ? '' : String(ms);
  }
  return legacy === questionKeyOf(statusMessage, statusTimestamp) ? '' : legacy;
}

/**
 * Whether a status of the agent (its message and timestamp) asks the question journaled as `key` (a row's
 * `questionKey` or `replyForQuestion`): its key in either form (`questionKeyOf`, `legacyQuestionKeyOf`) is `key`, or
 * `key` is that key asked again (`<key>#re<n>`, applyStatus-5.lua). False for a status without a key.
 */
export function asksQuestion(key: string | undefined, statusMessage: Message | undefined, statusTimestamp: string | undefined): boolean {
  if (!key) return false;
  const asked = questionKeyOf(statusMessage, statusTimestamp);
  if (asked === '') return false;
  const legacy = legacyQuestionKeyOf(statusMessage, statusTimestamp);
  const base = /^(.+)#re\d+$/.exec(key)?.[1];
  return [key, base].some((candidate) => candidate !== undefined && (candidate === asked || (legacy !== '' && candidate === legacy)));
}

/**
 * How a change's new task id is bound (applyStatus-5.lua ARGV[12]): `bound` by the caller first (`bindTask`),
 * `unbound` (the script asks: TASK_NOT_BOUND), or in the script itself, in the owner key `key` (one server only).
 */
export type TaskBinding = 'bound' | 'unbound' | { key: string; ttlMs: number; owner: string };

/**
 * applyStatus-5.lua's input: the change, the journal's clock, the binding, whether the script writes a handover's
 * check, and the version of the row the caller holds (undefined: none; the reply then carries the whole row).
 */
export interface ApplyStatusInput {
  change: StatusChange;
  nowMs: number;
  binding: TaskBinding;
  checkHere: boolean;
  heldVersion: number | undefined;
  /** The limit on a delegation's artifact bytes (`artifactBytesPerDelegation`): an unfinished Task's merge that would pass it replaces instead. */
  artifactBytesPerDelegation: number;
  /** The limit on the artifacts a delegation holds (`artifactsPerDelegation`): an unfinished Task's merge that would pass it replaces instead. */
  artifactsPerDelegation: number;
}

/**
 * applyStatus-5.lua's ARGV positions (1-based) of the arguments after the `STATUS_ARGUMENTS_ALWAYS` every call sends,
 * by name: the script holds the same numbers in its `AT_*` locals (`statusMessage` is `AT_STATUS_MESSAGE`, …;
 * test/journal/apply-status-argv.test.ts fails when the two differ, or when the script reads one of these positions by
 * a number of its own). `artifactsAt`: the first of a Task's N artifact quadruples; after them the count limit
 * (`artifactsAt + 4N`) and the error of a COMPLETED change whose cut status message is its result
 * (`artifactsAt + 1 + 4N`; N = 0 without a list).
 */
export const APPLY_STATUS_ARGV = {
  statusMessage: 16,
  result: 17,
  error: 18,
  namedTaskUnread: 19,
  stream: 20,
  unsent: 21,
  wordsCut: 22,
  wordsOn: 23,
  artifactCount: 24,
  artifactBytes: 25,
  artifactBytesLimit: 26,
  artifacts: 27,
} as const;

/**
 * applyStatus-5.lua's ARGV for `change` (see the script's header): the 15 every change has, then those most changes
 * lack, each at its named position (`APPLY_STATUS_ARGV`), '' when absent, with the '' ones at the end left out (the
 * script reads a missing one as '': each argument costs redis-server about 1,000 instructions).
 */
function statusArguments({ change, nowMs, binding, checkHere, heldVersion, artifactBytesPerDelegation, artifactsPerDelegation }: ApplyStatusInput): (string | number)[] {
  const timestampMs = parseAgentTimestamp(change.statusTimestamp);
  const args: (string | number)[] = [
    change.fence ?? '',
    change.expectedVersion ?? '',
    change.mode,
    change.state,
    Number.isNaN(timestampMs) ? '' : timestampMs,
    change.statusTimestamp ?? '',
    change.taskId ?? '',
    change.contextId ?? '',
    nowMs,
    questionKeyOf(change.questionWords ? undefined : change.statusMessage, change.statusTimestamp),
    legacyQuestionKeyOf(change.questionWords ? undefined : change.statusMessage, change.statusTimestamp),
    binding === 'bound' ? '1' : binding === 'unbound' ? '' : `here:${binding.ttlMs}:${binding.owner}`,
    change.endsLease?.token ?? '',
    leaseEnding(change.endsLease, checkHere),
    heldVersion ?? '',
  ];
  /** `value` at ARGV[`at`] (the positions before it that nothing took: ''). */
  const put = (at: number, value: string | number): void => {
    while (args.length < at - 1) args.push('');
    args[at - 1] = value;
  };
  const at = APPLY_STATUS_ARGV;
  put(at.statusMessage, change.statusMessage ? JSON.stringify(change.statusMessage) : '');
  put(at.result, change.result === undefined ? '' : JSON.stringify(change.result));
  put(at.error, change.error ? encodeRecordedError(change.error) : '');
  put(at.namedTaskUnread, change.namedTaskUnread ? '1' : '');
  put(at.stream, change.stream ?? '');
  put(at.unsent, change.unsent ? (change.unsent.sendStartedAt ?? '-') : '');
  put(at.wordsCut, change.wordsCut ?? '');
  put(at.wordsOn, change.questionWords && change.questionWordsOn !== undefined ? change.questionWordsOn : '');
  const count = change.artifacts?.length ?? 0;
  if (change.artifacts) {
    const stored = change.artifacts.map((artifact) => storedArtifact(artifact));
    put(at.artifactCount, String(stored.length));
    put(at.artifactBytes, String(stored.reduce((sum, artifact) => sum + artifact.bytes, 0)));
    put(at.artifactBytesLimit, String(artifactBytesPerDelegation));
    stored.forEach(({ artifactId, meta, parts, bytes }, index) => {
      put(at.artifacts + 4 * index, artifactId);
      put(at.artifacts + 4 * index + 1, meta);
      put(at.artifacts + 4 * index + 2, parts);
      put(at.artifacts + 4 * index + 3, String(bytes));
    });
    put(at.artifacts + 4 * count, String(artifactsPerDelegation));
  }
  // The error of a COMPLETED change whose cut status message is its result, after the list (or where it would begin).
  if (change.overLimitIfResult) put(at.artifacts + 1 + 4 * count, encodeRecordedError(change.overLimitIfResult));
  let end = args.length;
  while (end > STATUS_ARGUMENTS_ALWAYS && args[end - 1] === '') end -= 1;
  return end === args.length ? args : args.slice(0, end);
}

/** How many of applyStatus-5.lua's arguments every call sends (ARGV[1..15]; the rest are left out when '' at the end). */
export const STATUS_ARGUMENTS_ALWAYS = 15;

/** applyStatus-5.lua's ARGV[14]; a handover's check time only when the script may write the index (`checkHere`). */
function leaseEnding(endsLease: StatusChange['endsLease'], checkHere: boolean): string {
  if (endsLease === undefined) return '';
  if (endsLease.when !== 'handover') return endsLease.when;
  const checkAt = checkHere && endsLease.checkAt !== undefined ? String(Math.max(0, Math.round(endsLease.checkAt))) : '';
  return `handover:${Math.max(1, Math.round(endsLease.durationMs))}:${checkAt}:${endsLease.to}`;
}

/** Why a status change was not applied (applyStatus-5.lua `{0, reason}`). */
export type IgnoredReason = 'finished' | 'stale' | 'regress' | 'duplicate';
const IGNORED_REASONS: ReadonlySet<string> = new Set<IgnoredReason>(['finished', 'stale', 'regress', 'duplicate']);

/**
 * applyStatus-5.lua's reply, decoded. Applied: the row as written (`whole`), or only the change against the caller's
 * copy at the version it named (the fields written and those written elsewhere without a version bump); `flags`
 * (state, cancelRequested, stopping) when it changed to an unfinished state and the workflow row was there;
 * `finished` (the workflow row and its delegation ids) when it changed to a finished state; `followFence` when the
 * send lease was handed to the follow. `leftOut` (a change carrying a Task's artifacts, applied or ignored but for
 * 'finished'): the ids of the artifacts the row held that the Task's list leaves out, in their held order, read in the
 * same script (kept when the Task is unfinished, dropped when it is finished).
 */
export type ApplyStatusOutcome =
  | {
      applied: true;
      leftOut?: string[];
      /**
       * An unfinished Task's change (review16m): the ids of the held artifacts its list carried with other content
       * (parts or meta) than the stored copy, which it wrote over; in the Task's order.
       */
      rewritten?: string[];
      version: number;
      row: Record<string, string>;
      whole: boolean;
      flags?: readonly [state: string, cancelRequested: string, stopping: string];
      finished?: { workflow: Record<string, string>; delegationIds: string[] };
      followFence?: number;
    }
  | { applied: false; reason: IgnoredReason; leftOut?: string[] }
  | Refused;

/** A flat field/value list (HGETALL's reply) as a hash. */
function hashOf(flat: unknown[], script: string): Record<string, string> {
  const hash: Record<string, string> = {};
  for (let index = 0; index + 1 < flat.length; index += 2) hash[stringReply(flat[index], script)] = stringReply(flat[index + 1], script);
  return hash;
}

function decodeApplyStatus(reply: unknown, script: string): ApplyStatusOutcome {
  const [codeReply, detail, row, flags, finished, followFence, whole, appliedLeftOut, rewritten] = arrayReply(reply, script);
  const code = integerReply(codeReply, script);
  if (code < 0) return refusal(code, script, detail);
  const idsOf = (ids: unknown, name = 'leftOut') => (ids === undefined ? {} : { [name]: arrayReply(ids, script).map((id) => stringReply(id, script)) });
  if (code === 0) {
    const reason = stringReply(detail, script);
    if (!IGNORED_REASONS.has(reason)) throw new ScriptReplyError(script, reply);
    return { applied: false, reason: reason as IgnoredReason, ...idsOf(row) };
  }
  const flagList = arrayReply(flags ?? [], script).map((flag) => stringReply(flag, script));
  const finishedList = arrayReply(finished ?? [], script);
  return {
    applied: true,
    version: integerReply(detail, script),
    row: hashOf(arrayReply(row ?? [], script), script),
    whole: integerReply(whole, script) === 1,
    ...(flagList.length === 3 ? { flags: [flagList[0]!, flagList[1]!, flagList[2]!] as const } : {}),
    ...(finishedList.length === 2
      ? { finished: { workflow: hashOf(arrayReply(finishedList[0], script), script), delegationIds: arrayReply(finishedList[1], script).map((id) => stringReply(id, script)) } }
      : {}),
    ...(integerReply(followFence, script) > 0 ? { followFence: integerReply(followFence, script) } : {}),
    ...idsOf(appliedLeftOut),
    ...idsOf(rewritten, 'rewritten'),
  };
}

/** applyStatus-5.lua's keys (see its header). */
const STATUS_KEYS = ['delegation', 'artifacts', 'lease', 'taskOwner', 'index'] as const;

/** applyStatus-5.lua: one observed status or local outcome, forward only. */
export const applyStatusScript = defineScript({ name: 'applyStatus', keys: STATUS_KEYS, encode: statusArguments, decode: decodeApplyStatus });

/** What an artifact update did: 'applied', 'sealed' (dropped after the seal) or 'finished' (the delegation is). */
export type ArtifactOutcome = 'applied' | 'sealed' | 'finished';

/** One artifact update as a stream carries it (TaskArtifactUpdateEvent's fields, spec §4.2.2). */
export interface ArtifactUpdate {
  artifact: Artifact;
  append?: boolean;
  lastChunk?: boolean;
}

/** applyArtifact-2.lua's input: the update, the journal's clock and the delegation's artifact limits (bytes, count). */
export interface ApplyArtifactInput {
  fence: number | undefined;
  update: ArtifactUpdate;
  nowMs: number;
  artifactBytesPerDelegation: number;
  artifactsPerDelegation: number;
}

/** applyArtifact-2.lua's ARGV for one update. */
function artifactArguments({ fence, update, nowMs, artifactBytesPerDelegation, artifactsPerDelegation }: ApplyArtifactInput): (string | number)[] {
  const { artifactId, meta, parts, bytes, entryBytes } = storedArtifact(update.artifact);
  return [fence ?? '', artifactId, meta, parts, update.append ? '1' : '0', update.lastChunk ? '1' : '0', nowMs, bytes, artifactBytesPerDelegation, entryBytes, artifactsPerDelegation];
}

const ARTIFACT_OUTCOMES: ReadonlySet<string> = new Set<ArtifactOutcome>(['applied', 'sealed', 'finished']);

function decodeApplyArtifact(reply: unknown, script: string): ArtifactOutcome | Refused {
  const [codeReply, detail] = arrayReply(reply, script);
  const code = integerReply(codeReply, script);
  if (code < 0) return refusal(code, script, detail);
  const outcome = stringReply(detail, script);
  if (!ARTIFACT_OUTCOMES.has(outcome)) throw new ScriptReplyError(script, reply);
  return outcome as ArtifactOutcome;
}

/** applyArtifact-2.lua: one artifact update (append, replace, seal). */
export const applyArtifactScript = defineScript({ name: 'applyArtifact', keys: ['delegation', 'artifacts'], encode: artifactArguments, decode: decodeApplyArtifact });

/**
 * `applyArtifactThenStatus` (scripts.ts composes it): the artifact update, then the status change unless the update was
 * refused (`status` then absent).
 */
export const applyArtifactThenStatusScript = defineScript({
  name: 'applyArtifactThenStatus',
  keys: STATUS_KEYS,
  encode: (input: { artifact: ApplyArtifactInput; status: ApplyStatusInput }) => {
    const first = artifactArguments(input.artifact);
    return [first.length, ...first, ...statusArguments(input.status)];
  },
  decode: (reply, script): { artifact: ArtifactOutcome | Refused; status?: ApplyStatusOutcome } => {
    const [artifact, status] = arrayReply(reply, script);
    return { artifact: decodeApplyArtifact(artifact, script), ...(status === undefined ? {} : { status: decodeApplyStatus(status, script) }) };
  },
});

/** noteSuspect-1.lua: the suspect kept (finished row or not), already pending, or not kept (counted lost). */
export const noteSuspectScript = defineScript({
  name: 'noteSuspect',
  keys: ['delegation'],
  encode: (input: { taskId: string; cap: number }) => [input.taskId, input.cap],
  decode: outcomeDecoder({ 1: 'kept', 2: 'pending', 3: 'lost' }),
});

/** What one round of suspect reads left (clearSuspects-1.lua). */
export interface SuspectsLeft {
  /** Ids still pending. */
  pending: number;
  /** Suspects counted lost so far (not kept, or never read to a conclusion). */
  lost: number;
  /** Rounds in a row in which a pending suspect could not be read (0 once one round reads all it tried). */
  rounds: number;
}

/** clearSuspects-1.lua: the read ids removed, the unread kept (a round counted), the unreadable counted lost. */
export const clearSuspectsScript = defineScript({
  name: 'clearSuspects',
  keys: ['delegation'],
  encode: (input: { rounds: number; at: number; claim: string; read: readonly string[]; unread: readonly string[]; unreadable: readonly string[] }) => [
    input.rounds,
    input.at,
    input.claim,
    input.read.length,
    ...input.read,
    input.unread.length,
    ...input.unread,
    ...input.unreadable,
  ],
  decode: (reply, script): SuspectsLeft => {
    const [pending, lost, rounds] = arrayReply(reply, script).map((value) => integerReply(value, script));
    return { pending: pending ?? 0, lost: lost ?? 0, rounds: rounds ?? 0 };
  },
});

/**
 * What claiming a round of suspect reads found (claimSuspectRound-1.lua): `claimed` (this claimer reads), `finished`
 * (the row is gone, or finished while the claimer read it unfinished: nothing to read), or `moved`: another round was claimed or ended since the claimer
 * looked, or a claim still holds; the row's round fields as they are now, to decide again.
 */
export type SuspectRoundClaim = { kind: 'claimed' } | { kind: 'finished' } | { kind: 'moved'; row: SuspectRoundFields };

/** claimSuspectRound-1.lua: the round claimed compare-and-set on the round fields the claimer saw. */
export const claimSuspectRoundScript = defineScript({
  name: 'claimSuspectRound',
  keys: ['delegation'],
  encode: (input: { token: string; now: number; durationMs: number; seen: SuspectRoundFields; finished?: boolean }) => [
    input.token,
    input.now,
    input.durationMs,
    input.seen.suspectReadRounds,
    input.seen.suspectReadRoundAt ?? '',
    input.seen.suspectRoundBy ?? '',
    input.finished ? '1' : '0',
  ],
  decode: (reply, script): SuspectRoundClaim => {
    const [outcome, rounds, roundAt, by, until] = arrayReply(reply, script);
    const code = integerReply(outcome, script);
    if (code === 1) return { kind: 'claimed' };
    if (code === 0) return { kind: 'finished' };
    if (code !== 2) throw new ScriptReplyError(script, reply);
    const at = integerReply(roundAt, script);
    const untilMs = integerReply(until, script);
    const claimer = stringReply(by, script);
    return {
      kind: 'moved',
      row: {
        suspectReadRounds: integerReply(rounds, script),
        ...(at > 0 ? { suspectReadRoundAt: at } : {}),
        ...(claimer !== '' ? { suspectRoundBy: claimer, suspectRoundUntil: untilMs } : {}),
      },
    };
  },
});

/** noteDuplicateTask-1.lua: another task holding our message, noted on a finished row (state unchanged). */
export const noteDuplicateTaskScript = defineScript({
  name: 'noteDuplicateTask',
  keys: ['delegation'],
  encode: (input: { error: RecordedError; nowMs: number; history: string }) => [encodeRecordedError(input.error), input.nowMs, EARLIER_PROTOCOL_ERRORS_MAX, input.history],
  decode: outcomeDecoder({ 1: 'noted', 2: 'already noted', 0: 'unfinished' }),
});

/** noteSuspectsUnchecked-1.lua: lost suspects told of on a finished row (state unchanged), once per count. */
export const noteSuspectsUncheckedScript = defineScript({
  name: 'noteSuspectsUnchecked',
  keys: ['delegation'],
  encode: (input: { lost: number; nowMs: number; history: string }) => [input.lost, input.nowMs, input.history],
  decode: outcomeDecoder({ 1: 'noted', 2: 'already noted', 0: 'unfinished' }),
});

/** noteProtocolError-1.lua: 'journaled', or 'finished' (the delegation is: left alone). */
export const noteProtocolErrorScript = defineScript({
  name: 'noteProtocolError',
  keys: ['delegation'],
  encode: (input: { error: RecordedError; nowMs: number }) => [encodeRecordedError(input.error), input.nowMs, EARLIER_PROTOCOL_ERRORS_MAX],
  decode: outcomeDecoder({ 1: 'journaled', 0: 'finished' }),
});
