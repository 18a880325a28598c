/**
 * Every answer journaled in a workflow is in its answer index with its content digest (lua/includes/answerIndex.lua;
 * docs/people.md "Answers and their identity"): a caller's reply (recordReply-2.lua), an answer link's
 * (answerByLink-2.lua), an expiry's default answer (expireQuestion-2.lua), and an earlier release's reply once a
 * caller's reply meets it. Before, a link's or an expiry's answer had no entry: a caller's reply of the same content
 * racing it was told "that is the answer already" without its own messageId being indexed, and the caller's retry
 * once the agent asked again became the answer to that later question. Real redis-server, the producer's `reply` and
 * the journal's scripts; the agent is driven through the journal (its questions, the reply's delivery).
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { IdempotencyConflictError } from '@durable-a2a/producer';
import { ANSWERS_PER_WORKFLOW_MAX, JournalError, type DelegationRef } from '@durable-a2a/shared';
import { agentAsks as asks, delivered as deliveredBy, fillAnswerIndex, retryGiven, useAnswerJournal } from '../harness/answers.ts';
import { runningIntent } from '../harness/journal-rows.ts';

const { producer, journal, redis } = useAnswerJournal('answer-index-race');
const CARD = 'http://agent.example/.well-known/agent-card.json';

const parts = (text: string) => ({ parts: [{ text }] });
/** The agent asks question `questionKey` on the delegation's task. */
const agentAsks = (ref: DelegationRef, questionKey: string) => asks(journal(), ref, questionKey);
/** The row's pending reply is delivered to the agent. */
const delivered = (ref: DelegationRef) => deliveredBy(journal(), ref);
const expireWith = (ref: DelegationRef, questionKey: string, messageId: string, text: string) =>
  journal().expireQuestion(ref, { questionKey, action: 'answer', nowMs: Date.now(), reply: { messageId, message: parts(text) } });
const refusal = (promise: Promise<unknown>) => promise.then(() => 'accepted', (error: unknown) => (error instanceof JournalError ? error.code : String(error)));

/**
 * A server-made answer (`answer`), then a caller's reply of the same content under `caller` (its view read before the
 * answer: the journal call the producer makes next), then the agent's next question and the caller's retry.
 */
async function raceThenRetry(workflowId: string, answer: (ref: DelegationRef) => Promise<unknown>): Promise<DelegationRef> {
  const ref = await runningIntent(journal(), workflowId, CARD);
  await agentAsks(ref, 'q1');
  await answer(ref);
  expect(await journal().recordReply(ref, 'caller', parts('one room'))).toMatchObject({ created: false, same: true });
  await delivered(ref);
  await agentAsks(ref, 'q2');
  // The caller's retry is the answer it was told it gave: never the answer to q2.
  expect(await producer().reply(workflowId, 'one room', 'main', { messageId: 'caller' })).toEqual({ messageId: 'caller', created: false });
  await expect(producer().reply(workflowId, 'two rooms', 'main', { messageId: 'caller' })).rejects.toBeInstanceOf(IdempotencyConflictError);
  const row = (await journal().getDelegation(ref))!;
  expect({ questionKey: row.questionKey, replyForQuestion: row.replyForQuestion }).toEqual({ questionKey: 'q2', replyForQuestion: 'q1' });
  return ref;
}

describe('a caller\'s reply racing a server-made answer of the same content', () => {
  it('case: an answer link\'s answer, then the caller\'s: the caller\'s retry at the next question is that answer (it answered q2)', async () => {
    await raceThenRetry('air-link', (ref) => journal().answerByLink(ref, { questionKey: 'q1', linkId: 'l1' }, 'link-answer', parts('one room')));
  });

  it('case: an expiry\'s default answer, then the caller\'s: the caller\'s retry at the next question is that answer', async () => {
    await raceThenRetry('air-expiry', async (ref) => expect((await expireWith(ref, 'q1', 'default-answer', 'one room')).outcome).toBe('expired'));
  });

  it('case: an earlier release\'s answer (no index entry), then the caller\'s: both indexed, the retry is that answer', async () => {
    const ref = await raceThenRetry('air-old', async (ref) => {
      await journal().recordReply(ref, 'old-answer', parts('one room'));
      await redis().del(journal().keys.answers(ref.workflowId)); // as a row of an earlier release left it
    });
    expect((await redis().hkeys(journal().keys.answers(ref.workflowId))).sort()).toEqual(['caller', 'old-answer']);
  });
});

