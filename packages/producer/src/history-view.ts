/**
 * A workflow's history as the views give it (API, CLI, /ui, `waitFor`): the journal's entries (shared
 * journal/history.ts) with every time ISO 8601, the text of questions and answers, the step of each attempt, and for
 * a question the request it belongs to (the attempt's messageId and text). Entries the bounds dropped are one
 * `dropped` entry first ("n entries dropped"). A question that expired unanswered is one `question-expired` entry,
 * read from its attempt's row (`questionExpiredAt`, `questionExpiry`, and with `answer` the default answer sent).
 */
import { partsText, type DelegationView, type History, type HistoryEntry } from '@durable-a2a/shared';
import { instantOf } from './instant.ts';

/** A history entry's view fields; fields beyond these are the stored entry's own (`message`, `parts`, `evidence`, `previous`, …). */
interface HistoryEntryFields {
  /** `question`, `answer`, `answer-refused`, `question-expired`, `cancel`, `resolution`, `redelegation`, `verification`, `compensation`, `duplicate-task`, `duplicate-unchecked`, `dropped`, or a kind a later release writes. */
  kind: string;
  /** When it was journaled (ISO 8601). */
  at: string;
  delegationId?: string;
  step?: string;
  /** A question's or an answer's text parts joined; a refused answer's reason; an expired question's default answer; a dropped marker's sentence. */
  text?: string;
  /** Who acted: `token <name>`, `session <name>`, `link <id>`, or what a library caller passed. */
  by?: string;
  /** A question's request: the attempt's messageId and text (what was asked of the agent). */
  request?: { messageId: string; text: string };
  [field: string]: unknown;
}

/** One history entry in a view. */
export interface HistoryEntryView extends HistoryEntryFields {
  /** One line a person reads (the CLI's and /ui's timeline): what happened, to which attempt, by whom. */
  summary: string;
}


/** The text an entry carries, by kind (undefined when it has none). */
function textOf(entry: HistoryEntry): string | undefined {
  const stored = entry as Record<string, unknown>;
  if (entry.kind === 'question') {
    const message = stored.message as { parts?: Parameters<typeof partsText>[0] } | undefined;
    return message?.parts ? partsText(message.parts) : undefined;
  }
  if (entry.kind === 'answer' && Array.isArray(stored.parts)) return partsText(stored.parts as Parameters<typeof partsText>[0]);
  if (entry.kind === 'answer-refused' && typeof stored.reason === 'string') return stored.reason;
  return undefined;
}

/** Text on one line, at most `length` characters. */
const line = (text: string, length = 300) => {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > length ? `${flat.slice(0, length - 1)}…` : flat;
};
const quoted = (text: string | undefined) => (text ? `: "${line(text)}"` : '');
const byWhom = (by: unknown) => (typeof by === 'string' ? ` by ${by}` : '');

/** What was done with an expired question (the step's `question.onExpiry`), as a `question-expired` summary says it. */
const EXPIRY_OUTCOME: Record<string, string> = {
  answer: 'the default answer was sent',
  cancel: 'the workflow was cancelled',
  fail: 'the attempt failed (QUESTION_EXPIRED)',
};

