/**
 * Answering a parked question (INPUT_REQUIRED / AUTH_REQUIRED) on the same task and context: the
 * reply is journaled first, then handed to the workers' reply queue. The same reply twice is harmless;
 * a different reply to an answered question is refused (NO_OPEN_QUESTION). A reply given with its own messageId
 * (`ReplyOptions.messageId`, the REST route's, the front door's follow-ups) is that reply wherever the workflow has
 * moved since: sent again, it answers nothing else. The workflow's answer index (lua/includes/answerIndex.lua) keeps
 * every answer's messageId for the workflow's life, however it was given (a reply, an answer link, an expiry's default
 * answer); the bounded history is read only for answers journaled before it.
 */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { PartSchema, type Part } from '@durable-a2a/a2a';
import {
  ANSWERS_PER_WORKFLOW_MAX,
  ActorSchema,
  ID_PATTERN,
  JournalError,
  SPAN_ATTRIBUTES,
  enqueueReply,
  isBlankText,
  isWorkflowFinished,
  sameAnswerParts,
  withSpan,
  type DelegationRef,
  type RecordedReply,
  type WorkflowState,
} from '@durable-a2a/shared';
import { AnswerLimitError, IdempotencyConflictError, NoOpenQuestionError, NotFoundError } from '../errors.ts';
import type { WorkflowView } from '../view.ts';
import { parseInput, readView, type ProducerContext } from './context.ts';

/** Why a blank answer is refused (the API's 400 detail and the message `/ui` shows). */
export const BLANK_ANSWER = 'must not be blank: spaces or line breaks alone are not an answer';

/** A part that says nothing: blank text (whitespace only), empty raw bytes, or a blank URL. */
const isEmptyPart = (part: Part): boolean => (part.text !== undefined && isBlankText(part.text)) || part.raw === '' || (part.url !== undefined && isBlankText(part.url));

/** An answer's text: not empty, not blank. */
export const AnswerTextSchema = z.string().min(1, 'must not be empty').refine((text) => !isBlankText(text), BLANK_ANSWER);
/** An answer's parts: at least one, none of them empty (`isEmptyPart`). */
export const AnswerPartsSchema = z
  .array(PartSchema)
  .min(1, 'must not be empty')
  .refine((parts) => !parts.some(isEmptyPart), `no part may be empty: ${BLANK_ANSWER}`);

const ReplySchema = z.union([AnswerTextSchema, z.object({ parts: AnswerPartsSchema })]);

/** The answer to a question: its text, or its parts. */
export type ReplyAnswer = string | { parts: z.infer<typeof PartSchema>[] };

/** The last journaled reply of `step` (any step when undefined), for a second answer to a closed question. */
function lastReply(view: WorkflowView, step: string | undefined): { delegationId: string; messageId: string } | undefined {
  const attempt = view.steps
    .filter((candidate) => step === undefined || candidate.name === step)
    .flatMap((candidate) => candidate.attempts)
    .reverse()
    .find((candidate) => candidate.replyMessageId);
  return attempt ? { delegationId: attempt.delegationId, messageId: attempt.replyMessageId! } : undefined;
}

/**
 * A reply to a finished workflow: it has no question left to answer, whatever was answered before. Still
 * NO_OPEN_QUESTION (HTTP 409, the CLI's exit 4): the message says why.
 */
const finishedError = (id: string, state: string): NoOpenQuestionError =>
  new NoOpenQuestionError(`workflow ${id} is finished (${state}): it has no question left to answer`);

const conflictError = (id: string, messageId: string, delegationId?: string): IdempotencyConflictError =>
  new IdempotencyConflictError(`workflow ${id} already has reply ${messageId}${delegationId ? ` (on ${delegationId})` : ''} with other parts`);

const answeredError = (ref: DelegationRef, messageId: string): NoOpenQuestionError =>
  new NoOpenQuestionError(`workflow ${ref.workflowId} has no open question on ${ref.delegationId}: it was already answered with a different reply (${messageId})`);

/** Who acts, kept in the workflow's history (`token <name>`, `session <name>`, `link <id>`; at most 200 characters). */
export interface ActorOptions {
  by?: string;
}

