/**
 * The one bound on an agent's status message as the journal stores it (docs/operations.md "Limits",
 * `statusMessageBytes`). A status message may be the step's whole result (a task COMPLETED or FAILED with only a
 * status message), a question shown to a person, or a failure's reason: it is never dropped, and never cut silently.
 * Over the bound, the journal keeps an excerpt of its text and says so, in the text itself (what a person reads in a
 * question, a view, a notification) and in its metadata (`durableA2a.cut`, what a program reads).
 */
import { createHash } from 'node:crypto';
import type { Message } from '@durable-a2a/a2a/pure';
import type { RecordedError } from './record.ts';
import type { JournalState } from './states.ts';

/** The status message's cut, as `metadata.durableA2a.cut` of the message the journal keeps. */
export interface StatusMessageCut {
  /** UTF-8 bytes of the agent's whole message as JSON. */
  bytes: number;
  /** UTF-8 bytes of its text parts kept in the excerpt (the first ones, in order). */
  keptTextBytes: number;
}

/**
 * Ids the cut message keeps as they are, at most this many UTF-8 bytes each as JSON text (escapes counted: a control
 * character is 6 bytes, a CJK one 3); a longer messageId is hashed, a longer taskId or contextId dropped. Measured in
 * bytes, not characters: three ids of 256 escaped characters are 4,608 bytes, over the smallest bound (2,048) alone;
 * three of 256 bytes leave the note, the metadata and the role about 1,200 bytes of it.
 */
const KEPT_ID_BYTES = 256;

const byteLength = (text: string): number => Buffer.byteLength(text, 'utf8');

/** Whether the cut message keeps `id` as it is (`KEPT_ID_BYTES`). */
const keptId = (id: string): boolean => id.length <= KEPT_ID_BYTES && byteLength(JSON.stringify(id)) - 2 <= KEPT_ID_BYTES;

/**
 * `message` within `maxBytes` UTF-8 bytes of JSON (the journal's `statusMessageBytes`, default 64 KiB): unchanged
 * when it fits; else a Message with its role, messageId (over 256 bytes as JSON text: `sha256:` and 40 hex digits of
 * it), taskId and contextId (each dropped when over 256 bytes as JSON text), one text part holding the start of its text parts
 * (joined by a newline) followed by a line saying it was cut and how large it was, and `metadata.durableA2a.cut`
 * (`StatusMessageCut`); its other parts, metadata, extensions and referenced tasks are left out. Whatever the input,
 * the result's JSON is at most `maxBytes` bytes when `maxBytes` is at least 2,048 (the smallest the config accepts).
 */
export function boundedStatusMessage(message: Message, maxBytes: number): Message {
  // The common small message: a cheap upper bound of its JSON size within the bound says it fits, unserialized.
  if (jsonBytesAtMost(message, maxBytes)) return message;
  const whole = JSON.stringify(message);
  const bytes = byteLength(whole);
  if (bytes <= maxBytes) return message;
  const text = message.parts.flatMap((part) => (typeof part.text === 'string' ? [part.text] : [])).join('\n');
  const id = keptId(message.messageId) ? message.messageId : `sha256:${createHash('sha256').update(message.messageId).digest('hex').slice(0, 40)}`;
  const cutOf = (kept: string): Message => {
    const keptTextBytes = byteLength(kept);
    const note = `\n…[message cut by durable-a2a: ${bytes} bytes in all, the first ${keptTextBytes} bytes of its text kept]`;
    return {
      messageId: id,
      role: message.role,
      ...(message.taskId !== undefined && keptId(message.taskId) ? { taskId: message.taskId } : {}),
      ...(message.contextId !== undefined && keptId(message.contextId) ? { contextId: message.contextId } : {}),
      parts: [{ text: kept + note }],
      metadata: { durableA2a: { cut: { bytes, keptTextBytes } satisfies StatusMessageCut } },
    };
  };
  return cutOf(longestStart(text, maxBytes, (start) => byteLength(JSON.stringify(cutOf(start))) <= maxBytes));
}

/**
 * The longest start of `text`, at most `maxChars` UTF-16 units, for which `fits` holds (`fits('')` is assumed): a
 * binary search over characters (JSON escapes make a character 1 to 6 bytes), about 20 steps for the 16 MiB a response
 * may hold; never ending inside a surrogate pair. For every bound on an outside text the journal keeps as an excerpt.
 */
export function longestStart(text: string, maxChars: number, fits: (start: string) => boolean): string {
  let low = 0;
  let high = Math.min(text.length, maxChars);
  while (low < high) {
    const middle = Math.ceil((low + high) / 2);
    if (fits(startOf(text, middle))) low = middle;
    else high = middle - 1;
  }
  return startOf(text, low);
}

/** Most UTF-8 bytes one UTF-16 unit of a string takes in JSON text: a control character escaped as `\u0000`. */
const JSON_BYTES_PER_UNIT = 6;
/** Most characters a number takes in JSON text (`-1.2345678901234567e-308`). */
const JSON_NUMBER_MAX = 24;

/**
 * Whether `value`'s JSON text is surely at most `maxBytes` UTF-8 bytes, from an upper bound of its size: each string
 * 6 bytes a UTF-16 unit plus its quotes, each number 24, each key as a string plus a colon, each member or element a
 * comma, each object or array its brackets. Stops as soon as the bound passes `maxBytes` (false: the caller measures
 * exactly); false for anything that is not plain JSON data (a `toJSON`, a bigint, a function). Never true when
 * `JSON.stringify` would give more (test/journal/status-message-bound.test.ts).
 */
