/**
 * A reply's messageId is its identity in the journal (recordReply-2.lua): the same messageId journaled again once the
 * agent asked its next question is the reply it was (`created: false`), not the answer to the new question. The
 * producer finds a retry among the workflow's replies first (`Producer.reply`'s `messageId`); this is the script's own
 * guard for a retry that read the workflow before its original was journaled. Real redis-server, the journal's scripts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProducer, type Producer } from '@durable-a2a/producer';
import type { DelegationRef, Journal } from '@durable-a2a/shared';
import { eventually } from '../harness/fleet.ts';
import { runningIntent } from '../harness/journal-rows.ts';
import { useRedisServer } from '../harness/redis.ts';
import { authorized, startTestServer } from '../harness/api-server.ts';

const redisServer = useRedisServer();
const CARD = 'http://agent.example/.well-known/agent-card.json';
let producer: Producer;
let journal: Journal;

beforeAll(async () => {
  producer = createProducer({ redis: redisServer().url, addressPolicy: { allowLoopback: true }, prefix: 'reply-identity' });
  journal = producer.journal;
  await eventually(() => journal.getWorkflow('none').then(() => true, () => false), 'the producer connected', 10_000);
});
afterAll(async () => {
  await producer?.close();
});

/** The agent asks question `questionId` on the delegation's task T. */
async function agentAsks(ref: DelegationRef, questionId: string): Promise<void> {
  const held = (await journal.getDelegation(ref))!;
  const statusMessage = { messageId: questionId, role: 'ROLE_AGENT' as const, parts: [{ text: `question ${questionId}` }] };
  await journal.applyStatus(ref, { mode: 'event', state: 'INPUT_REQUIRED', taskId: `T-${ref.workflowId}`, statusTimestamp: new Date().toISOString(), held, statusMessage });
}

describe('recordReply: a messageId already journaled as the reply is that reply', () => {
  it('case: a1 answers q1 and is sent; the agent asks q2; a1 again is a1 (created: false), q2 stays open with no reply', async () => {
    const ref = await runningIntent(journal, 'ri-1', CARD);
    await agentAsks(ref, 'q1');
    expect(await journal.recordReply(ref, 'a1', { parts: [{ text: 'Paris' }] })).toEqual({ messageId: 'a1', created: true });
    expect(await journal.markReply(ref, 1, 'a1', 'sending', '', { token: 'tok-a1', leaseMs: 60_000 })).toBe(true);
    expect(await journal.markReply(ref, 1, 'a1', 'sent', '', { token: 'tok-a1' })).toBe(true);
    await agentAsks(ref, 'q2');
    expect(await journal.recordReply(ref, 'a1', { parts: [{ text: 'Paris' }] })).toEqual({ messageId: 'a1', created: false, same: true });
    const row = (await journal.getDelegation(ref)) as unknown as { questionKey: string; replyForQuestion: string; replyMessageId: string };
    expect({ questionKey: row.questionKey, replyForQuestion: row.replyForQuestion, replyMessageId: row.replyMessageId }).toEqual({ questionKey: 'q2', replyForQuestion: 'q1', replyMessageId: 'a1' });
    expect((await producer.questions(ref.workflowId)).map((question) => question.delegationId)).toEqual([ref.delegationId]);
    // Another messageId answers q2.
    expect(await journal.recordReply(ref, 'a2', { parts: [{ text: 'Friday' }] })).toEqual({ messageId: 'a2', created: true });
  });
});

describe('POST /v1/workflows/:id/steps/:step/reply with a messageId (the REST idempotency key of a reply)', () => {
  it('case: sent again after the agent asked q2 it is the q1 reply (200, created: false); other content under it is 409; q2 stays open', async () => {
    const app = startTestServer({ redisUrl: redisServer().url, prefix: 'reply-identity' });
    try {
      const ref = await runningIntent(journal, 'ri-rest', CARD);
      await agentAsks(ref, 'q1');
      const reply = (text: string) => authorized(app, { method: 'POST', url: `/v1/workflows/${ref.workflowId}/steps/main/reply`, payload: { text, messageId: 'rest-answer-1' } });
      const first = await reply('Paris');
      expect([first.statusCode, first.json()]).toEqual([202, { messageId: 'rest-answer-1', created: true }]);
      await journal.markReply(ref, 1, 'rest-answer-1', 'sending', '', { token: 'tok', leaseMs: 60_000 });
      await journal.markReply(ref, 1, 'rest-answer-1', 'sent', '', { token: 'tok' });
      await agentAsks(ref, 'q2');
      const again = await reply('Paris');
      expect([again.statusCode, again.json()]).toEqual([200, { messageId: 'rest-answer-1', created: false }]);
      expect((await reply('Lyon')).json().code).toBe('IDEMPOTENCY_CONFLICT');
      const row = (await journal.getDelegation(ref)) as unknown as { questionKey: string; replyForQuestion: string };
      expect([row.questionKey, row.replyForQuestion]).toEqual(['q2', 'q1']);
    } finally {
      await app.close();
    }
  });
  it('case: sent again with the same parts whose metadata keys come in another order (a JSON library that reorders): the same reply (200, created: false), not a conflict', async () => {
    const app = startTestServer({ redisUrl: redisServer().url, prefix: 'reply-identity' });
    try {
      const ref = await runningIntent(journal, 'ri-rest-order', CARD);
      await agentAsks(ref, 'q1');
      const reply = (metadata: Record<string, number>) =>
        authorized(app, { method: 'POST', url: `/v1/workflows/${ref.workflowId}/steps/main/reply`, payload: { parts: [{ text: 'Paris', metadata }], messageId: 'rest-answer-2' } });
      expect((await reply({ a: 1, b: 2 })).statusCode).toBe(202);
      await agentAsks(ref, 'q2');
      const again = await reply({ b: 2, a: 1 });
      expect([again.statusCode, again.json()]).toEqual([200, { messageId: 'rest-answer-2', created: false }]);
      expect((await reply({ a: 1, b: 3 })).json().code).toBe('IDEMPOTENCY_CONFLICT');
    } finally {
      await app.close();
    }
  });
});
