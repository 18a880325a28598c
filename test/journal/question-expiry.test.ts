/**
 * expireQuestion-2.lua, every return code (4, its default answer refused at a full answer index: answer-index-race.test.ts), and its compare-and-set against recordReply-2.lua: of an answer and the
 * expiry of the same question, exactly one is journaled whichever comes first (a property over interleavings).
 * Also: a question's life counts from when it was first journaled (`questionAskedAt`, applyStatus-5.lua).
 */
import { beforeEach, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { Journal, JournalError, isAwaitingAnswer, type QuestionExpiryAction } from '@durable-a2a/shared';
import { useRedisClient, useRedisServer } from '../harness/redis.ts';
import { intentRow } from '../harness/journal-rows.ts';

const redisServer = useRedisServer();
const redis = useRedisClient(redisServer);
let journal: Journal;
let counter = 0;
let ref: { workflowId: string; delegationId: string };

const refusal = (promise: Promise<unknown>) => promise.then(() => 'none', (error: unknown) => (error instanceof JournalError ? error.code : String(error)));

async function freshRow(): Promise<void> {
  counter += 1;
  journal = new Journal(redis(), { prefix: `qe${counter}`, retentionMs: 60_000 });
  ref = { workflowId: `wf${counter}`, delegationId: 'main.1' };
  expect(await journal.createWorkflow(ref.workflowId, { state: 'RUNNING' }, intentRow(ref.workflowId))).toBe(true);
}

async function ask(timestamp = '2026-01-01T10:00:01Z'): Promise<string> {
  await journal.applyStatus(ref, { mode: 'event', state: 'INPUT_REQUIRED', taskId: 'T1', statusTimestamp: timestamp });
  return (await journal.getDelegation(ref))!.questionKey!;
}

const expire = (questionKey: string, action: QuestionExpiryAction = 'fail', nowMs = Date.now()) =>
  journal.expireQuestion(ref, { questionKey, action, nowMs, ...(action === 'answer' ? { reply: { messageId: 'R-expiry', message: { parts: [{ text: 'one room' }] } } } : {}) });

beforeEach(freshRow);

describe('expireQuestion', () => {
  it('1: expired with what is done; 2: the same question again (idempotent); the version moves once', async () => {
    const key = await ask();
    const before = (await journal.getDelegation(ref))!;
    expect(before.questionAskedAt).toBeGreaterThan(0);
    expect(await expire(key, 'cancel', 1_000)).toEqual({ outcome: 'expired', version: before.version + 1 });
    expect(await expire(key, 'fail', 2_000)).toEqual({ outcome: 'already-expired', version: before.version + 1 });
    const row = (await journal.getDelegation(ref))!;
    expect(row).toMatchObject({ questionExpired: key, questionExpiredAt: 1_000, questionExpiry: 'cancel' });
    expect(row.replyMessageId).toBeUndefined();
    expect(isAwaitingAnswer(row)).toBe(false);
  });

  it("'answer' journals the default answer as the reply by expiry, pending for the reply path", async () => {
    const key = await ask();
    expect((await expire(key, 'answer')).outcome).toBe('expired');
    expect(await journal.getDelegation(ref)).toMatchObject({ replyMessageId: 'R-expiry', replyMessage: { parts: [{ text: 'one room' }] }, replyForQuestion: key, replyState: 'pending', replyBy: 'expiry' });
    // A person's answer afterwards gets the journaled one (the producer then refuses a different answer).
    expect(await journal.recordReply(ref, 'R-person', { parts: [{ text: 'two rooms' }] })).toEqual({ messageId: 'R-expiry', created: false, same: false });
  });

  it('0: answered first, or another question: nothing expires', async () => {
    const key = await ask();
    await journal.recordReply(ref, 'R1', { parts: [{ text: 'two' }] });
    expect((await expire(key)).outcome).toBe('answered');
    expect((await expire('seq:other')).outcome).toBe('answered');
    expect((await journal.getDelegation(ref))!.questionExpired).toBeUndefined();
  });

  it('a reply the agent refused reopens the question: it may expire', async () => {
    const key = await ask();
    await journal.recordReply(ref, 'R1', { parts: [{ text: 'two' }] });
    const fence = await journal.claim(ref, 'w');
    expect(await journal.markReply(ref, fence, 'R1', 'refused', 'not a number')).toBe(true);
    expect((await expire(key)).outcome).toBe('expired');
  });

  it('an expired question refuses an answer (recordReply: WRONG_STATE); a new question of the same row lives anew', async () => {
    const key = await ask();
    await expire(key, 'cancel');
    expect(await refusal(journal.recordReply(ref, 'R1', { parts: [{ text: 'two' }] }))).toBe('WRONG_STATE');
    const asked = (await journal.getDelegation(ref))!.questionAskedAt!;
    await journal.applyStatus(ref, { mode: 'snapshot', state: 'WORKING', taskId: 'T1' });
    const second = await ask('2026-01-01T10:00:09Z');
    expect(second).not.toBe(key);
    const row = (await journal.getDelegation(ref))!;
    expect(row.questionAskedAt).toBeGreaterThanOrEqual(asked);
    expect(isAwaitingAnswer(row)).toBe(true);
    expect(await journal.recordReply(ref, 'R2', { parts: [{ text: 'two' }] })).toEqual({ messageId: 'R2', created: true });
  });

  it('WRONG_STATE: not parked; DELEGATION_MISSING: no row', async () => {
    expect(await refusal(expire('seq:1'))).toBe('WRONG_STATE');
    expect(await refusal(journal.expireQuestion({ ...ref, delegationId: 'none' }, { questionKey: 'seq:1', action: 'fail', nowMs: 1 }))).toBe('DELEGATION_MISSING');
  });

  it('property: an answer and the expiry of one question, in any order and at once, journal exactly one of them', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom<QuestionExpiryAction>('cancel', 'fail', 'answer'), fc.constantFrom('answer-first', 'expiry-first', 'together'), async (action, order) => {
        await freshRow();
        const key = await ask();
        const answer = () => journal.recordReply(ref, 'R-person', { parts: [{ text: 'two rooms' }] }).then((recorded) => recorded.created && recorded.messageId === 'R-person', () => false);
        const expiry = () => expire(key, action).then((expired) => expired.outcome === 'expired');
        let answered: boolean;
        let expired: boolean;
        if (order === 'answer-first') [answered, expired] = [await answer(), await expiry()];
        else if (order === 'expiry-first') [expired, answered] = [await expiry(), await answer()];
        else [answered, expired] = await Promise.all([answer(), expiry()]);
        expect(answered !== expired).toBe(true);
        const row = (await journal.getDelegation(ref))!;
        expect(row.questionExpired === key).toBe(expired);
        if (answered) expect(row).toMatchObject({ replyMessageId: 'R-person', replyForQuestion: key });
        else if (action === 'answer') expect(row).toMatchObject({ replyMessageId: 'R-expiry', replyBy: 'expiry' });
        else expect(row.replyMessageId).toBeUndefined();
      }),
      { numRuns: 30 },
    );
  });
});
