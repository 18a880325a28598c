/**
 * A reply's messageId is its identity for the workflow's whole life, kept in the workflow's answer index
 * (recordReply-2.lua, keys.ts `answers`; docs/people.md "Answers and their identity"), not only in its bounded
 * history: a retry under a messageId whose history entry was dropped is still that answer (`created: false`, or
 * IdempotencyConflictError for other content), never the answer to a later question. Real redis-server, the
 * producer's `reply` over the journal's scripts; the agent is driven through the journal (its questions, the reply's
 * delivery).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { AnswerLimitError, IdempotencyConflictError, NoOpenQuestionError, type Producer } from '@durable-a2a/producer';
import { ANSWERS_PER_WORKFLOW_MAX, HISTORY_LIMITS, Journal, JournalError, type DelegationRef } from '@durable-a2a/shared';
import { agentAsks as asks, delivered as deliveredBy, fillAnswerIndex, nextStamp, retryGiven, useAnswerJournal } from '../harness/answers.ts';
import { runningIntent } from '../harness/journal-rows.ts';

const answers = useAnswerJournal('answer-index');
const { redis } = answers;
const CARD = 'http://agent.example/.well-known/agent-card.json';
let producer: Producer;
let journal: Journal;
beforeAll(() => {
  ({ producer, journal } = { producer: answers.producer(), journal: answers.journal() });
});

/** A question text that fills a history entry near its 8 KiB bound: some 17 of them pass the history's 128 KiB. */
const BIG = 'Which of these rooms? '.repeat(330);

/** The agent asks question `questionId` (`text`) on the delegation's task. */
const agentAsks = (ref: DelegationRef, questionId: string, text?: string) => asks(journal, ref, questionId, text);
/** The row's pending reply is delivered to the agent. */
const delivered = (ref: DelegationRef) => deliveredBy(journal, ref);

const answerEntries = async (workflowId: string) => (await producer.get(workflowId)).history.filter((entry) => entry.kind === 'answer').map((entry) => String(entry.messageId));
const rowReply = async (ref: DelegationRef) => {
  const row = (await journal.getDelegation(ref)) as unknown as { questionKey: string; replyForQuestion: string; replyMessageId: string };
  return { questionKey: row.questionKey, replyForQuestion: row.replyForQuestion, replyMessageId: row.replyMessageId };
};

