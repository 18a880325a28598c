/**
 * Questions with a life cycle, end to end with real Redis, BullMQ and `@a2a-js/sdk` agents: a step's `question`
 * (`expiresAfterMs` with `onExpiry`, `defaultAnswer`, `remindEveryMs`). An expired question is journaled with what
 * was done and then: `cancel` cancels the workflow (CancelTask at the agent), `fail` ends the attempt FAILED
 * `QUESTION_EXPIRED` (re-delegated within the budget), `answer` sends the default answer once. An answer racing the
 * expiry: exactly one of them takes effect. The timer is the journal's: it survives a fleet that stops in between.
 */
import { afterEach, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { createProducer, type Producer } from '@durable-a2a/producer';
import type { Fleet } from '@durable-a2a/workers';
import { useRedisServer } from '../harness/redis.ts';
import { startDemoAgent, type DemoAgentHandle } from '../harness/agent.ts';
import { asksForInput, completionSteps, type Behaviour } from '../harness/agent-behaviours.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';

const redisServer = useRedisServer();
const QUESTION = 'two rooms or one?';
const agents: DemoAgentHandle[] = [];
let producer: Producer | undefined;
let fleet: Fleet | undefined;
let prefix = 0;

afterEach(async () => {
  await fleet?.close();
  fleet = undefined;
  await producer?.close();
  producer = undefined;
  await Promise.all(agents.splice(0).map((agent) => agent.close()));
});

async function setUp(): Promise<{ producer: Producer; fleet: Fleet; keyPrefix: string }> {
  const keyPrefix = `question${++prefix}`;
  producer = createProducer({ redis: redisServer().url, addressPolicy: { allowLoopback: true }, prefix: keyPrefix });
  fleet = await startTestFleet({ redisUrl: redisServer().url, prefix: keyPrefix });
  return { producer, fleet, keyPrefix };
}

async function agentWith(behaviour: Behaviour, skill?: string): Promise<DemoAgentHandle> {
  const agent = await startDemoAgent({ behaviour, ...(skill ? { skills: [{ id: skill, name: skill, description: 'books hotels', tags: [] }] } : {}) });
  agents.push(agent);
  return agent;
}

const booking = () => asksForInput(QUESTION, (answer) => completionSteps(`booked ${answer}`));
const followUps = (agent: DemoAgentHandle) => agent.receivedMessages.filter((message) => message.isFollowUp);

async function openQuestion(producer: Producer, id: string): Promise<void> {
  await eventually(async () => (await producer.questions(id)).length > 0, `${id} asks its question`);
}

async function finished(producer: Producer, id: string, timeoutMs = 30_000) {
  return eventually(
    async () => {
      const view = await producer.get(id);
      return ['COMPLETED', 'FAILED', 'CANCELED', 'COMPENSATED', 'NEEDS_ATTENTION'].includes(view.state) && view;
    },
    `${id} finished`,
    timeoutMs,
  );
}

const expiredTotal = async (fleet: Fleet) => (await fleet.metrics.questionsExpired.get()).values.reduce((sum, value) => sum + value.value, 0);

describe('a question that expires unanswered', () => {
  it("onExpiry 'cancel': journaled expired, CancelTask reaches the agent, the delegation and the workflow end CANCELED", async () => {
    const { producer } = await setUp();
    const agent = await agentWith(booking());
    const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'book a hotel', question: { expiresAfterMs: 1_000, onExpiry: 'cancel' } });
    await openQuestion(producer, id);
    const view = await finished(producer, id);
    expect(view.state).toBe('CANCELED');
    const row = await producer.journal.getDelegation({ workflowId: id, delegationId: 'main.1' });
    expect(row).toMatchObject({ state: 'CANCELED', questionExpiry: 'cancel' });
    expect(row!.questionExpired).toBe(row!.questionKey);
    expect(row!.questionExpiredAt! - row!.questionAskedAt!).toBeGreaterThanOrEqual(1_000);
    expect(agent.requestCount('CancelTask')).toBeGreaterThanOrEqual(1);
    expect(followUps(agent)).toEqual([]);
    await expect(producer.reply(id, 'two')).rejects.toMatchObject({ code: 'NO_OPEN_QUESTION' });
  });

  it("onExpiry 'fail': FAILED QUESTION_EXPIRED, re-delegated to another agent with the skill (the budget allows), which completes", async () => {
    const { producer } = await setUp();
    const first = await agentWith(booking(), 'hotel');
    const second = await agentWith(() => completionSteps('booked by the second agent'), 'hotel');
    const registered = await producer.registerAgent(first.cardUrl);
    await eventually(async () => Date.now() > Date.parse(registered.registeredAt), 'a later millisecond', 1_000, 1);
    await producer.registerAgent(second.cardUrl);
    const { id } = await producer.startWorkflow({
      workflowId: 'expires-fail',
      steps: [{ name: 'hotel', skill: 'hotel', message: { text: 'book a hotel' }, question: { expiresAfterMs: 1_000, onExpiry: 'fail' } }],
      maxAttemptsPerStep: 2,
    });
    await openQuestion(producer, id);
    const view = await finished(producer, id);
    expect(view.state).toBe('COMPLETED');
    const attempts = view.steps[0]!.attempts;
    expect(attempts).toHaveLength(2);
    expect(attempts[0]).toMatchObject({ state: 'FAILED', agentCardUrl: first.cardUrl });
    const failed = await producer.journal.getDelegation({ workflowId: id, delegationId: attempts[0]!.delegationId });
    expect(failed).toMatchObject({ state: 'FAILED', questionExpiry: 'fail', error: { code: 'QUESTION_EXPIRED' } });
    expect(attempts[1]).toMatchObject({ state: 'COMPLETED', agentCardUrl: second.cardUrl });
    expect(followUps(first)).toEqual([]);
    expect(second.sendMessageCount()).toBe(1);
  });

  it("onExpiry 'answer': the agent receives the default answer exactly once, on the same task, and the task completes", async () => {
    const { producer, fleet } = await setUp();
    const agent = await agentWith(booking());
    const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'book a hotel', question: { expiresAfterMs: 1_000, onExpiry: 'answer', defaultAnswer: 'one room' } });
    await openQuestion(producer, id);
    const view = await finished(producer, id);
    expect(view.state).toBe('COMPLETED');
    expect(view.steps[0]!.attempts[0]!.resultText).toBe('booked one room');
    const row = await producer.journal.getDelegation({ workflowId: id, delegationId: 'main.1' });
    expect(row).toMatchObject({ questionExpiry: 'answer', replyBy: 'expiry', replyState: 'sent', replyMessage: { parts: [{ text: 'one room' }] } });
    expect(followUps(agent).map((message) => [message.text, message.taskId, message.messageId])).toEqual([['one room', row!.taskId, row!.replyMessageId]]);
    expect(await expiredTotal(fleet)).toBe(1);
  });
});