describe('answerByLink-2.lua and expireQuestion-2.lua: the answer index', () => {
  /** A delegation parked on q1 whose workflow's index holds `ANSWERS_PER_WORKFLOW_MAX` answers. */
  async function fullIndex(workflowId: string): Promise<DelegationRef> {
    const ref = await runningIntent(journal(), workflowId, CARD);
    await agentAsks(ref, 'q1');
    await fillAnswerIndex(redis(), journal(), workflowId, ANSWERS_PER_WORKFLOW_MAX);
    return ref;
  }

  it('1: a link\'s and an expiry\'s answer are indexed with their digest, delegation and question', async () => {
    const ref = await runningIntent(journal(), 'air-codes-1', CARD);
    await agentAsks(ref, 'q1');
    expect(await journal().answerByLink(ref, { questionKey: 'q1', linkId: 'l1' }, 'by-link', parts('Paris'))).toEqual({ messageId: 'by-link', created: true });
    await delivered(ref);
    await agentAsks(ref, 'q2');
    expect((await expireWith(ref, 'q2', 'by-expiry', 'Lyon')).outcome).toBe('expired');
    expect(await journal().findAnswer(ref.workflowId, 'by-link', [{ text: 'Paris' }])).toEqual({ delegationId: 'main.1', same: true });
    expect(await journal().findAnswer(ref.workflowId, 'by-expiry', [{ text: 'Lyon' }])).toEqual({ delegationId: 'main.1', same: true });
    expect((await redis().hget(journal().keys.answers(ref.workflowId), 'by-expiry'))?.split(' ').slice(1)).toEqual(['main.1', 'q2']);
  });

  it('ANSWER_LIMIT: a link at a full index writes nothing', async () => {
    const ref = await fullIndex('air-full-link');
    expect(await refusal(journal().answerByLink(ref, { questionKey: 'q1', linkId: 'l1' }, 'by-link', parts('Paris')))).toBe('ANSWER_LIMIT');
    expect((await journal().getDelegation(ref))!.replyMessageId).toBeUndefined();
  });

  it('4: an expiry at a full index journals its default answer refused (never sent, not indexed); a caller\'s reply then finds the question closed', async () => {
    const ref = await fullIndex('air-full-expiry');
    expect(await expireWith(ref, 'q1', 'by-expiry', 'Lyon')).toMatchObject({ outcome: 'expired', defaultAnswerRefused: true });
    const row = (await journal().getDelegation(ref))!;
    expect(row).toMatchObject({ questionExpired: 'q1', replyMessageId: 'by-expiry', replyState: 'refused' });
    expect(row.replyError).toContain('ANSWER_LIMIT');
    expect(await redis().hexists(journal().keys.answers(ref.workflowId), 'by-expiry')).toBe(0);
    expect(await refusal(journal().recordReply(ref, 'caller', parts('Lyon')))).toBe('WRONG_STATE');
  });
});

/** One step of a run: the agent asks again, an answer by one channel, two answers at once, or a caller's retry. */
type Action =
  | { kind: 'ask' }
  | { kind: 'reply'; content: number }
  | { kind: 'link'; content: number }
  | { kind: 'expire'; content: number }
  | { kind: 'race'; server: 'link' | 'expire'; content: number; serverContent: number }
  | { kind: 'retry'; pick: number; same: boolean };
