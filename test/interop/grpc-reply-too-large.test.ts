/**
 * A person's answer the agent's gRPC server refuses as over its receive cap (RESOURCE_EXHAUSTED "Received message
 * larger than max (<our request's length> vs <its max>)", before any handler ran: `RequestTooLargeError`, nothing
 * reached the agent). The same bytes always meet the same cap, so the reply is neither retried nor lost: it is
 * journaled `refused` with the reason (`replyError`, an `answer-refused` history entry), and the question is open
 * again (listed with `previousReplyRefused`, shown by /ui) for the person to answer anew: they are asked again and
 * told why by a second `question.opened` (one per refusal, `data.previousReplyRefused`); a smaller answer then goes on
 * the same task. Real redis-server, a real fleet and an `@a2a-js/sdk` gRPC agent whose server caps what it
 * receives (`maxReceiveMessageBytes`).
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProducer, type Producer } from '@durable-a2a/producer';
import type { Fleet } from '@durable-a2a/workers';
import { asksForInput, completionSteps } from '../harness/agent-behaviours.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { startGrpcAgent, type GrpcAgentHandle } from '../harness/grpc-agent.ts';
import { useRedisServer } from '../harness/redis.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../harness/webhook-receiver.ts';

const redisServer = useRedisServer();
/** The agent's server receive cap (bytes): far above the first message and a short answer, far below a long one. */
const SERVER_CAP = 4_096;
const QUESTION = 'which room?';
const SECRET = `whsec_${Buffer.alloc(32, 5).toString('base64')}`;
let receiver: WebhookReceiver;
let agent: GrpcAgentHandle;
let producer: Producer;
let fleet: Fleet;
let counter = 0;

beforeAll(async () => {
  agent = await startGrpcAgent({ behaviour: asksForInput(QUESTION, (answer) => completionSteps(`booked ${answer.length} chars`)), maxReceiveMessageBytes: SERVER_CAP });
  receiver = await startWebhookReceiver(SECRET);
  producer = createProducer({ redis: redisServer().url, addressPolicy: { allowLoopback: true }, prefix: 'grpc-reply-cap' });
  fleet = await startTestFleet({ redisUrl: redisServer().url, prefix: 'grpc-reply-cap', notify: { url: receiver.url, secret: SECRET, retry: { attempts: 3, backoffMs: 100 } } });
});
afterAll(async () => {
  await fleet?.close();
  await producer?.close();
  await agent?.stop();
  await receiver?.close();
});

const ref = (id: string) => ({ workflowId: id, delegationId: 'main.1' });
/** Follow-up messages the agent's executor got on delegation `id`'s task (the answers it saw). */
const answersSeen = async (id: string) => {
  const taskId = (await producer.journal.getDelegation(ref(id)))!.taskId;
  return agent.receivedMessages.filter((message) => message.isFollowUp && message.taskId === taskId).map((message) => message.text);
};

/** Replies the fleet sent (`durable_a2a_sends_total{kind="reply"}`). */
const replySends = async () => (await fleet.metrics.sends.get()).values.filter((value) => value.labels.kind === 'reply').reduce((sum, value) => sum + value.value, 0);
const pendingSendJobs = async () => {
  const counts = await fleet.context.queues.send.getJobCounts('waiting', 'delayed', 'active', 'prioritized');
  return Object.values(counts).reduce((sum, count) => sum + count, 0);
};

/** The `question.opened` events delegation `id` got (verified signatures), in the order received, one per event id. */
function questionsOpened(id: string): { id: string; data: Record<string, unknown> }[] {
  const seen = new Map<string, { id: string; data: Record<string, unknown> }>();
  for (const notification of receiver.received) {
    const event = JSON.parse(notification.body) as { id: string; type: string; workflowId: string; data: Record<string, unknown> };
    if (notification.verified && event.type === 'question.opened' && event.workflowId === id && !seen.has(event.id)) seen.set(event.id, { id: event.id, data: event.data });
  }
  return [...seen.values()];
}

async function askedDelegation(): Promise<string> {
  const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'book a room', idempotencyKey: `reply-cap-${++counter}` });
  await eventually(async () => (await producer.questions(id)).length > 0 && questionsOpened(id).length === 1, `${id} asks its question`, 20_000);
  expect(questionsOpened(id)[0]!.data).not.toHaveProperty('previousReplyRefused');
  return id;
}

/** Answers delegation `id`'s question with `answer`; resolves once the journal says the reply was refused or sent. */
async function answer(id: string, text: string): Promise<'refused' | 'sent'> {
  const { messageId } = await producer.reply(id, text);
  return eventually(
    async () => {
      const record = await producer.journal.getDelegation(ref(id));
      return record?.replyMessageId === messageId && (record.replyState === 'refused' || record.replyState === 'sent') && record.replyState;
    },
    `${id}'s answer refused or sent`,
    20_000,
  );
}