describe('an answer racing the expiry', () => {
  it('property over timings: exactly one of them takes effect, and the agent never gets both', async () => {
    const { producer, fleet } = await setUp();
    const agent = await agentWith(booking());
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: -300, max: 300 }), async (offsetMs) => {
        const id = `race-${++run}`;
        await producer.delegate({ agent: agent.cardUrl, text: 'book a hotel', idempotencyKey: id, question: { expiresAfterMs: 800, onExpiry: 'answer', defaultAnswer: 'one room' } });
        await openQuestion(producer, id);
        const asked = (await producer.journal.getDelegation({ workflowId: id, delegationId: 'main.1' }))!.questionAskedAt!;
        // Answer around the moment the question expires (bounded waits: at most 1.1 s).
        await new Promise((resolve) => setTimeout(resolve, Math.max(0, asked + 800 + offsetMs - Date.now())));
        const answered = await producer.reply(id, 'two rooms').then(
          () => true,
          (error: { code?: string }) => {
            expect(error.code).toBe('NO_OPEN_QUESTION');
            return false;
          },
        );
        const view = await finished(producer, id);
        expect(view.state).toBe('COMPLETED');
        const row = (await producer.journal.getDelegation({ workflowId: id, delegationId: 'main.1' }))!;
        const received = followUps(agent).filter((message) => message.taskId === row.taskId);
        expect(received).toHaveLength(1);
        expect(received[0]!.text).toBe(answered ? 'two rooms' : 'one room');
        expect(row.questionExpired === row.questionKey).toBe(!answered);
        expect(view.steps[0]!.attempts[0]!.resultText).toBe(answered ? 'booked two rooms' : 'booked one room');
      }),
      // Both sides of the race at least once: well before and well after the expiry.
      { numRuns: 6, examples: [[-300], [300]] },
    );
    expect(await expiredTotal(fleet)).toBeLessThanOrEqual(8);
  }, 120_000);
});

describe('the timer survives the workers', () => {
  it('the fleet stops between the question and its expiry; a new fleet expires it once (the default answer once)', async () => {
    const { producer, fleet: firstFleet, keyPrefix } = await setUp();
    const agent = await agentWith(booking());
    const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'book a hotel', question: { expiresAfterMs: 1_500, onExpiry: 'answer', defaultAnswer: 'one room' } });
    await openQuestion(producer, id);
    await firstFleet.close();
    fleet = undefined;
    const asked = (await producer.journal.getDelegation({ workflowId: id, delegationId: 'main.1' }))!.questionAskedAt!;
    // Nobody runs while the question expires.
    await eventually(async () => Date.now() > asked + 2_000, 'past the expiry', 10_000, 50);
    expect((await producer.journal.getDelegation({ workflowId: id, delegationId: 'main.1' }))!.questionExpired).toBeUndefined();
    fleet = await startTestFleet({ redisUrl: redisServer().url, prefix: keyPrefix });
    const view = await finished(producer, id);
    expect(view.state).toBe('COMPLETED');
    expect(followUps(agent).map((message) => message.text)).toEqual(['one room']);
    expect(await expiredTotal(fleet)).toBe(1);
    expect(await expiredTotal(firstFleet)).toBe(0);
  });
});

describe('reminders', () => {
  it('a reminder every remindEveryMs while the question is open, at most 10, none once it is answered', async () => {
    const { producer, fleet } = await setUp();
    const agent = await agentWith(booking());
    const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'book a hotel', question: { remindEveryMs: 150 } });
    await openQuestion(producer, id);
    const reminders = async () => (await fleet.metrics.questionReminders.get()).values.reduce((sum, value) => sum + value.value, 0);
    await eventually(async () => (await reminders()) >= 3, 'three reminders', 20_000);
    // 15 intervals past the tenth reminder: the count stays bounded.
    const asked = (await producer.journal.getDelegation({ workflowId: id, delegationId: 'main.1' }))!.questionAskedAt!;
    await eventually(async () => Date.now() > asked + 150 * 25, 'well past the tenth reminder', 10_000, 50);
    const bounded = await reminders();
    expect(bounded).toBeGreaterThanOrEqual(3);
    expect(bounded).toBeLessThanOrEqual(10);
    await producer.reply(id, 'two rooms');
    expect((await finished(producer, id)).state).toBe('COMPLETED');
    expect(await reminders()).toBe(bounded);
  }, 60_000);
});
