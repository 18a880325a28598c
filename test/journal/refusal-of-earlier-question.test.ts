/**
 * A refused answer belongs to the question it answered. The agent refuses an answer for good (markReply 'refused':
 * `replyState` 'refused', `replyError` the reason), the question opens again; when the agent then asks another question
 * (a new status message, at once or after resuming), that question has no answer yet: neither the API view
 * (`previousReplyRefused`) nor its `question.opened` (data, and the occasion: the question key, not a `refused:` one)
 * may tell its person that a previous answer was refused. Before the fix the row kept the refusal across questions, so
 * the new question was shown and notified as "the agent refused the previous answer" with the earlier reason.
 * Real redis-server, the journal's scripts, the producer's view and the workers' `questionOpened`.
 * Property over sequences of agent statuses and answers (refused with a reason or none, or sent), checked after every step.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProducer, type Producer } from '@durable-a2a/producer';
import type { DelegationRecord, DelegationRef, Journal } from '@durable-a2a/shared';
import { questionOpened } from '../../packages/workers/src/notify/question.ts';
import type { NotifyContext } from '../../packages/workers/src/notify/emit.ts';
import { REFUSED_WITHOUT_REASON } from '../../packages/shared/src/journal/replies.ts';
import { eventually } from '../harness/fleet.ts';
import { runningIntent } from '../harness/journal-rows.ts';
import { useRedisServer } from '../harness/redis.ts';

const redisServer = useRedisServer();
const CARD = 'http://agent.example/.well-known/agent-card.json';
const notifyCtx = { options: { answerLinks: undefined } } as unknown as NotifyContext;
let producer: Producer;
let journal: Journal;
let counter = 0;

beforeAll(async () => {
  producer = createProducer({ redis: redisServer().url, addressPolicy: { allowLoopback: true }, prefix: 'refusal-scope' });
  journal = producer.journal;
  // The producer's connection refuses commands until it is up (no offline queue).
  await eventually(() => journal.getWorkflow('none').then(() => true, () => false), 'the producer connected', 10_000);
});
afterAll(async () => {
  await producer?.close();
});

/** A RUNNING workflow whose step main.1 (fence 1) is in INTENT. */
const newDelegation = (): Promise<DelegationRef> => runningIntent(journal, `rs-${++counter}`, CARD);

/** The agent's status on the delegation's task T: INPUT_REQUIRED asking question `questionId`, or WORKING. */
async function agentSays(ref: DelegationRef, questionId: string | undefined): Promise<void> {
  const statusMessage = questionId ? { messageId: questionId, role: 'ROLE_AGENT' as const, parts: [{ text: `question ${questionId}` }] } : undefined;
  // With the row held: the change reply (only what changed, merged into the held copy) must agree with the row.
  const held = (await journal.getDelegation(ref))!;
  const result = await journal.applyStatus(ref, { mode: 'event', state: questionId ? 'INPUT_REQUIRED' : 'WORKING', taskId: `T-${ref.workflowId}`, statusTimestamp: new Date().toISOString(), held, ...(statusMessage ? { statusMessage } : {}) });
  const row = (await journal.getDelegation(ref))!;
  if (result.applied) expect({ replyState: result.record!.replyState, replyError: result.record!.replyError }).toEqual({ replyState: row.replyState, replyError: row.replyError });
}

/** A person's answer `answerId`, then what the agent did with it: refused for good (with `reason`) or took it. */
async function answered(ref: DelegationRef, answerId: string, outcome: { refused: string } | 'sent'): Promise<void> {
  expect((await journal.recordReply(ref, answerId, { parts: [{ text: 'room 12' }] })).created).toBe(true);
  expect(await journal.markReply(ref, 1, answerId, 'sending', '', { token: `tok-${answerId}`, leaseMs: 60_000 })).toBe(true);
  expect(await journal.markReply(ref, 1, answerId, outcome === 'sent' ? 'sent' : 'refused', outcome === 'sent' ? '' : outcome.refused, { token: `tok-${answerId}` })).toBe(true);
}

/** What the person is told about the row's open question: the view's and the event's refusal, and the event's occasion. */
async function told(ref: DelegationRef): Promise<{ view: string | undefined; event: unknown; occasion: string; questionKey: string }> {
  const record = (await journal.getDelegation(ref)) as DelegationRecord & { questionKey: string };
  const [question] = await producer.questions(ref.workflowId);
  const event = questionOpened(notifyCtx, record);
  return { view: question?.previousReplyRefused, event: event.data?.previousReplyRefused, occasion: String(event.occasion), questionKey: record.questionKey };
}

