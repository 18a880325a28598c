/**
 * A workflow's history (docs/people.md "History"): what people and the fleet did around its delegations, in the order it
 * happened: every question an agent asked (its message, when, the attempt whose request it belongs to), every
 * answer (its parts, when, who), answers an agent refused, cancels and who asked, a person's resolutions,
 * re-delegations with their reasons, verifications with their evidence, and compensations (undo steps) as they
 * start. The attempts' own records (sent, finished, their states) stay in the delegation rows; the history keeps
 * what those rows overwrite (a question once answered, a reply, who acted).
 *
 * Storage: a Redis list `JournalKeys.history` beside the workflow row, one JSON text per entry, appended inside the
 * journal script of the transition the entry describes (`appendHistory` in lua/includes/history.lua), never in a
 * second round trip. Append-only and bounded: at most `HISTORY_LIMITS.entries` entries and `HISTORY_LIMITS.bytes`
 * bytes of entry text; past either the oldest entries are dropped and counted (`historyDropped` on the workflow
 * row), which a reader shows as one "n entries dropped" marker first. One entry is at most
 * `HISTORY_LIMITS.entryBytes` (`historyEntryText` cuts larger contents). When the workflow finishes, the entries go
 * into its compacted record byte for byte (`"history":[…]`, compacted-record.ts) within its byte limit.
 *
 * Times are ms since the epoch here (the journal's clock); views give them as ISO 8601.
 */
import { z } from 'zod';
import { PartSchema, type Part } from '@durable-a2a/a2a/pure';

/** The bounds of a workflow's history; written into the Lua include at load (`historyLimitsLua`). */
export const HISTORY_LIMITS = {
  /** Entries kept per workflow (the oldest are dropped first). */
  entries: 500,
  /** Bytes of entry text kept per workflow (128 KiB: an eighth of the compacted record's 1 MiB). */
  bytes: 128 * 1024,
  /** Bytes of one entry: an agent's question or an answer past this keeps its text, cut (`cut: true`). */
  entryBytes: 8 * 1024,
  /** Bytes of text kept of a cut question, answer, reason or evidence (UTF-8, cut on a character boundary). */
  textBytes: 4 * 1024,
} as const;

/** Who acted: `token <name>` (an API token's name), `session <name>` (/ui, signed in with that token), `link <id>`, or what a library caller passes. At most 200 characters. */
export const ActorSchema = z.string().min(1).max(200);

/** The message of a question or an answer, as kept: its parts (text cut when `cut`) and its messageId. */
const KeptMessageSchema = z.object({ messageId: z.string().optional(), parts: z.array(PartSchema) }).loose();

const at = z.number().int().nonnegative();
const delegation = { delegationId: z.string(), step: z.string().optional() };

/** Entries by kind; an entry of a kind this release does not know is kept as it is (`UnknownEntrySchema`). */
export const HISTORY_ENTRY_SCHEMAS = {
  /** An agent asked (INPUT_REQUIRED / AUTH_REQUIRED); `at`: when it was journaled. The request it belongs to is the attempt's message. */
  question: z.object({ kind: z.literal('question'), at, ...delegation, state: z.string(), message: KeptMessageSchema.optional(), cut: z.literal(true).optional() }),
  /** A person answered (journaled before it is sent). */
  answer: z.object({ kind: z.literal('answer'), at, ...delegation, messageId: z.string(), parts: z.array(PartSchema), by: ActorSchema.optional(), cut: z.literal(true).optional() }),
  /** The agent refused an answer for good; the question is open again. */
  'answer-refused': z.object({ kind: z.literal('answer-refused'), at, ...delegation, messageId: z.string(), reason: z.string() }),
  /** A person asked to cancel the workflow. */
  cancel: z.object({ kind: z.literal('cancel'), at, by: ActorSchema.optional() }),
  /** A person decided on a workflow in NEEDS_ATTENTION. */
  resolution: z.object({ kind: z.literal('resolution'), at, action: z.enum(['retry', 'abandon']), code: z.string().optional(), by: ActorSchema.optional() }),
  /** A step went to a new attempt after earlier ones failed; `previous`: each failed attempt and why. */
  redelegation: z.object({
    kind: z.literal('redelegation'),
    at,
    ...delegation,
    attempt: z.number().int(),
    agentCardUrl: z.string(),
    previous: z.array(z.object({ delegationId: z.string(), agentCardUrl: z.string().optional(), taskId: z.string().optional(), reason: z.string() })),
  }),
  /** A verifier's finding about an attempt's effect, with its evidence (cut to text when too large). */
  verification: z.object({ kind: z.literal('verification'), at, ...delegation, effect: z.enum(['present', 'absent', 'unknown']), evidence: z.unknown().optional(), cut: z.literal(true).optional() }),
  /**
   * A task of the agent other than ours (`otherTaskId`) holds our message, read after the attempt finished
   * (`state`; `taskId`: our task, absent when it finished without one): the agent may have done the work twice
   * (noteDuplicateTask-1.lua). The attempt's state and the workflow's outcome stand; a person checks.
   */
  'duplicate-task': z.object({ kind: z.literal('duplicate-task'), at, ...delegation, state: z.string().optional(), taskId: z.string().optional(), otherTaskId: z.string() }),
  /**
   * Tasks that may hold our message too (suspects a refused push named) could not be read after the attempt finished
   * (`lost`: how many, the row's `suspectsLost`; `state`; `taskId`: our task, absent when it finished without one): the
   * agent may have done the work twice and it could not be checked (noteSuspectsUnchecked-1.lua). The attempt's state
   * and the workflow's outcome stand; a person checks.
   */
  'duplicate-unchecked': z.object({ kind: z.literal('duplicate-unchecked'), at, ...delegation, state: z.string().optional(), taskId: z.string().optional(), lost: z.number().int().positive() }),
  /** An undo step (compensation) journaled for the attempt `compensates`. */
  compensation: z.object({ kind: z.literal('compensation'), at, ...delegation, compensates: z.string(), agentCardUrl: z.string() }),
} as const;

