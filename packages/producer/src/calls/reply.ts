/**
 * Answering a parked question (INPUT_REQUIRED / AUTH_REQUIRED) on the same task and context: the
 * reply is journaled first, then handed to the workers' reply queue. The same reply twice is harmless;
 * a different reply to an answered question is refused (NO_OPEN_QUESTION). A reply given with its own messageId
 * (`ReplyOptions.messageId`, the front door's follow-ups) is that reply wherever the workflow has moved since: sent
 * again, it answers nothing else.
 */
import { randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { z } from 'zod';
import { PartSchema, type Part } from '@durable-a2a/a2a';
import { ActorSchema, ID_PATTERN, JournalError, SPAN_ATTRIBUTES, enqueueReply, isBlankText, isWorkflowFinished, withSpan, type DelegationRef, type WorkflowState } from '@durable-a2a/shared';
import { IdempotencyConflictError, NoOpenQuestionError, NotFoundError } from '../errors.ts';
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
 * Whether two replies' parts are the same content as JSON: key order aside (a client's JSON library may reorder a
 * metadata object's keys on a retry), members JSON leaves out aside; each side read as JSON text would be.
 */
const sameParts = (left: readonly Part[] | undefined, right: readonly Part[]): boolean =>
  left !== undefined && isDeepStrictEqual(JSON.parse(JSON.stringify(left)), JSON.parse(JSON.stringify(right)));

/**
 * A repeated reply is the same reply (same parts) as the one journaled for that question: it is answered
 * with the earlier messageId. A different reply to an answered question is refused (NO_OPEN_QUESTION):
 * replies carry no idempotency key, so the content is what makes a retry a retry. `finished`: the workflow's state
 * when it has finished: then a different reply is refused saying so (nothing is left to answer), not "answered
 * with a different reply".
 */
async function repeatedReply(context: ProducerContext, ref: DelegationRef, messageId: string, parts: Part[], finished?: string): Promise<{ messageId: string; created: false }> {
  const journaled = await context.journal.getDelegationView(ref);
  if (journaled?.replyMessageId === messageId && sameParts(journaled.replyMessage?.parts, parts)) return { messageId, created: false };
  if (finished) throw finishedError(ref.workflowId, finished);
  throw new NoOpenQuestionError(`workflow ${ref.workflowId} has no open question on ${ref.delegationId}: it was already answered with a different reply (${messageId})`);
}
/**
 * A reply to a finished workflow: it has no question left to answer, whatever was answered before. Still
 * NO_OPEN_QUESTION (HTTP 409, the CLI's exit 4): the message says why.
 */
const finishedError = (id: string, state: string): NoOpenQuestionError =>
  new NoOpenQuestionError(`workflow ${id} is finished (${state}): it has no question left to answer`);

/** Who acts, kept in the workflow's history (`token <name>`, `session <name>`, `link <id>`; at most 200 characters). */
export interface ActorOptions {
  by?: string;
}

/** `Producer.reply`'s options: who answers, and the reply's own identity. */
export interface ReplyOptions extends ActorOptions {
  /**
   * The reply's messageId (`ID_PATTERN`: letters, digits, `.`, `_`, `-`; 1 to 128 characters), its identity: when a
   * reply with this messageId is already journaled in the workflow (for this question or an earlier one), the call
   * answers with it (`created: false`) and answers nothing else; the same messageId with other parts is
   * IdempotencyConflictError. Default: a new random one (a retry is then recognized by its content only).
   */
  messageId?: string;
}

const ReplyMessageIdSchema = z.string().regex(ID_PATTERN, 'letters, digits, ".", "_" or "-", 1 to 128 characters');

/** The journaled reply `messageId` of workflow `id` (`view`): its attempt and its parts (undefined when the history kept them cut). */
async function journaledReply(context: ProducerContext, id: string, view: WorkflowView, messageId: string): Promise<{ delegationId: string; parts: Part[] | undefined } | undefined> {
  const entry = view.history.find((candidate) => candidate.kind === 'answer' && candidate.messageId === messageId);
  if (entry && typeof entry.delegationId === 'string') return { delegationId: entry.delegationId, parts: entry.cut === true ? undefined : (entry.parts as Part[]) };
  // The history's bounds may have dropped the entry: the attempt's row still names its latest reply.
  const attempt = view.steps.flatMap((step) => step.attempts).find((candidate) => candidate.replyMessageId === messageId);
  if (!attempt) return undefined;
  const row = await context.journal.getDelegationView({ workflowId: id, delegationId: attempt.delegationId });
  return { delegationId: attempt.delegationId, parts: row?.replyMessage?.parts };
}

/** The earlier reply `messageId` as this call's answer (`created: false`), undefined when there is none; IdempotencyConflictError when its parts differ. */
async function earlierReply(context: ProducerContext, id: string, view: WorkflowView, messageId: string, parts: Part[]): Promise<{ messageId: string; created: false } | undefined> {
  const earlier = await journaledReply(context, id, view, messageId);
  if (!earlier) return undefined;
  if (earlier.parts !== undefined && !sameParts(earlier.parts, parts)) {
    throw new IdempotencyConflictError(`workflow ${id} already has reply ${messageId} (on ${earlier.delegationId}) with other parts`);
  }
  return { messageId, created: false };
}

/**
 * `Producer.reply`: answers the open question of `step` (default: the one asking); `by` is kept with the answer in
 * the workflow's history; with `messageId`, a reply already journaled under it is the answer (`ReplyOptions`).
 * @throws ProducerInputError (an empty or blank answer: whitespace alone, or an empty part; a messageId out of
 *   `ID_PATTERN`), NotFoundError (no workflow, no such step), NoOpenQuestionError (none open, a different answer to an
 *   answered question, an expired one, a finished workflow: its message says it finished; the same reply again still
 *   answers `created: false`), IdempotencyConflictError (`messageId` journaled with other parts)
 */
export async function replyToQuestion(context: ProducerContext, id: string, answer: ReplyAnswer, step?: string, options: ReplyOptions = {}): Promise<{ messageId: string; created: boolean }> {
  const by = parseInput(ActorSchema.optional(), options.by);
  const messageId = parseInput(ReplyMessageIdSchema.optional(), options.messageId);
  const parsedAnswer = parseInput(ReplySchema, answer);
  const current = await readView(context, id);
  if (step !== undefined && !current.steps.some((candidate) => candidate.name === step)) throw new NotFoundError(`workflow ${id} has no step ${step}`);
  const parts: Part[] = typeof parsedAnswer === 'string' ? [{ text: parsedAnswer }] : parsedAnswer.parts;
  // A reply sent again (a retry after a lost response) is the reply journaled under its messageId, whatever is open now.
  const earlier = messageId === undefined ? undefined : await earlierReply(context, id, current, messageId, parts);
  if (earlier) return earlier;
  const question = current.openQuestions.find((open) => step === undefined || open.step === step);
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
  const reply = await context.journal.recordReply(ref, messageId ?? randomUUID(), { parts }, by).catch(async (error: unknown) => {
    // The question closed between the read and the reply: it expired (its step's question.expiresAfterMs), moved on,
    // or the workflow is stopping (a cancel, another step failed for good: stepStopped.lua).
    if (!(error instanceof JournalError && error.code === 'WRONG_STATE')) throw error;
    // It moved on after a concurrent call journaled this very reply (a retry racing its original): that reply.
    const journaled = messageId === undefined ? undefined : await earlierReply(context, id, await readView(context, id), messageId, parts);
    if (journaled) return { ...journaled, earlier: true as const };
    throw new NoOpenQuestionError(`workflow ${id} has no open question on ${question.delegationId}: it expired or was closed (answered, moved on, or the workflow is being canceled)`);
  });
  if ('earlier' in reply) return { messageId: reply.messageId, created: false };
  // Another reply was journaled for this question first (a race): the same reply, or a refusal.
  if (!reply.created) return repeatedReply(context, ref, reply.messageId, parts);
  await withSpan('workflow.reply', { [SPAN_ATTRIBUTES.workflowId]: id, [SPAN_ATTRIBUTES.delegationId]: question.delegationId, [SPAN_ATTRIBUTES.messageId]: reply.messageId }, () =>
    enqueueReply(context.queues, ref, reply.messageId),
  );
  return reply;
}