/** The one-line summary of an entry (its view fields: `text`, `step`, `request` filled in). */
function summaryOf(entry: HistoryEntryFields): string {
  const attempt = entry.delegationId ?? '';
  switch (entry.kind) {
    case 'question':
      return `${attempt} asked (${String(entry.state)})${quoted(entry.text)}${entry.request ? ` — request: "${line(entry.request.text, 120)}"` : ''}`;
    case 'answer':
      return `${attempt} answered${byWhom(entry.by)}${quoted(entry.text)}`;
    case 'answer-refused':
      return `${attempt}: the agent refused answer ${String(entry.messageId)}${quoted(entry.text)}`;
    case 'question-expired':
      return `${attempt}: the question expired unanswered; ${EXPIRY_OUTCOME[String(entry.onExpiry)] ?? String(entry.onExpiry)}${quoted(entry.text)}`;
    case 'cancel':
      return `cancel requested${byWhom(entry.by)}`;
    case 'resolution':
      return `resolved ${String(entry.action)}${entry.code ? ` (${String(entry.code)})` : ''}${byWhom(entry.by)}`;
    case 'redelegation': {
      const previous = Array.isArray(entry.previous) ? (entry.previous as { delegationId?: string; reason?: string }[]) : [];
      return `step ${entry.step ?? ''} re-delegated as ${attempt}: ${previous.map((item) => `${item.delegationId ?? ''} ${line(item.reason ?? '', 200)}`).join('; ')}`;
    }
    case 'verification':
      return `${attempt} verified: effect ${String(entry.effect)}${entry.evidence === undefined ? '' : ` (evidence ${line(JSON.stringify(entry.evidence) ?? '', 200)})`}`;
    case 'compensation':
      return `compensation ${attempt} journaled for ${String(entry.compensates)}`;
    case 'duplicate-task': {
      const ours = typeof entry.taskId === 'string' ? `too (our task ${entry.taskId})` : '(the attempt finished without a task of ours)';
      return `${attempt}${typeof entry.state === 'string' ? ` (${entry.state})` : ''}: task ${String(entry.otherTaskId)} of the agent holds our message ${ours}: the work may have been done twice; a person checks`;
    }
    case 'duplicate-unchecked': {
      const ours = typeof entry.taskId === 'string' ? ` (our task ${entry.taskId})` : '';
      return `${attempt}${typeof entry.state === 'string' ? ` (${entry.state})` : ''}${ours}: ${String(entry.lost)} task(s) that may hold our message too could not be read: the agent may have done this twice; it could not be checked; a person checks`;
    }
    case 'dropped':
      return entry.text ?? 'older entries dropped';
    default:
      return `${entry.kind}${attempt ? ` ${attempt}` : ''}${byWhom(entry.by)}${quoted(entry.text)}`;
  }
}

/**
 * The `question-expired` entry of an attempt whose question expired unanswered, else undefined. The journal marks
 * the expiry on the attempt's row (expireQuestion-2.lua), not in the history list: the row keeps the last expiry.
 */
function expiryEntry(delegation: DelegationView): HistoryEntryFields | undefined {
  if (delegation.questionExpiredAt === undefined || delegation.questionExpiry === undefined) return undefined;
  const defaultAnswer = delegation.questionExpiry === 'answer' && delegation.replyBy === 'expiry' && delegation.replyMessage ? partsText(delegation.replyMessage.parts) : undefined;
  return {
    kind: 'question-expired',
    at: instantOf(delegation.questionExpiredAt),
    delegationId: delegation.delegationId,
    step: delegation.step,
    onExpiry: delegation.questionExpiry,
    ...(defaultAnswer !== undefined ? { text: defaultAnswer, by: 'expiry' } : {}),
  };
}

/** `history` as a view, `delegations` giving each attempt's step and request; `createdAtMs` dates a dropped marker when nothing else does. */
export function historyView(history: History, delegations: readonly DelegationView[], createdAtMs: number): HistoryEntryView[] {
  const byId = new Map(delegations.map((delegation) => [delegation.delegationId, delegation]));
  const entries = history.entries.map((entry): HistoryEntryView => {
    const { delegationId, step } = entry as { delegationId?: unknown; step?: unknown };
    const attempt = typeof delegationId === 'string' ? byId.get(delegationId) : undefined;
    const text = textOf(entry);
    const view: HistoryEntryFields = {
      ...entry,
      at: instantOf(entry.at),
      ...(attempt && step === undefined ? { step: attempt.step } : {}),
      ...(text !== undefined ? { text } : {}),
      ...(entry.kind === 'question' && attempt ? { request: { messageId: attempt.messageId, text: partsText(attempt.message.parts) } } : {}),
    };
    return { ...view, summary: summaryOf(view) };
  });
  const expiries = delegations.flatMap((delegation) => {
    const entry = expiryEntry(delegation);
    return entry ? [{ ...entry, summary: summaryOf(entry) }] : [];
  });
  if (expiries.length > 0) {
    // Oldest first; a stable sort keeps the journal's order among entries of the same millisecond.
    entries.push(...expiries);
    entries.sort((a, b) => Date.parse(a.at) - Date.parse(b.at));
  }
  if (history.dropped === 0) return entries;
  const text = `${history.dropped} ${history.dropped === 1 ? 'entry' : 'entries'} dropped`;
  const marker: HistoryEntryView = { kind: 'dropped', at: entries[0]?.at ?? instantOf(createdAtMs), count: history.dropped, text, summary: `${text} (older history beyond its bounds)` };
  return [marker, ...entries];
}