/** A history entry of a known kind. */
export type KnownHistoryEntry = { [K in keyof typeof HISTORY_ENTRY_SCHEMAS]: z.output<(typeof HISTORY_ENTRY_SCHEMAS)[K]> }[keyof typeof HISTORY_ENTRY_SCHEMAS];

/** An entry another release wrote, of a kind this one does not know: kept and shown by its kind and time. */
export const UnknownEntrySchema = z.object({ kind: z.string(), at }).loose();
export type UnknownHistoryEntry = z.output<typeof UnknownEntrySchema>;

/** One history entry as read. */
export type HistoryEntry = KnownHistoryEntry | UnknownHistoryEntry;

/** A workflow's history as read: entries oldest first, and how many older ones the bounds dropped. */
export interface History {
  entries: HistoryEntry[];
  dropped: number;
}

/** Parses one stored entry (text or parsed JSON); undefined when it is not an entry at all (never throws: history is evidence, not state). */
export function parseHistoryEntry(value: unknown): HistoryEntry | undefined {
  let parsed: unknown = value;
  if (typeof value === 'string') {
    try {
      parsed = JSON.parse(value);
    } catch {
      return undefined;
    }
  }
  const kind = (parsed as { kind?: unknown } | null)?.kind;
  const known = typeof kind === 'string' && Object.hasOwn(HISTORY_ENTRY_SCHEMAS, kind) ? HISTORY_ENTRY_SCHEMAS[kind as keyof typeof HISTORY_ENTRY_SCHEMAS].safeParse(parsed) : undefined;
  if (known?.success) return known.data;
  const unknown = UnknownEntrySchema.safeParse(parsed);
  return unknown.success ? unknown.data : undefined;
}

/** Parses a stored history (list texts or compacted values), dropping what is not an entry. */
export function parseHistory(values: readonly unknown[], dropped: number): History {
  return { entries: values.map(parseHistoryEntry).filter((entry): entry is HistoryEntry => entry !== undefined), dropped };
}

const encoder = new TextEncoder();
const byteLength = (text: string) => encoder.encode(text).length;

/** `text` cut to at most `bytes` UTF-8 bytes, on a character boundary. */
export function cutText(text: string, bytes: number = HISTORY_LIMITS.textBytes): string {
  if (byteLength(text) <= bytes) return text;
  let cut = '';
  let used = 0;
  for (const character of text) {
    const size = byteLength(character);
    if (used + size > bytes) break;
    cut += character;
    used += size;
  }
  return cut;
}

/** The text parts of `parts`, joined (non-text parts leave a mark of their kind). */
export function partsText(parts: readonly Part[]): string {
  return parts.map((part) => part.text ?? (part.data !== undefined ? '[data]' : '[file]')).join('');
}

/** An entry to append (a known kind, or a new kind a later change adds: `{ kind, at, … }`). */
export type HistoryEntryInput = KnownHistoryEntry | (UnknownHistoryEntry & { kind: string });

/** `entry` with its large contents cut to text (parts to one text part, evidence and reasons to their first bytes), `cut: true`. */
function cutEntry(entry: Record<string, unknown>): Record<string, unknown> {
  const cut: Record<string, unknown> = { ...entry, cut: true };
  const parts = (value: unknown) => [{ text: cutText(partsText(z.array(PartSchema).catch([]).parse(value))) }];
  if (Array.isArray(entry.parts)) cut.parts = parts(entry.parts);
  if (entry.message && typeof entry.message === 'object') cut.message = { ...(entry.message as object), parts: parts((entry.message as { parts?: unknown }).parts) };
  if (entry.evidence !== undefined) cut.evidence = cutText(JSON.stringify(entry.evidence) ?? '');
  if (typeof entry.reason === 'string') cut.reason = cutText(entry.reason);
  if (Array.isArray(entry.previous)) {
    cut.previous = (entry.previous as Record<string, unknown>[]).slice(-10).map((previous) => ({ ...previous, reason: cutText(String(previous.reason ?? ''), 500) }));
  }
  return cut;
}

/**
 * The JSON text of `entry` as stored, at most `HISTORY_LIMITS.entryBytes`: past it, its large contents are cut
 * (`cut: true`), and if that is still too large only its kind, time, attempt and who remain. Pass it to the
 * journal script that appends it (`appendHistory` in lua/includes/history.lua).
 */
export function historyEntryText(entry: HistoryEntryInput): string {
  const whole = JSON.stringify(entry);
  if (byteLength(whole) <= HISTORY_LIMITS.entryBytes) return whole;
  const cut = JSON.stringify(cutEntry(entry as Record<string, unknown>));
  if (byteLength(cut) <= HISTORY_LIMITS.entryBytes) return cut;
  const { kind, at: time, delegationId, step, by } = entry as Record<string, unknown>;
  return JSON.stringify({ kind, at: time, delegationId, step, by: typeof by === 'string' ? cutText(by, 200) : undefined, cut: true });
}

/** A script's history argument: `entry`'s text (`historyEntryText`), or '' when there is none. */
export const historyArgument = (entry: HistoryEntryInput | undefined): string => (entry ? historyEntryText(entry) : '');

/** The limits as a Lua table constructor, written into lua/includes/history.lua at load (scripts.ts). */
export function historyLimitsLua(): string {
  const { entries, bytes, entryBytes, textBytes } = HISTORY_LIMITS;
  return `{ entries = ${entries}, bytes = ${bytes}, entryBytes = ${entryBytes}, textBytes = ${textBytes} }`;
}