/** The journal after a refused answer: reason kept, question open again and listed as such, a history entry; the agent saw nothing. */
async function expectRefusedAndReopened(id: string, refusedBefore: number): Promise<void> {
  const record = (await producer.journal.getDelegation(ref(id)))!;
  expect(record.state).toBe('INPUT_REQUIRED');
  expect(record.replyState).toBe('refused');
  expect(record.replyError).toMatch(/over the agent's size limit/);
  expect(record.replyForQuestion ?? '').toBe('');
  const [question] = await producer.questions(id);
  expect(question).toMatchObject({ delegationId: 'main.1', text: QUESTION, previousReplyRefused: record.replyError });
  const view = await producer.get(id);
  expect(view.state).toBe('RUNNING');
  expect(view.history.filter((entry) => entry.kind === 'answer-refused')).toHaveLength(refusedBefore + 1);
  expect(await answersSeen(id)).toEqual([]);
  // Asked again, told why: one more question.opened (a new event id) for this refusal.
  await eventually(async () => questionsOpened(id).length === refusedBefore + 2, `${id}'s question opened again`, 10_000);
  const again = questionsOpened(id).at(-1)!;
  expect(again.data).toMatchObject({ questionKey: record.questionKey, question: QUESTION, previousReplyRefused: record.replyError });
}

async function expectCompletedWith(id: string, text: string): Promise<void> {
  const view = await eventually(async () => {
    const current = await producer.get(id);
    return current.state === 'COMPLETED' && current;
  }, `${id} completed`, 20_000);
  expect(view.state).toBe('COMPLETED');
  expect(await answersSeen(id)).toEqual([text]);
  expect(questionsOpened(id).filter((event) => event.data.previousReplyRefused === undefined)).toHaveLength(1);
}

describe('a gRPC answer over the agent server\'s receive cap', () => {
  it('case: refused once (not retried), the question open again with the reason, the agent saw no reply; a short answer then completes the task', async () => {
    const id = await askedDelegation();
    const sendsBefore = agent.sendMessageCount();
    expect(await answer(id, 'x'.repeat(SERVER_CAP * 3))).toBe('refused');
    await expectRefusedAndReopened(id, 0);
    // Not retried: the reply left once, and its send job ended (none waiting, delayed or running for it).
    expect(await replySends()).toBe(1);
    await eventually(async () => (await pendingSendJobs()) === 0, 'the reply job ended', 10_000);
    expect((await producer.journal.getDelegation(ref(id)))!.replyState).toBe('refused');
    expect(agent.sendMessageCount()).toBe(sendsBefore);
    expect(await answer(id, 'room 12')).toBe('sent');
    await expectCompletedWith(id, 'room 12');
    expect(await replySends()).toBe(2);
  }, 60_000);

  it('case: a question whose expiry answers with a default answer over the cap: refused, so a person decides at once (AMBIGUOUS QUESTION_EXPIRED); it waited, silent, for the attempt deadline', async () => {
    const { id } = await producer.delegate({
      agent: agent.cardUrl,
      text: 'book a room',
      idempotencyKey: `reply-cap-${++counter}`,
      // The longest default answer a definition takes (4096 characters): with its request's envelope, over the cap.
      question: { expiresAfterMs: 1_000, onExpiry: 'answer', defaultAnswer: 'd'.repeat(4_096) },
    });
    await eventually(async () => (await producer.journal.getDelegation(ref(id)))?.replyState === 'refused', `${id}'s default answer refused`, 20_000);
    const record = await eventually(async () => {
      const current = await producer.journal.getDelegation(ref(id));
      return current?.state === 'AMBIGUOUS' && current;
    }, `${id} handed to a person`, 20_000);
    expect(record.error).toMatchObject({ code: 'QUESTION_EXPIRED', delivery: 'received' });
    expect(record.error!.message).toMatch(/default answer .*over the agent's size limit/);
    expect(await answersSeen(id)).toEqual([]);
    // Never asked again: an expired question takes no answer (the only question.opened is the first one).
    expect(questionsOpened(id)).toHaveLength(1);
  }, 60_000);

  it('property over answer sizes and order: every answer over the cap is refused and reopens the question, the first under it completes the task', async () => {
    const short = fc.integer({ min: 1, max: 1_000 }).map((length) => 'a'.repeat(length));
    const long = fc.integer({ min: SERVER_CAP * 2, max: SERVER_CAP * 8 }).map((length) => 'b'.repeat(length));
    await fc.assert(
      fc.asyncProperty(fc.array(long, { maxLength: 2 }), short, async (refusedFirst, accepted) => {
        const id = await askedDelegation();
        for (const [index, text] of refusedFirst.entries()) {
          expect(await answer(id, text)).toBe('refused');
          await expectRefusedAndReopened(id, index);
        }
        expect(await answer(id, accepted)).toBe('sent');
        await expectCompletedWith(id, accepted);
      }),
      // Both branches whatever the seed: straight through, and refused twice before the answer that goes.
      { numRuns: 4, examples: [[[], 'ok'], [['b'.repeat(SERVER_CAP * 2), 'b'.repeat(SERVER_CAP * 5)], 'ok']] },
    );
  }, 180_000);
});