describe('a retried answer whose history entry was dropped is still that answer', () => {
  it('case: "first" answers q1; 20 big questions and their answers push it out of the history; "first" again at q22 is created: false, other content is a conflict, q22 stays open', async () => {
    const ref = await runningIntent(journal, 'ai-case', CARD);
    await agentAsks(ref, 'q1');
    expect(await producer.reply(ref.workflowId, 'Paris', 'main', { messageId: 'first' })).toEqual({ messageId: 'first', created: true });
    for (let question = 2; question <= 21; question++) {
      await delivered(ref);
      await agentAsks(ref, `q${question}`, BIG);
      expect((await producer.reply(ref.workflowId, `answer ${question}`, 'main', { messageId: `a${question}` })).created).toBe(true);
    }
    await delivered(ref);
    await agentAsks(ref, 'q22');
    // The history's bound dropped the first answer's entry, and the row names a later reply.
    expect(await answerEntries(ref.workflowId)).not.toContain('first');
    expect((await rowReply(ref)).replyMessageId).toBe('a21');
    expect(await producer.reply(ref.workflowId, 'Paris', 'main', { messageId: 'first' })).toEqual({ messageId: 'first', created: false });
    await expect(producer.reply(ref.workflowId, 'Lyon', 'main', { messageId: 'first' })).rejects.toBeInstanceOf(IdempotencyConflictError);
    // Nothing answered q22: the agent never gets "Paris" a second time.
    expect(await rowReply(ref)).toEqual({ questionKey: 'q22', replyForQuestion: 'q21', replyMessageId: 'a21' });
    expect((await producer.questions(ref.workflowId)).map((question) => question.delegationId)).toEqual([ref.delegationId]);
    // Another messageId answers q22; the task completes and the workflow finishes (compacted).
    expect(await producer.reply(ref.workflowId, 'Friday', 'main', { messageId: 'last' })).toEqual({ messageId: 'last', created: true });
    await delivered(ref);
    const held = (await journal.getDelegation(ref))!;
    await journal.applyStatus(ref, { mode: 'event', state: 'COMPLETED', taskId: `T-${ref.workflowId}`, statusTimestamp: nextStamp(), held });
    await journal.updateWorkflow(ref.workflowId, { state: 'COMPLETED' });
    expect(await redis().exists(journal.keys.finished(ref.workflowId), journal.keys.workflow(ref.workflowId))).toBe(1);
    // The index stays beside the compacted record, expiring with it (the same millisecond: compared as expiry times,
    // not as two PTTL reads, which the clock may tick between); a retry is still that answer.
    expect(await redis().pexpiretime(journal.keys.answers(ref.workflowId))).toBeGreaterThan(0);
    expect(await redis().pexpiretime(journal.keys.answers(ref.workflowId))).toBe(await redis().pexpiretime(journal.keys.finished(ref.workflowId)));
    expect(await producer.reply(ref.workflowId, 'Paris', 'main', { messageId: 'first' })).toEqual({ messageId: 'first', created: false });
    await expect(producer.reply(ref.workflowId, 'Lyon', 'main', { messageId: 'first' })).rejects.toBeInstanceOf(IdempotencyConflictError);
    await expect(producer.reply(ref.workflowId, 'Lyon', 'main', { messageId: 'never-given' })).rejects.toBeInstanceOf(NoOpenQuestionError);
  });

  it(`case: a full index (${ANSWERS_PER_WORKFLOW_MAX} answers) refuses a new answer (AnswerLimitError), and still knows every answer it holds`, async () => {
    const ref = await runningIntent(journal, 'ai-full', CARD);
    await agentAsks(ref, 'q1');
    expect((await producer.reply(ref.workflowId, 'Paris', 'main', { messageId: 'held' })).created).toBe(true);
    await delivered(ref);
    await agentAsks(ref, 'q2');
    // Fill the index to its bound (what ANSWERS_PER_WORKFLOW_MAX answers would leave).
    const key = journal.keys.answers(ref.workflowId);
    await fillAnswerIndex(redis(), journal, ref.workflowId, ANSWERS_PER_WORKFLOW_MAX);
    await expect(producer.reply(ref.workflowId, 'Friday', 'main', { messageId: 'one-too-many' })).rejects.toBeInstanceOf(AnswerLimitError);
    expect(await redis().hexists(key, 'one-too-many')).toBe(0);
    expect(await producer.reply(ref.workflowId, 'Paris', 'main', { messageId: 'held' })).toEqual({ messageId: 'held', created: false });
    await expect(producer.reply(ref.workflowId, 'Lyon', 'main', { messageId: 'held' })).rejects.toBeInstanceOf(IdempotencyConflictError);
    expect((await rowReply(ref)).questionKey).toBe('q2');
    expect((await rowReply(ref)).replyForQuestion).toBe('q1');
  });
});