/** `Producer.reply`'s options: who answers, and the reply's own identity. */
export interface ReplyOptions extends ActorOptions {
  /**
   * The reply's messageId (`ID_PATTERN`: letters, digits, `.`, `_`, `-`; 1 to 128 characters), its identity for the
   * workflow's whole life (the workflow's answer index, docs/people.md "Answers and their identity"): when a reply with
   * this messageId is already journaled in the workflow (for this question or an earlier one), the call answers with
   * it (`created: false`) and answers nothing else; the same messageId with other parts is IdempotencyConflictError.
   * Default: a new random one (a retry is then recognized by its content only).
   */
  messageId?: string;
}

const ReplyMessageIdSchema = z.string().regex(ID_PATTERN, 'letters, digits, ".", "_" or "-", 1 to 128 characters');

/** An earlier answer as this call's answer. */
type Earlier = { messageId: string; created: false };

/**
 * The answer `messageId` as the view (already read) shows it, when it settles the call without another read: a
 * history entry with its parts whole (the same content: that answer; other content: IdempotencyConflictError).
 * `unsettled`: the view names it only by a cut entry or as an attempt's latest reply (the history dropped its entry).
 */
function seenInView(id: string, view: WorkflowView, messageId: string, parts: Part[]): Earlier | 'unsettled' | undefined {
  const entry = view.history.find((candidate) => candidate.kind === 'answer' && candidate.messageId === messageId);
  if (entry && typeof entry.delegationId === 'string' && entry.cut !== true) {
    if (!sameAnswerParts(entry.parts as Part[], parts)) throw conflictError(id, messageId, entry.delegationId);
    return { messageId, created: false };
  }
  if (entry || view.steps.some((step) => step.attempts.some((attempt) => attempt.replyMessageId === messageId))) return 'unsettled';
  return undefined;
}

/**
 * The answer journaled under `messageId` as this call's answer (`created: false`), undefined when there is none;
 * IdempotencyConflictError when its parts differ. The workflow's answer index decides; an answer journaled before the
 * index (a row of an earlier release) is found in the view's history (a cut entry: its content unknown, taken as the
 * same), else as an attempt's latest reply, read from its row.
 */
async function earlierAnswer(context: ProducerContext, id: string, view: WorkflowView, messageId: string, parts: Part[]): Promise<Earlier | undefined> {
  const indexed = await context.journal.findAnswer(id, messageId, parts);
  if (indexed) {
    if (!indexed.same) throw conflictError(id, messageId, indexed.delegationId);
    return { messageId, created: false };
  }
  if (view.history.some((candidate) => candidate.kind === 'answer' && candidate.messageId === messageId)) return { messageId, created: false };
  const attempt = view.steps.flatMap((step) => step.attempts).find((candidate) => candidate.replyMessageId === messageId);
  if (!attempt) return undefined;
  const row = await context.journal.getDelegationView({ workflowId: id, delegationId: attempt.delegationId });
  if (!sameAnswerParts(row?.replyMessage?.parts, parts)) throw conflictError(id, messageId, attempt.delegationId);
  return { messageId, created: false };
}

/**
 * A second answer to a closed question, without a messageId of its own: the same parts as the question's reply
 * `ref`/`messageId` is that reply (`created: false`), other parts NoOpenQuestionError (a finished workflow's says so).
 */
async function repeatedReply(context: ProducerContext, ref: DelegationRef, messageId: string, parts: Part[], finished?: string): Promise<Earlier> {
  const indexed = await context.journal.findAnswer(ref.workflowId, messageId, parts);
  const same = indexed ? indexed.same : sameAnswerParts((await context.journal.getDelegationView(ref))?.replyMessage?.parts, parts);
  if (same) return { messageId, created: false };
  if (finished) throw finishedError(ref.workflowId, finished);
  throw answeredError(ref, messageId);
}

