/**
 * The question events. `question.opened`: a parked delegation's question waits for a person. Emitted when the
 * question is journaled and parked (`park.ts`), and again on a later re-read if it was never journaled as emitted (a
 * crash in between): the event id is the question's (`questionKey`), so both are one event; and again, once per
 * refusal, when the agent refused an answer to it (the question is open again: the person is asked anew, told why). With answer links
 * configured the event carries the question's signed link (the same one the API view shows). `question.expired`:
 * what was done when a question expired unanswered, emitted after the expiry's transition (`apply.ts`).
 */
import { createHash } from 'node:crypto';
import { answerLinkFor, boundedNotificationTexts, isAwaitingAnswer, isStepStopped, type DelegationRecord, type NotificationInput, type QuestionExpiryAction } from '@durable-a2a/shared';
import { emitNotification, notificationMissing, type NotifyContext } from './emit.ts';

/** Longest question text carried in the event (characters): the link and the API show it all. */
const QUESTION_TEXT_MAX = 4_096;

/** The text parts of a question, joined, cut at `QUESTION_TEXT_MAX`. */
function questionText(record: DelegationRecord): string {
  const parts = record.question?.parts ?? record.statusMessage?.parts ?? [];
  const text = parts.map((part) => ('text' in part && typeof part.text === 'string' ? part.text : '')).filter(Boolean).join('\n');
  return text.length > QUESTION_TEXT_MAX ? `${text.slice(0, QUESTION_TEXT_MAX)}…` : text;
}

/**
 * The agent's reason for refusing an answer to the row's current question, or undefined. A refusal is the row's
 * `replyState` 'refused' with its reason (`replyError`, never empty: `Journal.markReply`); a later question clears the
 * reason (applyStatus-5.lua), so a refusal of an answer to an earlier question is never this one's.
 */
function refusalOf(record: Pick<DelegationRecord, 'replyState' | 'replyError'>): string | undefined {
  return record.replyState === 'refused' && record.replyError ? record.replyError : undefined;
}

/**
 * The occasion of a parked row's `question.opened`: its question key; once the agent refused an answer to it (the
 * question is open again: `replyState` 'refused'), one per refused answer (`refused:` and SHA-256 hex of the question
 * key and the answer's messageId, 72 characters), so the person is asked again, once per refusal.
 */
function questionOpenedOccasion(record: DelegationRecord & { questionKey: string }): string {
  if (refusalOf(record) === undefined || !record.replyMessageId) return record.questionKey;
  return `refused:${createHash('sha256').update(`${record.questionKey}\n${record.replyMessageId}`).digest('hex')}`;
}

/**
 * The `question.opened` event of a parked row (its occasion: `questionOpenedOccasion`). After a refused answer it
 * carries `previousReplyRefused`, the agent's reason (as the API view's open question does).
 */
export function questionOpened(ctx: NotifyContext, record: DelegationRecord & { questionKey: string }): NotificationInput {
  const links = ctx.options.answerLinks;
  const askedAtMs = record.statusTimestampMs ?? record.updatedAt;
  const link = links ? answerLinkFor(links, { workflowId: record.workflowId, delegationId: record.delegationId, questionKey: record.questionKey, askedAtMs }) : undefined;
  const refused = refusalOf(record);
  const [question, previousReplyRefused] = boundedNotificationTexts(refused !== undefined ? [questionText(record), refused] : [questionText(record)]);
  return {
    kind: 'question.opened',
    workflowId: record.workflowId,
    delegationId: record.delegationId,
    occasion: questionOpenedOccasion(record),
    data: {
      step: record.step,
      state: record.state,
      questionKey: record.questionKey,
      question,
      askedAt: new Date(askedAtMs).toISOString(),
      ...(previousReplyRefused !== undefined ? { previousReplyRefused } : {}),
      ...(link ? { answerLink: link } : {}),
    },
  };
}

/**
 * Whether the row's question is closed because it is a step of a stopping workflow (`isStepStopped`, one workflow
 * read; a compensation's never is). Asked by everything that would tell a person about a question (`question.opened`,
 * reminders: `question-life.ts`). An unreadable workflow row reads as not stopping. Never rejects.
 */
export async function questionClosedByStop(ctx: Pick<NotifyContext, 'journal'>, record: Pick<DelegationRecord, 'kind' | 'workflowId'>): Promise<boolean> {
  return record.kind !== 'compensation' && isStepStopped(record.kind, await ctx.journal.getWorkflow(record.workflowId).catch(() => undefined));
}

/**
 * Emits `question.opened` for a row parked on a question nobody answered yet: at once when `asked` (the observation
 * just journaled it), else only when the journal has no record of it (one read). Never for a step of a stopping
 * workflow (`isStepStopped`: its question is closed, the journal refuses its answer; review14: a question asked after
 * the stop sent a person an answer link). Never rejects.
 */
export async function notifyQuestionOpened(ctx: NotifyContext, record: DelegationRecord, asked: boolean): Promise<void> {
  if (!isAwaitingAnswer(record) || !record.questionKey) return;
  if (await questionClosedByStop(ctx, record)) return;
  const input = questionOpened(ctx, { ...record, questionKey: record.questionKey });
  const missing = asked || (await notificationMissing(ctx, input).catch(() => false));
  if (missing) await emitNotification(ctx, input);
}

/**
 * Emits `question.expired` for the row's question `questionKey`, expired with `action` (the expiry's transition
 * applied): one event per question, its occasion the question key. Never rejects.
 */
export async function notifyQuestionExpired(ctx: NotifyContext, record: DelegationRecord, questionKey: string, action: QuestionExpiryAction): Promise<void> {
  await emitNotification(ctx, { kind: 'question.expired', workflowId: record.workflowId, delegationId: record.delegationId, occasion: questionKey, data: { step: record.step, questionKey, action } });
}