describe('a refused answer is never shown or notified on a later question', () => {
  it('case: answer to q1 refused, then the agent asks q2: q2 is notified under its own key, with no previous refusal (it carried q1\'s)', async () => {
    const ref = await newDelegation();
    await agentSays(ref, 'q1');
    await answered(ref, 'a1', { refused: 'request over the agent\'s size limit' });
    const onQ1 = await told(ref);
    expect(onQ1).toMatchObject({ view: 'request over the agent\'s size limit', event: 'request over the agent\'s size limit', questionKey: 'q1' });
    expect(onQ1.occasion).toMatch(/^refused:[0-9a-f]{64}$/);
    await agentSays(ref, 'q2');
    expect(await told(ref)).toEqual({ view: undefined, event: undefined, occasion: 'q2', questionKey: 'q2' });
  });

  type Op = { kind: 'ask'; fresh: boolean } | { kind: 'resume' } | { kind: 'answer'; outcome: { refused: string } | 'sent' };
  const op: fc.Arbitrary<Op> = fc.oneof(
    fc.record({ kind: fc.constant('ask' as const), fresh: fc.boolean() }),
    fc.constant({ kind: 'resume' as const }),
    fc.record({ kind: fc.constant('answer' as const), outcome: fc.oneof(fc.constant('sent' as const), fc.record({ refused: fc.constantFrom('too large', 'unsupported content type', '', '  ') })) }),
  );

  it('property over statuses and answers: a refusal is told exactly on the question it answered, until that question is answered again', async () => {
    const examples: [Op[]][] = [
      // refused, then a new question at once; refused, then resumed and a new question; a blank reason; refused then sent.
      [[{ kind: 'ask', fresh: true }, { kind: 'answer', outcome: { refused: 'too large' } }, { kind: 'ask', fresh: true }]],
      [[{ kind: 'ask', fresh: true }, { kind: 'answer', outcome: { refused: 'too large' } }, { kind: 'resume' }, { kind: 'ask', fresh: true }]],
      [[{ kind: 'ask', fresh: true }, { kind: 'answer', outcome: { refused: '' } }, { kind: 'ask', fresh: false }]],
      [[{ kind: 'ask', fresh: true }, { kind: 'answer', outcome: { refused: 'x' } }, { kind: 'answer', outcome: 'sent' }, { kind: 'resume' }, { kind: 'ask', fresh: false }]],
    ];
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 8 }), async (ops) => {
        const ref = await newDelegation();
        // The model: the open question (undefined: not parked), and the last answer with what became of it.
        let question: string | undefined;
        let asked = 0;
        let answer: { forQuestion: string; state: 'sent' | 'refused'; reason: string } | undefined;
        let answers = 0;
        for (const step of ops) {
          if (step.kind === 'ask') {
            // Not fresh: the same question read again (only while it is open; else a new one).
            if (step.fresh || question === undefined) question = `q${++asked}`;
            await agentSays(ref, question);
          } else if (step.kind === 'resume') {
            question = undefined;
            await agentSays(ref, undefined);
          } else {
            const awaiting = question !== undefined && (answer === undefined || answer.forQuestion !== question || answer.state === 'refused');
            if (!awaiting) continue;
            await answered(ref, `a${++answers}`, step.outcome);
            answer = step.outcome === 'sent' ? { forQuestion: question!, state: 'sent', reason: '' } : { forQuestion: question!, state: 'refused', reason: step.outcome.refused.trim() === '' ? REFUSED_WITHOUT_REASON : step.outcome.refused };
          }
          if (question === undefined || (answer?.forQuestion === question && answer.state === 'sent')) continue;
          const expected = answer?.forQuestion === question && answer.state === 'refused' ? answer.reason : undefined;
          const now = await told(ref);
          expect(now.questionKey).toBe(question);
          expect(now.view).toBe(expected);
          expect(now.event).toBe(expected);
          if (expected === undefined) expect(now.occasion).toBe(question);
          else expect(now.occasion).toMatch(/^refused:[0-9a-f]{64}$/);
        }
      }),
      { numRuns: 60, examples },
    );
  }, 120_000);
});
