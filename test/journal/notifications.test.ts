/**
 * The notification and answer-link scripts, every return code: recordNotification-1.lua (recorded, unchanged, never
 * backwards) and answerByLink-2.lua (journaled, already answered, closed, missing; ANSWER_LIMIT: answer-index-race.test.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Journal, JournalError, createRedisClient, type RedisClient } from '@durable-a2a/shared';
import { useRedisServer } from '../harness/redis.ts';
import { intentRow } from '../harness/journal-rows.ts';

const redisServer = useRedisServer();
let redis: RedisClient;
let journal: Journal;

beforeAll(() => {
  redis = createRedisClient(redisServer().url);
  journal = new Journal(redis, { prefix: 'notify-journal' });
});
afterAll(async () => {
  await redis.quit();
});

describe('recordNotification-1.lua', () => {
  it('records each stage forward only: recorded, then unchanged for the same or an earlier stage', async () => {
    expect(await journal.recordNotification('wf-n', 'evt_1', 'enqueued', { kind: 'question.opened' })).toBe('recorded');
    expect(await journal.recordNotification('wf-n', 'evt_1', 'enqueued', { kind: 'question.opened' })).toBe('unchanged');
    expect(await journal.recordNotification('wf-n', 'evt_1', 'failed', { kind: 'question.opened', attempts: 12 })).toBe('recorded');
    expect(await journal.recordNotification('wf-n', 'evt_1', 'delivered', { kind: 'question.opened', attempts: 13 })).toBe('recorded');
    expect(await journal.recordNotification('wf-n', 'evt_1', 'enqueued', { kind: 'question.opened' })).toBe('unchanged');
    expect(await journal.recordNotification('wf-n', 'evt_1', 'failed', { kind: 'question.opened' })).toBe('unchanged');
    expect(await journal.notification('wf-n', 'evt_1')).toMatchObject({ stage: 'delivered', kind: 'question.opened', attempts: 13 });
    expect(await journal.notification('wf-n', 'evt_2')).toBeUndefined();
    expect(await redis.pttl(journal.keys.notifications('wf-n'))).toBeGreaterThan(0);
  });
});

describe('answerByLink-2.lua', () => {
  const link = { questionKey: 'q-1', linkId: 'lnk_0123' };

  async function parked(workflowId: string, state = 'INPUT_REQUIRED', questionKey = 'q-1') {
    const definition = JSON.stringify({ workflowId, steps: [{ name: 'main', agent: 'http://agent.example/', message: { text: 'hi' } }] });
    await journal.createWorkflow(workflowId, { state: 'RUNNING', definition, createdAt: '1000' }, intentRow(workflowId));
    await redis.hset(journal.keys.delegation(workflowId, 'main.1'), { state, questionKey });
    return { workflowId, delegationId: 'main.1' };
  }

  it('journals the answer once, recorded as answered by the link; a second use returns the first answer', async () => {
    const ref = await parked('wf-link-1');
    expect(await journal.answerByLink(ref, link, 'reply-1', { parts: [{ text: 'Lyon' }] })).toEqual({ messageId: 'reply-1', created: true });
    expect(await journal.answerByLink(ref, link, 'reply-2', { parts: [{ text: 'Paris' }] })).toEqual({ messageId: 'reply-1', created: false });
    const record = await journal.getDelegation(ref);
    expect(record).toMatchObject({ replyMessageId: 'reply-1', replyForQuestion: 'q-1', replyState: 'pending', replyBy: 'link lnk_0123' });
  });

  it('refuses a question that is closed (WRONG_STATE) and a delegation that is gone (DELEGATION_MISSING)', async () => {
    const other = await parked('wf-link-2', 'INPUT_REQUIRED', 'q-2');
    await expect(journal.answerByLink(other, link, 'reply-3', { parts: [{ text: 'x' }] })).rejects.toMatchObject({ code: 'WRONG_STATE' });
    const finished = await parked('wf-link-3', 'CANCELED');
    await expect(journal.answerByLink(finished, link, 'reply-4', { parts: [{ text: 'x' }] })).rejects.toBeInstanceOf(JournalError);
    await expect(journal.answerByLink({ workflowId: 'wf-none', delegationId: 'main.1' }, link, 'reply-5', { parts: [{ text: 'x' }] })).rejects.toMatchObject({ code: 'DELEGATION_MISSING' });
  });
});