describe('recordReply-2.lua: every outcome', () => {
  const refusal = (promise: Promise<unknown>) => promise.then(() => 'accepted', (error: unknown) => (error instanceof JournalError ? error.code : String(error)));
  const parts = (text: string) => ({ parts: [{ text }] });

  it('1 journaled and indexed; 0 its own id again; REPLY_CONFLICT its id with other content; 0 the same content under another id (indexed as that answer); 2 other content under another id', async () => {
    const ref = await runningIntent(journal, 'ai-codes-1', CARD);
    await agentAsks(ref, 'q1');
    expect(await journal.recordReply(ref, 'a1', parts('Paris'))).toEqual({ messageId: 'a1', created: true });
    expect((await redis().hget(journal.keys.answers(ref.workflowId), 'a1'))?.split(' ').slice(1)).toEqual(['main.1', 'q1']);
    expect(await journal.recordReply(ref, 'a1', parts('Paris'))).toEqual({ messageId: 'a1', created: false, same: true });
    expect(await refusal(journal.recordReply(ref, 'a1', parts('Lyon')))).toBe('REPLY_CONFLICT');
    expect(await journal.recordReply(ref, 'a1-again', parts('Paris'))).toEqual({ messageId: 'a1', created: false, same: true });
    expect(await journal.recordReply(ref, 'a2', parts('Lyon'))).toEqual({ messageId: 'a1', created: false, same: false });
    // The id that answered with the same content names that answer from now on; the other one is not indexed.
    await delivered(ref);
    await agentAsks(ref, 'q2');
    expect(await journal.recordReply(ref, 'a1-again', parts('Paris'))).toEqual({ messageId: 'a1-again', created: false, same: true });
    expect(await refusal(journal.recordReply(ref, 'a1-again', parts('Lyon')))).toBe('REPLY_CONFLICT');
    expect(await journal.recordReply(ref, 'a2', parts('Lyon'))).toEqual({ messageId: 'a2', created: true });
    expect(await journal.findAnswer(ref.workflowId, 'a1', [{ text: 'Paris' }])).toEqual({ delegationId: 'main.1', same: true });
    expect(await journal.findAnswer(ref.workflowId, 'a1', [{ text: 'Lyon' }])).toEqual({ delegationId: 'main.1', same: false });
    expect(await journal.findAnswer(ref.workflowId, 'none', [{ text: 'Lyon' }])).toBeUndefined();
  });

  it('3: a reply from before the index (none of its id) is compared by the caller, then indexed on its second call (ARGV[7]): the same content, other content, its own id with other content', async () => {
    const ref = await runningIntent(journal, 'ai-codes-3', CARD);
    await agentAsks(ref, 'q1');
    await journal.recordReply(ref, 'old', parts('Paris'));
    await redis().del(journal.keys.answers(ref.workflowId)); // as a row of an earlier release left it
    expect(await journal.recordReply(ref, 'old', parts('Paris'))).toEqual({ messageId: 'old', created: false, same: true });
    expect(await journal.findAnswer(ref.workflowId, 'old', [{ text: 'Paris' }])).toEqual({ delegationId: 'main.1', same: true });
    expect(await refusal(journal.recordReply(ref, 'old', parts('Lyon')))).toBe('REPLY_CONFLICT');
    expect(await journal.recordReply(ref, 'new', parts('Paris'))).toEqual({ messageId: 'old', created: false, same: true });
    expect(await journal.recordReply(ref, 'other', parts('Lyon'))).toEqual({ messageId: 'old', created: false, same: false });
    expect(await redis().hkeys(journal.keys.answers(ref.workflowId))).toEqual(['old', 'new']);
  });

  it('WRONG_STATE not parked (and no reply), DELEGATION_MISSING; a new index takes the expiry of a workflow row that has one', async () => {
    const ref = await runningIntent(journal, 'ai-codes-w', CARD);
    expect(await refusal(journal.recordReply(ref, 'a1', parts('Paris')))).toBe('WRONG_STATE');
    expect(await refusal(journal.recordReply({ ...ref, delegationId: 'none' }, 'a1', parts('Paris')))).toBe('DELEGATION_MISSING');
    expect(await redis().exists(journal.keys.answers(ref.workflowId))).toBe(0);
    await agentAsks(ref, 'q1');
    await redis().pexpire(journal.keys.workflow(ref.workflowId), 60_000);
    expect((await journal.recordReply(ref, 'a1', parts('Paris'))).created).toBe(true);
    expect(await redis().pexpiretime(journal.keys.answers(ref.workflowId))).toBe(await redis().pexpiretime(journal.keys.workflow(ref.workflowId)));
  });
});

/** One step of a run: the agent asks its next question (big: near the entry bound), an answer under a new id, or a retry of a seen id. */
type Action = { kind: 'ask'; big: boolean } | { kind: 'answer'; content: number } | { kind: 'retry'; pick: number; same: boolean };
/** Answer contents: short texts, and one past the history's entry bound (its entry is cut: only the index knows it whole). */
const CONTENTS = ['Paris', 'Lyon', 'L'.repeat(HISTORY_LIMITS.entryBytes + 100)];

const actionArbitrary: fc.Arbitrary<Action> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('ask' as const), big: fc.boolean() }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('answer' as const), content: fc.integer({ min: 0, max: CONTENTS.length - 1 }) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('retry' as const), pick: fc.nat(), same: fc.boolean() }) },
);
/** A run that starts by filling the history past its bound with answered big questions, so the early ids are dropped. */
const pressure: Action[] = Array.from({ length: 20 }, (): Action[] => [{ kind: 'ask', big: true }, { kind: 'answer', content: 0 }]).flat();

let run = 0;