const CONTENTS = ['one room', 'two rooms'];
const content = fc.integer({ min: 0, max: CONTENTS.length - 1 });
const actionArbitrary: fc.Arbitrary<Action> = fc.oneof(
  fc.constant({ kind: 'ask' as const }),
  fc.record({ kind: fc.constant('reply' as const), content }),
  fc.record({ kind: fc.constant('link' as const), content }),
  fc.record({ kind: fc.constant('expire' as const), content }),
  fc.record({ kind: fc.constant('race' as const), server: fc.constantFrom('link' as const, 'expire' as const), content, serverContent: content }),
  fc.record({ kind: fc.constant('retry' as const), pick: fc.nat(), same: fc.boolean() }),
);

let run = 0;

describe('property: answers by every channel, interleaved', () => {
  it('each answer stored is in the index with its digest; a caller\'s messageId once acknowledged is that answer for good, never a later question\'s', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(actionArbitrary, { minLength: 3, maxLength: 24 }), async (actions) => {
        run += 1;
        const ref = await runningIntent(journal(), `air-prop-${run}`, CARD);
        /** Caller messageIds acknowledged (the call answered without an error), with their content. */
        const acknowledged = new Map<string, number>();
        /** Ids journaled as an answer (created by this call), by any channel. */
        const journaled = new Set<string>();
        let questions = 0;
        let next = 0;
        const question = () => `q${questions}`;
        const caller = async (text: number) => {
          const id = `c${run}-${++next}`;
          const reply = await journal().recordReply(ref, id, parts(CONTENTS[text]!)).catch(() => undefined);
          if (reply?.created) journaled.add(id);
          if (reply && (reply.created || reply.same)) acknowledged.set(id, text);
        };
        const server = async (channel: 'link' | 'expire', text: number) => {
          const id = `s${run}-${++next}`;
          if (channel === 'link') {
            const linked = await journal().answerByLink(ref, { questionKey: question(), linkId: id }, id, parts(CONTENTS[text]!)).catch(() => undefined);
            if (linked?.created) journaled.add(id);
          } else if ((await expireWith(ref, question(), id, CONTENTS[text]!).catch(() => undefined))?.outcome === 'expired') {
            journaled.add(id);
          }
        };
        for (const action of actions) {
          if (action.kind === 'ask') {
            const row = (await journal().getDelegation(ref))!;
            if (questions > 0 && row.replyForQuestion !== question()) continue; // the agent waits for its answer
            await delivered(ref);
            questions += 1;
            await agentAsks(ref, question());
          } else if (action.kind === 'reply') {
            await caller(action.content);
          } else if (action.kind === 'link' || action.kind === 'expire') {
            await server(action.kind, action.content);
          } else if (action.kind === 'race') {
            await Promise.all([caller(action.content), server(action.server, action.serverContent)]);
          } else {
            await retryGiven(producer(), ref.workflowId, acknowledged, CONTENTS, action);
          }
          // The row's reply is in the index with its own content's digest.
          const row = await journal().getDelegationView(ref);
          if (row?.replyMessageId) expect(await journal().findAnswer(ref.workflowId, row.replyMessageId, row.replyMessage!.parts)).toMatchObject({ same: true });
        }
        // Each acknowledged caller id is indexed with its content; the index holds exactly the acknowledged and
        // journaled ids; a question was answered once (one journaled answer per question asked, at most).
        for (const [id, text] of acknowledged) expect(await journal().findAnswer(ref.workflowId, id, [{ text: CONTENTS[text]! }])).toMatchObject({ same: true });
        expect((await redis().hkeys(journal().keys.answers(ref.workflowId))).sort()).toEqual([...new Set([...acknowledged.keys(), ...journaled])].sort());
        expect(journaled.size).toBeLessThanOrEqual(questions);
      }),
      { numRuns: 25 },
    );
  }, 240_000);
});
