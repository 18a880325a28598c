/**
 * Answering a parked question (INPUT_REQUIRED / AUTH_REQUIRED) on the same task and context: the
 * reply is journaled first, then handed to the workers' reply queue. Answering twice is harmless.
 */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { PartSchema, SPAN_ATTRIBUTES, enqueueReply, withSpan } from '@durable-a2a/shared';
import { NoOpenQuestionError, NotFoundError } from '../errors.ts';
import type { WorkflowView } from '../view.ts';
import { parseInput, readView, type ProducerContext } from './context.ts';

const ReplySchema = z.union([z.string().min(1, 'must not be empty'), z.object({ parts: z.array(PartSchema).min(1) })]);

/** The answer to a question: its text, or its parts. */
export type ReplyAnswer = string | { parts: z.infer<typeof PartSchema>[] };

/** The last journaled reply of `step` (any step when undefined), for a second answer to a closed question. */
function lastReply(view: WorkflowView, step: string | undefined): string | undefined {
  return view.steps
    .filter((candidate) => step === undefined || candidate.name === step)
    .flatMap((candidate) => candidate.attempts)
    .reverse()
    .find((attempt) => attempt.replyMessageId)?.replyMessageId;
}

/**
 * `Producer.reply`: answers the open question of `step` (default: the one asking).
 * @throws ProducerInputError, NotFoundError (no workflow, no such step), NoOpenQuestionError
 */
export async function replyToQuestion(context: ProducerContext, id: string, answer: ReplyAnswer, step?: string): Promise<{ messageId: string; created: boolean }> {
  const parsedAnswer = parseInput(ReplySchema, answer);
  const current = await readView(context, id);
  if (step !== undefined && !current.steps.some((candidate) => candidate.name === step)) throw new NotFoundError(`workflow ${id} has no step ${step}`);
  const question = current.openQuestions.find((open) => step === undefined || open.step === step);
  if (!question) {
    // Answering twice is harmless: the last reply of that step is returned.
    const answered = lastReply(current, step);
    if (answered) return { messageId: answered, created: false };
    throw new NoOpenQuestionError(`workflow ${id} has no open question${step ? ` on step ${step}` : ''}`);
  }
  const parts = typeof parsedAnswer === 'string' ? [{ text: parsedAnswer }] : parsedAnswer.parts;
  const ref = { workflowId: id, delegationId: question.delegationId };
  const reply = await context.journal.recordReply(ref, randomUUID(), { parts });
  await withSpan('workflow.reply', { [SPAN_ATTRIBUTES.workflowId]: id, [SPAN_ATTRIBUTES.delegationId]: question.delegationId, [SPAN_ATTRIBUTES.messageId]: reply.messageId }, () =>
    enqueueReply(context.queues, ref, reply.messageId),
  );
  return reply;
}
