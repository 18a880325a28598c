/**
 * Outbound notifications (docs/people.md "Notifications"): signed, stable ids, at least once through the notify queue,
 * never in the way of delegation work, nothing lost across a worker SIGKILL.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createProducer, type Producer } from '@durable-a2a/producer';
import { notificationEventId } from '@durable-a2a/shared';
import type { Fleet } from '@durable-a2a/workers';
import { useRedisServer } from './harness/redis.ts';
import { startDemoAgent, type DemoAgentHandle } from './harness/agent.ts';
import { asksForInput, completionSteps } from './harness/agent-behaviours.ts';
import { eventually, spawnWorkerProcess, startTestFleet, type WorkerProcess } from './harness/fleet.ts';
import { startWebhookReceiver, type WebhookReceiver } from './harness/webhook-receiver.ts';

const SECRET = `whsec_${randomBytes(32).toString('base64')}`;
const redisServer = useRedisServer({ appendOnly: true });
let agent: DemoAgentHandle;
let receiver: WebhookReceiver;
let producer: Producer | undefined;
let fleet: Fleet | undefined;
const processes: WorkerProcess[] = [];
let counter = 0;

beforeAll(async () => {
  agent = await startDemoAgent({ behaviour: asksForInput('Which city?', (answer) => completionSteps(`booked ${answer}`)) });
});
afterAll(async () => {
  await agent.close();
});
afterEach(async () => {
  await fleet?.close();
  fleet = undefined;
  await Promise.all(processes.splice(0).map((worker) => worker.kill()));
  await producer?.close();
  producer = undefined;
  await receiver?.close();
});

async function setUp(notify: { requestTimeoutMs?: number } = {}) {
  const prefix = `notify${++counter}`;
  receiver = await startWebhookReceiver(SECRET);
  producer = createProducer({ redis: redisServer().url, addressPolicy: { allowLoopback: true }, prefix });
  fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, notify: { secret: SECRET, retry: { attempts: 6, backoffMs: 100 }, ...notify } });
  return { prefix, producer, fleet };
}

/** The open question of `id` once it is asked, with the journal's question key. */
async function questionOf(producer: Producer, id: string) {
  return eventually(async () => {
    const record = await producer.journal.getDelegation({ workflowId: id, delegationId: 'main.1' });
    return record?.state === 'INPUT_REQUIRED' && record.questionKey ? record : undefined;
  }, `question of ${id}`);
}

describe('outbound notifications', () => {
  it('a receiver that fails twice, then accepts: every event arrives, verified, once per id after dedup', async () => {
    const { producer, fleet } = await setUp();
    receiver.answerWith((_id, tries) => (tries <= 2 ? { kind: 'fail', status: 503 } : { kind: 'accept' }));
    const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'book a table', idempotencyKey: 'fails-twice', notify: { url: receiver.url } });
    const question = await questionOf(producer, id);
    await producer.reply(id, 'Lyon');
    await producer.waitFor(id, { timeoutMs: 30_000 });
    const expected = [
      notificationEventId({ kind: 'question.opened', workflowId: id, delegationId: 'main.1', occasion: question.questionKey! }),
      notificationEventId({ kind: 'workflow.finished', workflowId: id, occasion: 'COMPLETED' }),
    ];
    await eventually(async () => expected.every((eventId) => receiver.acceptedIds().has(eventId)), 'every event accepted', 30_000);
    // Every request was signed as documented; each id was tried until accepted (at least three times), and the
    // ids the receiver accepted are exactly the expected ones: none missing, none unexpected.
    expect(receiver.received.every((request) => request.verified)).toBe(true);
    expect([...receiver.acceptedIds()].sort()).toEqual([...expected].sort());
    for (const eventId of expected) expect(receiver.received.filter((request) => request.id === eventId).length).toBeGreaterThanOrEqual(3);
    // Retries send the same body (same id, same createdAt).
    for (const eventId of expected) expect(new Set(receiver.received.filter((request) => request.id === eventId).map((request) => request.body)).size).toBe(1);
    const opened = JSON.parse(receiver.received.find((request) => request.id === expected[0])!.body);
    expect(opened).toMatchObject({ type: 'question.opened', workflowId: id, delegationId: 'main.1', data: { question: 'Which city?', step: 'main' } });
    // Journaled delivered, counted.
    const journaled = await producer.journal.notifications(id);
    expect(Object.values(journaled).map((entry) => entry.stage)).toEqual(['delivered', 'delivered']);
    const counted = (await fleet.metrics.notifications.get()).values.filter((value) => value.labels.outcome === 'delivered').reduce((sum, value) => sum + value.value, 0);
    expect(counted).toBe(2);
  });

  it('a receiver that hangs does not hold the delegation: it completes while the request is still open', async () => {
    const { producer } = await setUp({ requestTimeoutMs: 15_000 });
    receiver.answerWith(() => ({ kind: 'hang' }));
    const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'book a table', idempotencyKey: 'hangs', notify: { url: receiver.url } });
    await questionOf(producer, id);
    // The question's notification is being delivered, and hangs (10 s and more).
    await eventually(async () => receiver.hanging() > 0, 'the receiver holds a request');
    await producer.reply(id, 'Paris');
    const view = await producer.waitFor(id, { timeoutMs: 30_000 });
    expect(view.state).toBe('COMPLETED');
    expect(receiver.hanging()).toBeGreaterThan(0);
    expect(receiver.acceptedIds().size).toBe(0);
  });

  it('events enqueued before a worker SIGKILL are delivered after a new worker starts', async () => {
    const prefix = `notify${++counter}`;
    receiver = await startWebhookReceiver(SECRET);
    producer = createProducer({ redis: redisServer().url, addressPolicy: { allowLoopback: true }, prefix });
    receiver.answerWith(() => ({ kind: 'hang' }));
    const worker = spawnWorkerProcess({ REDIS_URL: redisServer().url, DA2A_PREFIX: prefix, DA2A_NOTIFY_URL: receiver.url, DA2A_NOTIFY_SECRET: SECRET });
    processes.push(worker);
    await worker.ready;
    const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'book a table', idempotencyKey: 'killed' });
    const question = await questionOf(producer, id);
    const eventId = notificationEventId({ kind: 'question.opened', workflowId: id, delegationId: 'main.1', occasion: question.questionKey! });
    // The event is journaled enqueued and its delivery is under way in the worker when it dies.
    await eventually(async () => (await producer!.journal.notification(id, eventId))?.stage === 'enqueued' && receiver.hanging() > 0, 'delivery under way');
    await worker.kill('SIGKILL');
    expect(receiver.acceptedIds().has(eventId)).toBe(false);
    receiver.answerWith(() => ({ kind: 'accept' }));
    fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, notify: { secret: SECRET, url: receiver.url, retry: { attempts: 6, backoffMs: 100 } } });
    await eventually(async () => receiver.acceptedIds().has(eventId), 'delivered by the new worker', 30_000);
    expect((await producer.journal.notification(id, eventId))?.stage).toBe('delivered');
  });
});