export function jsonBytesAtMost(value: unknown, maxBytes: number): boolean {
  let total = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const next = stack.pop();
    if (typeof next === 'string') total += next.length * JSON_BYTES_PER_UNIT + 2;
    else if (typeof next === 'number') total += JSON_NUMBER_MAX;
    else if (typeof next === 'boolean' || next === null || next === undefined) total += 5;
    else if (Array.isArray(next)) {
      total += 2 + next.length;
      for (const element of next) stack.push(element);
    } else if (typeof next === 'object' && (Object.getPrototypeOf(next) === Object.prototype || Object.getPrototypeOf(next) === null)) {
      total += 2;
      for (const key of Object.keys(next)) {
        total += key.length * JSON_BYTES_PER_UNIT + 4;
        stack.push((next as Record<string, unknown>)[key]);
      }
    } else return false;
    if (total > maxBytes) return false;
  }
  return true;
}

/** The first `length` UTF-16 units of `text`, one fewer when that would split a surrogate pair. */
function startOf(text: string, length: number): string {
  const code = text.charCodeAt(length - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? length - 1 : length);
}

/**
 * A result as the journal stores it (`StatusChange.result`): a Message answer's `{ message }` with its message bounded
 * as a status message is (`boundedStatusMessage`: the step's whole result, never cut silently); anything else as it is.
 */
export function boundedResult(result: unknown, maxBytes: number): unknown {
  if (typeof result !== 'object' || result === null || !('message' in result)) return result;
  const message = (result as { message: unknown }).message;
  if (typeof message !== 'object' || message === null || !Array.isArray((message as Message).parts) || typeof (message as Message).messageId !== 'string') return result;
  const bounded = boundedStatusMessage(message as Message, maxBytes);
  return bounded === message ? result : { ...result, message: bounded };
}

/**
 * A status change's result within `maxBytes` (`boundedResult`), and what a cut result means for the attempt: a Message
 * answer is the step's whole result (spec §3.1.1; the view's `resultText`), so a COMPLETED change whose result had to
 * be cut ends AMBIGUOUS with a permanent LIMIT_EXCEEDED (`statusMessageBytes`), its excerpt kept for the person: the
 * agent answered, so the work may be done and the step is never re-delegated blind, and the part of the result we
 * could not keep is never passed on as the whole of it (edges35: COMPLETED with the first 64 KiB of a longer answer,
 * and the workflow went on). The same rule as artifacts over `artifactBytesPerDelegation` (`withinArtifactLimit` in
 * status.ts), on every path that writes a result (a send's answer, a send stream's event, the reconciler's write of a
 * Message it holds). A result that fits, or a change of another state, is returned unchanged but for the bound.
 */
export function resultWithinLimit<Change extends { state: JournalState; result?: unknown; error?: RecordedError }>(change: Change, maxBytes: number): Change {
  const result = boundedResult(change.result, maxBytes);
  if (result === change.result) return change;
  const bytes = statusMessageCut((result as { message: Message }).message)?.bytes;
  if (change.state !== 'COMPLETED') return { ...change, result };
  const message = `the agent's Message answer is ${bytes ?? 'more than'} bytes, over the limit of ${maxBytes}: only an excerpt is kept (the work may be done; a person decides)`;
  return { ...change, result, state: 'AMBIGUOUS', error: { code: 'LIMIT_EXCEEDED', message, retryable: false, delivery: 'received', limit: 'statusMessageBytes' } };
}

/**
 * What a status message cut to `maxBytes` (`boundedStatusMessage`'s excerpt, `cut`) means for a change of `state`: a
 * COMPLETED task without artifacts carries its result in its final status message (the view's `resultText`), so the
 * change gets `overLimitIfResult`, the permanent LIMIT_EXCEEDED (`statusMessageBytes`, delivery received) it ends
 * AMBIGUOUS with when the row holds no artifacts after it (applyStatus-5.lua decides; the same rule as a Message answer
 * over the limit, `resultWithinLimit`). Any other state: nothing (the excerpt only).
 */
export function statusMessageOverLimit(state: JournalState, cut: Message, maxBytes: number): { overLimitIfResult?: RecordedError } {
  if (state !== 'COMPLETED') return {};
  const bytes = statusMessageCut(cut)?.bytes;
  const message = `the agent's final status message is ${bytes ?? 'more than'} bytes, over the limit of ${maxBytes}, and the task has no artifacts: it is the result, and only an excerpt is kept (the work may be done; a person decides)`;
  return { overLimitIfResult: { code: 'LIMIT_EXCEEDED', message, retryable: false, delivery: 'received', limit: 'statusMessageBytes' } };
}

/** The cut the journal made of a stored status message (`boundedStatusMessage`), or undefined when it is whole. */
export function statusMessageCut(message: Message | undefined): StatusMessageCut | undefined {
  const cut = (message?.metadata?.durableA2a as { cut?: unknown } | undefined)?.cut as Partial<StatusMessageCut> | undefined;
  return typeof cut?.bytes === 'number' && typeof cut.keptTextBytes === 'number' ? { bytes: cut.bytes, keptTextBytes: cut.keptTextBytes } : undefined;
}