describe('property: answers and retries under history pressure', () => {
  it('a seen messageId is never journaled again nor accepted with other content; each journaled answer is one question\'s', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(actionArbitrary, { minLength: 5, maxLength: 30 }), fc.array(actionArbitrary, { maxLength: 30 }), async (before, after) => {
        run += 1;
        const ref = await runningIntent(journal, `ai-prop-${run}`, CARD);
        // The model: every id the workflow holds as an answer, with its content; the question open now and its answer.
        const seen = new Map<string, number>();
        const journaled: string[] = [];
        let questions = 0;
        let open: { key: string; answer?: string } | undefined;
        let next = 0;
        for (const action of [...before, ...pressure, ...after]) {
          if (action.kind === 'ask') {
            if (open && open.answer === undefined) continue; // the agent waits for its answer
            await delivered(ref);
            questions += 1;
            open = { key: `q${questions}` };
            await agentAsks(ref, open.key, action.big ? BIG : undefined);
          } else if (action.kind === 'answer') {
            const id = `r${run}-${++next}`;
            const reply = producer.reply(ref.workflowId, CONTENTS[action.content]!, 'main', { messageId: id });
            if (!open) {
              await expect(reply).rejects.toBeInstanceOf(NoOpenQuestionError);
            } else if (open.answer === undefined) {
              expect(await reply).toEqual({ messageId: id, created: true });
              open.answer = id;
              seen.set(id, action.content);
              journaled.push(id);
            } else {
              // An answered question is not open: a new id answers nothing, whatever its content.
              await expect(reply).rejects.toBeInstanceOf(NoOpenQuestionError);
            }
          } else {
            await retryGiven(producer, ref.workflowId, seen, CONTENTS, action);
          }
        }
        // Each journaled answer went to the agent's queue once: one history entry at most (the bound drops, never adds).
        const entries = await answerEntries(ref.workflowId);
        expect(new Set(entries).size).toBe(entries.length);
        expect(entries.every((id) => journaled.includes(id))).toBe(true);
        expect(await redis().hlen(journal.keys.answers(ref.workflowId))).toBe(seen.size);
        // The pressure worked: the history dropped entries, the index none.
        expect(Number(await redis().hget(journal.keys.workflow(ref.workflowId), 'historyDropped'))).toBeGreaterThan(0);
        if (open?.answer) expect((await rowReply(ref)).replyMessageId).toBe(open.answer);
      }),
      { numRuns: 12 },
    );
  }, 240_000);
});

describe('property: the answer index expires with the workflow it belongs to', () => {
  it('at the same millisecond as the workflow row (a first answer to a row with an expiry) and as the compacted record, whatever the retention and answers', async () => {
    let n = 0;
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1_000, max: 30 * 24 * 3600 * 1000 }), fc.integer({ min: 1, max: 4 }), fc.integer({ min: 1_000, max: 3_600_000 }), async (retentionMs, count, rowTtlMs) => {
        const own = new Journal(redis(), { prefix: 'answer-index-expiry', retentionMs });
        const ref = await runningIntent(own, `ai-exp-${++n}`, CARD);
        await redis().pexpire(own.keys.workflow(ref.workflowId), rowTtlMs);
        for (let question = 1; question <= count; question++) {
          await deliveredBy(own, ref);
          await asks(own, ref, `q${question}`);
          expect((await own.recordReply(ref, `a${question}`, { parts: [{ text: `answer ${question}` }] })).created).toBe(true);
          if (question === 1) expect(await redis().pexpiretime(own.keys.answers(ref.workflowId))).toBe(await redis().pexpiretime(own.keys.workflow(ref.workflowId)));
        }
        await deliveredBy(own, ref);
        await own.applyStatus(ref, { mode: 'event', state: 'COMPLETED', taskId: `T-${ref.workflowId}`, statusTimestamp: nextStamp(), held: (await own.getDelegation(ref))! });
        await own.updateWorkflow(ref.workflowId, { state: 'COMPLETED' });
        expect(await redis().exists(own.keys.finished(ref.workflowId))).toBe(1);
        expect(await redis().pexpiretime(own.keys.answers(ref.workflowId))).toBe(await redis().pexpiretime(own.keys.finished(ref.workflowId)));
      }),
      { numRuns: 30 },
    );
  }, 120_000);
});
