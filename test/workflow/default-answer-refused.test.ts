/**
 * A question's expiry with `onExpiry: 'answer'` journals the default answer; when the agent refuses it for good
 * (invalid params, a content type, bytes over its cap), the question cannot open again (an expired question takes no
 * answer), so a person decides at once: AMBIGUOUS `QUESTION_EXPIRED` (the `reply-refused` row). Before, the row stayed
 * parked on a closed question, told nobody, until its attempt deadline. Here the crash window: the refusal journaled
 * (markReply 'refused'), the worker gone before the hand-over; the reconciler's look at the parked row
 * (`checkQuestionLife`) hands it over then. Real redis-server and a real fleet's context. Property over the pure
 * transition: a refusal goes to a person exactly when the question expired, and is journaled exactly once. A default
 * answer the workflow's answer index has no room for (`ANSWERS_PER_WORKFLOW_MAX`) is refused by the journal itself
 * (expireQuestion-2.lua), never sent: a person decides at once, the same way.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ANSWERS_PER_WORKFLOW_MAX, JournalError, type DelegationRecord, type DelegationRef, type Journal } from '@durable-a2a/shared';
import { fillAnswerIndex } from '../harness/answers.ts';
import { eventually } from '../harness/fleet.ts';
import { useRedisClient } from '../harness/redis.ts';
import { checkQuestionLife } from '../../packages/workers/src/delegation/question-life.ts';
import { transition } from '../../packages/workers/src/delegation/core/transitions.ts';
import type { Policy } from '../../packages/workers/src/delegation/core/policy.ts';
import { useFieldCases } from '../harness/field-cases.ts';
import { intentRow } from '../harness/journal-rows.ts';

const h = useFieldCases();
const redis = useRedisClient(h.redisServer);
const CARD = 'https://agent.example/.well-known/agent-card.json';

/** A one-step workflow whose step's question expires after `expiresAfterMs` with a default answer, parked on q1. */
async function parkedOnQ1(journal: Journal, ref: DelegationRef, expiresAfterMs: number): Promise<void> {
  const question = { expiresAfterMs, onExpiry: 'answer', defaultAnswer: 'one room' };
  const definition = JSON.stringify({ workflowId: ref.workflowId, steps: [{ name: 'main', agent: CARD, message: { text: 'x' }, question }] });
  await journal.createWorkflow(ref.workflowId, { state: 'RUNNING', definition, createdAt: String(Date.now()) }, { ...intentRow(ref.workflowId), agentCardUrl: CARD, createdAt: String(Date.now()) });
  await journal.applyStatus(ref, { mode: 'event', state: 'INPUT_REQUIRED', taskId: 'T-1', statusMessage: { messageId: 'q1', role: 'ROLE_AGENT', parts: [{ text: 'one room or two?' }] }, statusTimestamp: new Date().toISOString() });
}