/** The journal's refusals of a reply as the producer's errors; anything else as it is. */
function replyRefusal(error: unknown, ref: DelegationRef, messageId: string | undefined): unknown {
  if (!(error instanceof JournalError)) return error;
  if (error.code === 'REPLY_CONFLICT' && messageId !== undefined) return conflictError(ref.workflowId, messageId);
  if (error.code === 'ANSWER_LIMIT') return new AnswerLimitError(ref.workflowId, ANSWERS_PER_WORKFLOW_MAX);
  // The question closed between the read and the reply: it expired (its step's question.expiresAfterMs), moved on,
  // or the workflow is stopping (a cancel, another step failed for good: stepStopped.lua).
  if (error.code === 'WRONG_STATE') {
    return new NoOpenQuestionError(`workflow ${ref.workflowId} has no open question on ${ref.delegationId}: it expired or was closed (answered, moved on, or the workflow is being canceled)`);
  }
  return error;
}

/**
 * `Producer.reply`: answers the open question of `step` (default: the one asking); `by` is kept with the answer in
 * the workflow's history; with `messageId`, a reply already journaled under it is the answer (`ReplyOptions`).
 * One read of the workflow and one script in the usual case: the script (recordReply-2.lua) finds a retry in the
 * workflow's answer index and compares its content itself.
 * @throws ProducerInputError (an empty or blank answer: whitespace alone, or an empty part; a messageId out of
 *   `ID_PATTERN`), NotFoundError (no workflow, no such step), NoOpenQuestionError (none open, a different answer to an
 *   answered question, an expired one, a finished workflow: its message says it finished; the same reply again still
 *   answers `created: false`), IdempotencyConflictError (`messageId` journaled with other parts), AnswerLimitError
 *   (the workflow holds `ANSWERS_PER_WORKFLOW_MAX` answers: nothing journaled)
 */
export async function replyToQuestion(context: ProducerContext, id: string, answer: ReplyAnswer, step?: string, options: ReplyOptions = {}): Promise<{ messageId: string; created: boolean }> {
  const by = parseInput(ActorSchema.optional(), options.by);
  const messageId = parseInput(ReplyMessageIdSchema.optional(), options.messageId);
  const parsedAnswer = parseInput(ReplySchema, answer);
  const current = await readView(context, id);
  if (step !== undefined && !current.steps.some((candidate) => candidate.name === step)) throw new NotFoundError(`workflow ${id} has no step ${step}`);
  const parts: Part[] = typeof parsedAnswer === 'string' ? [{ text: parsedAnswer }] : parsedAnswer.parts;
  // A reply sent again (a retry after a lost response) is the reply journaled under its messageId, whatever is open now.
  const seen = messageId === undefined ? undefined : seenInView(id, current, messageId, parts);
  if (seen && seen !== 'unsettled') return seen;
  const question = current.openQuestions.find((open) => step === undefined || open.step === step);
  if (seen === 'unsettled' || (!question && messageId !== undefined)) {
    const earlier = await earlierAnswer(context, id, current, messageId!, parts);
    if (earlier) return earlier;
  }
  if (!question) {
    // Sending the same reply twice is harmless: the earlier reply of that step is returned.
    const answered = messageId === undefined ? lastReply(current, step) : undefined;
    const finished = isWorkflowFinished(current.state as WorkflowState) ? current.state : undefined;
    if (answered) return repeatedReply(context, { workflowId: id, delegationId: answered.delegationId }, answered.messageId, parts, finished);
    if (finished) throw finishedError(id, finished);
    const closed = current.cancelRequested ? ': it is being canceled, which closes its steps\' questions' : '';
    throw new NoOpenQuestionError(`workflow ${id} has no open question${step ? ` on step ${step}` : ''}${closed}`);
  }
  const ref = { workflowId: id, delegationId: question.delegationId };
  let reply: RecordedReply;
  try {
    reply = await context.journal.recordReply(ref, messageId ?? randomUUID(), { parts }, by);
  } catch (error) {
    throw replyRefusal(error, ref, messageId);
  }
  if (!reply.created) {
    // This answer is stored already (a retry, or a race with its original), or the question has another answer.
    if (reply.same) return { messageId: reply.messageId, created: false };
    throw answeredError(ref, reply.messageId);
  }
  await withSpan('workflow.reply', { [SPAN_ATTRIBUTES.workflowId]: id, [SPAN_ATTRIBUTES.delegationId]: question.delegationId, [SPAN_ATTRIBUTES.messageId]: reply.messageId }, () =>
    enqueueReply(context.queues, ref, reply.messageId),
  );
  return reply;
}
