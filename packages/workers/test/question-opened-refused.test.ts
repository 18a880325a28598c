/**
 * `question.opened` of a question whose answer the agent refused (the question open again: `replyState` 'refused'):
 * one event per refusal, never the first event's id again, told why (`previousReplyRefused`); a question with no
 * refused answer (or a refusal without its reason: an earlier question's, cleared) keeps the question key as its
 * occasion. Property over question keys, answer ids, reasons and reply
 * states: every event can be built (occasion within 256 characters, data within 64 KiB, whatever the reason's size).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { notificationEventOf, type DelegationRecord } from '@durable-a2a/shared';
import { questionOpened } from '../src/notify/question.ts';
import type { NotifyContext } from '../src/notify/emit.ts';

const ctx = { options: { answerLinks: undefined } } as unknown as NotifyContext;
const ID = /^[A-Za-z0-9._-]{1,128}$/;
const id = fc.stringMatching(ID);

function parked(questionKey: string, reply: { replyMessageId: string; replyState: 'pending' | 'sending' | 'sent' | 'refused'; replyError?: string } | undefined): DelegationRecord & { questionKey: string } {
  return {
    workflowId: 'wf-1', delegationId: 'main.1', step: 'main', kind: 'step', state: 'INPUT_REQUIRED', questionKey, updatedAt: 1_000, statusTimestampMs: 1_000,
    question: { messageId: 'q', role: 'ROLE_AGENT', parts: [{ text: 'which room?' }] },
    ...(reply ?? {}),
  } as unknown as DelegationRecord & { questionKey: string };
}

describe('question.opened after a refused answer', () => {
  it('case: the refusal is a new occasion carrying the reason; the first ask keeps the question key', () => {
    const first = questionOpened(ctx, parked('Q1', undefined));
    const again = questionOpened(ctx, parked('Q1', { replyMessageId: 'R1', replyState: 'refused', replyError: 'request over the agent\'s size limit' }));
    expect(first.occasion).toBe('Q1');
    expect(first.data).not.toHaveProperty('previousReplyRefused');
    expect(again.occasion).not.toBe('Q1');
    expect(again.data).toMatchObject({ questionKey: 'Q1', question: 'which room?', previousReplyRefused: 'request over the agent\'s size limit' });
    expect(notificationEventOf(again, 0).id).not.toBe(notificationEventOf(first, 0).id);
  });

  it('property: one occasion per (question, refused answer), never the question key; other reply states keep it; every event builds', () => {
    const replyState = fc.constantFrom('pending' as const, 'sending' as const, 'sent' as const, 'refused' as const);
    const reason = fc.oneof(fc.string({ maxLength: 64 }), fc.integer({ min: 60_000, max: 200_000 }).map((length) => 'r'.repeat(length)));
    fc.assert(
      fc.property(id, id, id, replyState, reason, (questionKey, replyA, replyB, state, why) => {
        const event = questionOpened(ctx, parked(questionKey, { replyMessageId: replyA, replyState: state, replyError: why }));
        expect(() => notificationEventOf(event, 0)).not.toThrow();
        // A refusal without a reason is none (the journal never writes one: `Journal.markReply`'s
        // REFUSED_WITHOUT_REASON; a later question clears the reason, applyStatus-5.lua).
        if (state !== 'refused' || why === '') {
          expect(event.occasion).toBe(questionKey);
          expect(event.data).not.toHaveProperty('previousReplyRefused');
          return;
        }
        expect(event.occasion).not.toBe(questionKey);
        expect(typeof event.data!.previousReplyRefused).toBe('string');
        const other = questionOpened(ctx, parked(questionKey, { replyMessageId: replyB, replyState: 'refused', replyError: why }));
        expect(other.occasion === event.occasion).toBe(replyA === replyB);
        // The same refusal seen again (a re-read after a crash) is the same event.
        expect(questionOpened(ctx, parked(questionKey, { replyMessageId: replyA, replyState: 'refused', replyError: why })).occasion).toBe(event.occasion);
      }),
      { numRuns: 300, examples: [['Q', 'R1', 'R1', 'refused', 'too large'], ['Q', 'R1', 'R2', 'refused', 'r'.repeat(100_000)], ['Q', 'R1', 'R1', 'sent', ''], ['Q', 'R1', 'R1', 'pending', ''], ['Q', 'R1', 'R1', 'refused', '']] },
    );
  });
});