describe('a default answer the agent refused for good', () => {
  it('case: journaled refused, the worker gone: the reconciler hands the row to a person (it stayed parked until the attempt deadline)', async () => {
    const fleet = await h.fleetFor(h.newPrefix());
    const journal = fleet.context.journal;
    const ref = { workflowId: 'wf-default-refused', delegationId: 'main.1' };
    await parkedOnQ1(journal, ref, 1_000);
    expect((await journal.expireQuestion(ref, { questionKey: 'q1', action: 'answer', nowMs: Date.now(), reply: { messageId: 'd1', message: { parts: [{ text: 'one room' }] } } })).outcome).toBe('expired');
    const fence = await journal.claim(ref, 'test/reply');
    expect(await journal.takeReplySend(ref, fence, 'd1', 'tok', 60_000)).toBe('taken');
    expect(await journal.markReply(ref, fence, 'd1', 'refused', 'request over the agent\'s size limit', { token: 'tok' })).toBe(true);
    const parked = (await journal.getDelegation(ref))!;
    expect(parked).toMatchObject({ state: 'INPUT_REQUIRED', questionExpired: 'q1', questionExpiry: 'answer', replyState: 'refused' });
    expect(await checkQuestionLife(fleet.context, parked, fleet.context.logger)).toBe(true);
    const after = (await journal.getDelegation(ref))!;
    expect(after.state).toBe('AMBIGUOUS');
    expect(after.error).toMatchObject({ code: 'QUESTION_EXPIRED', delivery: 'received' });
    expect(after.error!.message).toContain('request over the agent\'s size limit');
  });

  it('case: the answer index is full when the question expires: the default answer is journaled refused (ANSWER_LIMIT), never sent, and a person decides at once', async () => {
    const fleet = await h.fleetFor(h.newPrefix());
    const journal = fleet.context.journal;
    const ref = { workflowId: 'wf-default-over-limit', delegationId: 'main.1' };
    await parkedOnQ1(journal, ref, 60_000);
    const key = journal.keys.answers(ref.workflowId);
    await fillAnswerIndex(redis(), journal, ref.workflowId, ANSWERS_PER_WORKFLOW_MAX);
    // Asked long ago: past its expiry now (set on the row: the fleet's path there is covered by question-expiry tests).
    await redis().hset(journal.keys.delegation(ref.workflowId, ref.delegationId), 'questionAskedAt', String(Date.now() - 120_000));
    const parked = (await journal.getDelegation(ref))!;
    // The fleet's own sweep may look at the row first: either run's result is the same.
    await checkQuestionLife(fleet.context, parked, fleet.context.logger).catch((error: unknown) => {
      if (!(error instanceof JournalError && error.code === 'VERSION_CONFLICT')) throw error;
    });
    const after = await eventually(async () => {
      const row = (await journal.getDelegation(ref))!;
      return row.state === 'AMBIGUOUS' ? row : undefined;
    }, 'the row handed to a person');
    expect(after).toMatchObject({ questionExpired: 'q1', questionExpiry: 'answer', replyState: 'refused', replyBy: 'expiry' });
    expect(after.error).toMatchObject({ code: 'QUESTION_EXPIRED', delivery: 'received' });
    expect(after.error!.message).toContain('ANSWER_LIMIT');
    expect(await redis().hexists(key, after.replyMessageId!)).toBe(0);
  });

  it('property over questions (expired or open), reply states and answer ids: a person decides exactly when the question expired; the refusal is written unless journaled', () => {
    const policy = { now: () => 1_000, random: () => 0.5, followBackoff: { baseMs: 500, capMs: 30_000 }, unreachableBackoff: { baseMs: 1_000, capMs: 30_000 }, slowPollAfterMs: 60_000, slowPollMs: 60_000, noProgressWindowMs: 1_800_000, unacceptableAnswerLimit: 3, reconcileIntervalMs: 30_000, notFoundThreshold: 3, notFoundWindowMs: 30_000, sendAttempts: 3, sendSettleMs: 31_000 } as Policy;
    const examples: [boolean, 'pending' | 'sending' | 'refused', boolean, 'INPUT_REQUIRED' | 'AUTH_REQUIRED'][] = [
      [true, 'sending', true, 'INPUT_REQUIRED'],
      [true, 'refused', true, 'INPUT_REQUIRED'],
      [true, 'refused', false, 'AUTH_REQUIRED'],
      [false, 'sending', true, 'INPUT_REQUIRED'],
      [false, 'refused', true, 'AUTH_REQUIRED'],
    ];
    fc.assert(
      fc.property(fc.boolean(), fc.constantFrom('pending' as const, 'sending' as const, 'refused' as const), fc.boolean(), fc.constantFrom('INPUT_REQUIRED' as const, 'AUTH_REQUIRED' as const), (expired, replyState, sameAnswer, state) => {
        const record = {
          workflowId: 'wf', delegationId: 'main.1', step: 'main', kind: 'step', attempt: 1, agentCardUrl: CARD, messageId: 'M1', state, version: 3, createdAt: 0, updatedAt: 0,
          taskId: 'T-1', questionKey: 'q1', replyMessageId: 'd1', replyState, ...(expired ? { questionExpired: 'q1', questionExpiry: 'answer' } : {}),
        } as unknown as DelegationRecord;
        const step = transition(record, { kind: 'reply-refused', replyMessageId: sameAnswer ? 'd1' : 'd0', message: 'too large' }, policy);
        const writes = step.write === undefined ? [] : Array.isArray(step.write) ? step.write : [step.write];
        expect(step.next.kind).toBe(expired ? 'needs-person' : 'nothing');
        if (expired) expect(step.next).toMatchObject({ code: 'QUESTION_EXPIRED', delivery: 'received' });
        // Written once: not again when the journal already holds this refusal (the reconciler's re-read).
        const journaled = replyState === 'refused' && sameAnswer;
        expect(writes.map((write) => write.kind)).toEqual(expired && journaled ? [] : ['mark-reply']);
      }),
      { numRuns: 100, examples },
    );
  });
});
